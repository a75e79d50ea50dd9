import { matchesObject } from '../../../src/framework/intents/filters.js';
import { defineMemo, ObjectMemos } from '../../../src/framework/intents/memo.js';
import { objectContext } from '../../../src/framework/intents/object-context.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { widget, widgetResource } from '../../support/widget-objects.js';

const client = {} as ApiClient;

describe('per-object memos', () => {
  test('an object gets its memo on first use, and the same memo after', () => {
    const memos = new ObjectMemos();
    const first = memos.of('uid-1');
    first.lastName = 'Alice';

    expect(memos.of('uid-1')).toBe(first);
    expect(memos.of('uid-1').lastName).toBe('Alice');
    expect(memos.of('uid-2')).not.toHaveProperty('lastName');
  });

  test('each memo starts as a shallow copy of the operator memo: its objects are shared, its keys are not', () => {
    const shared = new Map<string, number>();
    const memos = new ObjectMemos({ shared, greeting: 'hello' });
    const a = memos.of('a');
    const b = memos.of('b');

    a.greeting = 'bonjour';
    (a.shared as Map<string, number>).set('a', 1);

    expect(b.greeting).toBe('hello');
    expect(memos.operator.greeting).toBe('hello');
    expect(b.shared).toBe(shared);
    expect(shared.get('a')).toBe(1);
  });

  test('a forgotten object starts again from the operator memo', () => {
    const memos = new ObjectMemos({ count: 0 });
    memos.of('uid-1').count = 5;

    memos.forget('uid-1');

    expect(memos.size).toBe(0);
    expect(memos.of('uid-1').count).toBe(0);
  });

  test('a context makes no memo until a handler reads it', () => {
    const memos = new ObjectMemos();
    const context = objectContext(widget(), silentLogger(), widgetResource, client, memos);

    expect(memos.size).toBe(0);
    expect(context.memo).toBe(memos.of(context.uid));
    expect(memos.size).toBe(1);
  });

  test('a context keeps the memo it first read, even once the object is forgotten', () => {
    const memos = new ObjectMemos();
    const context = defineMemo({}, memos, 'uid-1');
    const memo = context.memo;

    memos.forget('uid-1');

    expect(context.memo).toBe(memo);
    expect(memos.size).toBe(0);
  });

  test("a `when` filter reads the memo its object's handlers filled", () => {
    const memos = new ObjectMemos();
    const scope = { resource: widgetResource, memos };
    const body = widget();
    const filters = { when: ({ memo }: { memo: Record<string, unknown> }) => 'last_name' in memo };

    expect(matchesObject(body, filters, scope)).toBe(false);
    memos.of(body.metadata!.uid!).last_name = 'Alice';
    expect(matchesObject(body, filters, scope)).toBe(true);
  });

  test("a `when` filter sees the object's parts and resource", () => {
    const body = widget();
    let seen: unknown;
    matchesObject(
      body,
      {
        when: (context) => (
          (seen = { name: context.name, spec: context.spec, plural: context.resource.plural }),
          true
        ),
      },
      { resource: widgetResource, memos: new ObjectMemos() },
    );

    expect(seen).toEqual({
      name: body.metadata?.name,
      spec: body.spec,
      plural: widgetResource.plural,
    });
  });
});
