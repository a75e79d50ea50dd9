import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineKind, resourceArguments } from '../../../src/framework/objects/kind.js';
import * as kinds from '../../../src/framework/objects/builtin-kinds.js';

describe('kinds', () => {
  test('a kind names its resource wherever two strings did', () => {
    const widget = defineKind('example.com/v1', 'Widget', 'widgets');

    expect(resourceArguments(widget, [{ id: 'x' }], '@on.create')).toEqual({
      resource: { apiVersion: 'example.com/v1', name: 'widgets' },
      rest: [{ id: 'x' }],
    });
    expect(resourceArguments('example.com/v1', ['widgets', { id: 'x' }], '@on.create')).toEqual({
      resource: { apiVersion: 'example.com/v1', name: 'widgets' },
      rest: [{ id: 'x' }],
    });
  });

  test('a malformed kind fails when it is defined, naming the part', () => {
    expect(() => defineKind('example.com', 'Widget', 'widgets')).toThrow(
      'apiVersion "example.com" is not \'group/version\'',
    );
    expect(() => defineKind('example.com/v1', 'Widget', 'Widgets')).toThrow(
      'plural "Widgets" must be lower-case',
    );
    expect(() => resourceArguments(undefined, [], '@on.create')).toThrow(
      '@on.create: name the resource with a kind',
    );
  });

  test('the built-in kinds of the core and apps groups carry their API versions and plurals', () => {
    expect(
      [kinds.Pod, kinds.PersistentVolumeClaim, kinds.StatefulSet].map(
        (k) => `${k.apiVersion} ${k.kind} ${k.plural}`,
      ),
    ).toEqual([
      'v1 Pod pods',
      'v1 PersistentVolumeClaim persistentvolumeclaims',
      'apps/v1 StatefulSet statefulsets',
    ]);
  });
});

describe('the built-in kinds cost nothing at run time', () => {
  test("their module imports client-node's models as types only, so loading them loads none of client-node", () => {
    const source = readFileSync(
      fileURLToPath(new URL('../../../src/framework/objects/builtin-kinds.ts', import.meta.url)),
      'utf8',
    );
    const imports = source
      .split('\n')
      .filter((line) => line.startsWith('import ') && line.includes('@kubernetes/client-node'));

    expect(imports).toEqual(["import type * as k8s from '@kubernetes/client-node';"]);
  });
});
