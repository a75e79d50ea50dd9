import { spawn, type ChildProcess } from 'node:child_process';
import type { KubeConfig } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { Lease } from '../../../src/framework/runtime/leader-election.js';
import { getWidget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const fixture = fileURLToPath(new URL('../../fixtures/handlers/widget-owner.ts', import.meta.url));
const children: ChildProcess[] = [];

interface Replica {
  child: ChildProcess;
  pid: number;
  leading: () => boolean;
  /** The messages of its JSON log lines so far. */
  messages: () => string[];
}

/** `konductor run` with the default Lease timings (30 s / 20 s / 2 s), plus `extra` arguments. */
function replica(namespace: string, extra: string[] = []): Replica {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('KONDUCTOR_')),
  );
  const args = [
    'bin/konductor.mjs',
    'run',
    fixture,
    '--kubeconfig',
    process.env.KONDUCTOR_TEST_KUBECONFIG!,
    '-n',
    namespace,
  ];
  args.push('--lease-namespace', namespace, '--health-port', '0', '--log-format', 'json', ...extra);
  const child = spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const messages = (): string[] =>
    out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? '');
  return {
    child,
    pid: child.pid!,
    leading: () => out.includes('leading: starting work'),
    messages,
  };
}

/** The default Lease duration `konductor run` uses. */
const LEASE_DURATION_MS = 30_000;

async function readLease(kc: KubeConfig, namespace: string): Promise<Lease> {
  const client = new ApiClient(kc);
  try {
    return await client.request<Lease>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/konductor-leader`,
    );
  } finally {
    client.close();
  }
}

function microTime(value: string | undefined): number {
  if (value === undefined) throw new Error('the Lease has no time where one was expected');
  return Date.parse(value);
}

async function handledBy(namespace: string, name: string): Promise<string | undefined> {
  return (await getWidget(namespace, name)).status?.handledBy as string | undefined;
}

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

describe('leader election between two operator processes', () => {
  test('exactly one handles; a SIGKILLed leader is replaced once its Lease expires; a SIGTERMed one at once', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('leaders');

    const first = replica(namespace);
    await waitFor(first.leading, { what: 'the first replica to lead', timeoutMs: 20_000 });
    const second = replica(namespace);
    await widgets.create('one');
    await waitFor(async () => (await handledBy(namespace, 'one')) !== undefined, {
      what: 'one to be handled',
    });
    expect(await handledBy(namespace, 'one')).toBe(String(first.pid));
    expect(second.leading()).toBe(false);

    const leaseBeforeKill = await readLease(kc, namespace);
    first.child.kill('SIGKILL');
    await widgets.create('two');
    await waitFor(second.leading, { what: 'the standby to take over', timeoutMs: 45_000 });
    await waitFor(async () => (await handledBy(namespace, 'two')) !== undefined, {
      what: 'two to be handled after the kill',
    });
    expect(await handledBy(namespace, 'two')).toBe(String(second.pid));
    // A killed leader cannot release: the standby may acquire only once the Lease it last saw expired.
    const afterKill = await readLease(kc, namespace);
    expect(afterKill.spec?.holderIdentity).not.toBe(leaseBeforeKill.spec?.holderIdentity);
    expect(microTime(afterKill.spec?.acquireTime)).toBeGreaterThanOrEqual(
      microTime(leaseBeforeKill.spec?.renewTime) + LEASE_DURATION_MS,
    );

    const third = replica(namespace);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // running as a standby
    expect(third.leading()).toBe(false);
    const leaseBeforeTerm = await readLease(kc, namespace);
    second.child.kill('SIGTERM');
    await widgets.create('three');
    await waitFor(third.leading, {
      what: 'the standby to take over after SIGTERM',
      timeoutMs: 45_000,
    });
    await waitFor(async () => (await handledBy(namespace, 'three')) !== undefined, {
      what: 'three to be handled after SIGTERM',
    });
    expect(await handledBy(namespace, 'three')).toBe(String(third.pid));
    // A SIGTERMed leader releases the Lease, so the standby acquires it before the term it last renewed
    // could have run out; how soon after is the elector's unit spec's, on the fake clock.
    expect(second.messages()).toContain('released the lease');
    const afterTerm = await readLease(kc, namespace);
    expect(microTime(afterTerm.spec?.acquireTime)).toBeLessThan(
      microTime(leaseBeforeTerm.spec?.renewTime) + LEASE_DURATION_MS,
    );
  }, 120_000);
});

describe('operators with their own identities', () => {
  test('each leads with a Lease of its own; a second replica of one identity says it stands by, for whom and on which Lease', async () => {
    const { kc, namespace } = await widgetNamespace('identities');

    // Before identities, both used Lease konductor-leader, and the second waited without a word.
    const alpha = replica(namespace, ['--identity', 'alpha.example.com']);
    const beta = replica(namespace, ['--identity', 'beta.example.com']);
    await waitFor(() => alpha.leading() && beta.leading(), {
      what: 'both operators to lead',
      timeoutMs: 30_000,
    });

    const client = new ApiClient(kc);
    try {
      const leases = await client.request<{ items: Lease[] }>(
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      );
      expect(leases.items.map((lease) => lease.metadata?.name).sort()).toEqual([
        'alpha.example.com-leader',
        'beta.example.com-leader',
      ]);

      const standby = replica(namespace, ['--identity', 'alpha.example.com']);
      const standing = (): string[] =>
        standby.messages().filter((msg) => msg.startsWith('standing by'));
      await waitFor(() => standing().length > 0, {
        what: 'the standby to say who leads',
        timeoutMs: 30_000,
      });
      const lease = await client.request<Lease>(
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/alpha.example.com-leader`,
      );
      expect(standing()).toEqual([
        `standing by, leader is ${lease.spec?.holderIdentity} (Lease ${namespace}/alpha.example.com-leader)`,
      ]);
      expect(standby.leading()).toBe(false);

      alpha.child.kill('SIGTERM');
      await waitFor(standby.leading, {
        what: 'the standby to take over after SIGTERM',
        timeoutMs: 15_000,
      });
      expect(standby.messages()).toContain(
        `took over the Lease ${namespace}/alpha.example.com-leader from ${lease.spec?.holderIdentity}: leading`,
      );
      expect(standing()).toHaveLength(1);
    } finally {
      client.close();
    }
  }, 90_000);
});
