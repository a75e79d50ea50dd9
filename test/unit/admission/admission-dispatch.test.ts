import {
  dispatchAdmission,
  type AdmissionScope,
} from '../../../src/framework/admission/admission-dispatch.js';
import {
  parseAdmissionReview,
  type AdmissionRequest,
} from '../../../src/framework/admission/admission-review.js';
import { jsonPatchDiff } from '../../../src/framework/admission/json-patch.js';
import {
  AdmissionError,
  ApiClient,
  PRESENT,
  silentLogger,
  type AdmissionContext,
  type KubeObject,
  type MutationContext,
} from '../../../src/framework/index.js';
import {
  type AdmissionOptions,
  type AdmissionSpec,
} from '../../../src/framework/intents/admission-specs.js';

const widget: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w1', namespace: 'team-a', labels: { app: 'w' } },
  spec: { size: 3 },
};

function request(overrides: Record<string, unknown> = {}): AdmissionRequest {
  const parsed = parseAdmissionReview({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'req-1',
      kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
      resource: { group: 'example.com', version: 'v1', resource: 'widgets' },
      name: 'w1',
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: {
        username: 'alice',
        uid: 'u-1',
        groups: ['devs', 'system:authenticated'],
        extra: { scopes: ['a'] },
      },
      object: widget,
      oldObject: null,
      dryRun: false,
      ...overrides,
    },
  });
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.value;
}

const scope: AdmissionScope = {
  resource: {
    group: 'example.com',
    version: 'v1',
    plural: 'widgets',
    kind: 'Widget',
    namespaced: true,
    hasStatus: true,
  },
  client: new ApiClient({
    getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
    applyToHTTPSOptions: async () => undefined,
  }),
  logger: silentLogger(),
};

function spec(
  kind: AdmissionSpec['kind'],
  fn: (context: MutationContext) => unknown,
  options: AdmissionOptions = {},
): AdmissionSpec {
  return {
    kind,
    id: 'Widgets.check',
    resource: { apiVersion: 'example.com/v1', name: 'widgets' },
    options,
    fn,
  };
}

/** The JSON patch of an answer, decoded. */
function patchOf(response: { patch?: string }): unknown {
  return response.patch === undefined
    ? undefined
    : JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
}

describe('answering one admission request with one handler', () => {
  test('a handler that returns admits, echoing the request uid', async () => {
    expect(
      await dispatchAdmission(
        spec('validate', () => undefined),
        request(),
        scope,
      ),
    ).toEqual({ uid: 'req-1', allowed: true });
  });

  test('AdmissionError refuses with the handler’s message and code', async () => {
    const refuse = (): never => {
      throw new AdmissionError('spec.size must be at most 2', { code: 422 });
    };
    expect(await dispatchAdmission(spec('validate', refuse), request(), scope)).toEqual({
      uid: 'req-1',
      allowed: false,
      status: { code: 422, message: 'spec.size must be at most 2' },
    });
  });

  test('any other error refuses as a 500 naming the handler', async () => {
    const fail = async (): Promise<never> => {
      throw new TypeError('cannot read size');
    };
    expect(await dispatchAdmission(spec('validate', fail), request(), scope)).toEqual({
      uid: 'req-1',
      allowed: false,
      status: { code: 500, message: 'Widgets.check failed: cannot read size' },
    });
  });

  test('a handler running past its time answers 500 "timed out" before the API server gives up', async () => {
    const hang = (): Promise<never> => new Promise<never>(() => undefined);
    const response = await dispatchAdmission(
      spec('validate', hang, { timeoutSeconds: 1 }),
      request(),
      scope,
    );
    expect(response).toEqual({
      uid: 'req-1',
      allowed: false,
      status: { code: 500, message: 'Widgets.check timed out' },
    });
  });

  test('objects failing labels, annotations, when or field filters are admitted without running the handler', async () => {
    const ran: string[] = [];
    const record = (name: string) => (): never => {
      ran.push(name);
      throw new AdmissionError('no');
    };
    const filtered: [string, AdmissionOptions][] = [
      ['labels', { labels: { app: 'other' } }],
      ['annotations', { annotations: { 'example.com/check': PRESENT } }],
      ['when', { when: ({ spec }) => Number(spec.size) > 5 }],
      ['field', { field: 'spec.color' }],
    ];
    for (const [name, options] of filtered)
      expect(
        await dispatchAdmission(spec('validate', record(name), options), request(), scope),
      ).toEqual({ uid: 'req-1', allowed: true });
    expect(ran).toEqual([]);
    expect(
      (
        await dispatchAdmission(
          spec('validate', record('matching'), {
            labels: { app: 'w' },
            field: 'spec.size',
            value: 3,
          }),
          request(),
          scope,
        )
      ).allowed,
    ).toBe(false);
  });

  test('operations the handler did not ask for are admitted without running it', async () => {
    const refuse = (): never => {
      throw new AdmissionError('no');
    };
    const response = await dispatchAdmission(
      spec('validate', refuse, { operations: ['CREATE'] }),
      request({ operation: 'UPDATE', oldObject: widget }),
      scope,
    );
    expect(response.allowed).toBe(true);
  });

  test('warnings pushed to ctx.warnings and returned as strings are both sent, with an admission or a refusal', async () => {
    const warn = ({ warnings }: AdmissionContext) => {
      warnings.push('size 3 is deprecated');
      return ['use spec.replicas'];
    };
    expect(await dispatchAdmission(spec('validate', warn), request(), scope)).toEqual({
      uid: 'req-1',
      allowed: true,
      warnings: ['size 3 is deprecated', 'use spec.replicas'],
    });
    const warnThenRefuse = ({ warnings }: AdmissionContext): never => {
      warnings.push('first this');
      throw new AdmissionError('then no');
    };
    expect(
      (await dispatchAdmission(spec('validate', warnThenRefuse), request(), scope)).warnings,
    ).toEqual(['first this']);
  });

  test('the handler sees the operation, old object, user info and dryRun of the request', async () => {
    let seen: Partial<AdmissionContext> = {};
    const look = (context: AdmissionContext) => {
      seen = {
        operation: context.operation,
        old: context.old,
        userInfo: context.userInfo,
        dryRun: context.dryRun,
        name: context.name,
        namespace: context.namespace,
        spec: context.spec,
      };
    };
    const old = { ...widget, spec: { size: 2 } };
    await dispatchAdmission(
      spec('validate', look, { operations: ['UPDATE'] }),
      request({ operation: 'UPDATE', oldObject: old, dryRun: true }),
      scope,
    );
    expect(seen).toEqual({
      operation: 'UPDATE',
      old,
      userInfo: {
        username: 'alice',
        uid: 'u-1',
        groups: ['devs', 'system:authenticated'],
        extra: { scopes: ['a'] },
      },
      dryRun: true,
      name: 'w1',
      namespace: 'team-a',
      spec: { size: 3 },
    });
  });

  test('on DELETE the handler’s body is the stored object', async () => {
    let body: unknown;
    const look = (context: AdmissionContext) => {
      body = context.body;
    };
    await dispatchAdmission(
      spec('validate', look, { operations: ['DELETE'] }),
      request({ operation: 'DELETE', object: null, oldObject: widget }),
      scope,
    );
    expect(body).toEqual(widget);
  });

  test('a mutating handler’s patch is answered as a JSON patch that, applied, gives the mutated object', async () => {
    const mutate = ({ patch }: MutationContext) => {
      patch.spec.size = 4;
      patch.spec.color = 'blue';
      patch.metadata.labels.app = null;
      patch.metadata.annotations['example.com/defaulted'] = 'true';
    };
    const response = await dispatchAdmission(spec('mutate', mutate), request(), scope);
    expect(response).toMatchObject({ uid: 'req-1', allowed: true, patchType: 'JSONPatch' });
    const mutated = {
      ...widget,
      metadata: {
        name: 'w1',
        namespace: 'team-a',
        labels: {},
        annotations: { 'example.com/defaulted': 'true' },
      },
      spec: { size: 4, color: 'blue' },
    };
    expect(patchOf(response)).toEqual(jsonPatchDiff(widget, mutated));
    expect(patchOf(response)).toEqual([
      { op: 'remove', path: '/metadata/labels/app' },
      { op: 'add', path: '/metadata/annotations', value: { 'example.com/defaulted': 'true' } },
      { op: 'replace', path: '/spec/size', value: 4 },
      { op: 'add', path: '/spec/color', value: 'blue' },
    ]);
  });

  test('a mutating handler whose patch changes nothing sends no patch', async () => {
    const same = ({ patch }: MutationContext) => {
      patch.spec.size = 3;
    };
    expect(await dispatchAdmission(spec('mutate', same), request(), scope)).toEqual({
      uid: 'req-1',
      allowed: true,
    });
  });

  test('a mutating handler that refuses sends no patch', async () => {
    const refuse = ({ patch }: MutationContext): never => {
      patch.spec.size = 4;
      throw new AdmissionError('no');
    };
    const response = await dispatchAdmission(spec('mutate', refuse), request(), scope);
    expect(response.patch).toBeUndefined();
    expect(response.allowed).toBe(false);
  });

  test('the handler gets the operator memo', async () => {
    let memo: unknown;
    await dispatchAdmission(
      spec('validate', (context) => (memo = context.memo.pool)),
      request(),
      { ...scope, memo: { pool: 'db' } },
    );
    expect(memo).toBe('db');
  });
});
