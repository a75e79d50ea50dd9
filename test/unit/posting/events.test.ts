import { jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  EventSink,
  EventType,
  InvolvedObject,
} from '../../../src/framework/posting/event-poster.js';
import { EventScope } from '../../../src/framework/posting/event-scope.js';
import { events, objectEvents } from '../../../src/framework/posting/events.js';

/** A sink that keeps what was posted to it, as `type reason name: message`. */
class RecordingSink implements EventSink {
  readonly posted: string[] = [];
  post(object: InvolvedObject, type: EventType, reason: string, message: string): void {
    this.posted.push(`${type} ${reason} ${object.metadata?.name}: ${message}`);
  }
}

const widget = (name: string): InvolvedObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, namespace: 'default' },
});

function openScope(): { sink: RecordingSink; scope: EventScope } {
  const sink = new RecordingSink();
  const scope = new EventScope(sink);
  scope.activate();
  return { sink, scope };
}

describe('events.* post to the operator whose work calls them', () => {
  test('info, warn and error inside a scope reach that scope’s sink as Normal, Warning and Warning', () => {
    const { sink, scope } = openScope();
    scope.run(() => {
      events.info(widget('a'), 'Created', 'made');
      events.warn(widget('a'), 'Slow', 'took long');
      events.error(widget('a'), 'Failed', 'broke');
    });
    expect(sink.posted).toEqual([
      'Normal Created a: made',
      'Warning Slow a: took long',
      'Warning Failed a: broke',
    ]);
  });

  test('two scopes running at once keep their Events apart, across awaits and timers', async () => {
    // Real timers: Node's carry the async context into their callbacks, which is what is tested here;
    // fake ones call back from the test's own context. Nothing is timed, so load cannot fail it.
    const first = openScope();
    const second = openScope();
    const work = (scope: EventScope, name: string): Promise<void> =>
      scope.run(async () => {
        await sleep(5);
        events.info(widget(name), 'AfterAwait', 'later');
        await new Promise<void>((resolve) =>
          setTimeout(() => {
            events.info(widget(name), 'InTimer', 'later still');
            resolve();
          }, 5),
        );
      });
    await Promise.all([work(first.scope, 'one'), work(second.scope, 'two')]);
    expect(first.sink.posted).toEqual([
      'Normal AfterAwait one: later',
      'Normal InTimer one: later still',
    ]);
    expect(second.sink.posted).toEqual([
      'Normal AfterAwait two: later',
      'Normal InTimer two: later still',
    ]);
  });

  test('a deactivated scope drops its Events while another scope keeps posting', () => {
    const stopped = openScope();
    const running = openScope();
    stopped.scope.deactivate();
    stopped.scope.run(() => events.warn(widget('gone'), 'Late', 'after stop'));
    running.scope.run(() => events.warn(widget('alive'), 'Still', 'posting'));
    expect(stopped.sink.posted).toEqual([]);
    expect(running.sink.posted).toEqual(['Warning Still alive: posting']);
  });

  test('outside every operator the Event is dropped and the process warns once', () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      events.info(widget('a'), 'Nowhere', 'first');
      events.warn(widget('b'), 'Nowhere', 'second');
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('outside any running operator'), {
        code: 'KONDUCTOR_EVENT_OUTSIDE_OPERATOR',
      });
    } finally {
      warn.mockRestore();
    }
  });
});

describe('objectEvents (ctx.events)', () => {
  test('info, warn and error are about the context’s object; post names another object and its type', () => {
    const { sink, scope } = openScope();
    const own = scope.run(() => objectEvents(widget('mine')));
    own.info('Ready', 'serving');
    own.warn('Degraded', 'one replica');
    own.error('Broken', 'none left');
    own.post(widget('child'), 'Normal', 'Adopted', 'by mine');
    expect(sink.posted).toEqual([
      'Normal Ready mine: serving',
      'Warning Degraded mine: one replica',
      'Warning Broken mine: none left',
      'Normal Adopted child: by mine',
    ]);
  });

  test('a context keeps the operator that built it, even when called from another operator’s work', () => {
    const builder = openScope();
    const other = openScope();
    const own = builder.scope.run(() => objectEvents(widget('mine')));
    other.scope.run(() => own.info('Ready', 'serving'));
    expect(builder.sink.posted).toEqual(['Normal Ready mine: serving']);
    expect(other.sink.posted).toEqual([]);
  });

  test('a context built outside every operator posts through the operator running the call', () => {
    const { sink, scope } = openScope();
    const unbound = objectEvents(widget('loose'));
    scope.run(() => unbound.warn('Late', 'bound at call time'));
    expect(sink.posted).toEqual(['Warning Late loose: bound at call time']);
  });
});
