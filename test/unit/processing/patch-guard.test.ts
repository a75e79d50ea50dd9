import { emptyPatch } from '../../../src/framework/intents/patch.js';
import { guardHandlerPatch } from '../../../src/framework/processing/patch-guard.js';
import { DIFF_BASE_KEY, FINALIZER } from '../../../src/framework/state/keys.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const held: KubeObject = {
  metadata: { name: 'w', namespace: 'default', uid: 'u', finalizers: [FINALIZER] },
};
const free: KubeObject = { metadata: { name: 'w', namespace: 'default', uid: 'u' } };

describe('guardHandlerPatch', () => {
  test('passes an ordinary patch through unchanged', () => {
    const patch = emptyPatch();
    patch.spec.size = 3;
    patch.metadata.labels.tier = 'gold';
    expect(guardHandlerPatch(patch, held)).toEqual({ patch });
  });

  test.each([
    'uid',
    'resourceVersion',
    'name',
    'namespace',
    'generation',
    'creationTimestamp',
    'deletionTimestamp',
    'managedFields',
  ])('refuses a patch that sets metadata.%s, naming it', (field) => {
    const patch = emptyPatch();
    patch.metadata[field] = 'x';
    expect(guardHandlerPatch(patch, held).problem).toContain(`metadata.${field}`);
  });

  test('refuses a patch that sets or removes a framework annotation', () => {
    const patch = emptyPatch();
    patch.metadata.annotations[DIFF_BASE_KEY] = null;
    expect(guardHandlerPatch(patch, held).problem).toContain(
      `metadata.annotations['${DIFF_BASE_KEY}']`,
    );
  });

  test('keeps the framework finalizer in a replaced finalizer list while the object holds it', () => {
    const patch = emptyPatch();
    patch.metadata.finalizers = ['example.com/other'];
    expect(guardHandlerPatch(patch, held).patch?.metadata.finalizers).toEqual([
      'example.com/other',
      FINALIZER,
    ]);
  });

  test('keeps the framework finalizer when a handler removes the whole list', () => {
    const patch = emptyPatch();
    patch.metadata.finalizers = null;
    expect(guardHandlerPatch(patch, held).patch?.metadata.finalizers).toEqual([FINALIZER]);
  });

  test('leaves a finalizer list alone on an object the framework does not hold', () => {
    const patch = emptyPatch();
    patch.metadata.finalizers = ['example.com/other'];
    expect(guardHandlerPatch(patch, free).patch?.metadata.finalizers).toEqual([
      'example.com/other',
    ]);
  });
});
