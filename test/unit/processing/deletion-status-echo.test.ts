import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { FINALIZER } from '../../../src/framework/state/keys.js';
import { uninstallFakeClock } from '../../support/fake-clock.js';
import { widget } from '../../support/widget-objects.js';
import { handled, handler, Harness } from './change-processor-harness.js';

// Every Harness installs the shared fake clock.
afterEach(uninstallFakeClock);

describe('a delete handler that writes status, once its deletion is handled', () => {
  test('the echo of its status write, at the version our finalizer removal was answered with, writes nothing more', async () => {
    // The API server answers the write that takes the last finalizer off with the version of the state
    // before it: that of our status write, whose echo (finalizer still on) may come after the removal.
    const cleanup = handler('delete', 'cleanup', {}, ({ patch }) => {
      patch.status.phase = 'Deleting';
    });
    const h = new Harness([cleanup], handled(widget({ finalizers: [FINALIZER], deleting: true })));
    await h.deliver();
    const [statusEcho] = h.api.history.filter(
      (object) => (object.status as { phase?: string } | undefined)?.phase === 'Deleting',
    );
    const writes = h.api.writes.length;
    const answeredVersion = h.api.object.metadata?.resourceVersion;
    const echo: KubeObject = {
      ...statusEcho!,
      metadata: { ...statusEcho!.metadata, resourceVersion: answeredVersion },
    };

    expect(await h.deliver({ object: echo })).toBeUndefined();

    expect(h.api.writes).toHaveLength(writes);
    expect(cleanup.calls).toHaveLength(1);
  });
});
