/** Keeping the generated configuration within what its Secret holds, leaving out the largest monitors. */
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { fitConfig, jobMonitor } from '../../../src/handlers/prometheus/config-budget.js';
import { renderYaml } from '../../../src/handlers/prometheus/config.js';
import type { PrometheusConfig, ScrapeConfig } from '../../../src/handlers/prometheus/types.js';

/** A job whose relabelings carry `bytes` of incompressible text. */
function job(name: string, bytes: number): ScrapeConfig {
  const rules = Array.from({ length: Math.ceil(bytes / 1000) }, () => ({
    target_label: 'x',
    replacement: randomBytes(750).toString('base64'),
  }));
  return {
    job_name: name,
    honor_labels: false,
    kubernetes_sd_configs: [{ role: 'endpoints' }],
    relabel_configs: rules,
  } as ScrapeConfig;
}

function config(jobs: ScrapeConfig[]): PrometheusConfig {
  return {
    global: { scrape_interval: '30s', external_labels: {}, evaluation_interval: '30s' },
    scrape_configs: jobs,
  };
}

const jobNames = (text: string): string[] =>
  ((yaml.load(text) as PrometheusConfig).scrape_configs ?? []).map((j) => j.job_name);

describe('fitting the configuration into its Secret', () => {
  it('a configuration within the budget is written as rendered', () => {
    const small = config([job('serviceMonitor/a/small/0', 1000)]);
    const fitted = fitConfig(small, { budget: 100_000 });
    expect(fitted.leftOut).toEqual([]);
    expect(fitted.yaml).toBe(renderYaml(small));
  });

  it('over the budget, the largest monitors are left out until the rest fits, every job of a monitor together', () => {
    const jobs = [
      job('serviceMonitor/tenant-a/huge/0', 60_000),
      job('serviceMonitor/tenant-a/huge/1', 60_000),
      job('podMonitor/tenant-a/large/0', 50_000),
      job('serviceMonitor/tenant-b/small/0', 2_000),
      job('serviceMonitor/tenant-c/medium/0', 20_000),
    ];
    const fitted = fitConfig(config(jobs), { budget: 40_000 });
    expect(fitted.leftOut.map((m) => m.monitor)).toEqual([
      'tenant-a/huge',
      'podMonitor/tenant-a/large',
    ]);
    expect(fitted.gzipped.length).toBeLessThanOrEqual(40_000);
    expect(jobNames(gunzipSync(fitted.gzipped).toString('utf8'))).toEqual([
      'serviceMonitor/tenant-b/small/0',
      'serviceMonitor/tenant-c/medium/0',
    ]);
  });

  it('a configuration too large even without any monitor leaves them all out', () => {
    const fitted = fitConfig(config([job('serviceMonitor/a/one/0', 5_000)]), { budget: 10 });
    expect(fitted.leftOut.map((m) => m.monitor)).toEqual(['a/one']);
    expect(jobNames(fitted.yaml)).toEqual([]);
  });

  it("names a job's monitor as skipped monitors are named", () => {
    expect(jobMonitor('serviceMonitor/shop/checkout/3')).toBe('shop/checkout');
    expect(jobMonitor('podMonitor/shop/checkout/0')).toBe('podMonitor/shop/checkout');
  });
});
