/**
 * A tenant's ServiceMonitor regex must not stall or crash the
 * shared operator. Compiling `x{n}` builds n copies of `x`, so a few kilobytes of regex could block
 * the event loop for seconds or exhaust the Deployment's 128 MB heap; regexes are now measured
 * before they are compiled, and each distinct one is compiled once.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { jest } from '@jest/globals';
import { RE2JS } from 're2js';
import { generateConfig, validateServiceMonitor } from '../../../src/handlers/prometheus/config.js';
import {
  MAX_MONITOR_REGEX_INSTRUCTIONS,
  MAX_REGEX_INSTRUCTIONS,
  MAX_REGEX_LENGTH,
  REGEX_CACHE_SIZE,
  regexProblem,
} from '../../../src/handlers/prometheus/regex.js';
import { estimateRegexSize } from '../../../src/handlers/prometheus/regex-size.js';
import type {
  PrometheusResource,
  RelabelConfig,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const hostileRender = fileURLToPath(
  new URL('../../fixtures/prometheus/render-hostile.ts', import.meta.url),
);

/** kube-prometheus' kubelet ServiceMonitor drops these: the longest regex of its manifests. */
const KUBELET_DROP =
  'kubelet_(pod_worker_latency_microseconds|pod_start_latency_microseconds|cgroup_manager_latency_microseconds|pod_worker_start_latency_microseconds|pleg_relist_latency_microseconds|pleg_relist_interval_microseconds|runtime_operations|runtime_operations_latency_microseconds|runtime_operations_errors|eviction_stats_age_microseconds|device_plugin_registration_count|device_plugin_alloc_latency_microseconds|network_plugin_operations_latency_microseconds)';

const prometheus: PrometheusResource = {
  metadata: { namespace: 'monitoring', name: 'main' },
  spec: { serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} },
};
const namespaces = [{ name: 'shop' }, { name: 'monitoring' }];

function monitor(name: string, relabelings: RelabelConfig[]): ServiceMonitorResource {
  return {
    metadata: { namespace: 'shop', name },
    spec: { selector: {}, endpoints: [{ port: 'metrics', relabelings }] },
  };
}

function keep(regex: string): RelabelConfig {
  return { sourceLabels: ['__address__'], regex, action: 'keep' };
}

/** A regex no earlier test compiled, so the cache cannot answer for it. */
let fresh = 0;
function unseen(body = 'x'): string {
  fresh += 1;
  return `${body}_unseen_${fresh}_${Math.random().toString(36).slice(2)}`;
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('hostile regexes are refused before they are compiled', () => {
  it('the 3.5 KB `a{1000}` x 500 (out of memory at 128 MB before) is refused for its length, naming the field', () => {
    const compile = jest.spyOn(RE2JS, 'compile');
    const problems = validateServiceMonitor(monitor('long', [keep('a{1000}'.repeat(500))]));
    expect(problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^spec\\.endpoints\\[0\\]\\.relabelings\\[0\\]\\.regex: "[^"]{60}…" is 3500 characters long; at most ${MAX_REGEX_LENGTH} are accepted`,
        ),
      ),
    ]);
    expect(compile).not.toHaveBeenCalled();
  });

  it('a short regex with a large program (`a{1000}` x 100, 700 characters, 0.8 s and 46 MB before) is refused for its size', () => {
    const compile = jest.spyOn(RE2JS, 'compile');
    const problems = validateServiceMonitor(monitor('large', [keep('a{1000}'.repeat(100))]));
    expect(problems).toEqual([
      expect.stringMatching(
        /^spec\.endpoints\[0\]\.relabelings\[0\]\.regex: "[^"]{60}…" would compile to about 100\d{3} instructions; at most 4000 are accepted/,
      ),
    ]);
    expect(compile).not.toHaveBeenCalled();
  });

  it('nested repeats multiply: over 1000 in all is RE2\'s "invalid repeat count", refused without compiling', () => {
    const compile = jest.spyOn(RE2JS, 'compile');
    expect(regexProblem('((((a{10}){10}){10}){10}){10}')).toMatch(
      /^does not compile: invalid repeat count: repeat counts multiply to 100000/,
    );
    expect(regexProblem('(a{2}){0,1000}')).toMatch(/invalid repeat count/);
    expect(compile).not.toHaveBeenCalled();
  });

  it('a port name is a regex too, and is measured the same way', () => {
    const result = generateConfig(
      prometheus,
      [
        {
          metadata: { namespace: 'shop', name: 'port' },
          spec: { selector: {}, endpoints: [{ port: 'a{1000}'.repeat(100) }] },
        },
      ],
      namespaces,
    );
    expect(result.skipped).toEqual([
      {
        monitor: 'shop/port',
        problems: [
          expect.stringMatching(
            /^serviceMonitor\/shop\/port\/0: relabel_configs\[1\]\.regex: "[^"]{60}…" would compile to about/,
          ),
        ],
      },
    ]);
  });

  it('a monitor whose regexes are each small but many is refused as a whole, before any is compiled', () => {
    const each = `${unseen()}a{1000}b{900}`;
    const count =
      Math.floor(MAX_MONITOR_REGEX_INSTRUCTIONS / estimateRegexSize(each).instructions) + 1;
    expect(estimateRegexSize(each).instructions).toBeLessThanOrEqual(MAX_REGEX_INSTRUCTIONS);
    const compile = jest.spyOn(RE2JS, 'compile');
    const problems = validateServiceMonitor(
      monitor(
        'many',
        Array.from({ length: count }, (_, i) => keep(`${each}${i}`)),
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^spec\.endpoints: the regexes together would compile to about \d+ instructions; at most 20000 per ServiceMonitor/,
      ),
    ]);
    expect(compile).not.toHaveBeenCalled();
  });

  it("rendering the 3.5 KB regex under the Deployment's --max-old-space-size=128 skips it and does not run out of memory", async () => {
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      execFile(
        process.execPath,
        ['--max-old-space-size=128', '--import', 'tsx', hostileRender],
        { cwd: repoRoot, timeout: 120_000 },
        (error, out, err) => {
          resolve({
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
            stdout: out,
            stderr: err,
          });
        },
      );
    });
    expect({
      code,
      stderr: stderr.includes('heap out of memory') ? 'heap out of memory' : '',
    }).toEqual({ code: 0, stderr: '' });
    const rendered = JSON.parse(stdout) as {
      jobs: string[];
      skipped: Array<{ monitor: string; problems: string[] }>;
    };
    expect(rendered.jobs).toEqual(['serviceMonitor/shop/good/0']);
    expect(rendered.skipped).toEqual([
      {
        monitor: 'shop/large',
        problems: [expect.stringMatching(/would compile to about 100\d{3} instructions/)],
      },
      { monitor: 'shop/long', problems: [expect.stringMatching(/is 3500 characters long/)] },
    ]);
  });
});

describe('ordinary regexes are still accepted', () => {
  it.each([
    '(.+)',
    '(.*)',
    '__meta_kubernetes_.*',
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?',
    '(?i)kube-.*',
    'Pod;(.*)',
    '[0-9a-f]{64}',
    '[a-z0-9]{1,253}',
    'a{1000}',
    '.{1,1000}',
    KUBELET_DROP,
  ])('accepts %s', (regex) => {
    expect(regexProblem(regex)).toBeUndefined();
  });

  it('a monitor with the kube-prometheus drop list renders', () => {
    const result = generateConfig(
      prometheus,
      [monitor('kubelet', [{ sourceLabels: ['__name__'], regex: KUBELET_DROP, action: 'drop' }])],
      namespaces,
    );
    expect(result.skipped).toEqual([]);
    expect(result.config.scrape_configs.map((job) => job.job_name)).toEqual([
      'serviceMonitor/shop/kubelet/0',
    ]);
  });
});

describe('each distinct regex is compiled once', () => {
  it("renders of several Prometheus objects, again and again, compile a monitor's regex once", () => {
    const regex = unseen('(.+)');
    const monitors = [monitor('once', [keep(regex)])];
    const compile = jest.spyOn(RE2JS, 'compile');
    for (let render = 0; render < 3; render++) {
      generateConfig(prometheus, monitors, namespaces);
      generateConfig(
        { ...prometheus, metadata: { namespace: 'monitoring', name: 'second' } },
        monitors,
        namespaces,
      );
    }
    expect(compile.mock.calls.filter(([text]) => text.includes(regex))).toHaveLength(1);
  });

  it(`keeps at most ${REGEX_CACHE_SIZE} verdicts, dropping the least recently used`, () => {
    const first = unseen();
    const recent = unseen();
    regexProblem(first);
    regexProblem(recent);
    for (let i = 0; i < REGEX_CACHE_SIZE - 1; i++) {
      regexProblem(unseen());
      // `recent` stays in use, so it is never the least recently used.
      if (i % 100 === 0) regexProblem(recent);
    }
    const compile = jest.spyOn(RE2JS, 'compile');
    regexProblem(recent);
    regexProblem(first);
    expect(compile.mock.calls.map(([text]) => text)).toEqual([`^(?:${first})$`]);
  });
});

describe('estimateRegexSize', () => {
  it.each([
    ['abc', 3, 1],
    ['a{1000}', 1001, 1000],
    ['a{10,}', 12, 10],
    ['a{0,10}', 21, 10],
    ['(?:a{10}){10}', 111, 100],
    ['(a{10})(b{100})', 116, 100],
    ['[a{1000}]{2}', 3, 2],
    ['\\Qa{1000}\\E', 7, 1],
    ['\\p{Greek}{3}', 4, 3],
    ['a|b{5}', 8, 5],
    ['(?i)a{3}', 4, 3],
    ['a{', 2, 1],
    ['(?P<n>a){2}(?i:b){2}', 10, 2],
    ['(a{1000}){0}', 1, 1000],
  ])('%s: about %d instructions, repeat product %d', (regex, instructions, repeatProduct) => {
    expect(estimateRegexSize(regex)).toEqual({ instructions, repeatProduct });
  });

  it('stays finite for absurd counts', () => {
    const size = estimateRegexSize(
      '((((((a{999999999}){999999999}){999999999}){999999999}){999999999}){999999999})',
    );
    expect(Number.isFinite(size.instructions) && size.instructions > MAX_REGEX_INSTRUCTIONS).toBe(
      true,
    );
    expect(Number.isFinite(size.repeatProduct) && size.repeatProduct > 1000).toBe(true);
  });
});
