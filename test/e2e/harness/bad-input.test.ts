import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { clusterScript, clusterScriptOk, hostState, stateDir } from '../support/harness.js';

function listen(port: number): Promise<Server> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => resolvePromise(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolvePromise) => server.close(() => resolvePromise()));
}

describe('cluster.sh refuses bad input with a clear error and changes nothing', () => {
  // The snapshots compare against a host with no node on it.
  beforeAll(async () => {
    if (existsSync('/run/netns/konductor-node') || existsSync(join(stateDir(), 'pids')))
      await clusterScriptOk(['down']);
  }, 120_000);

  describe('up while something else listens on its port', () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      // A port of its own, so the spec never meets a node someone else runs on the default one.
      server = await listen(0);
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => close(server));

    it('exits non-zero, naming the port and the process that holds it, and leaves the host as it was', async () => {
      const before = hostState();
      const up = await clusterScript(['up'], {
        env: { KONDUCTOR_CLUSTER_PORT: String(port) },
        timeoutMs: 60_000,
      });
      expect(up.code).not.toBe(0);
      expect(up.stderr).toContain(`127.0.0.1:${port} is in use`);
      expect(up.stderr).toContain(`pid=${process.pid},`);
      expect(up.stderr).not.toMatch(/taking down/);
      expect(hostState()).toBe(before);
    }, 120_000);
  });

  it('up as a user other than root exits non-zero, saying it needs root, and leaves the host as it was', async () => {
    const before = hostState();
    const up = await clusterScript(['up'], { asNobody: true, timeoutMs: 60_000 });
    expect(up.code).not.toBe(0);
    expect(up.stderr).toMatch(/needs root/);
    expect(up.stderr).not.toMatch(/Permission denied/);
    expect(hostState()).toBe(before);
  }, 120_000);

  it('up with a link named knode0 in the host namespace exits non-zero, naming the link, and leaves the host otherwise as it was', async () => {
    // A bridge, as the node's own: this machine's kernel has no dummy links.
    execFileSync('ip', ['link', 'add', 'knode0', 'type', 'bridge']);
    try {
      const before = hostState();
      const up = await clusterScript(['up'], { timeoutMs: 60_000 });
      expect(up.code).not.toBe(0);
      expect(up.stderr).toMatch(/a link named knode0 exists in the host's namespace/);
      expect(hostState()).toBe(before);
    } finally {
      execFileSync('ip', ['link', 'del', 'knode0']);
    }
  }, 120_000);

  it('load while no node is up exits non-zero, saying no node is up, and leaves the host as it was', async () => {
    const before = hostState();
    const load = await clusterScript(['load', '--project', '/nonexistent', '--tag', 'x:1'], {
      timeoutMs: 60_000,
    });
    expect(load.code).not.toBe(0);
    expect(load.stderr).toMatch(/no local node is up/);
    expect(hostState()).toBe(before);
  }, 120_000);
});
