import {
  describeLease,
  leaseNamespaceOf,
  liveHolder,
} from '../../../src/cli/commands/declared-objects.js';
import { webhooksKept } from '../../../src/cli/commands/uninstall.js';
import { whyLeft, type LeftoverContext } from '../../../src/cli/commands/leftover.js';
import { helpFor } from '../../../src/cli/command-line.js';
import { UsageError } from '../../../src/cli/validators.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { serializeProgress } from '../../../src/framework/state/progress.js';
import { widget } from '../../support/widget-objects.js';
import { parsed, usageError } from './parse-helpers.js';

describe('konductor disconnect and uninstall command lines', () => {
  test('disconnect takes the handler files and the options it shares with run', () => {
    const command = parsed(
      [
        'disconnect',
        'src/handlers/',
        '-n',
        'team-a',
        '-n',
        'team-*',
        '--identity',
        'db.example.com',
        '--lease-namespace',
        'ops',
        '--dry-run',
      ],
      'disconnect',
    );
    expect(command.options).toEqual({
      files: ['src/handlers/'],
      namespaces: ['team-a', 'team-*'],
      context: undefined,
      kubeconfig: undefined,
      identity: 'db.example.com',
      leaseNamespace: 'ops',
      leaseName: 'db.example.com-leader',
      dryRun: true,
      force: false,
    });
  });

  test('defaults: every namespace, the default identity and its Lease in any namespace, writes, no force', () => {
    expect(parsed(['disconnect', 'h.ts'], 'disconnect').options).toMatchObject({
      namespaces: [],
      identity: 'konductor.dev',
      leaseName: 'konductor-leader',
      leaseNamespace: undefined,
      dryRun: false,
      force: false,
    });
  });

  test('the identity, namespaces and kubeconfig come from the same variables as for run', () => {
    const env = {
      KONDUCTOR_IDENTITY: 'db.example.com',
      KONDUCTOR_NAMESPACE: 'a,b',
      KONDUCTOR_KUBECONFIG: '/k',
    };
    expect(parsed(['disconnect', 'h.ts'], 'disconnect', env).options).toMatchObject({
      identity: 'db.example.com',
      namespaces: ['a', 'b'],
      kubeconfig: '/k',
    });
  });

  test('uninstall waits 5 minutes by default; --timeout takes seconds or a unit; --crd is repeatable', () => {
    expect(parsed(['uninstall', 'h.ts'], 'uninstall').options).toMatchObject({
      timeoutSeconds: 300,
      crds: [],
    });
    expect(
      parsed(['uninstall', 'h.ts', '--timeout', '90'], 'uninstall').options.timeoutSeconds,
    ).toBe(90);
    expect(
      parsed(['uninstall', 'h.ts', '--timeout', '2m'], 'uninstall').options.timeoutSeconds,
    ).toBe(120);
    expect(
      parsed(['uninstall', 'h.ts', '--timeout', '0'], 'uninstall').options.timeoutSeconds,
    ).toBe(0);
    const crds = parsed(
      ['uninstall', 'h.ts', '--crd', 'widgets.example.com', '--crd', 'gadgets.example.com'],
      'uninstall',
    ).options.crds;
    expect(crds).toEqual(['widgets.example.com', 'gadgets.example.com']);
  });

  test.each([
    [
      ['disconnect'],
      "disconnect needs the operator's handler files or folders: konductor disconnect <file|folder>...",
    ],
    [
      ['uninstall', 'h.ts', '--force'],
      '--force is an option of konductor disconnect, not of uninstall (see konductor uninstall --help)',
    ],
    [
      ['disconnect', 'h.ts', '--crd', 'a.b'],
      '--crd is an option of konductor uninstall, not of disconnect (see konductor disconnect --help)',
    ],
    [
      ['uninstall', 'h.ts', '--timeout', '5 minutes'],
      "--timeout must be a duration: seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S'); got '5 minutes'",
    ],
    [
      ['uninstall', 'h.ts', '--crd', 'widgets'],
      "--crd 'widgets' is not a CustomResourceDefinition name: use <plural>.<group>, e.g. widgets.example.com",
    ],
    [
      ['disconnect', 'h.ts', '--storage', 'status'],
      "unknown option '--storage' (see konductor disconnect --help)",
    ],
    [
      ['disconnect', 'h.ts', '-n', 'a', '-A'],
      '--namespace and --all-namespaces cannot be used together',
    ],
  ])('%j is refused in one line', (args, message) => {
    expect(usageError(args).message).toBe(message);
  });

  test('an invalid identity is refused as run refuses it', () => {
    expect(usageError(['disconnect', 'h.ts', '--identity', 'My_Op']).message).toMatch(
      /^--identity: the operator identity "My_Op" is not a DNS-1123 subdomain/,
    );
  });

  test('each has its help, and the overview lists both', () => {
    expect(parsed(['disconnect', '--help'], 'help').command).toBe('disconnect');
    expect(helpFor('disconnect')).toMatch(
      /^Usage: konductor disconnect <file\|folder>\.\.\. \[options\]\n/,
    );
    expect(helpFor('uninstall')).toMatch(
      /^Usage: konductor uninstall <file\|folder>\.\.\. \[options\]\n/,
    );
    expect(helpFor(undefined)).toMatch(/disconnect <file\|folder>\.\.\./);
    expect(helpFor(undefined)).toMatch(/uninstall <file\|folder>\.\.\./);
  });
});

describe("the operator's Lease, as disconnect and uninstall judge it", () => {
  const now = Date.parse('2026-11-24T13:00:00Z');

  test('a holder renewed within the lease duration leads until renewTime plus the duration', () => {
    const lease = {
      spec: {
        holderIdentity: 'op-1',
        renewTime: '2026-11-24T12:59:55.000000Z',
        leaseDurationSeconds: 15,
      },
    };
    expect(liveHolder(lease, now)).toEqual({
      holder: 'op-1',
      until: new Date('2026-11-24T13:00:10Z'),
    });
  });

  test('an expired or released Lease has no live holder', () => {
    expect(
      liveHolder(
        {
          spec: {
            holderIdentity: 'op-1',
            renewTime: '2026-11-24T12:59:00.000000Z',
            leaseDurationSeconds: 15,
          },
        },
        now,
      ),
    ).toBeUndefined();
    expect(
      liveHolder(
        {
          spec: {
            holderIdentity: '',
            renewTime: '2026-11-24T12:59:59.000000Z',
            leaseDurationSeconds: 15,
          },
        },
        now,
      ),
    ).toBeUndefined();
  });

  test('a holder without a renew time counts as live (refusing is the safe side), and its name is printable', () => {
    expect(liveHolder({ spec: { holderIdentity: 'op\u001b[31m-1' } }, now)).toEqual({
      holder: 'op[31m-1',
      until: undefined,
    });
  });
});

describe("where disconnect and uninstall look for the operator's Lease", () => {
  test('in --lease-namespace when given', () => {
    expect(leaseNamespaceOf({ leaseNamespace: 'ops' }, 'team-a')).toBe('ops');
  });

  test("in a pod, in the pod's own namespace, as konductor run takes it", () => {
    expect(leaseNamespaceOf({ leaseNamespace: undefined }, 'konductor-system')).toBe(
      'konductor-system',
    );
  });

  test('outside a pod without --lease-namespace, nowhere: the command asks for it instead of searching every namespace', () => {
    expect(() => leaseNamespaceOf({ leaseNamespace: undefined }, undefined)).toThrow(UsageError);
    expect(() => leaseNamespaceOf({ leaseNamespace: undefined }, undefined)).toThrow(
      /--lease-namespace is required outside a pod/,
    );
  });

  test('the holder, which whoever writes the Lease chooses, is printed quoted', () => {
    const holder = 'x (Lease kube-system/real, held until 2099-01-01T00:00:00.000Z); "or"';
    expect(
      describeLease({ namespace: 'ops', name: 'konductor-leader', holder, until: undefined }),
    ).toBe(`${JSON.stringify(holder)} (Lease ops/konductor-leader, held, no renew time given)`);
  });
});

describe("what uninstall does with the operator's webhook configurations", () => {
  test('removes them once everything is uninstalled and no object is left', () => {
    expect(webhooksKept([], 0)).toBeUndefined();
  });

  test('keeps them when only some namespaces are uninstalled, as the operator serves the others', () => {
    expect(webhooksKept(['team-a'], 0)).toBe(
      'it serves every namespace the operator does, and only team-a was uninstalled',
    );
  });

  test('keeps them while objects are left', () => {
    expect(webhooksKept([], 2)).toBe('2 objects are left, which the operator still serves');
  });
});

describe('why an object uninstall deleted is still there', () => {
  const identity = Identity.DEFAULT;
  const context: LeftoverContext = {
    identity,
    operator: undefined,
    deleteHandlerIds: ['Widgets.deleted'],
  };

  test('our finalizer with no operator running: say to disconnect or start it', () => {
    expect(
      whyLeft(widget({ deleting: true, finalizers: ['konductor.dev/finalizer'] }), context),
    ).toBe(
      'finalizer konductor.dev/finalizer held, no operator running: run konductor disconnect or start the operator',
    );
  });

  test("our finalizer with the operator running: its delete handler's last error, from either storage", () => {
    const record = serializeProgress({
      purpose: 'delete',
      retries: 3,
      message: 'bucket\nnot empty',
    });
    const inAnnotation = widget({
      deleting: true,
      finalizers: ['konductor.dev/finalizer'],
      annotations: { 'konductor.dev/Widgets.deleted': record },
    });
    const inStatus = widget({
      deleting: true,
      finalizers: ['konductor.dev/finalizer'],
      status: { 'konductor.dev': { progress: { 'Widgets.deleted': record } } },
    });
    const running = {
      ...context,
      operator: 'op-1 (Lease ops/konductor-leader, held until 2026-11-24T13:00:10.000Z)',
    };
    for (const object of [inAnnotation, inStatus]) {
      expect(whyLeft(object, running)).toBe(
        'finalizer konductor.dev/finalizer held: the delete handlers of op-1 (Lease ops/konductor-leader, held until 2026-11-24T13:00:10.000Z) have not finished; last error: Widgets.deleted: bucket not empty',
      );
    }
  });

  test("another controller's finalizer, and the garbage collector's foreground deletion, are named", () => {
    expect(whyLeft(widget({ deleting: true, finalizers: ['example.com/backup'] }), context)).toBe(
      'finalizer example.com/backup held by another controller',
    );
    expect(
      whyLeft(widget({ deleting: true, finalizers: ['foregroundDeletion'] }), context),
    ).toMatch(/^finalizer foregroundDeletion: the garbage collector deletes its dependents first/);
  });

  test('an object not marked for deletion says why: the DELETE failed, or it came later', () => {
    expect(whyLeft(widget(), { ...context, deleteError: 'DELETE ...: 403 forbidden' })).toBe(
      'not deleted: DELETE ...: 403 forbidden',
    );
    expect(whyLeft(widget(), context)).toBe(
      'not deleted yet (created after the others were deleted)',
    );
  });
});
