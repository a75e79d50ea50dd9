import { dispatchConversion } from '../../../src/framework/admission/conversion-dispatch.js';
import {
  silentLogger,
  type ConversionContext,
  type KubeObject,
} from '../../../src/framework/index.js';
import { type ConversionSpec } from '../../../src/framework/intents/admission-specs.js';

/** v1 has `spec.size`; v2 renamed it `spec.replicas`. */
function convert({ object, toVersion }: ConversionContext): KubeObject {
  const spec = (object.spec ?? {}) as { size?: number; replicas?: number };
  if (spec.size === -1) throw new Error('size -1 has no v2 equivalent');
  return toVersion === 'example.com/v2'
    ? { ...object, spec: { replicas: spec.size } }
    : { ...object, spec: { size: spec.replicas } };
}

const converter: ConversionSpec = {
  id: 'Widgets.convert',
  group: 'example.com',
  name: 'widgets',
  fn: convert,
};
const v1 = (name: string, size: number): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, namespace: 'team-a' },
  spec: { size },
});

describe('converting the objects of a ConversionReview', () => {
  test('objects round-trip v1 → v2 → v1 unchanged, each with the desired apiVersion', async () => {
    const objects = [v1('a', 1), v1('b', 2)];
    const up = await dispatchConversion(
      converter,
      { uid: 'u1', desiredAPIVersion: 'example.com/v2', objects },
      silentLogger(),
    );
    expect(up.result).toEqual({ status: 'Success' });
    expect(up.convertedObjects.map((o) => [o.apiVersion, o.spec])).toEqual([
      ['example.com/v2', { replicas: 1 }],
      ['example.com/v2', { replicas: 2 }],
    ]);
    const down = await dispatchConversion(
      converter,
      { uid: 'u2', desiredAPIVersion: 'example.com/v1', objects: up.convertedObjects },
      silentLogger(),
    );
    expect(down).toEqual({ uid: 'u2', convertedObjects: objects, result: { status: 'Success' } });
  });

  test('objects already at the desired version pass through untouched, without calling the handler', async () => {
    const calls: string[] = [];
    const counting: ConversionSpec = {
      ...converter,
      fn: (context) => (calls.push(context.object.metadata!.name!), convert(context)),
    };
    const already = {
      apiVersion: 'example.com/v2',
      kind: 'Widget',
      metadata: { name: 'z' },
      spec: { replicas: 9 },
      extra: 'kept',
    };
    const response = await dispatchConversion(
      counting,
      { uid: 'u', desiredAPIVersion: 'example.com/v2', objects: [already, v1('a', 1)] },
      silentLogger(),
    );
    expect(response.convertedObjects[0]).toBe(already);
    expect(calls).toEqual(['a']);
  });

  test('a handler error fails the whole request with a message naming the object', async () => {
    const response = await dispatchConversion(
      converter,
      { uid: 'u', desiredAPIVersion: 'example.com/v2', objects: [v1('a', 1), v1('bad', -1)] },
      silentLogger(),
    );
    expect(response).toEqual({
      uid: 'u',
      convertedObjects: [],
      result: {
        status: 'Failure',
        message:
          'converting Widget team-a/bad from example.com/v1 to example.com/v2 failed: size -1 has no v2 equivalent',
      },
    });
  });

  test('a handler that returns no object fails the request', async () => {
    const broken: ConversionSpec = { ...converter, fn: () => undefined as unknown as KubeObject };
    const response = await dispatchConversion(
      broken,
      { uid: 'u', desiredAPIVersion: 'example.com/v2', objects: [v1('a', 1)] },
      silentLogger(),
    );
    expect(response.result).toEqual({
      status: 'Failure',
      message:
        'converting Widget team-a/a from example.com/v1 to example.com/v2: Widgets.convert returned no object',
    });
  });

  test('a version of another group is refused', async () => {
    const response = await dispatchConversion(
      converter,
      { uid: 'u', desiredAPIVersion: 'other.io/v2', objects: [v1('a', 1)] },
      silentLogger(),
    );
    expect(response.result).toEqual({
      status: 'Failure',
      message: 'cannot convert to other.io/v2: this webhook converts widgets.example.com',
    });
  });

  test('the handler gets a copy: changing it in place does not change the request', async () => {
    const inPlace: ConversionSpec = {
      ...converter,
      fn: ({ object }) => Object.assign(object, { spec: { replicas: 1 } }),
    };
    const original = v1('a', 1);
    await dispatchConversion(
      inPlace,
      { uid: 'u', desiredAPIVersion: 'example.com/v2', objects: [original] },
      silentLogger(),
    );
    expect(original.spec).toEqual({ size: 1 });
  });
});
