import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Extra fields on every line. */
  base?: Record<string, unknown>;
}

/** The framework's logger: pino, JSON lines on stdout. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({ level: options.level ?? 'info', base: options.base ?? {} });
}

/** A logger that writes nothing (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
