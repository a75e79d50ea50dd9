import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveBinaries } from '../../../src/testing/binaries.js';

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
    expect(() => resolveBinaries()).toThrow(/etcd and kube-apiserver not found\. Run 'bash node_modules\/konductor\/scripts\/provision\.sh'/);
  });
});
