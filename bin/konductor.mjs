#!/usr/bin/env node
// Launches the konductor CLI. An installed package has only the compiled build (dist/) and runs
// that; a source checkout runs src/ through tsx, so a stale dist/ left by `npm run build` never
// shadows the code being edited. The compiled CLI compiles TypeScript handler files itself (or
// registers tsx for those it cannot).
// bin/konductor starts node through this file twice: first with NODE_FLAGS_STEP, to learn the node
// flags the command needs (the heap's size, TurboFan paused), then with those flags to run the command.
import { existsSync } from 'node:fs';

const NODE_FLAGS_STEP = '--konductor-launcher-node-flags';

const fromSource =
  !existsSync(new URL('../dist/cli/konductor.js', import.meta.url)) ||
  existsSync(new URL('../src/cli/konductor.ts', import.meta.url));
const entry = (name) =>
  new URL(
    `../${fromSource ? 'src' : 'dist'}/cli/${name}.${fromSource ? 'ts' : 'js'}`,
    import.meta.url,
  ).href;

if (fromSource) {
  // Both hooks, like `node --import tsx`: .ts handler files outside a "type": "module" package are CommonJS.
  const { register } = await import('tsx/esm/api');
  const { register: registerCjs } = await import('tsx/cjs/api');
  register();
  registerCjs();
}
if (process.argv[2] === NODE_FLAGS_STEP) {
  const { nodeFlagsFor } = await import(entry('node-flags'));
  process.stdout.write(nodeFlagsFor(process.argv.slice(3), process.env).join(' '));
} else {
  // Before the CLI's modules load: `run` resumes TurboFan once its listings are done.
  const args = process.argv.slice(2);
  if (args.includes('run') || args.includes('dev')) {
    const { pauseOptimizingCompiler } = await import(entry('optimizing-compiler'));
    pauseOptimizingCompiler();
  }
  await import(entry('konductor'));
}
