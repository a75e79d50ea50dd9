/**
 * Keeping the generated configuration within what its Secret can hold. The API server refuses a
 * Secret whose data is over 1 MiB: one tenant's large monitors would then keep every other tenant's
 * changes out of a shared Prometheus. So the compressed size is measured before writing, and the
 * monitors that take the most room are left out (and reported) until the rest fits.
 */
import { gzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { renderYaml } from './config.js';
import type { PrometheusConfig, ScrapeConfig } from './types.js';

/** A Secret's data may hold 1 MiB; the gzipped configuration keeps 16 KiB of it spare. */
export const MAX_CONFIG_GZIP_BYTES = 1024 * 1024 - 16 * 1024;

/** A monitor left out of the configuration for its size. */
export interface LeftOutMonitor {
  /** `<namespace>/<name>` for a ServiceMonitor, `podMonitor/<namespace>/<name>` for a PodMonitor (as `SkippedMonitor`). */
  monitor: string;
  /** Its jobs' YAML, gzipped on their own: about what it adds to the gzipped configuration. */
  gzipBytes: number;
}

/** The configuration to write. */
export interface FittedConfig {
  yaml: string;
  gzipped: Buffer;
  /** Monitors left out so the rest fits, largest first. */
  leftOut: LeftOutMonitor[];
}

/** The monitor a job belongs to, in `SkippedMonitor` form, from its name (`serviceMonitor/<ns>/<name>/<i>`, `podMonitor/<ns>/<name>/<i>`). */
export function jobMonitor(jobName: string): string {
  const parts = jobName.split('/');
  const [kind, namespace, name] = parts;
  if (parts.length !== 4) return jobName;
  return kind === 'podMonitor' ? `podMonitor/${namespace}/${name}` : `${namespace}/${name}`;
}

function gzipped(text: string): Buffer {
  return gzipSync(Buffer.from(text, 'utf8'));
}

/**
 * The configuration as written, within `options.budget` gzipped bytes (default
 * {@link MAX_CONFIG_GZIP_BYTES}; `options.yaml` is `config` already rendered): as it is when it fits; otherwise
 * without the monitors whose jobs take the most room, largest first, as few as it takes. Each is
 * measured by gzipping its jobs alone, and the configuration is gzipped again once the estimate
 * fits, until it really does. A configuration that does not fit with no monitor at all is returned
 * as such; the Secret write then fails and says so.
 */
export function fitConfig(
  config: PrometheusConfig,
  options: { yaml?: string; budget?: number } = {},
): FittedConfig {
  const budget = options.budget ?? MAX_CONFIG_GZIP_BYTES;
  let text = options.yaml ?? renderYaml(config);
  let zipped = gzipped(text);
  if (zipped.length <= budget) return { yaml: text, gzipped: zipped, leftOut: [] };
  const byMonitor = new Map<string, ScrapeConfig[]>();
  for (const job of config.scrape_configs) {
    const key = jobMonitor(job.job_name);
    byMonitor.set(key, [...(byMonitor.get(key) ?? []), job]);
  }
  const sizes = [...byMonitor].map(([monitor, jobs]) => ({
    monitor,
    gzipBytes: gzipped(yaml.dump(jobs, { lineWidth: -1, noRefs: true })).length,
  }));
  sizes.sort(
    (a, b) =>
      b.gzipBytes - a.gzipBytes || (a.monitor < b.monitor ? -1 : a.monitor > b.monitor ? 1 : 0),
  );
  const leftOut: LeftOutMonitor[] = [];
  const without = (): void => {
    const out = new Set(leftOut.map((m) => m.monitor));
    text = renderYaml({
      ...config,
      scrape_configs: config.scrape_configs.filter((job) => !out.has(jobMonitor(job.job_name))),
    });
    zipped = gzipped(text);
  };
  let estimate = zipped.length;
  for (const size of sizes) {
    leftOut.push(size);
    estimate -= size.gzipBytes;
    if (estimate > budget && leftOut.length < sizes.length) continue;
    without();
    if (zipped.length <= budget) break;
    estimate = zipped.length;
  }
  return { yaml: text, gzipped: zipped, leftOut };
}
