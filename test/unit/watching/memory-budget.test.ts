import {
  CATCH_UP_PEAK_FACTOR,
  describeRefusal,
  heapBytesPerObject,
  judgeListing,
  type HeapState,
} from '../../../src/framework/watching/memory-budget.js';
import { meanJsonBytes, SIZE_SAMPLE } from '../../../src/framework/watching/listing-budget.js';

const MB = 2 ** 20;
/** The Deployment's heap: `--max-old-space-size=128` gives V8 a 176 MB limit (128 MB old space); about 10 MB in use after start-up. */
const deployed: HeapState = { limitBytes: 176 * MB, usedBytes: 10 * MB, reservedBytes: 0 };
/** The scale benchmark's objects: 445 bytes of JSON each once handled. */
const benchObjects = (objects: number) => ({ objects, meanJsonBytes: 445 });

describe('whether the heap can hold a listing', () => {
  test("75,000 of the benchmark's objects fit the Deployment's heap", () => {
    const verdict = judgeListing(benchObjects(75_000), deployed);

    expect(verdict.fits).toBe(true);
    expect(verdict.needBytes).toBe(
      Math.ceil(75_000 * heapBytesPerObject(445) * CATCH_UP_PEAK_FACTOR),
    );
  });

  test('100,000 do not (on a real control plane they ran out of heap mid catch-up), and the cap it suggests holds them with what is already used', () => {
    const verdict = judgeListing(benchObjects(100_000), deployed);

    expect(verdict.fits).toBe(false);
    expect(verdict.suggestedOldSpaceMb % 64).toBe(0);
    expect(verdict.suggestedOldSpaceMb * MB).toBeGreaterThanOrEqual(
      verdict.needBytes + deployed.usedBytes,
    );
    expect(verdict.suggestedMemoryLimitMi).toBe(verdict.suggestedOldSpaceMb * 2);
    // With that cap (and V8's young generation on top, as now) the same listing fits.
    const raised: HeapState = { ...deployed, limitBytes: (verdict.suggestedOldSpaceMb + 48) * MB };
    expect(judgeListing(benchObjects(100_000), raised).fits).toBe(true);
  });

  test('heap reserved by other listings under way counts as taken', () => {
    expect(judgeListing(benchObjects(60_000), deployed).fits).toBe(true);
    expect(judgeListing(benchObjects(60_000), { ...deployed, reservedBytes: 50 * MB }).fits).toBe(
      false,
    );
  });

  test('bigger objects cost more: 10,000 objects of 20 KB do not fit where 10,000 of 445 bytes do', () => {
    expect(judgeListing({ objects: 10_000, meanJsonBytes: 445 }, deployed).fits).toBe(true);
    expect(judgeListing({ objects: 10_000, meanJsonBytes: 20_000 }, deployed).fits).toBe(false);
  });

  test('an empty listing always fits', () => {
    expect(
      judgeListing(
        { objects: 0, meanJsonBytes: 0 },
        { limitBytes: 32 * MB, usedBytes: 10 * MB, reservedBytes: 0 },
      ).fits,
    ).toBe(true);
  });
});

describe('the old space a listing is measured against', () => {
  test("with the Deployment's flags (192 MB old space, 2 MB semi-spaces), the flag's old space, not the limit less 48 MB", () => {
    const small = { limitBytes: 198 * MB, usedBytes: 10 * MB, reservedBytes: 0 };
    const listing = benchObjects(110_000);

    expect(judgeListing(listing, small).fits).toBe(false);
    expect(judgeListing(listing, { ...small, oldSpaceBytes: 192 * MB }).fits).toBe(true);
  });
});

describe('the refusal message', () => {
  test('names the objects, their size, the need, the free heap and the settings to use', () => {
    const listing = benchObjects(150_000);
    const verdict = judgeListing(listing, deployed);

    const message = describeRefusal(
      'benchobjects.bench.konductor.dev/v1 in all namespaces',
      listing,
      deployed,
      verdict,
    );

    expect(message).toContain('benchobjects.bench.konductor.dev/v1 in all namespaces');
    expect(message).toContain('150,000 objects of about 445 bytes of JSON');
    expect(message).toContain(`need about ${Math.round(verdict.needBytes / MB)} MB`);
    expect(message).toContain('of the 128 MB old space are free');
    expect(message).toContain(`NODE_OPTIONS=--max-old-space-size=${verdict.suggestedOldSpaceMb}`);
    expect(message).toContain(`memory limit of at least ${verdict.suggestedMemoryLimitMi}Mi`);
  });
});

describe("a listing's mean object size", () => {
  test('is measured on every item of a page up to the sample size', () => {
    const items = [{ a: 1 }, { a: 'xx' }]; // 7 and 10 bytes of JSON

    expect(meanJsonBytes(items)).toBe(8.5);
  });

  test('is measured on at most the sample size of a larger page, evenly spaced: a listing from the watch cache is one page of every object', () => {
    const length = SIZE_SAMPLE * 40; // the first half 7 bytes of JSON each, the second 10
    const items = Array.from({ length }, (_, i) => ({ i: i < length / 2 ? 1 : 'xx' }));
    let read = 0;
    const counted = items.map((item) => ({ toJSON: () => (read++, item) }));

    expect(meanJsonBytes(counted)).toBeCloseTo(8.5, 1);
    expect(read).toBe(SIZE_SAMPLE);
  });

  test('is 0 for no items', () => {
    expect(meanJsonBytes([])).toBe(0);
  });
});
