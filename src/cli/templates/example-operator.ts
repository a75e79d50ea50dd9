import { EXAMPLE, exampleApiVersion, type ProjectSettings } from './settings.js';

/** src/handlers.ts: a reconcile keeping a child ConfigMap, a create handler and a timer on the example resource. */
export function handlersFile(settings: ProjectSettings): string {
  return `import { adopt, defineKind, kinds, on, timer, type ChangeContext, type CustomObject, type ReconcileContext, type TimerContext } from 'konductor';

/** What a user asks for in a ${EXAMPLE.kind} (see crds/${EXAMPLE.plural}.yaml). */
export interface ${EXAMPLE.kind}Spec {
  /** Who to greet. */
  name: string;
}

/** What the operator reports on a ${EXAMPLE.kind}. */
export interface ${EXAMPLE.kind}Status {
  phase?: string;
  message?: string;
  /** When the timer last looked at the object. */
  checkedAt?: string;
}

/** A ${EXAMPLE.kind} object, and its kind: what decorators and the client take. */
export type ${EXAMPLE.kind} = CustomObject<${EXAMPLE.kind}Spec, ${EXAMPLE.kind}Status>;
export const ${EXAMPLE.kind} = defineKind<${EXAMPLE.kind}>('${exampleApiVersion(settings)}', '${EXAMPLE.kind}', '${EXAMPLE.plural}');

/** The greeting for a spec: one pure function, used by the reconcile. */
export function greetingFor(spec: ${EXAMPLE.kind}Spec): string {
  return \`Hello, \${spec.name}!\`;
}

/**
 * Keeps a ConfigMap with each ${EXAMPLE.kind}'s greeting (and its status.message) in line with its spec,
 * says hello once per new ${EXAMPLE.singular}, and checks every one of them periodically.
 * \`konductor run src/handlers.ts\` runs every exported class with handlers.
 */
export class ${EXAMPLE.kind}s {
  /**
   * Level-triggered: runs whenever the ${EXAMPLE.singular} or its ConfigMap changes (someone edits or deletes
   * it: it is put back), with the current state, never twice at once for one object.
   */
  @on.reconcile(${EXAMPLE.kind}, { owns: [kinds.ConfigMap] })
  async reconcile({ name, namespace, spec, body, client, patch, conditions, deleting, logger }: ReconcileContext<${EXAMPLE.kind}>): Promise<void> {
    if (deleting) {
      // Release here what the object owns outside the cluster: a finalizer holds it until this returns.
      logger.info({ name }, 'said goodbye');
      return;
    }
    const greeting = greetingFor(spec);
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { greeting } };
    await client.resource(kinds.ConfigMap).apply(adopt(configMap, body), { force: true });
    patch.status.phase = 'Ready';
    patch.status.message = greeting;
    conditions.set('Ready', true, { message: greeting });
  }

  /** Edge-triggered (Kopf's style): once per new ${EXAMPLE.singular}, for work that belongs to that moment. */
  @on.create(${EXAMPLE.kind})
  async created({ name, logger }: ChangeContext<${EXAMPLE.kind}>): Promise<void> {
    logger.info({ greeted: name }, 'a new ${EXAMPLE.singular}');
  }

  @timer(${EXAMPLE.kind}, { interval: 30 })
  async check({ patch }: TimerContext<${EXAMPLE.kind}>): Promise<void> {
    patch.status.checkedAt = new Date().toISOString();
  }
}
`;
}

/** crds/<plural>.yaml: the example resource, namespaced, with a status subresource. */
export function crdFile(settings: ProjectSettings): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${EXAMPLE.plural}.${settings.group}
spec:
  group: ${settings.group}
  scope: Namespaced
  names:
    kind: ${EXAMPLE.kind}
    plural: ${EXAMPLE.plural}
    singular: ${EXAMPLE.singular}
  versions:
    - name: ${EXAMPLE.version}
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Phase
          type: string
          jsonPath: .status.phase
        - name: Message
          type: string
          jsonPath: .status.message
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [name]
              properties:
                name:
                  type: string
                  description: Who to greet.
                  minLength: 1
                  maxLength: 253
            status:
              type: object
              properties:
                phase:
                  type: string
                message:
                  type: string
                checkedAt:
                  type: string
                  description: When the operator's timer last looked at the object.
              # The framework keeps its per-handler progress here.
              x-kubernetes-preserve-unknown-fields: true
`;
}

/** test/handlers.test.ts: the handlers against a real kube-apiserver and etcd (node:test, through tsx). */
export function handlersTestFile(settings: ProjectSettings): string {
  return `import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ApiClient, ApiError, kinds } from 'konductor';
import { TestControlPlane, applyManifests, installCrds, readCrds, runOperator, waitFor, type TestOperator } from 'konductor/testing';
import { ${EXAMPLE.kind}s, type ${EXAMPLE.kind} } from '../src/handlers.js';

const crds = fileURLToPath(new URL('../crds', import.meta.url));
const namespace = 'greetings-test';

let plane: TestControlPlane | undefined;
let operator: TestOperator | undefined;
let client: ApiClient | undefined;

/** The ${EXAMPLE.singular} as the API server has it, or undefined once it is gone. */
async function read${EXAMPLE.kind}(name: string): Promise<${EXAMPLE.kind} | undefined> {
  const path = \`/apis/${settings.group}/${EXAMPLE.version}/namespaces/\${encodeURIComponent(namespace)}/${EXAMPLE.plural}/\${encodeURIComponent(name)}\`;
  try {
    return await client!.request<${EXAMPLE.kind}>('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

before(async () => {
  // A real etcd and kube-apiserver on free local ports, removed by plane.stop().
  plane = await TestControlPlane.start();
  const kubeConfig = plane.kubeConfig();
  await installCrds(kubeConfig, readCrds(crds));
  await applyManifests(kubeConfig, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }]);
  client = new ApiClient(kubeConfig);
  operator = await runOperator({ kubeConfig, handlers: [${EXAMPLE.kind}s], namespaces: [namespace] });
});

after(async () => {
  await operator?.stop();
  client?.close();
  await plane?.stop();
});

test('a new ${EXAMPLE.singular} is greeted and checked by the timer', async () => {
  await applyManifests(plane!.kubeConfig(), [
    { apiVersion: '${exampleApiVersion(settings)}', kind: '${EXAMPLE.kind}', metadata: { name: 'hello', namespace }, spec: { name: 'world' } },
  ]);

  const greeted = await waitFor(async () => {
    const object = await read${EXAMPLE.kind}('hello');
    return object?.status?.message !== undefined && object.status.checkedAt !== undefined ? object : undefined;
  }, { what: 'the ${EXAMPLE.singular} to be greeted and checked' });

  assert.equal(greeted?.status?.phase, 'Ready');
  assert.equal(greeted?.status?.message, 'Hello, world!');
});

test('each ${EXAMPLE.singular} keeps a ConfigMap with its greeting, put back when someone deletes it', async () => {
  await applyManifests(plane!.kubeConfig(), [
    { apiVersion: '${exampleApiVersion(settings)}', kind: '${EXAMPLE.kind}', metadata: { name: 'kept', namespace }, spec: { name: 'sun' } },
  ]);
  const configMaps = client!.resource(kinds.ConfigMap);
  const first = await waitFor(() => configMaps.find({ namespace, name: 'kept' }), { what: 'the ConfigMap' });
  assert.equal(first?.data?.greeting, 'Hello, sun!');

  await configMaps.delete({ namespace, name: 'kept' });

  const back = await waitFor(async () => {
    const current = await configMaps.find({ namespace, name: 'kept' });
    return current && current.metadata?.uid !== first?.metadata?.uid ? current : undefined;
  }, { what: 'the ConfigMap put back' });
  assert.equal(back?.data?.greeting, 'Hello, sun!');
});

test('a deleted ${EXAMPLE.singular} goes away once its last reconcile has run', async () => {
  await applyManifests(plane!.kubeConfig(), [
    { apiVersion: '${exampleApiVersion(settings)}', kind: '${EXAMPLE.kind}', metadata: { name: 'bye', namespace }, spec: { name: 'moon' } },
  ]);
  await waitFor(async () => (await read${EXAMPLE.kind}('bye'))?.status?.phase === 'Ready', { what: 'the ${EXAMPLE.singular} to be ready' });

  await client!.request('DELETE', \`/apis/${settings.group}/${EXAMPLE.version}/namespaces/\${encodeURIComponent(namespace)}/${EXAMPLE.plural}/bye\`);

  await waitFor(async () => (await read${EXAMPLE.kind}('bye')) === undefined, { what: 'the ${EXAMPLE.singular} to be deleted' });
});
`;
}
