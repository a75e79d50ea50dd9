import { parseWatchLine } from '../../../src/framework/watching/watch-line.js';

const object = { metadata: { uid: 'u1', resourceVersion: '7', name: 'a' } };
const json = (type: unknown, body: unknown): string => JSON.stringify({ type, object: body });

describe('reading one line of a watch response', () => {
  test.each([
    ['an empty keep-alive line', '  ', { kind: 'blank' }],
    ['malformed JSON', '{"type":', { kind: 'skip', why: 'malformed JSON line in watch stream' }],
    [
      'an event without an object',
      json('ADDED', null),
      { kind: 'skip', why: 'watch event without an object' },
    ],
    [
      'a change without a UID',
      json('MODIFIED', { metadata: { resourceVersion: '1' } }),
      { kind: 'skip', why: 'MODIFIED event object without metadata.uid or resourceVersion' },
    ],
    [
      'an unknown type',
      json('RESIZED', object),
      { kind: 'skip', why: 'unknown watch event type "RESIZED"' },
    ],
    [
      'a bookmark',
      json('BOOKMARK', { metadata: { resourceVersion: '42' } }),
      { kind: 'bookmark', resourceVersion: '42' },
    ],
    ['a bookmark without a version', json('BOOKMARK', { metadata: {} }), { kind: 'bookmark' }],
    [
      'an expired resourceVersion',
      json('ERROR', { code: 410, message: 'too old' }),
      { kind: 'gone' },
    ],
    [
      'another error',
      json('ERROR', { code: 500, reason: 'InternalError' }),
      { kind: 'error', code: 500, message: 'error event', reason: 'InternalError' },
    ],
    ['a change', json('DELETED', object), { kind: 'change', type: 'DELETED', object }],
  ])('%s', (_, line, meaning) => {
    expect(parseWatchLine(line)).toEqual(meaning);
  });
});
