import { NEVER, Observable } from 'rxjs';
import type { Resource } from '../../../src/framework/api/resource.js';
import type { ActiveRoute } from '../../../src/framework/runtime/route.js';
import { QuietMemberWatches } from '../../../src/framework/runtime/quiet-members.js';
import type { WatchHub, WatchScope } from '../../../src/framework/watching/watch-hub.js';

const widgets = {
  group: 'example.com',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
} as Resource;

/** A hub whose watches record the scopes open now. */
function recordingHub(): { hub: WatchHub; open: WatchScope[] } {
  const open: WatchScope[] = [];
  const hub = {
    watch: (_resource: Resource, scope: WatchScope) =>
      new Observable(() => {
        open.push(scope);
        const subscription = NEVER.subscribe();
        return () => {
          open.splice(open.indexOf(scope), 1);
          subscription.unsubscribe();
        };
      }),
  } as unknown as WatchHub;
  return { hub, open };
}

function route(namespace: string): Pick<ActiveRoute, 'route' | 'unsharded'> {
  return {
    route: { resource: widgets } as ActiveRoute['route'],
    unsharded: { scope: { namespace, labelSelector: 'app=web' }, globs: undefined },
  };
}

describe('the watches of quiet members’ objects', () => {
  test('open one watch per route and member, scoped as an heir’s watch, from the cache', () => {
    const { hub, open } = recordingHub();
    new QuietMemberWatches(hub).watch([route('ns1'), route('ns2')], ['shard=b']);

    expect(open).toEqual([
      { namespace: 'ns1', labelSelector: 'app=web,shard=b', firstListFromCache: true },
      { namespace: 'ns2', labelSelector: 'app=web,shard=b', firstListFromCache: true },
    ]);
  });

  test('keep the watches of members still named, and close the others', () => {
    const { hub, open } = recordingHub();
    const quiet = new QuietMemberWatches(hub);
    quiet.watch([route('ns1')], ['shard=b', 'shard=c']);
    const kept = open[1];
    quiet.watch([route('ns1')], ['shard=c']);

    expect(open).toEqual([kept]);
  });

  test('open the watches of the members last named on routes that came since', () => {
    const { hub, open } = recordingHub();
    const quiet = new QuietMemberWatches(hub);
    quiet.watch([], ['shard=b']);
    quiet.watch([route('ns1')]);

    expect(open).toEqual([
      { namespace: 'ns1', labelSelector: 'app=web,shard=b', firstListFromCache: true },
    ]);
  });

  test('open a watch that failed again when the routes change', () => {
    let failures = 1;
    const opened: WatchScope[] = [];
    const hub = {
      watch: (_resource: Resource, scope: WatchScope) =>
        new Observable((subscriber) => {
          opened.push(scope);
          if (failures-- > 0) subscriber.error(new Error('forbidden'));
        }),
    } as unknown as WatchHub;
    const quiet = new QuietMemberWatches(hub);
    quiet.watch([route('ns1')], ['shard=b']);
    quiet.watch([route('ns1')]);

    expect(opened).toHaveLength(2);
  });

  test('open a watch that failed later again when the members change', () => {
    const opened: WatchScope[] = [];
    const failures: Array<() => void> = [];
    const hub = {
      watch: (_resource: Resource, scope: WatchScope) =>
        new Observable((subscriber) => {
          opened.push(scope);
          failures.push(() => subscriber.error(new Error('forbidden')));
        }),
    } as unknown as WatchHub;
    const quiet = new QuietMemberWatches(hub);
    quiet.watch([route('ns1')], ['shard=b']);
    failures[0]!();
    quiet.watch([route('ns1')], ['shard=b', 'shard=c']);

    expect(opened.map((scope) => scope.labelSelector)).toEqual([
      'app=web,shard=b',
      'app=web,shard=b',
      'app=web,shard=c',
    ]);
  });

  test('close every watch when stopped', () => {
    const { hub, open } = recordingHub();
    const quiet = new QuietMemberWatches(hub);
    quiet.watch([route('ns1')], ['shard=b']);
    quiet.stop();

    expect(open).toEqual([]);
  });
});
