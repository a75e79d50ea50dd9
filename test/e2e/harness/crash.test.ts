import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  alive,
  clusterScript,
  clusterScriptOk,
  crashUpMidway,
  hostState,
  kubectl,
  stateDir,
  waitFor,
} from '../support/harness.js';

/** Whether anything of a node is left to take down. */
function nodeLeft(): boolean {
  return existsSync('/run/netns/konductor-node') || existsSync(join(stateDir(), 'pids'));
}

const busybox = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'harness-busybox', namespace: 'default' },
  spec: {
    restartPolicy: 'Never',
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        imagePullPolicy: 'Never',
        command: ['sh', '-c', 'echo ran'],
      },
    ],
  },
};

describe('cluster.sh after a harness killed in the middle of up', () => {
  // The snapshots compare against a host with no node on it.
  beforeAll(async () => {
    if (nodeLeft()) await clusterScriptOk(['down']);
  }, 120_000);

  // Whatever a failed test left, the node is down for the next one.
  afterEach(async () => {
    if (nodeLeft()) await clusterScript(['down']);
  }, 120_000);

  it('down takes down the node the killed up left running and leaves the host as it was before up', async () => {
    const before = hostState();
    const pids = await crashUpMidway();
    expect([...pids.keys()].sort()).toEqual([
      'containerd',
      'etcd',
      'kube-apiserver',
      'kubelet',
      'sysctl-guard',
    ]);
    expect([...pids.entries()].filter(([, pid]) => !alive(pid))).toEqual([]);

    const down = await clusterScriptOk(['down']);
    expect(down.seconds).toBeLessThan(10);
    expect([...pids.entries()].filter(([, pid]) => alive(pid))).toEqual([]);
    expect(hostState()).toBe(before);
  }, 300_000);

  it('up recovers by itself: the node gets Ready and runs a Pod, and down then leaves the host as it was', async () => {
    const before = hostState();
    await crashUpMidway();

    const up = await clusterScriptOk(['up']);
    expect(up.stderr).toMatch(/a previous node was not taken down; cleaning up first/);
    expect(up.stdout.trim().split('\n').at(-1)).toBe(join(stateDir(), 'kubeconfig'));
    expect((await clusterScript(['status'])).stdout).toMatch(/^up: node konductor-node Ready/);

    // The default ServiceAccount, which admission requires of a Pod, comes a moment after Ready.
    await waitFor(
      async () => (await kubectl(['apply', '-f', '-'], JSON.stringify(busybox))).code === 0,
      {
        what: 'the busybox Pod created',
        timeoutMs: 60_000,
        intervalMs: 500,
      },
    );
    await waitFor(
      async () => {
        const phase = (
          await kubectl(['get', 'pod', 'harness-busybox', '-o', 'jsonpath={.status.phase}'])
        ).stdout;
        if (phase === 'Failed') throw new Error('the busybox Pod failed');
        return phase === 'Succeeded';
      },
      { what: 'the busybox Pod Succeeded', timeoutMs: 120_000, intervalMs: 500 },
    );
    expect((await kubectl(['logs', 'harness-busybox'])).stdout.trim()).toBe('ran');

    await clusterScriptOk(['down']);
    expect(hostState()).toBe(before);
  }, 400_000);
});
