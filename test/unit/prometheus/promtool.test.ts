/**
 * Every golden config must be one Prometheus accepts: checked with the real `promtool`.
 *
 * Debian's prometheus 2.42 (what `npm run provision` installs) is built without Kubernetes service
 * discovery, so `promtool check config` rejects any `kubernetes_sd_configs` ("field
 * kubernetes_sd_configs not found"). Each such list is therefore swapped for an equivalent-shaped
 * `file_sd_configs` list before checking; everything else (relabel rules, regexes, durations,
 * job names) is checked exactly as generated.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  generateConfig,
  regexProblem,
  renderYaml,
  scrapeConfigs,
} from '../../../src/handlers/prometheus/config.js';
import type {
  PrometheusResource,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';
import { HOSTILE_CASES } from '../../fixtures/prometheus/cases.js';

const fixtureDir = fileURLToPath(new URL('../../fixtures/prometheus/', import.meta.url));
const goldenFiles = readdirSync(fixtureDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

let workDir = '';
let targetsFile = '';

interface PromtoolResult {
  code: number;
  output: string;
}

/** Runs promtool; a missing binary is a failure with instructions, never a silent skip. */
function promtool(args: string[]): Promise<PromtoolResult> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error === null) {
        resolve({ code: 0, output });
      } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(
          new Error(
            "promtool not found on PATH: run `npm run provision` (installs Debian's prometheus package)",
          ),
        );
      } else if (typeof error.code === 'number') {
        resolve({ code: error.code, output });
      } else {
        reject(new Error(`promtool ${args.join(' ')} failed: ${error.message}\n${output}`));
      }
    });
  });
}

/** Replaces each `kubernetes_sd_configs` list with a `file_sd_configs` one (see the file comment). */
function withFileSD(yaml: string): { text: string; replaced: number } {
  const out: string[] = [];
  const lines = yaml.split('\n');
  let replaced = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const match = /^( *)kubernetes_sd_configs:$/.exec(line);
    if (match === null) {
      out.push(line);
      continue;
    }
    const indent = match[1] ?? '';
    out.push(`${indent}file_sd_configs:`, `${indent}- files:`, `${indent}  - ${targetsFile}`);
    replaced++;
    // The list's items sit at the key's indent (`- `) or deeper.
    while (
      i + 1 < lines.length &&
      (lines[i + 1]!.startsWith(`${indent}- `) || lines[i + 1]!.startsWith(`${indent}  `))
    )
      i++;
  }
  return { text: out.join('\n'), replaced };
}

async function checkConfig(name: string, text: string): Promise<PromtoolResult> {
  const file = join(workDir, `${name}.yaml`);
  writeFileSync(file, text);
  return promtool(['check', 'config', file]);
}

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'konductor-promtool-'));
  targetsFile = join(workDir, 'targets.json');
  // A real targets file (reference §6), so promtool validates it instead of warning it is missing.
  const targets = [
    {
      targets: ['127.0.0.1:9301'],
      labels: {
        __meta_kubernetes_namespace: 'shop',
        __meta_kubernetes_service_name: 'checkout',
        __meta_kubernetes_service_label_app: 'checkout',
        __meta_kubernetes_service_labelpresent_app: 'true',
        __meta_kubernetes_endpoint_port_name: 'metrics',
        __meta_kubernetes_pod_phase: 'Running',
      },
    },
  ];
  writeFileSync(targetsFile, JSON.stringify(targets));
});

afterAll(() => {
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

describe('promtool check config', () => {
  it('promtool is installed', async () => {
    const { code, output } = await promtool(['--version']);
    expect(code).toBe(0);
    expect(output).toMatch(/promtool, version/);
  });

  it('has golden files to check', () => {
    expect(goldenFiles).toEqual(
      expect.arrayContaining(['minimal.yaml', 'relabelings.yaml', 'ports.yaml']),
    );
  });

  it.each(goldenFiles)('accepts %s', async (file) => {
    const yaml = readFileSync(join(fixtureDir, file), 'utf8');
    const { text, replaced } = withFileSD(yaml);
    expect(replaced).toBe((yaml.match(/^- job_name: /gm) ?? []).length);
    expect(text).not.toContain('kubernetes_sd_configs');
    const { code, output } = await checkConfig(file.replace(/\.yaml$/, ''), text);
    expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('rejects an invalid regex (the check is real)', async () => {
    const yaml = readFileSync(join(fixtureDir, 'minimal.yaml'), 'utf8');
    const broken = withFileSD(yaml).text.replace('    regex: metrics\n', '    regex: (metrics\n');
    expect(broken).toContain('regex: (metrics');
    const { code, output } = await checkConfig('broken-regex', broken);
    expect(code).toBe(1);
    expect(output).toMatch(/error parsing regexp: missing closing \)/);
  });

  // Why the operator refuses such a Prometheus (validatePrometheus) instead of rendering it.
  it('refuses an external label name with a dash, as the 2.x label-name rule says', async () => {
    const yaml = readFileSync(join(fixtureDir, 'minimal.yaml'), 'utf8');
    const text = withFileSD(yaml).text.replace(
      '    prometheus: monitoring/main\n',
      '    prometheus: monitoring/main\n    some-other-key: x\n',
    );
    expect(text).toContain('some-other-key: x');
    const { code, output } = await checkConfig('dashed-external-label', text);
    expect(code).toBe(1);
    expect(output).toMatch(/"some-other-key" is not a valid label name/);
  });

  it('still rejects kubernetes_sd_configs, which is why the tests substitute file_sd_configs', async () => {
    const { code, output } = await checkConfig(
      'k8s-sd',
      readFileSync(join(fixtureDir, 'minimal.yaml'), 'utf8'),
    );
    expect(code).toBe(1);
    expect(output).toMatch(/kubernetes_sd_configs not found/);
  });

  // regexProblem (re2js) must agree with Prometheus itself, including where JS RegExp would not.
  it.each([
    '(?i)kube-.*',
    '(?P<name>x)',
    '[]a]',
    'a)(b',
    'a\\.b',
    '(',
    'a[',
    '[]',
    'x{2,1}',
    'a(?=b)',
    '(?<!a)b',
    '(a)\\1',
    '(?z)a',
    'a{1000}',
    'a{1001}',
    '\\q',
    '(?<n>x)',
    '[(?<n>x)]',
    '\\(?<n>x\\)',
    '\\Q(?<n>\\E',
    '\\pL',
    '\\p{Greek}',
    '[[:alpha:]]',
    '(?U)a+',
    '\\z',
    '\\Z',
    '(.+)',
    '__meta_kubernetes_.*',
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?',
    '[0-9a-f]{64}',
    '((a{10}){10}){10}',
    '(a{100}){11}',
    '(a{2}){0,1000}',
  ])('agrees with promtool on regex %j', async (regex) => {
    const yaml = readFileSync(join(fixtureDir, 'minimal.yaml'), 'utf8');
    const quoted = `'${regex.replace(/'/g, "''")}'`;
    const text = withFileSD(yaml).text.replace('    regex: metrics\n', `    regex: ${quoted}\n`);
    const { code } = await checkConfig('regex', text);
    expect({ regex, promtoolAccepts: code === 0 }).toEqual({
      regex,
      promtoolAccepts: regexProblem(regex) === undefined,
    });
  });

  // The operator's own limits (regex.ts) bound what one compile may cost; Prometheus' are far higher.
  it.each([
    ['a{1000} five times', 'a{1000}'.repeat(5), /would compile to about 5\d{3} instructions/],
    ['1025 characters', 'x'.repeat(1025), /is 1025 characters long/],
  ])(
    "refuses a regex promtool accepts but that is over the operator's limits: %s",
    async (_what, regex, why) => {
      const yaml = readFileSync(join(fixtureDir, 'minimal.yaml'), 'utf8');
      const text = withFileSD(yaml).text.replace('    regex: metrics\n', `    regex: '${regex}'\n`);
      const { code, output } = await checkConfig('over-limits', text);
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
      expect(regexProblem(regex)).toMatch(why);
    },
  );
});

// One ServiceMonitor Prometheus would refuse must not make the whole configuration unloadable.
describe('hostile ServiceMonitors', () => {
  const prometheus: PrometheusResource = {
    metadata: { namespace: 'monitoring', name: 'main' },
    spec: { serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} },
  };
  const good: ServiceMonitorResource = {
    metadata: { namespace: 'shop', name: 'good' },
    spec: { selector: { matchLabels: { app: 'good' } }, endpoints: [{ port: 'metrics' }] },
  };
  const namespaces = [{ name: 'shop' }, { name: 'monitoring' }];
  const cases = HOSTILE_CASES.map((c) => [c.what, c] as const);

  it.each(cases)(
    '%s: rendered unchecked (as before), promtool rejects the whole configuration',
    async (_what, c) => {
      const global = generateConfig(prometheus, [], namespaces).config.global;
      const unchecked = renderYaml({
        global,
        scrape_configs: [...scrapeConfigs(good), ...scrapeConfigs(c.monitor)],
      });
      const { code, output } = await checkConfig(
        `unchecked-${c.monitor.metadata.name}`,
        withFileSD(unchecked).text,
      );
      expect({ code, output }).toEqual({ code: 1, output: expect.stringMatching(c.promtool) });
    },
  );

  it.each(cases)(
    '%s: the monitor is skipped with its reason, the others render and promtool accepts the result',
    async (_what, c) => {
      const result = generateConfig(prometheus, [good, c.monitor], namespaces);
      expect(result.skipped).toEqual([
        {
          monitor: `shop/${c.monitor.metadata.name}`,
          problems: [expect.stringMatching(c.problem)],
        },
      ]);
      expect(result.config.scrape_configs.map((job) => job.job_name)).toEqual([
        'serviceMonitor/shop/good/0',
      ]);
      const { code, output } = await checkConfig(
        `skipped-${c.monitor.metadata.name}`,
        withFileSD(result.yaml).text,
      );
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
    },
  );

  it.each(['292y', '106751d', '9223372036854ms'])(
    'accepts %s, the longest durations promtool accepts',
    async (interval) => {
      const monitor: ServiceMonitorResource = {
        ...good,
        spec: { ...good.spec, endpoints: [{ port: 'metrics', interval }] },
      };
      const result = generateConfig(prometheus, [monitor], namespaces);
      expect(result.skipped).toEqual([]);
      const { code } = await checkConfig(`longest-${interval}`, withFileSD(result.yaml).text);
      expect(code).toBe(0);
    },
  );
});
