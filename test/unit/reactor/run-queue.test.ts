import { RunQueue, type QueueTicket } from '../../../src/framework/reactor/run-queue.js';

interface Entry extends QueueTicket {
  name: string;
}
const entry = (name: string): Entry => ({ name });

function drain(queue: RunQueue<Entry>): string[] {
  const taken: string[] = [];
  for (let next = queue.take(); next; next = queue.take()) taken.push(next.name);
  return taken;
}

describe('RunQueue', () => {
  test('takes the highest priority first, and first in first out within a priority', () => {
    const queue = new RunQueue<Entry>();
    for (const [name, priority] of [
      ['b1', 0],
      ['l1', 1],
      ['b2', 0],
      ['l2', 1],
    ] as const)
      queue.add(entry(name), priority);

    expect(queue.size).toBe(4);
    expect(drain(queue)).toEqual(['l1', 'l2', 'b1', 'b2']);
    expect(queue.size).toBe(0);
  });

  test('an entry queued again at a higher priority moves to the back of that line and is taken once', () => {
    const queue = new RunQueue<Entry>();
    const moved = entry('moved');
    queue.add(entry('b1'), 0);
    queue.add(moved, 0);
    queue.add(entry('b2'), 0);
    queue.add(entry('l1'), 1);
    queue.add(moved, 1);

    expect(queue.size).toBe(4);
    expect(drain(queue)).toEqual(['l1', 'moved', 'b1', 'b2']);
  });

  test('an entry taken and queued again waits at its new place only', () => {
    const queue = new RunQueue<Entry>();
    const again = entry('again');
    queue.add(again, 0);
    queue.add(entry('other'), 0);
    queue.add(again, 1); // its backlog place is now stale
    expect(queue.take()).toBe(again);
    queue.add(again, 0); // queued again behind 'other'

    expect(drain(queue)).toEqual(['other', 'again']);
  });

  test('removed and cleared entries are never taken', () => {
    const queue = new RunQueue<Entry>();
    const removed = entry('removed');
    queue.add(removed, 0);
    queue.add(entry('kept'), 0);
    queue.remove(removed);
    expect(queue.has(removed)).toBe(false);
    expect(drain(queue)).toEqual(['kept']);

    queue.add(entry('x'), 0);
    queue.add(entry('y'), 1);
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.take()).toBeUndefined();
  });

  test('100,000 entries come out in order while the consumed front is released', () => {
    const queue = new RunQueue<Entry>();
    for (let i = 0; i < 100_000; i++) queue.add(entry(String(i)), 0);
    const taken = drain(queue);

    expect(taken).toHaveLength(100_000);
    expect(taken.every((name, i) => name === String(i))).toBe(true);
  });
});
