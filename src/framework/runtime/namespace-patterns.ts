import type { Observable } from 'rxjs';
import { filter } from 'rxjs';
import type { WatchEvent } from '../watching/watch-events.js';

/** Whether a `namespaces` entry is a glob (`team-*`, `env-?`) rather than a name. */
export function isNamespaceGlob(value: string): boolean {
  return /[*?]/.test(value);
}

/** Whether namespace `name` matches `glob`: `*` is any run of characters, `?` exactly one; nothing else is special. */
export function matchNamespace(glob: string, name: string): boolean {
  return globExpression(glob).test(name);
}

function globExpression(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
}

/**
 * Keeps the events of objects whose namespace matches one of `patterns` (names or globs), and every
 * listing marker. Globs are matched on each event rather than against the namespaces that exist at
 * start, so a namespace created later is served without a restart.
 */
export function inNamespaces(
  patterns: readonly string[],
): (events: Observable<WatchEvent>) => Observable<WatchEvent> {
  const expressions = patterns.map(globExpression);
  const matches = new Map<string, boolean>(); // namespaces are few; each is matched once
  return filter((event) => {
    if (event.type === 'SYNCED') return true;
    const namespace = event.object.metadata?.namespace ?? '';
    let match = matches.get(namespace);
    if (match === undefined) {
      match = expressions.some((e) => e.test(namespace));
      matches.set(namespace, match);
    }
    return match;
  });
}

/**
 * The namespace scopes the handlers of a resource are watched in: each named namespace, or one
 * cluster-wide watch (a cluster-scoped resource has one collection whatever namespaces were asked
 * for; with a glob among them, one cluster-wide watch filtered per event serves namespaces created
 * later too). `globs` are the patterns to filter by, when one is a glob.
 */
export function namespaceScopes(
  resource: { namespaced: boolean },
  namespaces: readonly string[] | undefined,
): { scopes: Array<string | undefined>; globs: string[] | undefined } {
  const patterns = resource.namespaced ? [...new Set(namespaces ?? [])] : [];
  const globbed = patterns.some(isNamespaceGlob);
  return {
    scopes: patterns.length > 0 && !globbed ? patterns : [undefined],
    globs: globbed ? patterns : undefined,
  };
}
