import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controllerManagerArgs } from '../../../src/testing/controller-manager.js';
import { TestControlPlane } from '../../../src/testing/index.js';

const args = controllerManagerArgs({
  kubeconfigPath: '/plane/kubeconfig.json',
  serviceAccountPrivateKey: '/plane/sa.key',
  rootCaFile: '/plane/certs/apiserver.crt',
});

function flag(name: string): string | undefined {
  return args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

describe('the controller manager of a test control plane', () => {
  test('talks to the plane through its kubeconfig', () => {
    expect(flag('kubeconfig')).toBe('/plane/kubeconfig.json');
  });

  test('signs ServiceAccount tokens with the key the API server verifies them with, and hands out its CA', () => {
    expect(flag('service-account-private-key-file')).toBe('/plane/sa.key');
    expect(flag('root-ca-file')).toBe('/plane/certs/apiserver.crt');
  });

  test('runs every controller but those needing nodes or a cloud', () => {
    const controllers = flag('controllers')!.split(',');
    expect(controllers[0]).toBe('*');
    expect(controllers.slice(1).sort()).toEqual([
      '-cloud-node-lifecycle',
      '-nodeipam',
      '-nodelifecycle',
      '-route',
      '-service',
    ]);
  });

  test('runs each controller as its own ServiceAccount, as in a cluster', () => {
    expect(flag('use-service-account-credentials')).toBe('true');
  });

  test('binds a claim to a volume made after it within 2 s, not the default 15', () => {
    expect(flag('pvclaimbinder-sync-period')).toBe('2s');
  });

  test('neither elects a leader nor opens a port', () => {
    expect(flag('leader-elect')).toBe('false');
    expect(flag('port')).toBe('0');
    expect(flag('secure-port')).toBe('0');
  });
});

describe('asking for the controller manager without its binary', () => {
  const saved = { ...process.env };
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'konductor-kcm-'));
    for (const name of ['etcd', 'kube-apiserver']) {
      writeFileSync(join(dir, name), '#!/bin/sh\n');
      chmodSync(join(dir, name), 0o755);
    }
    process.env.KUBEBUILDER_ASSETS = dir;
    process.env.KONDUCTOR_CACHE_DIR = join(dir, 'empty-cache');
    delete process.env.KONDUCTOR_KUBE_CONTROLLER_MANAGER;
  });

  afterEach(() => {
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });

  test('fails at once with one line naming scripts/provision.sh, starting nothing', async () => {
    const started = TestControlPlane.start({ controllerManager: true, baseDir: dir });
    await expect(started).rejects.toThrow(
      /^test control plane: kube-controller-manager not found .*scripts\/provision\.sh[^\n]*$/,
    );
    expect(readdirSync(dir).filter((name) => name.startsWith('konductor-cp-'))).toEqual([]);
  });
});
