import { fileURLToPath } from 'node:url';
import { hasHandlers, loadHandlers } from '../../../src/cli/load-handlers.js';
import { on, type ConversionContext } from '../../../src/framework/index.js';

const admissionOnly = fileURLToPath(new URL('../../fixtures/admission-only/', import.meta.url));

describe('which exported classes konductor run loads', () => {
  test('a class whose only decorators are @on.validate and @on.mutate has handlers', () => {
    class Checks {
      @on.validate('example.com/v1', 'widgets')
      check(): void {}
      @on.mutate('example.com/v1', 'widgets')
      defaults(): void {}
    }
    expect(hasHandlers(Checks)).toBe(true);
  });

  test('a class whose only decorator is @on.convert has handlers', () => {
    class Versions {
      @on.convert('example.com', 'widgets')
      convert({ object }: ConversionContext): ConversionContext['object'] {
        return object;
      }
    }
    expect(hasHandlers(Versions)).toBe(true);
  });

  test('a class without decorators has none', () => {
    class Plain {
      check(): void {}
    }
    expect(hasHandlers(Plain)).toBe(false);
  });

  test('a folder holding only admission classes loads their webhooks instead of failing with "no handlers found"', async () => {
    const registry = await loadHandlers([admissionOnly]);
    expect(registry.handlers).toEqual([]);
    expect(registry.admission().map(({ kind, id }) => ({ kind, id }))).toEqual([
      { kind: 'validate', id: 'widget_limits' },
      { kind: 'validate', id: 'widget-limits' },
    ]);
  });
});
