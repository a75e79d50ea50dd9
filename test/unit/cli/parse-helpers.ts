/** Shared by the command-line specs: parse, and get the command or the UsageError. */
import { parseCommandLine, type Command } from '../../../src/cli/command-line.js';
import { UsageError } from '../../../src/cli/validators.js';

/** The UsageError a parse throws (fails the test if it does not throw one). */
export function usageError(args: string[], env: Record<string, string> = {}): UsageError {
  try {
    parseCommandLine(args, env);
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error(`expected a UsageError for ${JSON.stringify(args)}`);
}

/** The parsed command, which must be of `kind`. */
export function parsed<K extends Command['kind']>(
  args: string[],
  kind: K,
  env: Record<string, string> = {},
): Extract<Command, { kind: K }> {
  const command = parseCommandLine(args, env);
  if (command.kind !== kind) throw new Error(`expected a ${kind} command, got ${command.kind}`);
  return command as Extract<Command, { kind: K }>;
}
