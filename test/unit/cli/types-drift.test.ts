import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { generateTypes } from '../../../src/cli/commands/types.js';

const root = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

/** Each CRD file and the module `npm run types` generates from it. */
const GENERATED = [
  ['crds/etcd.database.coreos.com.yaml', 'src/handlers/etcd/generated/etcd.database.coreos.com.ts'],
  ['crds/monitoring.coreos.com.yaml', 'src/handlers/prometheus/generated/monitoring.coreos.com.ts'],
  ['test/fixtures/crds-types/widgets.yaml', 'test/types/generated/widgets.ts'],
] as const;

describe('generated CRD types are up to date', () => {
  test.each(GENERATED)('%s generates the committed %s', async (crd, generated) => {
    const expected = await generateTypes([{ name: basename(crd), text: read(crd) }]);
    if (read(generated) !== expected) {
      throw new Error(
        `${generated} differs from what ${crd} generates: run \`npm run types\` and commit the result`,
      );
    }
  });
});
