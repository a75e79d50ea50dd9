import { helpFor, parseCommandLine } from '../../../src/cli/command-line.js';
import type { RunOptions } from '../../../src/cli/options/run.js';
import {
  isNamespaceGlob,
  matchNamespace,
} from '../../../src/framework/runtime/namespace-patterns.js';
import { usageError } from './parse-helpers.js';

const HELP = helpFor(undefined);
const RUN_HELP = helpFor('run');

/** Parses `konductor run handlers/ <args>` with the given environment and returns the run options. */
function run(args: string[], env: Record<string, string> = {}): RunOptions {
  const command = parseCommandLine(['run', 'handlers/', ...args], env);
  if (command.kind !== 'run') throw new Error(`expected a run command, got ${command.kind}`);
  return command.options;
}

describe('konductor command line', () => {
  test('defaults: all namespaces, info logs in auto format, health port 8080, identity konductor.dev with its Lease konductor-leader, leader election on', () => {
    expect(run([])).toEqual({
      files: ['handlers/'],
      namespaces: [],
      allNamespaces: false,
      context: undefined,
      kubeconfig: undefined,
      concurrency: undefined,
      logLevel: 'info',
      logFormat: 'auto',
      healthPort: 8080,
      identity: 'konductor.dev',
      storage: 'annotations',
      standalone: false,
      sharding: false,
      warmStandby: false,
      leaseNamespace: undefined,
      leaseName: 'konductor-leader',
      webhooks: true,
    });
  });

  test('positional arguments after run are handler files and folders, in order', () => {
    const command = parseCommandLine(['run', 'a.ts', 'lib/', '--standalone', 'b.mjs'], {});
    expect(command).toMatchObject({
      kind: 'run',
      options: { files: ['a.ts', 'lib/', 'b.mjs'], standalone: true },
    });
  });

  test('every option is parsed', () => {
    const options = run([
      '-n',
      'team-a',
      '--namespace',
      'team-*',
      '--namespace=ops',
      '--context',
      'staging',
      '--kubeconfig',
      '/etc/kube/config',
      '--concurrency',
      '4',
      '--log-level',
      'debug',
      '--log-format',
      'json',
      '--health-port',
      '9090',
      '--identity',
      'db-operator.example.com',
      '--standalone',
      '--lease-namespace',
      'operators',
      '--lease-name',
      'my-operator.leader',
      '--webhook-port',
      '9443',
      '--webhook-url',
      'https://127.0.0.1:9443',
      '--webhook-service',
      'operators/hooks:8443',
      '--no-webhooks',
    ]);
    expect(options).toEqual({
      files: ['handlers/'],
      namespaces: ['team-a', 'team-*', 'ops'],
      allNamespaces: false,
      context: 'staging',
      kubeconfig: '/etc/kube/config',
      concurrency: 4,
      logLevel: 'debug',
      logFormat: 'json',
      healthPort: 9090,
      identity: 'db-operator.example.com',
      storage: 'annotations',
      standalone: true,
      sharding: false,
      warmStandby: false,
      leaseNamespace: 'operators',
      leaseName: 'my-operator.leader',
      webhookPort: 9443,
      webhookUrl: 'https://127.0.0.1:9443',
      webhookService: { namespace: 'operators', name: 'hooks', port: 8443 },
      webhooks: false,
    });
  });

  test('-A and --all-namespaces select all namespaces; repeated namespaces are kept once', () => {
    expect(run(['-A'])).toMatchObject({ namespaces: [], allNamespaces: true });
    expect(run(['--all-namespaces'])).toMatchObject({ namespaces: [], allNamespaces: true });
    expect(run(['-n', 'a', '-n', 'a', '-n', 'b']).namespaces).toEqual(['a', 'b']);
  });

  test('health port 0 (any free port) and 65535 are allowed', () => {
    expect(run(['--health-port', '0']).healthPort).toBe(0);
    expect(run(['--health-port=65535']).healthPort).toBe(65535);
  });

  test('--help, -h and --version win over everything else', () => {
    expect(parseCommandLine(['--help'], {})).toEqual({ kind: 'help' });
    expect(parseCommandLine(['run', 'x.ts', '-h'], {})).toEqual({ kind: 'help', command: 'run' });
    expect(parseCommandLine(['--version'], {})).toEqual({ kind: 'version' });
  });

  describe('environment', () => {
    test('every option can come from KONDUCTOR_*', () => {
      const options = run([], {
        KONDUCTOR_NAMESPACE: 'team-a, team-* ,,ops',
        KONDUCTOR_CONTEXT: 'staging',
        KONDUCTOR_KUBECONFIG: '/etc/kube/config',
        KONDUCTOR_CONCURRENCY: '8',
        KONDUCTOR_LOG_LEVEL: 'warn',
        KONDUCTOR_LOG_FORMAT: 'pretty',
        KONDUCTOR_HEALTH_PORT: '8181',
        KONDUCTOR_IDENTITY: 'db-operator.example.com',
        KONDUCTOR_STANDALONE: 'true',
        KONDUCTOR_LEASE_NAMESPACE: 'operators',
        KONDUCTOR_LEASE_NAME: 'leader',
        KONDUCTOR_WEBHOOK_PORT: '9443',
        KONDUCTOR_WEBHOOK_URL: 'https://127.0.0.1:9443',
        KONDUCTOR_WEBHOOK_SERVICE: 'operators/hooks',
        KONDUCTOR_WEBHOOKS: 'false',
      });
      expect(options).toEqual({
        files: ['handlers/'],
        namespaces: ['team-a', 'team-*', 'ops'],
        allNamespaces: false,
        context: 'staging',
        kubeconfig: '/etc/kube/config',
        concurrency: 8,
        logLevel: 'warn',
        logFormat: 'pretty',
        healthPort: 8181,
        identity: 'db-operator.example.com',
        storage: 'annotations',
        standalone: true,
        sharding: false,
        warmStandby: false,
        leaseNamespace: 'operators',
        leaseName: 'leader',
        webhookPort: 9443,
        webhookUrl: 'https://127.0.0.1:9443',
        webhookService: { namespace: 'operators', name: 'hooks' },
        webhooks: false,
      });
      expect(run([], { KONDUCTOR_ALL_NAMESPACES: 'true' }).allNamespaces).toBe(true);
    });

    test('flags win over the environment', () => {
      const env = {
        KONDUCTOR_NAMESPACE: 'from-env',
        KONDUCTOR_CONCURRENCY: '8',
        KONDUCTOR_LOG_LEVEL: 'warn',
        KONDUCTOR_HEALTH_PORT: '8181',
        KONDUCTOR_STANDALONE: 'true',
        KONDUCTOR_LEASE_NAME: 'env-leader',
        KONDUCTOR_IDENTITY: 'from-env.example.com',
      };
      const options = run(
        [
          '-n',
          'from-flag',
          '--concurrency',
          '2',
          '--log-level',
          'error',
          '--health-port',
          '1234',
          '--no-standalone',
          '--lease-name',
          'flag-leader',
          '--identity',
          'from-flag.example.com',
        ],
        env,
      );
      expect(options).toMatchObject({
        namespaces: ['from-flag'],
        concurrency: 2,
        logLevel: 'error',
        healthPort: 1234,
        standalone: false,
        leaseName: 'flag-leader',
        identity: 'from-flag.example.com',
      });
    });

    test('a namespace flag overrides both namespace variables, and -A overrides KONDUCTOR_NAMESPACE', () => {
      expect(run(['-n', 'a'], { KONDUCTOR_ALL_NAMESPACES: 'true' })).toMatchObject({
        namespaces: ['a'],
        allNamespaces: false,
      });
      expect(run(['-A'], { KONDUCTOR_NAMESPACE: 'a,b' })).toMatchObject({
        namespaces: [],
        allNamespaces: true,
      });
    });

    test('--sharding and KONDUCTOR_SHARDING turn sharding on; beside --standalone it is refused, naming why', () => {
      expect(run(['--sharding'], {}).sharding).toBe(true);
      expect(run([], { KONDUCTOR_SHARDING: 'true' }).sharding).toBe(true);
      expect(run(['--warm-standby'], {}).warmStandby).toBe(true);
      expect(() => run(['--sharding', '--standalone'], {})).toThrow(
        /--sharding needs leader election .*drop --standalone/,
      );
    });

    test('booleans accept true/false, 1/0, yes/no, on/off; empty variables count as unset', () => {
      expect(run([], { KONDUCTOR_STANDALONE: 'YES' }).standalone).toBe(true);
      expect(run([], { KONDUCTOR_STANDALONE: '0' }).standalone).toBe(false);
      expect(run([], { KONDUCTOR_STANDALONE: '', KONDUCTOR_LOG_LEVEL: ' ' })).toMatchObject({
        standalone: false,
        logLevel: 'info',
      });
    });

    test('invalid variables are named in the error', () => {
      expect(usageError(['run', 'x'], { KONDUCTOR_STANDALONE: 'maybe' }).message).toBe(
        "KONDUCTOR_STANDALONE must be true or false, got 'maybe'",
      );
      expect(usageError(['run', 'x'], { KONDUCTOR_CONCURRENCY: '0' }).message).toBe(
        "KONDUCTOR_CONCURRENCY must be a positive integer, got '0'",
      );
      expect(usageError(['run', 'x'], { KONDUCTOR_NAMESPACE: 'ok,Not_OK' }).message).toMatch(
        /^KONDUCTOR_NAMESPACE 'Not_OK' is not a namespace name/,
      );
    });
  });

  describe('mutual exclusion', () => {
    test('--namespace and --all-namespaces cannot be combined', () => {
      expect(usageError(['run', 'x', '-n', 'a', '-A']).message).toBe(
        '--namespace and --all-namespaces cannot be used together',
      );
    });

    test('KONDUCTOR_NAMESPACE and KONDUCTOR_ALL_NAMESPACES=true cannot be combined', () => {
      expect(
        usageError(['run', 'x'], { KONDUCTOR_NAMESPACE: 'a', KONDUCTOR_ALL_NAMESPACES: 'true' })
          .message,
      ).toBe('KONDUCTOR_NAMESPACE and KONDUCTOR_ALL_NAMESPACES cannot be used together');
      expect(
        run([], { KONDUCTOR_NAMESPACE: 'a', KONDUCTOR_ALL_NAMESPACES: 'false' }).namespaces,
      ).toEqual(['a']);
    });
  });

  describe('invalid input: one line naming the flag and what it allows', () => {
    test.each([
      [
        ['run', 'x', '--concurrency', 'zero'],
        "--concurrency must be a positive integer, got 'zero'",
      ],
      [['run', 'x', '--concurrency', '0'], "--concurrency must be a positive integer, got '0'"],
      [['run', 'x', '--concurrency', '1.5'], "--concurrency must be a positive integer, got '1.5'"],
      [
        ['run', 'x', '--log-level', 'loud'],
        "--log-level must be one of trace, debug, info, warn, error, fatal, silent; got 'loud'",
      ],
      [
        ['run', 'x', '--log-format', 'xml'],
        "--log-format must be one of json, pretty, auto; got 'xml'",
      ],
      [
        ['run', 'x', '--health-port', '65536'],
        "--health-port must be an integer from 0 to 65535, got '65536'",
      ],
      [
        ['run', 'x', '--health-port=-1'],
        "--health-port must be an integer from 0 to 65535, got '-1'",
      ],
      [
        ['run', 'x', '--health-port', '-1'],
        "--health-port needs a value; to pass one starting with '-', write --health-port=<value>",
      ],
      [
        ['run', 'x', '--health-port', 'http'],
        "--health-port must be an integer from 0 to 65535, got 'http'",
      ],
      [
        ['run', 'x', '--lease-name', 'Leader!'],
        "--lease-name 'Leader!' is not a valid name: use lowercase letters, digits, '-' and '.'",
      ],
      [
        ['run', 'x', '--lease-namespace', 'ops-*'],
        "--lease-namespace 'ops-*' is not a namespace name: use lowercase letters, digits and '-'",
      ],
      [['run', 'x', '--context', ''], '--context must not be empty'],
      [['run', 'x', '--bogus'], "unknown option '--bogus' (see konductor --help)"],
      [['run', 'x', '-x'], "unknown option '-x' (see konductor --help)"],
      [['run', 'x', '-n'], '--namespace needs a value (see konductor --help)'],
      [['run', 'x', '--kubeconfig'], '--kubeconfig needs a value (see konductor --help)'],
      [
        ['run', 'x', '--standalone=yes'],
        '--standalone takes no value (use --no-standalone to turn it off)',
      ],
      [['run'], 'run needs at least one handler file or folder: konductor run <file|folder>...'],
      [
        [],
        "no command given: use 'konductor init <dir>' for a new project or 'konductor run <file|folder>...' (see konductor --help)",
      ],
      [
        ['start', 'x'],
        "unknown command 'start': use run, dev, init, types, manifests, disconnect, uninstall (see konductor --help)",
      ],
    ])('%j', (args, message) => {
      const error = usageError(args);
      expect(error.message).toBe(message);
      expect(error.message).not.toContain('\n');
    });

    test('namespace values must be names or globs', () => {
      expect(usageError(['run', 'x', '-n', 'Team_A']).message).toBe(
        "--namespace 'Team_A' is not a namespace name: use lowercase letters, digits and '-', plus '*' and '?' as wildcards",
      );
      expect(usageError(['run', 'x', '-n', '']).message).toMatch(
        /^--namespace '' is not a namespace name/,
      );
      expect(run(['-n', '*']).namespaces).toEqual(['*']);
      expect(run(['-n', 'team-?-*']).namespaces).toEqual(['team-?-*']);
    });
  });

  describe('namespace globs', () => {
    test('* matches any run of characters, ? exactly one', () => {
      expect(matchNamespace('team-*', 'team-a')).toBe(true);
      expect(matchNamespace('team-*', 'team-')).toBe(true);
      expect(matchNamespace('team-*', 'my-team-a')).toBe(false);
      expect(matchNamespace('*-prod', 'shop-prod')).toBe(true);
      expect(matchNamespace('*-prod', 'shop-prod-2')).toBe(false);
      expect(matchNamespace('team-?', 'team-a')).toBe(true);
      expect(matchNamespace('team-?', 'team-ab')).toBe(false);
      expect(matchNamespace('*', 'anything')).toBe(true);
      expect(matchNamespace('t*m-?-*', 'team-b-prod')).toBe(true);
    });

    test('without wildcards a glob matches only the exact name; other characters are literal', () => {
      expect(matchNamespace('default', 'default')).toBe(true);
      expect(matchNamespace('default', 'default2')).toBe(false);
      expect(matchNamespace('a.b', 'axb')).toBe(false);
      expect(matchNamespace('a+', 'aa')).toBe(false);
    });

    test('isNamespaceGlob tells globs from plain names', () => {
      expect(isNamespaceGlob('team-*')).toBe(true);
      expect(isNamespaceGlob('team-?')).toBe(true);
      expect(isNamespaceGlob('team-a')).toBe(false);
    });
  });

  test('HELP documents every option and its environment variable', () => {
    const options: Array<[flag: string, env: string | undefined]> = [
      ['-n, --namespace', 'KONDUCTOR_NAMESPACE'],
      ['-A, --all-namespaces', 'KONDUCTOR_ALL_NAMESPACES'],
      ['--context', 'KONDUCTOR_CONTEXT'],
      ['--kubeconfig', 'KONDUCTOR_KUBECONFIG'],
      ['--concurrency', 'KONDUCTOR_CONCURRENCY'],
      ['--log-level', 'KONDUCTOR_LOG_LEVEL'],
      ['--log-format', 'KONDUCTOR_LOG_FORMAT'],
      ['--health-port', 'KONDUCTOR_HEALTH_PORT'],
      ['--identity', 'KONDUCTOR_IDENTITY'],
      ['--standalone', 'KONDUCTOR_STANDALONE'],
      ['--lease-namespace', 'KONDUCTOR_LEASE_NAMESPACE'],
      ['--lease-name', 'KONDUCTOR_LEASE_NAME'],
      ['-h, --help', undefined],
      ['--version', undefined],
    ];
    for (const [flag, env] of options) {
      expect(HELP).toContain(flag);
      if (env) expect(HELP).toContain(env);
    }
    expect(RUN_HELP).toContain('konductor run <file|folder>...');
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
      expect(HELP).toContain(level);
    expect(HELP).toContain('json|pretty|auto');
  });

  describe('operator identity: --identity and KONDUCTOR_IDENTITY', () => {
    test('another identity has a Lease of its own, so unrelated operators do not wait on each other', () => {
      expect(run(['--identity', 'db-operator.example.com'])).toMatchObject({
        identity: 'db-operator.example.com',
        leaseName: 'db-operator.example.com-leader',
      });
      expect(run([], { KONDUCTOR_IDENTITY: 'cache-operator' })).toMatchObject({
        identity: 'cache-operator',
        leaseName: 'cache-operator-leader',
      });
    });

    test('the identity given explicitly as konductor.dev keeps the Lease konductor-leader', () => {
      expect(run(['--identity', 'konductor.dev'])).toMatchObject({
        identity: 'konductor.dev',
        leaseName: 'konductor-leader',
      });
    });

    test('--lease-name (or KONDUCTOR_LEASE_NAME) still names the Lease, whatever the identity', () => {
      expect(
        run(['--identity', 'db-operator.example.com', '--lease-name', 'db-leader']).leaseName,
      ).toBe('db-leader');
      expect(
        run([], {
          KONDUCTOR_IDENTITY: 'db-operator.example.com',
          KONDUCTOR_LEASE_NAME: 'db-leader',
        }).leaseName,
      ).toBe('db-leader');
    });

    test('an identity too long for a Lease name still gives a valid Lease name of at most 253 characters', () => {
      const identity = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}`;
      const { leaseName } = run(['--identity', identity]);
      expect(leaseName.length).toBeLessThanOrEqual(253);
      expect(leaseName).toMatch(
        /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
      );
      expect(leaseName).not.toBe(run(['--identity', `${identity.slice(0, -1)}e`]).leaseName);
    });

    test.each([
      [['run', 'x', '--identity', 'My_Operator'], '--identity'],
      [['run', 'x', '--identity', 'example.com.'], '--identity'],
      [['run', 'x', '--identity', ''], '--identity'],
      [['run', 'x', '--identity', 'a'.repeat(254)], '--identity'],
    ])('%j is refused in one line naming the flag, the value and the rule', (args, flag) => {
      const { message } = usageError(args);
      expect(message).toMatch(
        new RegExp(`^${flag}: the operator identity .* is not a DNS-1123 subdomain`),
      );
      expect(message).toContain(JSON.stringify(args[3]));
      expect(message).toContain("use lower-case letters, digits, '-' and '.'");
      expect(message).not.toContain('\n');
    });

    test('an invalid KONDUCTOR_IDENTITY is named in the error', () => {
      expect(usageError(['run', 'x'], { KONDUCTOR_IDENTITY: 'Konductor' }).message).toMatch(
        /^KONDUCTOR_IDENTITY: the operator identity "Konductor" is not a DNS-1123 subdomain/,
      );
    });

    test('konductor dev takes the identity too', () => {
      const command = parseCommandLine(
        ['dev', 'handlers/', '--identity', 'db-operator.example.com'],
        {},
      );
      expect(command).toMatchObject({
        kind: 'dev',
        options: {
          identity: 'db-operator.example.com',
          leaseName: 'db-operator.example.com-leader',
        },
      });
    });

    test('HELP documents --identity, its variable and its default', () => {
      for (const text of ['--identity <name>', 'KONDUCTOR_IDENTITY', '(default konductor.dev)'])
        expect(HELP).toContain(text);
    });
  });

  describe('hung handlers: --handler-timeout and --stall-timeout', () => {
    test("both are unset by default: no handler timeout, and the operator's stall default", () => {
      expect(run([])).toMatchObject({ handlerTimeout: undefined, stallTimeout: undefined });
    });

    test('both take whole seconds from the flag or from KONDUCTOR_HANDLER_TIMEOUT / KONDUCTOR_STALL_TIMEOUT, the flag winning', () => {
      expect(run(['--handler-timeout', '600', '--stall-timeout=120'])).toMatchObject({
        handlerTimeout: 600,
        stallTimeout: 120,
      });
      const env = { KONDUCTOR_HANDLER_TIMEOUT: '30', KONDUCTOR_STALL_TIMEOUT: '900' };
      expect(run([], env)).toMatchObject({ handlerTimeout: 30, stallTimeout: 900 });
      expect(run(['--handler-timeout', '45'], env)).toMatchObject({
        handlerTimeout: 45,
        stallTimeout: 900,
      });
    });

    test('0 means no handler timeout, and turns the stall check off', () => {
      expect(run(['--handler-timeout', '0', '--stall-timeout', '0'])).toMatchObject({
        handlerTimeout: undefined,
        stallTimeout: 0,
      });
    });

    test('take a duration as every option does: seconds, with units or ISO-8601', () => {
      expect(run(['--handler-timeout', '1.5', '--stall-timeout', '5m'])).toMatchObject({
        handlerTimeout: 1.5,
        stallTimeout: 300,
      });
      expect(run(['--handler-timeout', 'PT2M'])).toMatchObject({ handlerTimeout: 120 });
    });

    test.each([
      [['run', 'x', '--handler-timeout', 'ten'], '--handler-timeout', 'ten'],
      [['run', 'x', '--handler-timeout=-5'], '--handler-timeout', '-5'],
      [['run', 'x', '--stall-timeout', '5 minutes'], '--stall-timeout', '5 minutes'],
      [['run', 'x', '--stall-timeout', '99999999999'], '--stall-timeout', '99999999999'],
    ])('%j is refused in one line', (args, flag, value) => {
      expect(usageError(args).message).toBe(
        `${flag} must be a duration: seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S'); got '${value}'`,
      );
    });

    test('an invalid variable is named in the error', () => {
      expect(usageError(['run', 'x'], { KONDUCTOR_HANDLER_TIMEOUT: 'soon' }).message).toBe(
        "KONDUCTOR_HANDLER_TIMEOUT must be a duration: seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S'); got 'soon'",
      );
    });

    test('HELP documents both flags, their variables and the stall default of 300 s', () => {
      for (const text of [
        '--handler-timeout <duration>',
        'KONDUCTOR_HANDLER_TIMEOUT',
        '--stall-timeout <duration>',
        'KONDUCTOR_STALL_TIMEOUT',
        '(default 300)',
      ]) {
        expect(HELP).toContain(text);
      }
    });
  });
});
