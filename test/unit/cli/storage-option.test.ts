import { jest } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { helpFor } from '../../../src/cli/command-line.js';
import { manifestsCommand } from '../../../src/cli/commands/manifests.js';
import { parsed, usageError } from './parse-helpers.js';

describe('konductor run/dev --storage (KONDUCTOR_STORAGE)', () => {
  test('annotations is the default', () => {
    expect(parsed(['run', 'handlers/'], 'run').options.storage).toBe('annotations');
  });

  test('--storage status asks for status storage', () => {
    expect(parsed(['run', 'handlers/', '--storage', 'status'], 'run').options.storage).toBe(
      'status',
    );
    expect(parsed(['run', 'handlers/', '--storage=annotations'], 'run').options.storage).toBe(
      'annotations',
    );
  });

  test('KONDUCTOR_STORAGE sets it, and the flag wins over it', () => {
    expect(
      parsed(['run', 'handlers/'], 'run', { KONDUCTOR_STORAGE: 'status' }).options.storage,
    ).toBe('status');
    expect(
      parsed(['run', 'handlers/', '--storage', 'annotations'], 'run', {
        KONDUCTOR_STORAGE: 'status',
      }).options.storage,
    ).toBe('annotations');
  });

  test('konductor dev takes it too', () => {
    expect(parsed(['dev', 'handlers/', '--storage', 'status'], 'dev').options.storage).toBe(
      'status',
    );
  });

  test('a value that is neither annotations nor status is a one-line usage error naming the flag, the choices and the value', () => {
    const error = usageError(['run', 'handlers/', '--storage', 'etcd']);
    expect(error.message).toBe("--storage must be one of annotations, status; got 'etcd'");
  });

  test('a bad KONDUCTOR_STORAGE names the variable', () => {
    expect(usageError(['run', 'handlers/'], { KONDUCTOR_STORAGE: 'configmap' }).message).toBe(
      "KONDUCTOR_STORAGE must be one of annotations, status; got 'configmap'",
    );
  });

  test('the help of run, dev and the overview documents --storage, its variable and its choices', () => {
    for (const help of [helpFor(undefined), helpFor('run'), helpFor('dev')]) {
      for (const text of [
        '--storage <place>',
        'KONDUCTOR_STORAGE',
        'annotations (default), or status',
      ])
        expect(help).toContain(text);
    }
  });
});

describe('konductor manifests --storage', () => {
  const fixture = fileURLToPath(
    new URL('../../fixtures/manifests/widget-operator.ts', import.meta.url),
  );

  /** The args of the Deployment's container that `konductor manifests <args>` prints. */
  async function deploymentArgs(args: string[]): Promise<string[]> {
    let stdout = '';
    const out = jest
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
    try {
      await manifestsCommand(args);
    } finally {
      out.mockRestore();
    }
    const docs = loadAll(stdout) as Array<{
      kind: string;
      spec?: { template: { spec: { containers: Array<{ args: string[] }> } } };
    }>;
    return docs.find((doc) => doc.kind === 'Deployment')!.spec!.template.spec.containers[0]!.args;
  }

  test('--storage status is passed to konductor run in the Deployment', async () => {
    expect(await deploymentArgs([fixture, '--name', 'demo', '--storage', 'status'])).toEqual(
      expect.arrayContaining(['--storage', 'status']),
    );
  });

  test('without --storage the Deployment leaves konductor run its default', async () => {
    expect(await deploymentArgs([fixture, '--name', 'demo'])).not.toContain('--storage');
  });

  test('a bad --storage is refused before anything is printed', async () => {
    await expect(deploymentArgs([fixture, '--storage', 'etcd'])).rejects.toThrow(
      "--storage must be one of annotations, status; got 'etcd'",
    );
  });

  test('the help documents it', () => {
    expect(helpFor('manifests')).toContain('--storage <place>');
  });
});
