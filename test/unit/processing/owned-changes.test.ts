import type { OwnedChange } from '../../../src/framework/intents/owned-specs.js';
import {
  coalesceOwnedChange,
  type PendingOwnedChanges,
} from '../../../src/framework/processing/owned-changes.js';

function change(uid: string, event: OwnedChange['event'], data: string): OwnedChange {
  return {
    event,
    child: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uid, uid }, data: { v: data } },
  };
}

function summary(pending: PendingOwnedChanges): string[] {
  return [...pending.values()].map(
    ({ event, child }) => `${child.metadata?.uid} ${event} ${(child.data as { v: string }).v}`,
  );
}

describe('coalescing child changes for one owner run (coalesceOwnedChange)', () => {
  test('keeps the newest change per child', () => {
    const pending: PendingOwnedChanges = new Map();
    coalesceOwnedChange(pending, change('a', 'ADDED', '1'));
    coalesceOwnedChange(pending, change('a', 'MODIFIED', '2'));
    coalesceOwnedChange(pending, change('a', 'MODIFIED', '3'));

    expect(summary(pending)).toEqual(['a MODIFIED 3']);
  });

  test('keeps every child, in the order they last changed', () => {
    const pending: PendingOwnedChanges = new Map();
    coalesceOwnedChange(pending, change('a', 'MODIFIED', '1'));
    coalesceOwnedChange(pending, change('b', 'MODIFIED', '1'));
    coalesceOwnedChange(pending, change('a', 'MODIFIED', '2'));

    expect(summary(pending)).toEqual(['b MODIFIED 1', 'a MODIFIED 2']);
  });

  test('a deletion replaces the child’s earlier changes', () => {
    const pending: PendingOwnedChanges = new Map();
    coalesceOwnedChange(pending, change('a', 'MODIFIED', '1'));
    coalesceOwnedChange(pending, change('a', 'DELETED', '1'));

    expect(summary(pending)).toEqual(['a DELETED 1']);
  });

  test('ignores a child without a uid', () => {
    const pending: PendingOwnedChanges = new Map();
    coalesceOwnedChange(pending, { event: 'ADDED', child: { metadata: { name: 'x' } } });

    expect(pending.size).toBe(0);
  });
});
