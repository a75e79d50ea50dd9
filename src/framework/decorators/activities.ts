import '../registry/metadata.js';
import { ACTIVITIES } from '../registry/activity-declarations.js';
import type {
  ActivityContext,
  ActivityDeclaration,
  ActivityKind,
  CleanupOptions,
  ProbeOptions,
  StartupOptions,
} from '../intents/activity-specs.js';

/** The decorator `@on.startup`, `@on.cleanup` and `@on.probe` return: for public instance methods taking an {@link ActivityContext}. */
export type ActivityDecorator = <This>(
  method: (this: This, context: ActivityContext) => unknown,
  context: ClassMethodDecoratorContext<This>,
) => void;

/** Validates a number of seconds (or attempts) now, so a typo fails when the module loads. */
function checkNumber(
  kind: ActivityKind,
  name: string,
  value: number | undefined,
  minimum: number,
): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= minimum)) {
    throw new Error(`@on.${kind} ${name}: expected a number >= ${minimum}, got ${String(value)}`);
  }
}

/** Records an activity handler in the class's decorator metadata. */
export function activity(
  kind: ActivityKind,
  options: StartupOptions | CleanupOptions | ProbeOptions,
): ActivityDecorator {
  const { retries, backoff, timeout } = options as StartupOptions;
  checkNumber(kind, 'retries', retries, 1);
  checkNumber(kind, 'backoff', backoff, 0);
  checkNumber(kind, 'timeout', timeout, 0);
  return (_method, context) => {
    if (context.static || context.private)
      throw new Error(
        `@on.${kind} on ${String(context.name)}: handlers must be public instance methods`,
      );
    const metadata = context.metadata as
      Record<symbol, ActivityDeclaration[] | undefined> | undefined;
    if (!metadata)
      throw new Error(
        'decorator metadata is unavailable: import "konductor" before defining handler classes',
      );
    // Own array per class, so a subclass adds to (not mutates) its parent's list.
    const own = Object.prototype.hasOwnProperty.call(metadata, ACTIVITIES)
      ? metadata[ACTIVITIES]!
      : [...(metadata[ACTIVITIES] ?? [])];
    own.push({ kind, options, method: context.name });
    metadata[ACTIVITIES] = own;
  };
}
