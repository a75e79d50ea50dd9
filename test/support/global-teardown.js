import { existsSync, readFileSync, rmSync } from 'node:fs';

/** Prints the chaos summary (if any scenario ran) and stops the workers' control planes (their reapers clean up too if this never runs). */
export default async function globalTeardown() {
  const path = process.env.KONDUCTOR_CHAOS_RECORD;
  if (path && existsSync(path)) {
    const records = readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    const sum = (key) => records.reduce((total, r) => total + (Number(r[key]) || 0), 0);
    console.log(
      `chaos summary: scenarios=${records.length} faults=${sum('faults')} changes_made=${sum('changesMade')} ` +
        `changes_handled=${sum('changesHandled')} changes_lost=${sum('lost')} duplicate_side_effects=${sum('duplicates')} ` +
        `repeats_after_kills=${sum('repeatsAfterKills')} ` +
        `(${records.map((r) => r.scenario).join(', ')})`,
    );
    rmSync(path, { force: true });
  }
  const planes = globalThis.__konductorControlPlanes ?? [];
  globalThis.__konductorControlPlanes = undefined;
  await Promise.all(planes.map((plane) => plane.stop()));
}
