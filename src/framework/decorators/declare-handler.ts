import '../registry/metadata.js';
import { HANDLERS } from '../registry/metadata.js';
import type { HandlerDeclaration } from '../intents/handler-specs.js';

type DecoratorContext = Pick<
  ClassMethodDecoratorContext,
  'static' | 'private' | 'name' | 'metadata'
>;

/** Records a handler declaration in the class's decorator metadata. */
export function declareHandler(
  context: DecoratorContext,
  declaration: Omit<HandlerDeclaration, 'method'>,
): void {
  if (context.static || context.private) {
    throw new Error(
      `@on.${declaration.kind} on ${String(context.name)}: handlers must be public instance methods`,
    );
  }
  const metadata = context.metadata as Record<symbol, HandlerDeclaration[] | undefined> | undefined;
  if (!metadata)
    throw new Error(
      'decorator metadata is unavailable: import "konductor" before defining handler classes',
    );
  // Own array per class, so a subclass adds to (not mutates) its parent's list.
  const own = Object.prototype.hasOwnProperty.call(metadata, HANDLERS)
    ? metadata[HANDLERS]!
    : [...(metadata[HANDLERS] ?? [])];
  own.push({ ...declaration, method: context.name });
  metadata[HANDLERS] = own;
}
