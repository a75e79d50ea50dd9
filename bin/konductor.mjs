#!/usr/bin/env node
// Launches the konductor CLI. An installed package has only the compiled build (dist/) and runs
// that; a source checkout runs src/ through tsx, so a stale dist/ left by `npm run build` never
// shadows the code being edited. The compiled CLI registers tsx itself, for TypeScript handler files.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/konductor.ts', import.meta.url);
const compiled = new URL('../dist/cli/konductor.js', import.meta.url);

if (existsSync(compiled) && !existsSync(source)) {
  await import(compiled.href);
} else {
  // Both hooks, like `node --import tsx`: .ts handler files outside a "type": "module" package are CommonJS.
  const { register } = await import('tsx/esm/api');
  const { register: registerCjs } = await import('tsx/cjs/api');
  register();
  registerCjs();
  await import(source.href);
}
