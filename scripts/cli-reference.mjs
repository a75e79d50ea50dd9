// Writes docs/reference/cli-flags.md from the CLI's flag declarations (src/cli/options/): `npm run docs:cli`.
// test/unit/cli/cli-reference.test.ts fails while the committed file differs from what this writes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const { cliReference } = await import('../src/cli/command-line.ts');
const target = new URL('../docs/reference/cli-flags.md', import.meta.url);
mkdirSync(new URL('.', target), { recursive: true });
writeFileSync(target, cliReference());
console.log(`wrote ${fileURLToPath(target)}`);
