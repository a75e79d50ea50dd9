// The `konductor` launcher runs as typed (`./node_modules/.bin/konductor`, `npx konductor`): npm links
// bin/konductor.mjs itself, so without a `#!/usr/bin/env node` line the shell ran it as a script.
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cleanEnv } from '../../support/cli.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const launcher = join(root, 'bin/konductor.mjs');

describe('the konductor launcher', () => {
  test('starts with a node shebang and is executable', () => {
    expect(readFileSync(launcher, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(statSync(launcher).mode & 0o111).toBe(0o111);
  });

  test('runs when executed directly, as npm bin links do', async () => {
    const { stdout, stderr } = await promisify(execFile)(launcher, ['--help'], {
      cwd: root,
      env: cleanEnv(),
    });
    expect(stdout).toMatch(/^Usage: konductor <command>/);
    expect(stderr).toBe('');
  });
});
