import type { KubeObject } from '../objects/kube-object.js';

/** An object a stream can track: it has a UID and a resourceVersion. */
export type TrackableObject = KubeObject & { metadata: { uid: string; resourceVersion: string } };

/** Whether a parsed value looks like an object we can track: it needs a UID and a resourceVersion. */
export function isTrackable(value: unknown): value is TrackableObject {
  const metadata = (value as KubeObject | null)?.metadata;
  return typeof metadata?.uid === 'string' && typeof metadata.resourceVersion === 'string';
}

/** What one line of a watch response means; the stream acts on it. */
export type WatchLine =
  /** An empty line (keep-alive): nothing to do. */
  | { kind: 'blank' }
  /** A line the stream cannot use; `why` is logged with the line and the line is counted as skipped. */
  | { kind: 'skip'; why: string }
  /** A bookmark: the stream resumes from `resourceVersion` (when it has one). */
  | { kind: 'bookmark'; resourceVersion?: string }
  /** An ERROR event with status 410: the stream's resourceVersion expired. */
  | { kind: 'gone' }
  /** Any other ERROR event: it ends the watch. */
  | { kind: 'error'; code: number; message: string; reason?: string }
  /** A change to one object. */
  | { kind: 'change'; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: TrackableObject };

/** Reads one line of a watch response. Pure: it never throws, whatever the server sent. */
export function parseWatchLine(line: string): WatchLine {
  if (!line.trim()) return { kind: 'blank' };
  let parsed: { type?: unknown; object?: unknown };
  try {
    parsed = JSON.parse(line) as { type?: unknown; object?: unknown };
  } catch {
    return { kind: 'skip', why: 'malformed JSON line in watch stream' };
  }
  const { type, object } = parsed ?? {};
  if (typeof object !== 'object' || object === null)
    return { kind: 'skip', why: 'watch event without an object' };
  switch (type) {
    case 'BOOKMARK': {
      const version = (object as KubeObject).metadata?.resourceVersion;
      return typeof version === 'string' && version
        ? { kind: 'bookmark', resourceVersion: version }
        : { kind: 'bookmark' };
    }
    case 'ERROR': {
      const status = object as { code?: number; message?: string; reason?: string };
      if (status.code === 410) return { kind: 'gone' };
      return {
        kind: 'error',
        code: status.code ?? 0,
        message: status.message ?? 'error event',
        reason: status.reason,
      };
    }
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      if (!isTrackable(object))
        return {
          kind: 'skip',
          why: `${type} event object without metadata.uid or resourceVersion`,
        };
      return { kind: 'change', type, object };
    default:
      return { kind: 'skip', why: `unknown watch event type ${JSON.stringify(type)}` };
  }
}
