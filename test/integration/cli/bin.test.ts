// The `konductor` command runs as typed (`./node_modules/.bin/konductor`, `npx konductor`): npm links
// bin/konductor, a shell script that starts node with the flags the command needs (the heap's size for
// `run` and `dev`) and then bin/konductor.mjs, which runs the CLI. Without a shebang line, or
// executable bits, the shell would run the files as scripts.
import { execFile } from 'node:child_process';
import {
  chmodSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cleanEnv } from '../../support/cli.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const command = join(root, 'bin/konductor');
const entry = join(root, 'bin/konductor.mjs');
const run = promisify(execFile);

describe('the konductor command', () => {
  test.each([
    [command, '#!/bin/sh'],
    [entry, '#!/usr/bin/env node'],
  ])('%s starts with its shebang and is executable', (file, shebang) => {
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe(shebang);
    expect(statSync(file).mode & 0o111).toBe(0o111);
  });

  test('package.json links the shell command as the bin', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin).toEqual({ konductor: './bin/konductor' });
  });

  test.each([command, entry])(
    '%s runs when executed directly, as npm bin links do',
    async (file) => {
      const { stdout, stderr } = await run(file, ['--help'], { cwd: root, env: cleanEnv() });
      expect(stdout).toMatch(/^Usage: konductor <command>/);
      expect(stderr).toBe('');
    },
  );
});

describe('the node flags bin/konductor starts a command with', () => {
  let dir: string;
  /** How the fake `node` was started, in order: the last start is the command's own. */
  let calls: () => string[][];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'konductor-bin-'));
    // npm links the command from node_modules/.bin. A `node` first on PATH records how it was started,
    // and answers the launcher's question with the real node, but starts no command: no cluster here.
    const log = join(dir, 'calls.log');
    symlinkSync(command, join(dir, 'konductor'));
    writeFileSync(
      join(dir, 'node'),
      [
        '#!/bin/sh',
        `printf '%s\\n' "$*" >> '${log}'`,
        `case "$2" in --konductor-launcher-node-flags) exec '${process.execPath}' "$@" ;; esac`,
        '',
      ].join('\n'),
    );
    chmodSync(join(dir, 'node'), 0o755);
    calls = () =>
      readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' '));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function started(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> {
    writeFileSync(join(dir, 'calls.log'), '');
    await run(join(dir, 'konductor'), args, {
      cwd: root,
      env: {
        ...cleanEnv(),
        ...env,
        PATH: `${dir}:${process.env.PATH ?? ''}`,
        KUBECONFIG: '/nonexistent',
      },
    }).catch(() => undefined); // run fails without a cluster; only how node was started matters
    const all = calls();
    return all[all.length - 1]!;
  }

  test('run: the heap is sized by the rule and TurboFan paused, through the resolved link', async () => {
    expect(await started(['run', 'handlers/'])).toEqual([
      '--max-old-space-size=512',
      '--max-semi-space-size=16',
      '--no-opt',
      entry,
      'run',
      'handlers/',
    ]);
  });

  test('--max-heap sets the ceiling', async () => {
    expect((await started(['run', 'h.ts', '--max-heap', '96']))[0]).toBe('--max-old-space-size=96');
  });

  test('a heap flag in NODE_OPTIONS wins: no heap flag is added', async () => {
    expect(await started(['run', 'h.ts'], { NODE_OPTIONS: '--max-old-space-size=200' })).toEqual([
      '--no-opt',
      entry,
      'run',
      'h.ts',
    ]);
  });

  test("only konductor's flags are taken from the answer: a preloaded module's banner is not", async () => {
    const banner = "--import=data:text/javascript,console.log('[banner@1]*injected')";
    expect(await started(['run', 'h.ts'], { NODE_OPTIONS: banner })).toEqual([
      '--max-old-space-size=512',
      '--max-semi-space-size=16',
      '--no-opt',
      entry,
      'run',
      'h.ts',
    ]);
  });

  test('other commands start node without flags, and without asking first', async () => {
    expect(await started(['types', '--help'])).toEqual([entry, 'types', '--help']);
    expect(calls()).toHaveLength(1);
  });
});
