// `konductor run` starts with V8's optimizing compiler (TurboFan) paused and resumes it once the
// initial listings are done. Start-up code runs once (module bodies, the handler compile, the first
// TLS handshakes), yet a few of its functions get hot enough for TurboFan, whose code pages and
// compile zones then stay in the process for good: about 8 MB of an idle operator's 60. Work that
// repeats (the catch-up, events) comes after the listings, with TurboFan back.
import { setFlagsFromString } from 'node:v8';

/** Set by bin/konductor for the node it starts: the flags it gave it (never passed on to children). */
export const LAUNCHER_FLAGS_VARIABLE = 'KONDUCTOR_LAUNCHER_NODE_FLAGS';
/** The node flag that starts node with TurboFan paused, as bin/konductor gives it. */
export const PAUSED_FLAG = '--no-opt';
/** How long start-up may keep TurboFan paused when the listings take longer (a resource not served yet). */
export const LONGEST_PAUSE_MS = 60_000;

/** Flags with which the user chose how V8 compiles: then konductor leaves the compiler alone. */
const COMPILER_FLAGS = /(?:^|\s)--(?:no-)?(?:opt|turbofan|maglev|sparkplug|jitless|lite-mode)\b/;

/** Where the decision comes from. */
export interface CompilerInputs {
  /** `NODE_OPTIONS` as set. */
  readonly nodeOptions?: string;
  /** Node's own command-line flags (`process.execArgv`). */
  readonly execArgv: readonly string[];
  /** The flags bin/konductor gave node ({@link LAUNCHER_FLAGS_VARIABLE}), if it started it. */
  readonly launcherFlags?: string;
}

/**
 * What start-up does with TurboFan: `'paused'` when bin/konductor started node with it off,
 * `'pause'` when konductor should switch it off now, `'leave'` when the user chose compiler flags.
 */
export function startupCompiler(inputs: CompilerInputs): 'paused' | 'pause' | 'leave' {
  const launcher = (inputs.launcherFlags ?? '').split(' ').filter(Boolean);
  const own = inputs.execArgv.filter((flag) => !launcher.includes(flag));
  if ([inputs.nodeOptions ?? '', ...own].some((flags) => COMPILER_FLAGS.test(flags)))
    return 'leave';
  return launcher.includes(PAUSED_FLAG) ? 'paused' : 'pause';
}

let paused = false;

/**
 * Pauses TurboFan for start-up unless the user chose compiler flags, for {@link LONGEST_PAUSE_MS} at
 * most; call first thing. Reads and removes {@link LAUNCHER_FLAGS_VARIABLE} from the environment.
 */
export function pauseOptimizingCompiler(
  env: NodeJS.ProcessEnv = process.env,
  execArgv: readonly string[] = process.execArgv,
): void {
  const launcherFlags = env[LAUNCHER_FLAGS_VARIABLE];
  delete env[LAUNCHER_FLAGS_VARIABLE];
  const decision = startupCompiler({ nodeOptions: env.NODE_OPTIONS, execArgv, launcherFlags });
  if (decision === 'pause') setFlagsFromString(PAUSED_FLAG);
  paused = decision !== 'leave';
  if (paused) setTimeout(resumeOptimizingCompiler, LONGEST_PAUSE_MS).unref();
}

/** Resumes TurboFan if start-up paused it (`konductor run` once its listings are done). */
export function resumeOptimizingCompiler(): void {
  if (!paused) return;
  paused = false;
  setFlagsFromString('--opt');
}

/** Whether TurboFan is paused now: paused by {@link pauseOptimizingCompiler} and not yet resumed. */
export function optimizingCompilerPaused(): boolean {
  return paused;
}
