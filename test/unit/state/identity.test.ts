import { DIFF_BASE_KEY, FINALIZER, progressKey } from '../../../src/framework/state/keys.js';
import { Identity, InvalidIdentityError } from '../../../src/framework/state/identity.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A valid Kubernetes annotation name (the part after the prefix). */
const VALID_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

describe('the default identity', () => {
  const identity = Identity.DEFAULT;

  test('keeps every key Konductor wrote before identities, so existing objects carry on', () => {
    expect({
      name: identity.name,
      prefix: identity.prefix,
      diffBaseKey: identity.diffBaseKey,
      finalizer: identity.finalizer,
    }).toEqual({
      name: 'konductor.dev',
      prefix: 'konductor.dev',
      diffBaseKey: 'konductor.dev/last-handled-configuration',
      finalizer: 'konductor.dev/finalizer',
    });
    expect([identity.progressKey('Widgets.created'), identity.timerKey('tick')]).toEqual([
      'konductor.dev/Widgets.created',
      'konductor.dev/timer.tick',
    ]);
  });

  test('keeps the Lease, the Event component and names its writes konductor', () => {
    expect({
      lease: identity.leaseName,
      component: identity.eventComponent,
      manager: identity.fieldManager,
    }).toEqual({
      lease: 'konductor-leader',
      component: 'konductor',
      manager: 'konductor',
    });
  });

  test('writes no marker annotation: every Konductor operator knows its prefix', () => {
    expect(identity.managedMarker).toBeUndefined();
  });

  test('is what parsing its name gives', () => {
    expect(Identity.parse('konductor.dev')).toBe(Identity.DEFAULT);
    expect(Identity.parse('konductor.dev').isDefault).toBe(true);
  });

  test('is what the older key names of state/keys say', () => {
    expect([DIFF_BASE_KEY, FINALIZER, progressKey('a/b')]).toEqual([
      identity.diffBaseKey,
      identity.finalizer,
      identity.progressKey('a/b'),
    ]);
  });
});

describe('an identity of its own', () => {
  const identity = Identity.parse('db-operator.example.com');

  test('prefixes every annotation and the finalizer with the identity', () => {
    expect([
      identity.prefix,
      identity.diffBaseKey,
      identity.finalizer,
      identity.progressKey('Db.created'),
      identity.timerKey('backup'),
    ]).toEqual([
      'db-operator.example.com',
      'db-operator.example.com/last-handled-configuration',
      'db-operator.example.com/finalizer',
      'db-operator.example.com/Db.created',
      'db-operator.example.com/timer.backup',
    ]);
  });

  test('marks its bookkeeping with <prefix>/konductor-managed', () => {
    expect(identity.managedMarker).toBe('db-operator.example.com/konductor-managed');
    expect(identity.isDefault).toBe(false);
  });

  test('names its Lease, its Events and its writes after the identity', () => {
    expect({
      lease: identity.leaseName,
      component: identity.eventComponent,
      manager: identity.fieldManager,
    }).toEqual({
      lease: 'db-operator.example.com-leader',
      component: 'db-operator.example.com',
      manager: 'db-operator.example.com',
    });
  });

  test('makes progress and timer keys valid annotation names, as the default does', () => {
    for (const id of ['Class.method/spec.size', 'with spaces', 'x'.repeat(200), '日本語']) {
      const key = identity.progressKey(id);
      expect({
        id,
        prefix: key.slice(0, key.indexOf('/')),
        name: key.slice(key.indexOf('/') + 1),
      }).toEqual({
        id,
        prefix: 'db-operator.example.com',
        name: expect.stringMatching(VALID_NAME),
      });
    }
  });
});

describe('isFrameworkKey', () => {
  const identity = Identity.parse('a.example.com');

  test('is true for every key the identity writes', () => {
    const keys = [
      identity.diffBaseKey,
      identity.progressKey('h'),
      identity.timerKey('t'),
      identity.managedMarker!,
    ];
    expect(keys.filter((key) => !identity.isFrameworkKey(key))).toEqual([]);
  });

  test("is false for another identity's keys, the default's included", () => {
    const others = [
      'b.example.com/last-handled-configuration',
      'konductor.dev/last-handled-configuration',
      'x.a.example.com/h',
      'a.example.com.evil/h',
      'a.example.com',
    ];
    expect(others.filter((key) => identity.isFrameworkKey(key))).toEqual([]);
  });
});

describe('parsing', () => {
  test.each(['example.com', 'op', 'a-b.c-d', '0.1', 'a'.repeat(253)])(
    'accepts the DNS-1123 subdomain %s',
    (raw) => {
      expect(Identity.parse(raw).name).toBe(raw);
    },
  );

  test.each([
    '',
    'Example.com',
    'under_score.dev',
    '-leading.dev',
    'trailing-.dev',
    'double..dot',
    '.dot',
    'dot.',
    'slash/name',
    'space d',
    'a'.repeat(254),
    'ünï.dev',
  ])('refuses %j, naming the value and the rule', (raw) => {
    expect(() => Identity.parse(raw)).toThrow(InvalidIdentityError);
    expect(() => Identity.parse(raw)).toThrow(
      `the operator identity ${JSON.stringify(raw)} is not a DNS-1123 subdomain`,
    );
    expect(() => Identity.parse(raw)).toThrow('at most 253 characters');
  });

  test('says why a too long identity is refused', () => {
    expect(() => Identity.parse('a'.repeat(254))).toThrow('it has 254 characters');
  });
});

describe('derived names of long identities', () => {
  const long = (tail: string): string =>
    `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${tail}`;

  test('cut the Lease name to a valid DNS-1123 subdomain, unique per identity', () => {
    const names = ['eeee', 'ffff', 'g.hh'].map((tail) => Identity.parse(long(tail)).leaseName);
    for (const name of names)
      expect({ name, length: name.length <= 253, valid: DNS_SUBDOMAIN.test(name) }).toEqual({
        name,
        length: true,
        valid: true,
      });
    expect(new Set(names).size).toBe(names.length);
    expect(names[0]).toMatch(/-[0-9a-f]{8}-leader$/);
  });

  test('cut the field manager to 128 characters, unique per identity', () => {
    const managers = ['eeee', 'ffff'].map((tail) => Identity.parse(long(tail)).fieldManager);
    expect(managers.map((m) => m.length <= 128)).toEqual([true, true]);
    expect(managers[0]).not.toBe(managers[1]);
  });

  test('keep a Lease name that fits as the identity plus -leader', () => {
    const fits = 'x'.repeat(246);
    expect(Identity.parse(fits).leaseName).toBe(`${fits}-leader`);
  });
});
