import { DEV_HELP, HELP, RUN_HELP } from '../../../src/cli/options.js';
import { parsed, usageError } from './parse-helpers.js';

describe('konductor run/dev --storage (KONDUCTOR_STORAGE)', () => {
  test('annotations is the default', () => {
    expect(parsed(['run', 'handlers/'], 'run').options.storage).toBe('annotations');
  });

  test('--storage status asks for status storage', () => {
    expect(parsed(['run', 'handlers/', '--storage', 'status'], 'run').options.storage).toBe('status');
    expect(parsed(['run', 'handlers/', '--storage=annotations'], 'run').options.storage).toBe('annotations');
  });

  test('KONDUCTOR_STORAGE sets it, and the flag wins over it', () => {
    expect(parsed(['run', 'handlers/'], 'run', { KONDUCTOR_STORAGE: 'status' }).options.storage).toBe('status');
    expect(parsed(['run', 'handlers/', '--storage', 'annotations'], 'run', { KONDUCTOR_STORAGE: 'status' }).options.storage).toBe('annotations');
  });

  test('konductor dev takes it too', () => {
    expect(parsed(['dev', 'handlers/', '--storage', 'status'], 'dev').options.storage).toBe('status');
  });

  test('a value that is neither annotations nor status is a one-line usage error naming the flag, the choices and the value', () => {
    const error = usageError(['run', 'handlers/', '--storage', 'etcd']);
    expect(error.message).toBe("--storage must be one of annotations, status; got 'etcd'");
  });

  test('a bad KONDUCTOR_STORAGE names the variable', () => {
    expect(usageError(['run', 'handlers/'], { KONDUCTOR_STORAGE: 'configmap' }).message).toBe("KONDUCTOR_STORAGE must be one of annotations, status; got 'configmap'");
  });

  test('the help of run, dev and the overview documents --storage, its variable and its choices', () => {
    for (const help of [HELP, RUN_HELP, DEV_HELP]) {
      for (const text of ['--storage <place>', 'KONDUCTOR_STORAGE', 'annotations (default), or status']) expect(help).toContain(text);
    }
  });
});
