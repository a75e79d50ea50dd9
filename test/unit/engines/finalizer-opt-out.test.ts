import type { ApiClient } from '../../../src/framework/api/api-client.js';
import type { ObjectApi } from '../../../src/framework/api/object-api.js';
import { daemon } from '../../../src/framework/decorators/daemon.js';
import { timer } from '../../../src/framework/decorators/timer.js';
import { DaemonEngine } from '../../../src/framework/engines/daemons.js';
import { TimerEngine } from '../../../src/framework/engines/timers.js';
import type { DaemonSpec, TimerSpec } from '../../../src/framework/intents/handler-specs.js';
import { finalizerStep } from '../../../src/framework/processing/finalizer-step.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import type { EventPoster } from '../../../src/framework/posting/events.js';
import { Registry } from '../../../src/framework/registry/registry.js';
import { WIDGET_API_VERSION, widget, widgetResource } from '../../support/widget-objects.js';

/**
 * `finalizer: false` on `@timer` and `@daemon`: work that needs no graceful stop does not make its
 * objects carry the framework finalizer, so their deletion never waits for the operator.
 */

const SELECTOR = { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural };
const poster = { post: () => undefined } as unknown as EventPoster;

function timers(...options: TimerSpec['options'][]): TimerEngine {
  return new TimerEngine({
    api: {} as ObjectApi, // nothing runs: only `applies` is asked
    timers: options.map((o, i) => ({
      kind: 'timer',
      id: `t${i}`,
      resource: SELECTOR,
      options: o,
      fn: () => undefined,
    })),
    logger: silentLogger(),
    poster,
  });
}

function daemons(...options: DaemonSpec['options'][]): DaemonEngine {
  return new DaemonEngine({
    resource: widgetResource,
    client: {} as ApiClient,
    daemons: options.map((o, i) => ({
      kind: 'daemon',
      id: `d${i}`,
      resource: SELECTOR,
      options: o,
      fn: () => undefined,
    })),
    logger: silentLogger(),
    poster,
  });
}

describe('finalizer: false on timers and daemons', () => {
  test('the decorators keep the option on the registered timer and daemon', () => {
    class Refresh {
      @timer(WIDGET_API_VERSION, 'widgets', { interval: 10, finalizer: false })
      refresh(): void {}

      @daemon(WIDGET_API_VERSION, 'widgets', { finalizer: false })
      async watch(): Promise<void> {}
    }
    const options = new Registry()
      .addClass(Refresh)
      .handlers.map((h) => (h.options as { finalizer?: boolean }).finalizer);
    expect(options).toEqual([false, false]);
  });

  test('a timer holds its objects with the finalizer by default, as in Kopf', () => {
    expect(timers({ interval: 10 }).applies(widget())).toBe(true);
    expect(daemons({}).applies(widget())).toBe(true);
  });

  test('a timer or daemon with finalizer: false does not hold its objects', () => {
    expect(timers({ interval: 10, finalizer: false }).applies(widget())).toBe(false);
    expect(daemons({ finalizer: false }).applies(widget())).toBe(false);
  });

  test('one timer that needs a graceful stop is enough for the object to be held', () => {
    expect(timers({ interval: 10, finalizer: false }, { interval: 10 }).applies(widget())).toBe(
      true,
    );
  });

  test('an object only such timers want gets no finalizer, and one it carried from before comes off', () => {
    const base = { handled: false, held: false, deleteHandled: false, deleting: false };
    expect(finalizerStep({ ...base, hasFinalizer: false })).toEqual({
      finalizer: 'keep',
      then: 'stop',
    });
    expect(finalizerStep({ ...base, hasFinalizer: true })).toEqual({
      finalizer: 'remove',
      then: 'stop',
    });
  });
});
