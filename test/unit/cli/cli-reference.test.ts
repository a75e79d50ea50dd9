// The help and docs/reference/cli-flags.md are written from the flag declarations: every flag,
// variable and default the parser knows is documented, and the committed reference is current.
import { existsSync, readFileSync } from 'node:fs';
import {
  COMMAND_SPECS,
  GLOBAL_FLAGS,
  cliReference,
  helpFor,
  type CommandName,
} from '../../../src/cli/command-line.js';
import { envName, type Flag } from '../../../src/cli/flags.js';
import { markdownText } from '../../../src/cli/help.js';

const reference = new URL('../../../docs/reference/cli-flags.md', import.meta.url);
const commands = Object.keys(COMMAND_SPECS) as CommandName[];

/** How the help names a flag: a switch that is on by default by its `--no-` form. */
function shown(name: string, flag: Flag, negatable: boolean | undefined): string {
  return negatable && flag.value === undefined && flag.default === 'true'
    ? `--no-${name}`
    : `--${name}`;
}

describe('konductor flag documentation', () => {
  test('docs/reference/cli-flags.md is what `npm run docs:cli` writes from the declarations', () => {
    const written = existsSync(reference) ? readFileSync(reference, 'utf8') : '';
    // Out of date: run `npm run docs:cli` and commit docs/reference/cli-flags.md.
    expect(written).toBe(cliReference());
  });

  test.each(commands)(
    'konductor %s --help lists every flag with its value, variable and default',
    (command) => {
      const spec = COMMAND_SPECS[command];
      const help = helpFor(command);
      for (const [name, flag] of Object.entries(spec.flags)) {
        expect(help).toContain(
          `${flag.short ? `-${flag.short}, ` : ''}${shown(name, flag, spec.negatable)}` +
            (flag.value ? ` ${flag.value}` : ''),
        );
        if (flag.env) expect(help).toContain(`env ${envName(name)}`);
        const fallback = flag.default ?? flag.defaultNote;
        if (fallback !== undefined && flag.value !== undefined)
          expect(help.replace(/\s+/g, ' ')).toContain(`(default ${fallback})`);
      }
    },
  );

  test.each(commands)('the reference has a table row for every flag of konductor %s', (command) => {
    const spec = COMMAND_SPECS[command];
    const section = cliReference().split(`## konductor ${command}\n`)[1]!.split('\n## ')[0]!;
    for (const [name, flag] of Object.entries(spec.flags)) {
      const row = section
        .split('\n')
        .find(
          (line) =>
            line.startsWith('| ') && line.includes(`\`${shown(name, flag, spec.negatable)}\``),
        );
      expect(row).toBeDefined();
      if (flag.env) expect(row).toContain(`\`${envName(name)}\``);
      if (flag.default !== undefined) expect(row).toContain(`\`${flag.default}\``);
      if (flag.defaultNote !== undefined)
        expect(row).toContain(markdownText(flag.defaultNote).replace(/\|/g, '\\|'));
    }
  });

  test('the overview lists every command and the flags of konductor itself', () => {
    const help = helpFor(undefined);
    for (const spec of Object.values(COMMAND_SPECS))
      expect(help).toContain(`  ${spec.name} ${spec.args} `);
    for (const name of Object.keys(GLOBAL_FLAGS)) expect(help).toContain(`--${name}`);
  });

  test('help lines fit in 100 columns', () => {
    for (const command of [undefined, ...commands]) {
      for (const line of helpFor(command).split('\n')) expect(line.length).toBeLessThanOrEqual(100);
    }
  });
});
