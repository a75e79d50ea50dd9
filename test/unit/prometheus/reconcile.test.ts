import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { ApiError, silentLogger, type ApiClient, type KubeObject } from 'konductor';
import { EventScope } from '../../../src/framework/posting/event-scope.js';
import {
  configSecret,
  INPUT_HASH,
  statefulSet,
} from '../../../src/handlers/prometheus/children.js';
import { generateConfig, gzipConfig } from '../../../src/handlers/prometheus/config.js';
import {
  readInputs,
  reconcile,
  removeChildren,
  ReportedProblems,
  type Inputs,
} from '../../../src/handlers/prometheus/reconcile.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';
import { fakeApiClient, fakeCache } from './fake-api-client.js';
import { type RequestInit } from '../../../src/framework/api/api-client.js';

type Prometheus = PrometheusResource & KubeObject;

const options = { configReloaderImage: 'quay.io/example/prometheus-config-reloader:v1' };
const inputs: Inputs = {
  monitors: [],
  podMonitors: [],
  rules: [],
  namespaces: [{ name: 'monitoring' }],
};
const SECRET = '/api/v1/namespaces/monitoring/secrets/prometheus-main';
const SERVICE = '/api/v1/namespaces/monitoring/services/prometheus-operated';
const SET = '/apis/apps/v1/namespaces/monitoring/statefulsets/prometheus-main';

function prometheusObject(
  spec: PrometheusResource['spec'] = { serviceMonitorSelector: {} },
): Prometheus {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'Prometheus',
    metadata: { name: 'main', namespace: 'monitoring', uid: 'uid-1' },
    spec,
  };
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as object) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * An in-memory API server for the paths reconcile uses, with merge patches. `racer` objects are
 * created by "someone else" the moment the operator POSTs to their collection, so its POST gets 409.
 */
class FakeApi {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: string[] = [];
  readonly racers = new Map<string, KubeObject>();

  readonly client: ApiClient = fakeApiClient(async (method, path, init = {}) =>
    this.request(method, path, init),
  );

  private request(method: string, path: string, init: RequestInit): unknown {
    if (method === 'GET') {
      const found = this.objects.get(path);
      if (found === undefined) throw new ApiError(404, `GET ${path}: 404 not found`, 'NotFound');
      return structuredClone(found);
    }
    this.writes.push(`${method} ${path}`);
    if (method === 'POST') {
      const body = init.body as KubeObject;
      const objectPath = `${path}/${body.metadata?.name}`;
      const racer = this.racers.get(objectPath);
      if (racer !== undefined) {
        this.racers.delete(objectPath);
        this.objects.set(objectPath, racer);
      }
      if (this.objects.has(objectPath))
        throw new ApiError(409, `POST ${path}: 409 already exists`, 'AlreadyExists');
      this.objects.set(objectPath, structuredClone(body));
      return body;
    }
    if (method === 'PATCH') {
      const current = this.objects.get(path);
      if (current === undefined)
        throw new ApiError(404, `PATCH ${path}: 404 not found`, 'NotFound');
      const patched = mergePatch(current, init.body) as KubeObject;
      this.objects.set(path, patched);
      return patched;
    }
    if (method === 'DELETE') {
      if (!this.objects.delete(path))
        throw new ApiError(404, `DELETE ${path}: 404 not found`, 'NotFound');
      return {};
    }
    throw new Error(`unexpected ${method} ${path}`);
  }
}

function wantedSecretData(prometheus: Prometheus): unknown {
  return configSecret(
    prometheus,
    gzipConfig(generateConfig(prometheus, inputs.monitors, inputs.namespaces).yaml),
  ).data;
}

describe('reconciling one Prometheus', () => {
  it('creates the config Secret, the governing Service and the StatefulSet when none exist', async () => {
    const api = new FakeApi();
    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(api.writes).toEqual([
      'POST /api/v1/namespaces/monitoring/secrets',
      'POST /api/v1/namespaces/monitoring/services',
      'POST /apis/apps/v1/namespaces/monitoring/statefulsets',
    ]);
  });

  it('a Secret of this Prometheus created meanwhile (409 on create) is read and patched to the wanted configuration', async () => {
    const api = new FakeApi();
    const prometheus = prometheusObject();
    const ownerReferences = [
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        name: 'main',
        uid: 'uid-1',
        controller: true,
      },
    ];
    api.racers.set(SECRET, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'prometheus-main', namespace: 'monitoring', ownerReferences },
      data: { 'prometheus.yaml.gz': 'c3RhbGU=' },
    });
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/secrets'))).toEqual([
      'POST /api/v1/namespaces/monitoring/secrets',
      `PATCH ${SECRET}`,
    ]);
    expect(api.objects.get(SECRET)?.data).toEqual(wantedSecretData(prometheus));
  });

  it('a Secret of its name that is not this Prometheus’s is neither patched nor deleted, and a Warning names it', async () => {
    const posted: string[] = [];
    const scope = new EventScope({
      post: (object, type, reason, message) =>
        posted.push(`${object.kind} ${object.metadata?.name} ${type} ${reason}: ${message}`),
    });
    scope.activate();
    const api = new FakeApi();
    const foreign = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'prometheus-main', namespace: 'monitoring' },
      data: { password: 'aHVudGVyMg==' },
    };
    api.racers.set(SECRET, foreign);

    await scope.run(async () => {
      await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
      await removeChildren(api.client, fakeCache(), prometheusObject());
    });
    expect(api.writes.filter((w) => w.includes('/secrets'))).toEqual([
      'POST /api/v1/namespaces/monitoring/secrets',
    ]);
    expect(api.objects.get(SECRET)?.data).toEqual(foreign.data);
    expect(posted).toContain(
      'Prometheus main Warning ForeignChild: Secret monitoring/prometheus-main exists but is not controlled by Prometheus monitoring/main (no controller owner reference with its uid): it is left untouched. Rename or delete it so the operator can make its own',
    );
  });

  it('a Secret created meanwhile with the wanted bytes is left as it is', async () => {
    const api = new FakeApi();
    const prometheus = prometheusObject();
    api.racers.set(SECRET, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'prometheus-main' },
      data: wantedSecretData(prometheus),
    });
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/secrets'))).toEqual([
      'POST /api/v1/namespaces/monitoring/secrets',
    ]);
  });

  it('a StatefulSet created meanwhile from other inputs is patched to this spec; one with the same input hash is not', async () => {
    const prometheus = prometheusObject();
    const stale = statefulSet(
      prometheusObject({ serviceMonitorSelector: {}, replicas: 3 }),
      options,
    );
    const api = new FakeApi();
    api.racers.set(SET, stale);
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/statefulsets'))).toEqual([
      'POST /apis/apps/v1/namespaces/monitoring/statefulsets',
      `PATCH ${SET}`,
    ]);
    const wanted = statefulSet(prometheus, options);
    expect(api.objects.get(SET)?.metadata?.annotations?.[INPUT_HASH]).toBe(
      wanted.metadata?.annotations?.[INPUT_HASH],
    );
    expect((api.objects.get(SET)?.spec as { replicas: number }).replicas).toBe(1);

    const same = new FakeApi();
    same.racers.set(SET, wanted);
    await reconcile(same.client, prometheus, inputs, silentLogger(), options);
    expect(same.writes.filter((w) => w.includes('/statefulsets'))).toEqual([
      'POST /apis/apps/v1/namespaces/monitoring/statefulsets',
    ]);
  });

  it('a governing Service another Prometheus created meanwhile is accepted as it is', async () => {
    const api = new FakeApi();
    api.racers.set(SERVICE, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'prometheus-operated', labels: { 'operated-prometheus': 'true' } },
      spec: {
        clusterIP: 'None',
        ports: [{ name: 'web', port: 9090, protocol: 'TCP', targetPort: 'web' }],
        selector: { 'app.kubernetes.io/name': 'prometheus' },
      },
    });
    const { status } = await reconcile(
      api.client,
      prometheusObject(),
      inputs,
      silentLogger(),
      options,
    );
    expect(api.writes.filter((w) => w.includes('/services'))).toEqual([
      'POST /api/v1/namespaces/monitoring/services',
    ]);
    expect(status.conditions.find((c) => c.type === 'Reconciled')?.status).toBe('True');
  });

  it('a 409 for an object that is gone again fails naming it, for the next attempt to create it', async () => {
    const api = new FakeApi();
    const gone = fakeApiClient(async (method, path, init) => {
      if (method === 'POST' && path.endsWith('/secrets'))
        throw new ApiError(409, `POST ${path}: 409 already exists`, 'AlreadyExists');
      return api.client.request(method, path, init);
    });
    await expect(
      reconcile(gone, prometheusObject(), inputs, silentLogger(), options),
    ).rejects.toThrow('Secret monitoring/prometheus-main was reported as existing but is gone');
  });

  it('a StatefulSet scaled by hand (its input hash unchanged) is patched back to the wanted replicas', async () => {
    const api = new FakeApi();
    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    (api.objects.get(SET)?.spec as { replicas: number }).replicas = 5;
    api.writes.length = 0;

    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(api.writes).toEqual([`PATCH ${SET}`]);
    expect((api.objects.get(SET)?.spec as { replicas: number }).replicas).toBe(1);
  });

  it('removing serviceAccountName removes it from the StatefulSet, the deprecated serviceAccount too', async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      prometheusObject({ serviceMonitorSelector: {}, serviceAccountName: 'prometheus' }),
      inputs,
      silentLogger(),
      options,
    );
    // What the API server returns: the deprecated field mirrors the new one.
    const podSpec = () =>
      (api.objects.get(SET)?.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    podSpec().serviceAccount = 'prometheus';
    expect(podSpec().serviceAccountName).toBe('prometheus');

    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(podSpec()).not.toHaveProperty('serviceAccountName');
    expect(podSpec()).not.toHaveProperty('serviceAccount');
  });
});

describe('readInputs', () => {
  const M = 'monitoring.coreos.com/v1';
  const object = (
    namespace: string | undefined,
    name: string,
    labels?: Record<string, string>,
  ): KubeObject => ({ metadata: { namespace, name, labels } });

  it('reads the monitors, rules and namespace labels from the cache, each named with its kind', () => {
    const cache = fakeCache({
      [`${M} servicemonitors`]: [object('team-a', 'web'), object('team-b', 'api')],
      [`${M} podmonitors`]: [object('team-a', 'pods')],
      [`${M} prometheusrules`]: [object('team-b', 'alerts')],
      'v1 namespaces': [object(undefined, 'team-a', { team: 'a' })],
    });
    const read = readInputs(cache);
    expect(
      read.monitors.map((m) => `${m.kind} ${m.metadata.namespace}/${m.metadata.name}`),
    ).toEqual(['ServiceMonitor team-a/web', 'ServiceMonitor team-b/api']);
    expect(read.podMonitors.map((m) => m.kind)).toEqual(['PodMonitor']);
    expect(read.rules.map((r) => `${r.apiVersion} ${r.kind}`)).toEqual([`${M} PrometheusRule`]);
    expect(read.namespaces).toEqual([{ name: 'team-a', labels: { team: 'a' } }]);
  });

  it('a kind the cache holds nothing of (its CRD not installed) reads as none, and rendering still works', () => {
    expect(readInputs(fakeCache())).toEqual({
      monitors: [],
      podMonitors: [],
      rules: [],
      namespaces: [],
    });
  });
});

describe('rule ConfigMaps', () => {
  const CONFIGMAPS = '/api/v1/namespaces/monitoring/configmaps';
  const withRules = (): Prometheus =>
    prometheusObject({
      serviceMonitorSelector: {},
      ruleSelector: { matchLabels: { role: 'alerts' } },
    });
  type Rule = Inputs['rules'][number];

  function rule(name: string, groups: unknown[], generation = 1): Rule {
    return {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: {
        name,
        namespace: 'monitoring',
        uid: `${name}-uid`,
        generation,
        labels: { role: 'alerts' },
      },
      spec: { groups },
    };
  }
  const good = (name: string): unknown => ({
    name,
    rules: [{ alert: `${name}Down`, expr: 'up == 0', for: '5m' }],
  });
  const ruleInputs = (...rules: Rule[]): Inputs => ({ ...inputs, rules });
  const dataOf = (api: FakeApi, index: number): Record<string, string> | undefined =>
    api.objects.get(`${CONFIGMAPS}/prometheus-main-rulefiles-${index}`)?.data as
      Record<string, string> | undefined;
  const podSpec = (
    api: FakeApi,
  ): {
    volumes: Array<{ name: string; configMap?: { name: string } }>;
    containers: Array<{ name: string; volumeMounts: Array<{ name: string; mountPath: string }> }>;
  } => (api.objects.get(SET)?.spec as { template: { spec: never } }).template.spec;

  it('writes the selected rules to prometheus-main-rulefiles-0, which the StatefulSet mounts under /etc/prometheus/rules', async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    expect(Object.keys(dataOf(api, 0) ?? {})).toEqual(['monitoring-node-node-uid.yaml']);
    expect(podSpec(api).volumes).toContainEqual({
      name: 'rulefiles-0',
      configMap: { name: 'prometheus-main-rulefiles-0' },
    });
    const prometheusMounts = podSpec(api).containers.find(
      (c) => c.name === 'prometheus',
    )?.volumeMounts;
    expect(prometheusMounts).toContainEqual({
      name: 'rulefiles-0',
      mountPath: '/etc/prometheus/rules/prometheus-main-rulefiles-0',
      readOnly: true,
    });
  });

  it("the configuration's rule_files names the directory of each rule ConfigMap", async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    const config = yaml.load(
      gunzipSync(
        Buffer.from(
          (api.objects.get(SECRET)?.data as Record<string, string>)['prometheus.yaml.gz'] ?? '',
          'base64',
        ),
      ).toString('utf8'),
    );
    expect((config as { rule_files?: string[] }).rule_files).toEqual([
      '/etc/prometheus/rules/prometheus-main-rulefiles-0/*.yaml',
    ]);
  });

  it('selected PodMonitors are passed to the configuration as jobs', async () => {
    const api = new FakeApi();
    const podMonitor = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name: 'app', namespace: 'monitoring' },
      spec: {
        selector: { matchLabels: { app: 'app' } },
        podMetricsEndpoints: [{ port: 'metrics' }],
      },
    };
    const prometheus = prometheusObject({ serviceMonitorSelector: {}, podMonitorSelector: {} });
    await reconcile(
      api.client,
      prometheus,
      { ...inputs, podMonitors: [podMonitor] },
      silentLogger(),
      options,
    );
    const text = gunzipSync(
      Buffer.from(
        (api.objects.get(SECRET)?.data as Record<string, string>)['prometheus.yaml.gz'] ?? '',
        'base64',
      ),
    ).toString('utf8');
    expect(
      (yaml.load(text) as { scrape_configs: Array<{ job_name: string }> }).scrape_configs.map(
        (j) => j.job_name,
      ),
    ).toEqual(['podMonitor/monitoring/app/0']);
  });

  it('without a ruleSelector no rule ConfigMap is written or mounted', async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      prometheusObject(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    expect(api.writes.filter((w) => w.includes('/configmaps'))).toEqual([]);
    expect(podSpec(api).volumes.map((v) => v.name)).not.toContain('rulefiles-0');
  });

  it('a second pass over the same rules writes nothing at all', async () => {
    const api = new FakeApi();
    const same = ruleInputs(rule('node', [good('node')]), rule('disk', [good('disk')]));
    await reconcile(api.client, withRules(), same, silentLogger(), options);
    api.writes.length = 0;
    await reconcile(api.client, withRules(), same, silentLogger(), options);
    expect(api.writes).toEqual([]);
  });

  it("a changed rule patches only the ConfigMap's data, dropping the file of a rule no longer selected, and keeps the StatefulSet as it is", async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node')]), rule('disk', [good('disk')])),
      silentLogger(),
      options,
    );
    api.writes.length = 0;
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node'), good('extra')], 2)),
      silentLogger(),
      options,
    );
    expect(api.writes).toEqual([`PATCH ${CONFIGMAPS}/prometheus-main-rulefiles-0`]);
    expect(Object.keys(dataOf(api, 0) ?? {})).toEqual(['monitoring-node-node-uid.yaml']);
    expect(dataOf(api, 0)?.['monitoring-node-node-uid.yaml']).toContain('name: extra');
  });

  it('ConfigMaps past the wanted ones are deleted after the StatefulSet stops mounting them; one the Prometheus does not own is left alone', async () => {
    const api = new FakeApi();
    const big = (name: string): Rule =>
      rule(name, [
        {
          name,
          rules: Array.from({ length: 5 }, (_, i) => ({
            record: `r${i}`,
            expr: `up # ${'x'.repeat(60 * 1024)}`,
          })),
        },
      ]);
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(big('a'), big('b'), big('c')),
      silentLogger(),
      options,
    );
    expect([0, 1, 2].map((i) => Object.keys(dataOf(api, i) ?? {}).length)).toEqual([1, 1, 1]);
    api.objects.set(`${CONFIGMAPS}/prometheus-main-rulefiles-3`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'prometheus-main-rulefiles-3', ownerReferences: [{ uid: 'someone-else' }] },
    });
    api.writes.length = 0;

    await reconcile(api.client, withRules(), ruleInputs(big('a')), silentLogger(), options);
    expect(api.writes).toEqual([
      `PATCH ${SECRET}`, // rule_files names one directory now
      `PATCH ${SET}`,
      `DELETE ${CONFIGMAPS}/prometheus-main-rulefiles-2`,
      `DELETE ${CONFIGMAPS}/prometheus-main-rulefiles-1`,
    ]);
    expect(
      podSpec(api)
        .volumes.filter((v) => v.configMap)
        .map((v) => v.configMap?.name),
    ).toEqual(['prometheus-main-rulefiles-0']);
    expect(api.objects.has(`${CONFIGMAPS}/prometheus-main-rulefiles-3`)).toBe(true);
  });

  it('removing the ruleSelector deletes the rule ConfigMaps; so does deleting the Prometheus', async () => {
    const api = new FakeApi();
    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    await reconcile(
      api.client,
      prometheusObject(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    expect(dataOf(api, 0)).toBeUndefined();
    expect(api.objects.has(`${CONFIGMAPS}/prometheus-main-rulefiles-0`)).toBe(false);

    await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('node', [good('node')])),
      silentLogger(),
      options,
    );
    await removeChildren(api.client, fakeCache(), withRules());
    expect(api.objects.has(`${CONFIGMAPS}/prometheus-main-rulefiles-0`)).toBe(false);
  });

  it('an invalid group is left out with one Warning Event naming the PrometheusRule and the group, once per generation', async () => {
    const posted: string[] = [];
    const scope = new EventScope({
      post: (object, type, reason, message) =>
        posted.push(`${object.kind} ${object.metadata?.name} ${type} ${reason}: ${message}`),
    });
    scope.activate();
    const api = new FakeApi();
    const reported = new ReportedProblems();
    const broken = (generation: number): Rule =>
      rule('mixed', [good('fine'), { name: 'broken', rules: [{ expr: 'up' }] }], generation);

    await scope.run(async () => {
      await reconcile(
        api.client,
        withRules(),
        ruleInputs(broken(1)),
        silentLogger(),
        options,
        reported,
      );
      await reconcile(
        api.client,
        withRules(),
        ruleInputs(broken(1)),
        silentLogger(),
        options,
        reported,
      );
    });
    expect(posted).toEqual([
      'PrometheusRule mixed Warning InvalidRuleGroup: rule group "broken" of PrometheusRule monitoring/mixed is refused by Prometheus monitoring/main (its other groups still load): rules[0] must have exactly one of record and alert',
    ]);
    expect(dataOf(api, 0)?.['monitoring-mixed-mixed-uid.yaml']).toContain('name: fine');
    expect(dataOf(api, 0)?.['monitoring-mixed-mixed-uid.yaml']).not.toContain('broken');

    await scope.run(() =>
      reconcile(api.client, withRules(), ruleInputs(broken(2)), silentLogger(), options, reported),
    );
    expect(posted).toHaveLength(2);
  });

  it('the Reconciled condition counts the PrometheusRules and refused groups', async () => {
    const api = new FakeApi();
    const { status } = await reconcile(
      api.client,
      withRules(),
      ruleInputs(rule('a', [good('a'), { rules: [] }]), rule('b', [good('b')])),
      silentLogger(),
      options,
    );
    expect(status.conditions.find((c) => c.type === 'Reconciled')?.message).toBe(
      '0 ServiceMonitors, 0 skipped; 2 PrometheusRules, 1 rule groups refused',
    );
  });
});
