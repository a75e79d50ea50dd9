import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { Reactor } from '../../../src/framework/reactor/reactor.js';
import { watchResource } from '../../../src/framework/watching/watch-stream.js';
import { widgetResource, type Widget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

describe('the reactor under an update storm on a real API server', () => {
  test('1,000 rapid updates to one object cause far fewer runs, never two at once, and the last run sees the final state', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('storm');
    await widgets.create('stormy', { size: 0 });

    let runs = 0;
    let running = 0;
    let maxRunning = 0;
    let lastSeen = -1;
    const reactor = new Reactor<Widget, undefined>(async ({ latest }) => {
      runs += 1;
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await sleep(100); // a handler doing some work: slower than updates arrive
      lastSeen = latest.object.spec?.size ?? -1;
      running -= 1;
    });
    const client = new ApiClient(kc);
    reactor.consume(watchResource<Widget>(client, widgetResource, { namespace }), undefined);
    try {
      // 999 updates with 20 in flight at a time, then the final state once all of those have landed.
      const started = Date.now();
      for (let size = 1; size < 1_000; size += 20) {
        const batch = Array.from({ length: Math.min(20, 1_000 - size) }, (_, i) =>
          widgets.patchSpec('stormy', { size: size + i }),
        );
        await Promise.all(batch);
      }
      await widgets.patchSpec('stormy', { size: 1_000 });
      await waitFor(() => lastSeen === 1_000, {
        what: 'a run to see the final state',
        timeoutMs: 30_000,
      });
      await reactor.onIdle();
      const elapsedMs = Date.now() - started;

      // Coalescing: runs are bounded by what one serial 100 ms handler can do in the time the storm
      // took (however slow a loaded machine makes the updates), and far below one per update.
      expect(runs).toBeLessThanOrEqual(Math.ceil(elapsedMs / 100) + 1);
      expect(runs).toBeLessThan(1_000);
      expect(maxRunning).toBe(1);
      expect(lastSeen).toBe(1_000);
    } finally {
      await reactor.stop(1_000);
      client.close();
    }
  });
});
