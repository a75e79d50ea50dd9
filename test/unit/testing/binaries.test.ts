import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  findEtcd,
  resolveBinaries,
  resolveControllerManager,
  resolveKubectl,
} from '../../../src/testing/binaries.js';

const saved = { ...process.env };
let dir: string;

function fakeBinary(name: string): string {
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'konductor-bin-'));
  process.env.KONDUCTOR_CACHE_DIR = join(dir, 'empty-cache');
  process.env.PATH = '';
  delete process.env.KUBEBUILDER_ASSETS;
  delete process.env.KONDUCTOR_ETCD;
  delete process.env.KONDUCTOR_KUBE_APISERVER;
});

afterEach(() => {
  process.env = { ...saved };
  rmSync(dir, { recursive: true, force: true });
});

describe('finding the control plane binaries', () => {
  test('uses an envtest KUBEBUILDER_ASSETS folder holding both', () => {
    const etcd = fakeBinary('etcd');
    const kubeApiserver = fakeBinary('kube-apiserver');
    process.env.KUBEBUILDER_ASSETS = dir;
    expect(resolveBinaries()).toEqual({ etcd, kubeApiserver });
  });

  test('prefers explicit overrides to KUBEBUILDER_ASSETS', () => {
    fakeBinary('etcd');
    const kubeApiserver = fakeBinary('kube-apiserver');
    const customEtcd = fakeBinary('my-etcd');
    process.env.KUBEBUILDER_ASSETS = dir;
    process.env.KONDUCTOR_ETCD = customEtcd;
    expect(resolveBinaries()).toEqual({ etcd: customEtcd, kubeApiserver });
  });

  test('rejects an override that is not executable, naming it', () => {
    process.env.KONDUCTOR_ETCD = join(dir, 'missing-etcd');
    expect(() => resolveBinaries()).toThrow(/missing-etcd is not an executable/);
  });

  test('says how to provision when nothing is found', () => {
    expect(() => resolveBinaries()).toThrow(
      /etcd and kube-apiserver not found\. Run 'bash node_modules\/konductor\/scripts\/provision\.sh'/,
    );
  });
});

describe('finding etcd alone (test support that runs etcd processes of its own)', () => {
  test('finds the etcd resolveBinaries picks, without needing a kube-apiserver', () => {
    const etcd = fakeBinary('etcd');
    process.env.KUBEBUILDER_ASSETS = dir;
    expect(findEtcd()).toBe(etcd);
  });

  test('finds it on PATH last', () => {
    const etcd = fakeBinary('etcd');
    process.env.PATH = dir;
    expect(findEtcd()).toBe(etcd);
  });

  test('gives undefined when there is none', () => {
    expect(findEtcd()).toBeUndefined();
  });
});

describe('finding kubectl', () => {
  beforeEach(() => {
    delete process.env.KONDUCTOR_KUBECTL;
  });

  function record(entries: Record<string, string>): void {
    mkdirSync(process.env.KONDUCTOR_CACHE_DIR!, { recursive: true });
    writeFileSync(join(process.env.KONDUCTOR_CACHE_DIR!, 'binaries.json'), JSON.stringify(entries));
  }

  test('uses the kubectl provision.sh recorded in the cache', () => {
    const kubectl = fakeBinary('kubectl');
    record({ etcd: fakeBinary('etcd'), kubeApiserver: fakeBinary('kube-apiserver'), kubectl });
    expect(resolveKubectl()).toBe(kubectl);
  });

  test('prefers KONDUCTOR_KUBECTL to the recorded one', () => {
    record({ kubectl: fakeBinary('kubectl') });
    const custom = fakeBinary('my-kubectl');
    process.env.KONDUCTOR_KUBECTL = custom;
    expect(resolveKubectl()).toBe(custom);
  });

  test('uses the kubectl of an envtest KUBEBUILDER_ASSETS folder', () => {
    const kubectl = fakeBinary('kubectl');
    process.env.KUBEBUILDER_ASSETS = dir;
    expect(resolveKubectl()).toBe(kubectl);
  });

  test('rejects a KONDUCTOR_KUBECTL that is not executable, naming it', () => {
    process.env.KONDUCTOR_KUBECTL = join(dir, 'missing-kubectl');
    expect(() => resolveKubectl()).toThrow(
      /missing-kubectl is not an executable file; fix KONDUCTOR_KUBECTL/,
    );
  });

  test('never takes a kubectl from PATH, whose version may not match the control plane, and says how to provision', () => {
    fakeBinary('kubectl');
    process.env.PATH = dir;
    expect(() => resolveKubectl()).toThrow(
      /kubectl for the test control plane not found\. Run 'npm run provision'/,
    );
  });

  test('ignores a recorded kubectl that is no longer there', () => {
    record({ kubectl: join(dir, 'gone', 'kubectl') });
    expect(() => resolveKubectl()).toThrow(/not found/);
  });

  test('finds the newest kubectl unpacked in the cache when the record lacks one', () => {
    record({ etcd: fakeBinary('etcd'), kubeApiserver: fakeBinary('kube-apiserver') });
    const unpacked = (version: string): string => {
      const folder = join(process.env.KONDUCTOR_CACHE_DIR!, 'kubectl', version);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'kubectl'), '#!/bin/sh\n');
      chmodSync(join(folder, 'kubectl'), 0o755);
      return join(folder, 'kubectl');
    };
    unpacked('1.9.0-1');
    const newest = unpacked('1.20.5+really1.20.2-1.1+deb12u1');
    expect(resolveKubectl()).toBe(newest);
  });
});

describe('finding kube-controller-manager', () => {
  beforeEach(() => {
    delete process.env.KONDUCTOR_KUBE_CONTROLLER_MANAGER;
  });

  function record(entries: Record<string, string>): void {
    mkdirSync(process.env.KONDUCTOR_CACHE_DIR!, { recursive: true });
    writeFileSync(join(process.env.KONDUCTOR_CACHE_DIR!, 'binaries.json'), JSON.stringify(entries));
  }

  function built(version: string): string {
    const folder = join(process.env.KONDUCTOR_CACHE_DIR!, 'kube-controller-manager', version);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'kube-controller-manager'), '#!/bin/sh\n');
    chmodSync(join(folder, 'kube-controller-manager'), 0o755);
    return join(folder, 'kube-controller-manager');
  }

  test('uses the one provision.sh recorded in the cache', () => {
    const kcm = fakeBinary('kube-controller-manager');
    record({
      etcd: fakeBinary('etcd'),
      kubeApiserver: fakeBinary('kube-apiserver'),
      kubeControllerManager: kcm,
    });
    expect(resolveControllerManager()).toBe(kcm);
  });

  test('prefers KONDUCTOR_KUBE_CONTROLLER_MANAGER to the recorded one', () => {
    record({ kubeControllerManager: fakeBinary('kube-controller-manager') });
    const custom = fakeBinary('my-kcm');
    process.env.KONDUCTOR_KUBE_CONTROLLER_MANAGER = custom;
    expect(resolveControllerManager()).toBe(custom);
  });

  test('uses the one in an envtest KUBEBUILDER_ASSETS folder', () => {
    const kcm = fakeBinary('kube-controller-manager');
    process.env.KUBEBUILDER_ASSETS = dir;
    expect(resolveControllerManager()).toBe(kcm);
  });

  test('finds the newest build in the cache when the record lacks one', () => {
    record({ etcd: fakeBinary('etcd'), kubeApiserver: fakeBinary('kube-apiserver') });
    built('1.9.0-1');
    const newest = built('1.20.5+really1.20.2-1.1+deb12u1');
    expect(resolveControllerManager()).toBe(newest);
  });

  test('rejects an override that is not executable, naming it', () => {
    process.env.KONDUCTOR_KUBE_CONTROLLER_MANAGER = join(dir, 'missing-kcm');
    expect(() => resolveControllerManager()).toThrow(
      /missing-kcm is not an executable file; fix KONDUCTOR_KUBE_CONTROLLER_MANAGER/,
    );
  });

  test('never takes one from PATH, whose version may be newer than the API server, and names provision.sh in one line', () => {
    fakeBinary('kube-controller-manager');
    process.env.PATH = dir;
    let message = '';
    try {
      resolveControllerManager();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/kube-controller-manager not found .*scripts\/provision\.sh/);
    expect(message).not.toContain('\n');
  });

  test('is not needed to find etcd and kube-apiserver', () => {
    const etcd = fakeBinary('etcd');
    const kubeApiserver = fakeBinary('kube-apiserver');
    process.env.KUBEBUILDER_ASSETS = dir;
    expect(resolveBinaries()).toEqual({ etcd, kubeApiserver });
  });
});
