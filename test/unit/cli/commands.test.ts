import { helpFor, parseCommandLine } from '../../../src/cli/command-line.js';
import { parsed, usageError } from './parse-helpers.js';

const HELP = helpFor(undefined);
const DEV_HELP = helpFor('dev');
const INIT_HELP = helpFor('init');

describe('konductor commands', () => {
  describe('dev', () => {
    test('takes the files and every option of run', () => {
      const command = parsed(
        [
          'dev',
          'src/handlers.ts',
          'lib/',
          '-n',
          'team-a',
          '--log-format',
          'json',
          '--health-port',
          '0',
        ],
        'dev',
      );
      expect(command.options).toMatchObject({
        files: ['src/handlers.ts', 'lib/'],
        namespaces: ['team-a'],
        logFormat: 'json',
        healthPort: 0,
      });
    });

    test('runs without leader election unless --no-standalone or KONDUCTOR_STANDALONE=false asks for it', () => {
      expect(parsed(['dev', 'h.ts'], 'dev').options.standalone).toBe(true);
      expect(parsed(['dev', 'h.ts', '--no-standalone'], 'dev').options.standalone).toBe(false);
      expect(
        parsed(['dev', 'h.ts'], 'dev', { KONDUCTOR_STANDALONE: 'false' }).options.standalone,
      ).toBe(false);
      // run keeps leader election on by default.
      expect(parsed(['run', 'h.ts'], 'run').options.standalone).toBe(false);
    });

    test('keeps the arguments without the word dev, for the run it restarts', () => {
      expect(parsed(['-n', 'ns', 'dev', 'h.ts', '--concurrency', '2'], 'dev').runArgs).toEqual([
        '-n',
        'ns',
        'h.ts',
        '--concurrency',
        '2',
      ]);
    });

    test('refuses what run refuses, naming dev', () => {
      expect(usageError(['dev']).message).toBe(
        'dev needs at least one handler file or folder: konductor dev <file|folder>...',
      );
      expect(usageError(['dev', 'h.ts', '--concurrency', '0']).message).toBe(
        "--concurrency must be a positive integer, got '0'",
      );
    });
  });

  describe('init', () => {
    test('takes one folder; the group defaults to example.com', () => {
      expect(parsed(['init', 'my-operator'], 'init').options).toEqual({
        dir: 'my-operator',
        name: undefined,
        group: 'example.com',
        konductor: undefined,
      });
    });

    test('--name, --group and --konductor are parsed', () => {
      const command = parsed(
        [
          'init',
          'op',
          '--name',
          '@acme/db-operator',
          '--group',
          'db.acme.io',
          '--konductor=file:../konductor-0.1.0.tgz',
        ],
        'init',
      );
      expect(command.options).toEqual({
        dir: 'op',
        name: '@acme/db-operator',
        group: 'db.acme.io',
        konductor: 'file:../konductor-0.1.0.tgz',
      });
    });

    test.each([
      [['init'], 'init needs the folder of the new project: konductor init <dir>'],
      [['init', 'a', 'b'], 'init takes one folder, got 2: a b'],
      [
        ['init', 'op', '--group', 'example'],
        "--group 'example' is not an API group: use a domain with at least one dot, in lowercase (e.g. example.com)",
      ],
      [
        ['init', 'op', '--group', 'Example.com'],
        "--group 'Example.com' is not an API group: use a domain with at least one dot, in lowercase (e.g. example.com)",
      ],
      [
        ['init', 'op', '--name', 'My Operator'],
        "--name 'My Operator' is not an npm package name: use lowercase letters, digits, '-', '.' and '_' (optionally @scope/name)",
      ],
      [
        ['init', 'op', '--konductor', ''],
        "--konductor '' is not a version range: use e.g. ^0.1.0, a tarball path or a URL, without spaces",
      ],
      [
        ['init', 'op', '--namespace', 'x'],
        "unknown option '--namespace' (see konductor init --help)",
      ],
      [['init', 'op', '--group'], '--group needs a value (see konductor init --help)'],
    ])('%j is refused in one line', (args, message) => {
      expect(usageError(args).message).toBe(message);
    });
  });

  describe('types and manifests', () => {
    test('get every argument but their name, unparsed', () => {
      expect(parseCommandLine(['types', 'crds/a.yaml', '--out', 'x'], {})).toEqual({
        kind: 'types',
        args: ['crds/a.yaml', '--out', 'x'],
      });
      expect(parseCommandLine(['manifests', 'src/', '--help'], {})).toEqual({
        kind: 'manifests',
        args: ['src/', '--help'],
      });
    });
  });

  describe('help', () => {
    test('--help alone is the overview of every command', () => {
      expect(parseCommandLine(['--help'], {})).toEqual({ kind: 'help' });
      expect(parseCommandLine(['help'], {})).toEqual({ kind: 'help' });
      for (const usage of [
        'run <file|folder>...',
        'dev <file|folder>...',
        'init <dir>',
        'types <crd.yaml|folder>...',
        'manifests <file|folder>...',
      ]) {
        expect(HELP).toContain(usage);
      }
    });

    test("<command> --help and help <command> ask for that command's help", () => {
      expect(parseCommandLine(['run', '--help'], {})).toEqual({ kind: 'help', command: 'run' });
      expect(parseCommandLine(['dev', '-h'], {})).toEqual({ kind: 'help', command: 'dev' });
      expect(parseCommandLine(['init', '--help'], {})).toEqual({ kind: 'help', command: 'init' });
      expect(parseCommandLine(['help', 'init'], {})).toEqual({ kind: 'help', command: 'init' });
      expect(parseCommandLine(['help', 'types'], {})).toEqual({ kind: 'help', command: 'types' });
      expect(usageError(['help', 'deploy']).message).toBe(
        "unknown command 'deploy': use run, dev, init, types, manifests, disconnect, uninstall (see konductor --help)",
      );
    });

    test("each command's help shows its usage and options", () => {
      expect(helpFor('run')).toMatch(/^Usage: konductor run <file\|folder>\.\.\. \[options\]\n/);
      expect(helpFor('types')).toMatch(
        /^Usage: konductor types <crd\.yaml\|folder>\.\.\. \[options\] > types\.ts\n/,
      );
      expect(DEV_HELP).toContain('konductor dev <file|folder>...');
      expect(DEV_HELP).toContain('--no-standalone');
      expect(DEV_HELP).toContain('--namespace');
      for (const text of [
        'konductor init <dir>',
        '--name <name>',
        '--group <group>',
        '--konductor <version>',
        'npm install && npm test',
      ]) {
        expect(INIT_HELP).toContain(text);
      }
    });
  });
});
