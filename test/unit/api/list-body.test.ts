import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import { ListBodyReader } from '../../../src/framework/api/list-body.js';

/** Reads `body` in chunks of `size` bytes (or of 1 to 4 bytes at random when `size` is 0). */
function read(body: string, size = 0, keep: (item: unknown) => unknown = (item) => item) {
  const bytes = Buffer.from(body);
  const reader = new ListBodyReader(keep);
  for (let i = 0; i < bytes.length;) {
    const n = size || 1 + Math.floor(Math.random() * 4);
    reader.push(bytes.subarray(i, i + n));
    i += n;
  }
  return reader.end();
}

/** What parsing `body` whole gives, with `items` an array as the reader's always is. */
function whole(body: string): unknown {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  return { ...parsed, items: Array.isArray(parsed.items) ? parsed.items : [] };
}

const lists = {
  'an empty list':
    '{"apiVersion":"v1","items":[],"kind":"List","metadata":{"resourceVersion":"7"}}',
  'items of every JSON kind':
    '{"items":[1,-2.5e3,"s\\"]",null,true,[1,[2]],{"a":"]}"}],"kind":"L"}',
  'objects with nested arrays and escapes':
    '{"metadata":{"continue":"c"},"items":[{"metadata":{"name":"a","labels":{"k":"v\\\\"}},"spec":{"x":[{"y":[]}]}},{"metadata":{"name":"é"}}]}',
  'spaces between every token': ' { "items" : [ { } , { "x" : [ ] } ] , "metadata" : { } } ',
  '"items" as a nested key and as a value':
    '{"metadata":{"items":[9]},"kind":"items","a":[1],"items":[{"b":2}]}',
  'an items key spelt with an escape': '{"it\\u0065ms":[{"a":1}],"kind":"L"}',
  'a key with an escaped quote before items': '{"x\\"items":[5],"items":[{"a":1}]}',
  'items that are not an array': '{"items":"none"}',
};

describe('a list body read item by item', () => {
  test.each(Object.entries(lists))('gives what a whole parse gives: %s', (_, body) => {
    for (let trial = 0; trial < 50; trial++) expect(read(body)).toEqual(whole(body));
    expect(read(body, 1)).toEqual(whole(body));
    expect(read(body, 1 << 16)).toEqual(whole(body));
  });

  test('keeps each item as `keep` returns it, once per item', () => {
    const kept: unknown[] = [];
    const list = read('{"items":[{"n":1},{"n":2}],"metadata":{}}', 3, (item) => {
      kept.push(item);
      return (item as { n: number }).n * 10;
    });
    expect(kept).toEqual([{ n: 1 }, { n: 2 }]);
    expect(list).toEqual({ items: [10, 20], metadata: {} });
  });

  test('parses an item as soon as its last byte arrives, before the body ends', () => {
    const kept: unknown[] = [];
    const reader = new ListBodyReader((item) => kept.push(item));
    reader.push(Buffer.from('{"items":[{"n":1}'));
    expect(kept).toEqual([{ n: 1 }]);
    reader.push(Buffer.from(',{"n":2}],"metadata":{"resourceVersion":"3"}}'));
    expect(reader.end()).toEqual({ items: [1, 2], metadata: { resourceVersion: '3' } });
  });

  test('counts the bytes it read', () => {
    const reader = new ListBodyReader((item) => item);
    reader.push(Buffer.from('{"items":[]'));
    reader.push(Buffer.from('}'));
    expect(reader.bytes).toBe(12);
  });

  test.each([
    ['cut off inside an item', '{"items":[{"a":1'],
    ['cut off inside a string', '{"items":[],"kind":"L'],
    ['cut off after a bare item', '{"items":[12'],
    ['that is malformed inside an item', '{"items":[{"a":}]}'],
    ['that is an array, not an object', '[{"a":1}]'],
    ['that is empty', ''],
    ['that closes more than it opened', '{"items":[]}}'],
    ['with two items arrays', '{"items":[1],"items":[2]}'],
  ])('fails with a SyntaxError on a body %s', (_, body) => {
    expect(() => read(body, 2)).toThrow(SyntaxError);
  });
});

describe('a list read by the client', () => {
  let server: Server;
  let client: ApiClient;
  let answer: string;
  beforeEach(async () => {
    server = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'Content-Type': 'application/json' });
      // In small writes, so the body arrives in many chunks.
      for (let i = 0; i < answer.length; i += 7) response.write(answer.slice(i, i + 7));
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = new ApiClient({
      getCurrentCluster: () => ({ server: url }),
      applyToHTTPSOptions: async () => undefined,
    });
  });
  afterEach(async () => {
    client.close();
    await new Promise((resolve) => server.close(resolve));
  });

  test('keeps every item as it is read and returns the rest of the list', async () => {
    answer = JSON.stringify({
      items: Array.from({ length: 100 }, (_, n) => ({ metadata: { name: `o-${n}` } })),
      metadata: { resourceVersion: '9' },
    });
    const list = await client.list('/api/v1/configmaps', {}, (item) => {
      return (item as { metadata: { name: string } }).metadata.name;
    });
    expect(list.items).toHaveLength(100);
    expect(list.items[99]).toBe('o-99');
    expect(list.metadata).toEqual({ resourceVersion: '9' });
  });

  test('lets an error of `keep` through as it is, not as a failed connection', async () => {
    answer = '{"items":[{"a":1}]}';
    const failure = client.list('/api/v1/configmaps', {}, () => {
      throw new TypeError('a bug in keep');
    });
    await expect(failure).rejects.toThrow(new TypeError('a bug in keep'));
  });

  test('fails with an ApiError naming the request when the body is not a list', async () => {
    answer = '{"items":[{"a":';
    const failure = client.list('/api/v1/configmaps', {}, (item) => item);
    await expect(failure).rejects.toBeInstanceOf(ApiError);
    await expect(failure).rejects.toThrow('GET /api/v1/configmaps: the response is not JSON');
  });
});
