import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { FINALIZER } from '../../../src/framework/state/keys.js';
import { uninstallFakeClock } from '../../support/fake-clock.js';
import { widget } from '../../support/widget-objects.js';
import { handled, handler, Harness, OTHER_FINALIZER } from './change-processor-harness.js';

// Every Harness installs the shared fake clock.
afterEach(uninstallFakeClock);

/** `object` as an older state that carries the resourceVersion `version`. */
function withVersion(object: KubeObject, version: string | undefined): KubeObject {
  return { ...object, metadata: { ...object.metadata, resourceVersion: version } };
}

describe('after its deletion is handled', () => {
  test('a stale state that passes for the echo of the finalizer removal runs no delete handler again', async () => {
    // The API server answers the write that takes the last finalizer off with the version of the state
    // before it; a queued event of that version (another controller's finalizer going) then looks like our echo.
    const cleanup = handler('delete', 'cleanup');
    const h = new Harness(
      [cleanup],
      handled(widget({ finalizers: [OTHER_FINALIZER, FINALIZER], deleting: true })),
    );
    const before = h.api.object;
    await h.deliver();
    const stale = withVersion(before, h.api.object.metadata?.resourceVersion);

    expect(await h.deliver({ object: stale })).toBeUndefined();

    expect(cleanup.calls).toHaveLength(1);
  });

  test('our finalizer, still on the object after a removal that failed, comes off without running delete handlers again', async () => {
    const cleanup = handler('delete', 'cleanup');
    const h = new Harness([cleanup], handled(widget({ finalizers: [FINALIZER], deleting: true })));
    h.api.failNext(500, 'jsonPatch');
    await h.deliver();
    expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);

    await h.deliver();

    expect(cleanup.calls).toHaveLength(1);
    expect(h.api.object.metadata?.finalizers ?? []).toEqual([]);
  });
});
