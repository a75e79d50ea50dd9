import { PermanentError } from '../../../src/framework/intents/errors.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { readProgress } from '../../../src/framework/state/progress.js';
import { uninstallFakeClock } from '../../support/fake-clock.js';
import { widget } from '../../support/widget-objects.js';
import { handler, Harness } from './change-processor-harness.js';

// Every Harness installs the shared fake clock.
afterEach(uninstallFakeClock);

const ALPHA = Identity.parse('alpha.example.com');
const BETA = Identity.parse('beta.example.com');

/** The framework annotation keys on the object, by identity prefix. */
function keysOf(annotations: Record<string, string> | undefined, identity: Identity): string[] {
  return Object.keys(annotations ?? {})
    .filter((key) => identity.isFrameworkKey(key))
    .sort();
}

describe('ChangeProcessor under an identity of its own', () => {
  test('keeps its diff-base and marker under its identity, and nothing under the default one', async () => {
    const created = handler('create', 'created');
    const h = new Harness([created], widget(), undefined, { identity: ALPHA });

    await h.deliver();

    expect(created.calls).toHaveLength(1);
    expect(keysOf(h.api.object.metadata?.annotations, ALPHA)).toEqual(
      [ALPHA.managedMarker, ALPHA.diffBaseKey].sort(),
    );
    expect(keysOf(h.api.object.metadata?.annotations, Identity.DEFAULT)).toEqual([]);
  });

  test('holds the object with its own finalizer, next to the finalizer of another identity', async () => {
    const h = new Harness(
      [handler('delete', 'cleanup')],
      widget({ finalizers: [Identity.DEFAULT.finalizer] }),
      undefined,
      { identity: ALPHA },
    );

    await h.deliver();

    expect(h.api.object.metadata?.finalizers).toEqual([
      Identity.DEFAULT.finalizer,
      ALPHA.finalizer,
    ]);
  });

  test("takes off only its own finalizer after its delete handler, leaving the other identity's", async () => {
    const cleanup = handler('delete', 'cleanup');
    const h = new Harness([cleanup], widget(), undefined, { identity: ALPHA });
    await h.deliver();
    h.edit((object) => {
      object.metadata!.finalizers = [BETA.finalizer, ...(object.metadata!.finalizers ?? [])];
      object.metadata!.deletionTimestamp = '2024-05-01T12:00:00Z';
    });

    await h.deliver();

    expect(cleanup.calls).toHaveLength(1);
    expect(h.api.object.metadata?.finalizers).toEqual([BETA.finalizer]);
  });

  test("does not run update handlers for another operator's marked bookkeeping", async () => {
    const updated = handler('update', 'updated');
    const h = new Harness([handler('create', 'created'), updated], widget(), undefined, {
      identity: ALPHA,
    });
    await h.deliver();
    h.edit((object) => {
      object.metadata!.annotations = {
        ...object.metadata!.annotations,
        [BETA.managedMarker!]: 'yes',
        [BETA.progressKey('created')]: '{"retries":1}',
      };
    });
    await h.deliver();
    h.edit((object) => {
      object.metadata!.annotations = {
        ...object.metadata!.annotations,
        [BETA.progressKey('created')]: '{"retries":2}',
        [BETA.diffBaseKey]: '{"spec":{}}',
      };
    });
    await h.deliver();

    expect(updated.calls).toHaveLength(0);
  });

  test('still runs update handlers for a change to a user annotation', async () => {
    const updated = handler('update', 'updated');
    const h = new Harness([handler('create', 'created'), updated], widget(), undefined, {
      identity: ALPHA,
    });
    await h.deliver();
    h.edit((object) => {
      object.metadata!.annotations = {
        ...object.metadata!.annotations,
        'team.example.com/owner': 'ops',
      };
    });

    await h.deliver();

    expect(updated.calls).toHaveLength(1);
  });

  test('keeps progress under its identity, and names its finalizer when a delete handler fails for good', async () => {
    const cleanup = handler('delete', 'cleanup', {}, () => {
      throw new PermanentError('bucket gone');
    });
    const h = new Harness([cleanup], widget(), undefined, { identity: ALPHA });
    await h.deliver();
    h.edit((object) => {
      object.metadata!.deletionTimestamp = '2024-05-01T12:00:00Z';
    });

    await h.deliver();

    expect(readProgress(h.api.object, 'cleanup')).toBeUndefined();
    expect(readProgress(h.api.object, 'cleanup', ALPHA)?.message).toContain(
      `keeps the finalizer ${ALPHA.finalizer}`,
    );
  });

  test("refuses a handler's patch that sets its identity's bookkeeping", async () => {
    const meddler = handler('create', 'meddler', {}, ({ patch }) => {
      patch.metadata.annotations[ALPHA.diffBaseKey] = '{}';
    });
    const h = new Harness([meddler], widget(), undefined, { identity: ALPHA });

    await h.deliver();

    expect(readProgress(h.api.object, 'meddler', ALPHA)).toMatchObject({
      failure: true,
      message: expect.stringContaining(ALPHA.diffBaseKey),
    });
  });
});
