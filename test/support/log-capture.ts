/** A pino logger that keeps every line it writes, parsed, for specs that assert on logs (`atLeast`, `containing`). */
import { pino, type Logger } from 'pino';

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;

export class LogCapture {
  readonly lines: LogLine[] = [];
  readonly logger: Logger = pino(
    { level: 'debug', base: {} },
    { write: (line: string) => this.lines.push(JSON.parse(line) as LogLine) },
  );

  /** Lines at `level` or above. */
  atLeast(level: keyof typeof LEVELS): LogLine[] {
    return this.lines.filter((line) => line.level >= LEVELS[level]);
  }

  /** Lines whose message contains `text`. */
  containing(text: string): LogLine[] {
    return this.lines.filter((line) => line.msg.includes(text));
  }
}
