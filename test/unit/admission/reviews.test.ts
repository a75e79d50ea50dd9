import { parseAdmissionReview } from '../../../src/framework/admission/admission-review.js';
import { parseConversionReview } from '../../../src/framework/admission/conversion-review.js';

const valid = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    operation: 'CREATE',
    object: { metadata: { name: 'c' } },
  },
};

describe('reading an AdmissionReview', () => {
  test('a review as the API server sends it is read, with defaults for what it may leave out', () => {
    const parsed = parseAdmissionReview(valid);
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        uid: 'u',
        operation: 'CREATE',
        dryRun: false,
        userInfo: { username: '', groups: [], extra: {} },
        oldObject: undefined,
      },
    });
  });

  test.each([
    ['not an object', [1, 2], 'expected a JSON object'],
    [
      'another API',
      { ...valid, apiVersion: 'admission.k8s.io/v1beta1' },
      'expected apiVersion admission.k8s.io/v1 and kind AdmissionReview',
    ],
    ['no request', { ...valid, request: undefined }, 'request is missing'],
    ['no uid', { ...valid, request: { ...valid.request, uid: '' } }, 'request.uid is missing'],
    [
      'an unknown operation',
      { ...valid, request: { ...valid.request, operation: 'PATCH' } },
      'request.operation must be one of',
    ],
    [
      'no resource',
      { ...valid, request: { ...valid.request, resource: 'configmaps' } },
      'request.kind and request.resource',
    ],
    [
      'an object that is not one',
      { ...valid, request: { ...valid.request, object: 'x' } },
      'request.object must be an object',
    ],
    [
      'metadata that is not an object',
      { ...valid, request: { ...valid.request, oldObject: { metadata: [] } } },
      'request.oldObject.metadata must be an object',
    ],
    [
      'a dryRun that is not a boolean',
      { ...valid, request: { ...valid.request, dryRun: 'yes' } },
      'request.dryRun must be a boolean',
    ],
  ])('%s is a problem, described, not thrown', (_what, body, problem) => {
    const parsed = parseAdmissionReview(body);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.problem).toContain(problem);
  });
});

describe('reading a ConversionReview', () => {
  const review = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: {
      uid: 'u',
      desiredAPIVersion: 'example.com/v2',
      objects: [{ apiVersion: 'example.com/v1' }],
    },
  };

  test('a review as the API server sends it is read', () => {
    expect(parseConversionReview(review)).toEqual({
      ok: true,
      value: {
        uid: 'u',
        desiredAPIVersion: 'example.com/v2',
        objects: [{ apiVersion: 'example.com/v1' }],
      },
    });
  });

  test.each([
    [
      'another kind',
      { ...review, kind: 'AdmissionReview' },
      'expected apiVersion apiextensions.k8s.io/v1 and kind ConversionReview',
    ],
    [
      'a version without group',
      { ...review, request: { ...review.request, desiredAPIVersion: 'v2' } },
      'desiredAPIVersion must be group/version',
    ],
    [
      'objects that are not a list',
      { ...review, request: { ...review.request, objects: {} } },
      'request.objects must be a list',
    ],
    [
      'an object without apiVersion',
      { ...review, request: { ...review.request, objects: [{ kind: 'Widget' }] } },
      'request.objects[0] must be an object with an apiVersion',
    ],
  ])('%s is a problem, described, not thrown', (_what, body, problem) => {
    const parsed = parseConversionReview(body);
    expect(parsed.ok ? '' : parsed.problem).toContain(problem);
  });
});
