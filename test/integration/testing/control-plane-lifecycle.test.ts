import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { CoreV1Api } from '@kubernetes/client-node';
import { TestControlPlane } from '../../../src/testing/index.js';
import { waitFor } from '../../support/wait-for.js';
import { isAlive } from '../../support/process-alive.js';

// These tests stop and kill control planes, so each starts its own instead of the shared one.
describe('a control plane of its own', () => {
  test('keeps its data when the API server is stopped and started again', async () => {
    const plane = await TestControlPlane.start();
    try {
      const core = plane.kubeConfig().makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: 'kept' } } });
      await core.createNamespacedConfigMap({
        namespace: 'kept',
        body: { metadata: { name: 'data' }, data: { answer: '42' } },
      });

      await plane.stopApiServer();
      await expect(core.listNamespace().catch(() => 'unreachable')).resolves.toBe('unreachable');
      await plane.startApiServer();

      const read = await core.readNamespacedConfigMap({ namespace: 'kept', name: 'data' });
      expect(read.data).toEqual({ answer: '42' });
    } finally {
      await plane.stop();
    }
  });

  test('removes its processes and folder on stop', async () => {
    const plane = await TestControlPlane.start();
    const pids = [plane.etcd.pid!, plane.apiServer.pid!];
    await plane.stop();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(existsSync(plane.dir)).toBe(false);
  });

  test('leaves no process or folder behind when the test process is killed (SIGKILL)', async () => {
    const holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('../../support/hold-control-plane.ts', import.meta.url)),
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const firstLine = await new Promise<string>((resolve, reject) => {
      createInterface({ input: holder.stdout! }).once('line', resolve);
      holder.once('exit', (code) => reject(new Error(`holder exited early with ${code}`)));
    });
    const held = JSON.parse(firstLine) as { dir: string; pids: number[] };
    expect(held.pids.every(isAlive)).toBe(true);

    holder.kill('SIGKILL');

    await waitFor(() => !held.pids.some(isAlive) && !existsSync(held.dir), {
      what: 'its processes to exit and its directory to go',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(held.pids.filter(isAlive)).toEqual([]);
    expect(existsSync(held.dir)).toBe(false);
  });
});
