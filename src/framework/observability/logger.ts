import { createRequire } from 'node:module';
import { pino, type Logger, type LevelWithSilent } from 'pino';
import type * as Pretty from 'pino-pretty';
import { traceFields } from './tracing.js';

export type { Logger };

/** How log lines look: JSON lines, readable text, or readable only when stdout is a terminal. */
export type LogFormat = 'json' | 'pretty' | 'auto';

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** The least severe level written; default `info`. */
  level?: LevelWithSilent;
  /** Default `auto`: readable in a terminal, JSON otherwise (log collectors want JSON). */
  format?: LogFormat;
  /** Extra fields on every line. */
  base?: Record<string, unknown>;
}

/** The framework's logger: pino on stdout; per-object children carry `namespace`, `name` and `handler`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  // Lines written inside traced work carry its trace and span ids (none when tracing is off).
  const settings = {
    level: options.level ?? 'info',
    base: options.base ?? {},
    mixin: () => traceFields() ?? {},
  };
  if (!pretty) return pino(settings);
  // Loaded only here (synchronously: it is CommonJS): JSON logs, as in a cluster, never need its ~5 MB.
  const { PinoPretty } = createRequire(import.meta.url)('pino-pretty') as typeof Pretty;
  // A synchronous stream in this thread: no worker, and nothing lost when the process exits.
  return pino(
    settings,
    PinoPretty({
      sync: true,
      colorize: process.stdout.isTTY === true,
      ignore: 'pid,hostname',
      translateTime: 'SYS:HH:MM:ss.l',
    }),
  );
}

/** A logger that writes nothing (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
