// Loaded into the memory bench's operator with NODE_OPTIONS=--import: samples V8's heap every 20 ms
// (unless BENCH_PROBE_SAMPLING=off: an idle operator does not run code 50 times a second, and V8 would
// optimize the sampler) and, on SIGUSR2, writes to BENCH_PROBE_FILE the peak heap in use, the heap
// after full collections (the live set) and the RSS, as one JSON object. It holds a few numbers;
// nothing of the operator's.
import { writeFileSync } from 'node:fs';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const out = process.env.BENCH_PROBE_FILE;
if (out) {
  let heapUsedPeak = 0;
  let heapTotalPeak = 0;
  const sample = () => {
    const { heapUsed, heapTotal } = process.memoryUsage();
    heapUsedPeak = Math.max(heapUsedPeak, heapUsed);
    heapTotalPeak = Math.max(heapTotalPeak, heapTotal);
  };
  if (process.env.BENCH_PROBE_SAMPLING !== 'off') setInterval(sample, 20).unref();
  process.on('SIGUSR2', () => {
    sample(); // before the collections: the heap as the operator left it
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc');
    for (let i = 0; i < 3; i++) gc();
    const { rss, heapUsed, heapTotal } = process.memoryUsage();
    const heapLimit = getHeapStatistics().heap_size_limit;
    writeFileSync(
      out,
      JSON.stringify({
        heapUsedPeak,
        heapTotalPeak,
        liveHeap: heapUsed,
        heapTotal,
        rss,
        heapLimit,
      }),
    );
  });
}
