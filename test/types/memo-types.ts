/**
 * Type-level specification of `memo` and `when` (checked by `npm run typecheck`, never run): users type
 * the memo by declaration merging, and `when` filters get a FilterContext typed from the resource.
 * Each line after a `@ts-expect-error` must NOT compile.
 */
import {
  on,
  PRESENT,
  timer,
  type EventContext,
  type FilterContext,
  type Memo,
  type TimerContext,
} from 'konductor';
import type { Widget } from './generated/widgets.js';

declare module 'konductor' {
  interface Memo {
    lastSeenSize?: number;
  }
}

function is<T>(value: T): T {
  return value;
}

export class MemoWidgets {
  @on.event<Widget>('example.com/v1', 'widgets', {
    field: 'spec.size',
    value: PRESENT,
    when: ({ spec, metadata }) => spec.size > 0 && metadata.labels?.tier !== 'x',
  })
  seen({ memo, spec }: EventContext<Widget>): void {
    memo.lastSeenSize = spec.size;
    // @ts-expect-error a merged key keeps its declared type
    memo.lastSeenSize = 'big';
    memo.anythingElse = { free: 'form' };
  }

  @timer<Widget>('example.com/v1', 'widgets', {
    interval: 5,
    when: ({ memo }) => memo.lastSeenSize !== undefined,
  })
  tick({ memo }: TimerContext<Widget>): void {
    is<number | undefined>(memo.lastSeenSize);
  }
}

is<(context: FilterContext<Widget>) => boolean>(
  ({ body, spec, status, name, namespace, uid, labels, annotations, memo, resource }) =>
    body.spec.size === spec.size &&
    status?.phase !== name &&
    namespace !== uid &&
    labels !== annotations &&
    'x' in memo &&
    resource.plural === 'widgets',
);
is<Memo>({ lastSeenSize: 1, other: true });
