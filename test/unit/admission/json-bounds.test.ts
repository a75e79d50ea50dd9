import {
  checkJsonBounds,
  DEFAULT_JSON_LIMITS,
  JsonBounds,
  type JsonLimits,
} from '../../../src/framework/admission/json-bounds.js';

const limits: JsonLimits = { maxValues: 10, maxDepth: 3 };
const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const scan = (text: string, within: JsonLimits = limits) => checkJsonBounds(bytes(text), within);

/** The values `JSON.parse` makes of a text: every object, array and scalar, keys not counted. */
function parsedValues(value: unknown): number {
  if (Array.isArray(value))
    return 1 + value.reduce((sum: number, item) => sum + parsedValues(item), 0);
  if (value !== null && typeof value === 'object')
    return 1 + Object.values(value).reduce((sum: number, item) => sum + parsedValues(item), 0);
  return 1;
}

describe('counting the values of a JSON text before it is parsed', () => {
  test('objects, arrays, strings, numbers and literals each count once; object keys do not', () => {
    expect(scan('{"a":1,"b":[true,false,null],"c":"x","d":{}}').values).toBe(8);
  });

  test('the count is what JSON.parse makes, for a Kubernetes-shaped object', () => {
    const text = JSON.stringify({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: 'web', namespace: 'team-a', labels: { app: 'web' }, annotations: {} },
      spec: {
        endpoints: [
          {
            port: 'http',
            interval: '30s',
            relabelings: [{ sourceLabels: ['__meta_pod'], regex: '(.+)', replacement: '$1' }],
          },
        ],
        selector: { matchLabels: { app: 'web' } },
      },
      status: { observed: -1.5e3, ok: true, nothing: null },
    });
    expect(checkJsonBounds(bytes(text), DEFAULT_JSON_LIMITS).values).toBe(
      parsedValues(JSON.parse(text)),
    );
  });

  test('brackets, commas, colons and quotes inside strings are not structure', () => {
    expect(scan('["[{,:}]", "a\\"[[[[", "\\\\", "{"]').values).toBe(5);
    expect(scan('{"[[[[": "]]]]"}').values).toBe(2);
  });

  test('whitespace between tokens changes nothing', () => {
    expect(scan(' [ 1 ,\n\t2 ,\r\n{ "a" : 3 } ] ').values).toBe(5);
  });

  test('multi-byte characters and escapes inside strings are skipped whole', () => {
    expect(scan('["grüße \\u005b [", "日本語]"]').values).toBe(3);
  });

  test('a text with exactly the most values allowed passes; one more is refused, naming the limit', () => {
    const atLimit = `[${Array(9).fill('{}').join(',')}]`;
    expect(scan(atLimit)).toEqual({ values: 10, excess: undefined });
    const past = `[${Array(10).fill('{}').join(',')}]`;
    expect(scan(past).excess).toEqual({
      limit: 'maxValues',
      reason: 'the request body holds more than 10 JSON values',
    });
  });

  test('nesting exactly as deep as allowed passes; one level more is refused, naming the limit', () => {
    expect(scan('[[[1]]]').excess).toBeUndefined();
    expect(scan('[[[[1]]]]').excess).toEqual({
      limit: 'maxDepth',
      reason: 'the request body nests JSON deeper than 3 levels',
    });
    expect(scan('{"a":{"b":{"c":{}}}}').excess?.limit).toBe('maxDepth');
  });

  test('depth is what is open at once, not how many containers there are', () => {
    expect(scan('[[[1]],[[2]],[[3]]]').excess).toBeUndefined();
  });

  test('large numbers of values are refused at the chunk that crosses the limit, before the rest arrives', () => {
    const bounds = new JsonBounds({ maxValues: 1_000, maxDepth: 10 });
    const chunk = bytes(`${Array(400).fill('{}').join(',')},`);
    expect([bounds.feed(bytes('[')), bounds.feed(chunk), bounds.feed(chunk)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(bounds.feed(chunk)?.limit).toBe('maxValues');
    expect(bounds.feed(bytes('{}]'))?.limit).toBe('maxValues');
  });

  test('chunks split anywhere, inside escapes and characters too, give the count of the whole', () => {
    const text = bytes('{"k\\"ey":["a\\\\",{"b":"ü\\"]"},[1,22,333]],"z":null}');
    const whole = checkJsonBounds(text, DEFAULT_JSON_LIMITS).values;
    for (let cut = 1; cut < text.length; cut++) {
      const bounds = new JsonBounds(DEFAULT_JSON_LIMITS);
      bounds.feed(text.subarray(0, cut));
      bounds.feed(text.subarray(cut));
      expect([cut, bounds.values]).toEqual([cut, whole]);
    }
  });

  test('the defaults let a 3 MiB object of ordinary shape through and stop an 8 MiB list of empty objects at the limit', () => {
    const item = {
      name: 'container-0',
      image: 'registry.example.com/team/app:1.2.3',
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      env: [{ name: 'MODE', value: 'production' }],
    };
    const large = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: Array(Math.floor((3 * 1024 * 1024) / JSON.stringify(item).length)).fill(item),
    });
    expect(checkJsonBounds(bytes(large)).excess).toBeUndefined();
    const flood = bytes(`[${'{},'.repeat(Math.floor((8 * 1024 * 1024) / 3) - 1)}{}]`);
    const { values, excess } = checkJsonBounds(flood);
    expect([values, excess?.limit]).toEqual([DEFAULT_JSON_LIMITS.maxValues + 1, 'maxValues']);
  });
});
