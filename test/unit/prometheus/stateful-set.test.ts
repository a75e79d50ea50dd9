import { dirname, basename } from 'node:path';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import type { KubeObject } from 'konductor';
import {
  configSecret,
  DEFAULT_CONFIG_RELOADER_IMAGE,
  INPUT_HASH,
  statefulSet,
} from '../../../src/handlers/prometheus/children.js';
import { generateConfig, gzipConfig } from '../../../src/handlers/prometheus/config.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';

interface Container {
  name: string;
  image: string;
  args: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
interface Volume {
  name: string;
  secret?: { secretName: string };
  configMap?: { name: string };
  emptyDir?: Record<string, never>;
}
interface PodSpec {
  serviceAccountName?: string;
  initContainers: Container[];
  containers: Container[];
  volumes: Volume[];
}

const RELOADER = 'quay.io/example/prometheus-config-reloader:v1';
const prometheus: PrometheusResource & KubeObject = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'Prometheus',
  metadata: { name: 'main', namespace: 'monitoring', uid: 'uid-1' },
  spec: { serviceMonitorSelector: {}, version: 'v2.42.0' },
};

function podSpec(set: KubeObject): PodSpec {
  return (set.spec as { template: { spec: PodSpec } }).template.spec;
}

function container(spec: PodSpec, name: string): Container {
  const found = [...spec.initContainers, ...spec.containers].find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

/** The value of `--flag=value` in a container's args. */
function flag(c: Container, name: string): string | undefined {
  const arg = c.args.find((a) => a.startsWith(`${name}=`));
  return arg?.slice(name.length + 1);
}

/** The volume mounted at `dir` in a container. */
function volumeAt(spec: PodSpec, c: Container, dir: string): Volume {
  const mount = c.volumeMounts.find((m) => m.mountPath === dir);
  if (mount === undefined) throw new Error(`${c.name} mounts nothing at ${dir}`);
  const volume = spec.volumes.find((v) => v.name === mount.name);
  if (volume === undefined) throw new Error(`${c.name} mounts missing volume ${mount.name}`);
  return volume;
}

/**
 * Does what prometheus-config-reloader does in `c`, following the Pod's volumes: reads the gzipped
 * file named by `--config-file`, gunzips it, substitutes `$(VAR)` from the container's environment
 * and returns the output file (volume and name) with its text.
 */
function runReloader(
  spec: PodSpec,
  c: Container,
  secret: KubeObject,
  podName: string,
): { volume: Volume; file: string; text: string } {
  const input = flag(c, '--config-file')!;
  const source = volumeAt(spec, c, dirname(input));
  expect(source.secret?.secretName).toBe(secret.metadata?.name);
  const data = (secret.data as Record<string, string>)[basename(input)];
  if (data === undefined)
    throw new Error(`Secret ${secret.metadata?.name} has no key ${basename(input)}`);
  const env = new Map(
    (c.env ?? []).map(
      (e) =>
        [
          e.name,
          e.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? podName : (e.value ?? ''),
        ] as const,
    ),
  );
  const text = gunzipSync(Buffer.from(data, 'base64'))
    .toString('utf8')
    .replace(/\$\((\w+)\)/g, (whole, name: string) => env.get(name) ?? whole);
  const output = flag(c, '--config-envsubst-file')!;
  return { volume: volumeAt(spec, c, dirname(output)), file: basename(output), text };
}

describe('the Prometheus StatefulSet', () => {
  const set = statefulSet(prometheus, { configReloaderImage: RELOADER });
  const spec = podSpec(set);
  const secret = configSecret(prometheus, gzipConfig(generateConfig(prometheus, [], []).yaml));

  it('runs the init container first, which writes the configuration file Prometheus is started with', () => {
    expect(spec.initContainers.map((c) => c.name)).toEqual(['init-config-reloader']);
    const init = container(spec, 'init-config-reloader');
    expect(flag(init, '--watch-interval')).toBe('0'); // once, then exit: Pod start waits for it

    const written = runReloader(spec, init, secret, 'prometheus-main-0');
    const server = container(spec, 'prometheus');
    const configFile = flag(server, '--config.file')!;
    expect(volumeAt(spec, server, dirname(configFile))).toBe(written.volume);
    expect(basename(configFile)).toBe(written.file);
    expect(written.volume.emptyDir).toEqual({});
  });

  it('mounts the config Secret where the reloaders read it, under the key the Secret holds', () => {
    for (const name of ['init-config-reloader', 'config-reloader']) {
      const reloader = container(spec, name);
      const input = flag(reloader, '--config-file')!;
      expect(volumeAt(spec, reloader, dirname(input)).secret).toEqual({
        secretName: 'prometheus-main',
      });
      expect(Object.keys(secret.data as object)).toEqual([basename(input)]);
    }
  });

  it('substitutes $(POD_NAME) with the Pod name, so each replica has its own prometheus_replica label', () => {
    const { text } = runReloader(
      spec,
      container(spec, 'init-config-reloader'),
      secret,
      'prometheus-main-1',
    );
    const config = yaml.load(text) as { global: { external_labels: Record<string, string> } };
    expect(config.global.external_labels).toEqual({
      prometheus: 'monitoring/main',
      prometheus_replica: 'prometheus-main-1',
    });
  });

  it("runs the reloader as a sidecar that writes the same file and POSTs to Prometheus' reload endpoint", () => {
    const init = container(spec, 'init-config-reloader');
    const sidecar = container(spec, 'config-reloader');
    const server = container(spec, 'prometheus');
    expect(spec.containers.map((c) => c.name)).toEqual(['prometheus', 'config-reloader']);
    expect(flag(sidecar, '--watch-interval')).toBeUndefined(); // keeps watching (upstream's default 3m plus file events)
    expect(flag(sidecar, '--config-file')).toBe(flag(init, '--config-file'));
    expect(flag(sidecar, '--config-envsubst-file')).toBe(flag(init, '--config-envsubst-file'));
    expect(runReloader(spec, sidecar, secret, 'p-0').volume).toBe(
      runReloader(spec, init, secret, 'p-0').volume,
    );

    const reload = new URL(flag(sidecar, '--reload-url')!);
    const web = server.ports!.find((p) => p.name === 'web')!;
    expect([reload.hostname, Number(reload.port), reload.pathname]).toEqual([
      '127.0.0.1',
      web.containerPort,
      '/-/reload',
    ]);
    expect(server.args).toContain('--web.enable-lifecycle'); // otherwise the reload POST gets 403
  });

  it('gives Prometheus the configuration read-only and never the Secret itself', () => {
    const server = container(spec, 'prometheus');
    const configDir = dirname(flag(server, '--config.file')!);
    expect(server.volumeMounts.find((m) => m.mountPath === configDir)?.readOnly).toBe(true);
    expect(server.volumeMounts.map((m) => m.name)).not.toContain('config');
  });

  it("runs the reloader image the operator is configured with, upstream's by default", () => {
    expect([
      container(spec, 'init-config-reloader').image,
      container(spec, 'config-reloader').image,
    ]).toEqual([RELOADER, RELOADER]);
    expect(container(spec, 'prometheus').image).toBe('quay.io/prometheus/prometheus:v2.42.0');
    expect(DEFAULT_CONFIG_RELOADER_IMAGE).toMatch(
      /^quay\.io\/prometheus-operator\/prometheus-config-reloader:v\d+\.\d+\.\d+$/,
    );
  });

  it('a different reloader image is a different input hash, so the StatefulSet is updated', () => {
    const other = statefulSet(prometheus, {
      configReloaderImage: 'quay.io/example/prometheus-config-reloader:v2',
    });
    expect(other.metadata?.annotations?.[INPUT_HASH]).not.toBe(
      set.metadata?.annotations?.[INPUT_HASH],
    );
    expect(
      statefulSet(prometheus, { configReloaderImage: RELOADER }).metadata?.annotations?.[
        INPUT_HASH
      ],
    ).toBe(set.metadata?.annotations?.[INPUT_HASH]);
  });

  it('passes serviceAccountName through only when set', () => {
    expect(spec).not.toHaveProperty('serviceAccountName');
    const withAccount = statefulSet(
      { ...prometheus, spec: { ...prometheus.spec, serviceAccountName: 'prometheus' } },
      { configReloaderImage: RELOADER },
    );
    expect(podSpec(withAccount).serviceAccountName).toBe('prometheus');
  });
});

describe('the Prometheus StatefulSet with rule ConfigMaps', () => {
  const names = ['prometheus-main-rulefiles-0', 'prometheus-main-rulefiles-1'];
  const set = statefulSet(prometheus, { configReloaderImage: RELOADER }, names);
  const spec = podSpec(set);

  it('mounts each rule ConfigMap read-only into Prometheus at /etc/prometheus/rules/<configmap>', () => {
    for (const name of names) {
      const mount = container(spec, 'prometheus').volumeMounts.find(
        (m) => m.mountPath === `/etc/prometheus/rules/${name}`,
      );
      expect(mount?.readOnly).toBe(true);
      expect(spec.volumes.find((v) => v.name === mount?.name)?.configMap).toEqual({ name });
    }
  });

  it('lets the reloader sidecar watch every rule directory, so a changed rule reloads Prometheus', () => {
    const sidecar = container(spec, 'config-reloader');
    expect(sidecar.args.filter((a) => a.startsWith('--watched-dir='))).toEqual(
      names.map((n) => `--watched-dir=/etc/prometheus/rules/${n}`),
    );
    expect(sidecar.volumeMounts.map((m) => m.mountPath)).toEqual(
      expect.arrayContaining(names.map((n) => `/etc/prometheus/rules/${n}`)),
    );
    expect(
      container(spec, 'init-config-reloader').args.some((a) => a.startsWith('--watched-dir=')),
    ).toBe(false);
  });

  it('only the number of rule ConfigMaps enters the input hash, not their content, so rule changes restart no Pod', () => {
    const hash = (configMaps: string[]): string | undefined =>
      statefulSet(prometheus, { configReloaderImage: RELOADER }, configMaps).metadata
        ?.annotations?.[INPUT_HASH];
    expect(hash(names)).toBe(set.metadata?.annotations?.[INPUT_HASH]);
    expect(hash(names.slice(0, 1))).not.toBe(set.metadata?.annotations?.[INPUT_HASH]);
    expect(hash([])).toBe(
      statefulSet(prometheus, { configReloaderImage: RELOADER }).metadata?.annotations?.[
        INPUT_HASH
      ],
    );
  });

  it('names rule volumes by index, so a long Prometheus name never makes a volume name over 63 characters', () => {
    expect(spec.volumes.filter((v) => v.configMap).map((v) => v.name)).toEqual([
      'rulefiles-0',
      'rulefiles-1',
    ]);
  });
});
