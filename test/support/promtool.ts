// Runs the real promtool (`npm run provision` installs Debian's prometheus package, which has it).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';

/** What promtool printed (stdout and stderr) and its exit code. */
export interface PromtoolResult {
  code: number;
  output: string;
}

/** Runs promtool; a missing binary is a failure with instructions, never a silent skip. */
export function promtool(args: readonly string[]): Promise<PromtoolResult> {
  return new Promise((resolve, reject) => {
    execFile('promtool', [...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error === null) resolve({ code: 0, output });
      else if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        reject(
          new Error(
            "promtool not found on PATH: run `npm run provision` (installs Debian's prometheus package)",
          ),
        );
      else if (typeof error.code === 'number') resolve({ code: error.code, output });
      else reject(new Error(`promtool ${args.join(' ')} failed: ${error.message}\n${output}`));
    });
  });
}

/** A temporary folder to write rule and test files into; `remove` deletes it. */
export function scratch(): { write(name: string, content: unknown): string; remove(): void } {
  const folder = mkdtempSync(join(tmpdir(), 'konductor-monitoring-'));
  return {
    write(name, content) {
      const path = join(folder, name);
      writeFileSync(
        path,
        typeof content === 'string' ? content : dump(content, { noRefs: true, lineWidth: -1 }),
      );
      return path;
    },
    remove: () => rmSync(folder, { recursive: true, force: true }),
  };
}
