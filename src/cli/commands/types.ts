// Placeholder until `konductor types` lands (its owner replaces this file).
import { UsageError } from '../options.js';

/** `konductor types`: not available yet. */
export async function typesCommand(args: readonly string[]): Promise<void> {
  void args;
  await Promise.resolve();
  throw new UsageError('not available yet');
}
