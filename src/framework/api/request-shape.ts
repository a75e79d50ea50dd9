/**
 * What an API request is, in bounded terms fit for metric labels and span names: its Kubernetes verb
 * and its path with the namespace and name replaced by placeholders. Names and namespaces come from
 * tenants; groups, versions and resources come from the operator's code, so templates stay few.
 */

/** The Kubernetes verb of a request, as RBAC and the API server's audit log name it. */
export type RequestVerb =
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection'
  | 'other';

/** A request's verb and its path template, such as `/apis/g/v1/namespaces/{namespace}/widgets/{name}`. */
export interface RequestShape {
  verb: RequestVerb;
  template: string;
}

/** Longer templates, or paths outside the Kubernetes grammar, become this. */
export const OTHER_PATH = '/{other}';
const MAX_TEMPLATE = 128;
// DNS labels and subdomains (groups), versions and resource plurals: what code, not tenants, chooses.
const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** The verb and template of `method path` (`path` may carry a query; it is dropped). */
export function requestShape(method: string, path: string, watch = false): RequestShape {
  const parsed = pathTemplate(path);
  return {
    verb: verbOf(method.toUpperCase(), parsed.collection, watch),
    template: parsed.template,
  };
}

/** The path with namespace and name as placeholders; anything else as {@link OTHER_PATH}. */
export function pathTemplate(path: string): { template: string; collection: boolean } {
  const bare = path.split('?', 1)[0] ?? '';
  const segments = bare.split('/').filter((segment) => segment !== '');
  let prefix: string[];
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 2) {
    prefix = segments.slice(0, 2);
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 3) {
    prefix = segments.slice(0, 3);
    rest = segments.slice(3);
  } else return other(bare);
  if (!prefix.every((segment) => SEGMENT.test(segment))) return other(bare);
  const parts = [...prefix];
  const namespaceItself =
    rest[0] === 'namespaces' &&
    (rest.length === 2 || (rest.length === 3 && NAMESPACE_SUBRESOURCES.has(rest[2] ?? '')));
  if (rest[0] === 'namespaces' && rest.length >= 3 && !namespaceItself) {
    parts.push('namespaces', '{namespace}');
    rest = rest.slice(2);
  }
  // A group version's discovery document: read like one object.
  if (rest.length === 0) return { template: join(parts), collection: false };
  const [resource, name, subresource, ...more] = rest;
  if (more.length > 0 || !SEGMENT.test(resource ?? '')) return other(bare);
  if (subresource !== undefined && !SEGMENT.test(subresource)) return other(bare);
  parts.push(resource ?? '');
  if (name === undefined) return { template: join(parts), collection: true };
  parts.push('{name}');
  if (subresource !== undefined) parts.push(subresource);
  return { template: join(parts), collection: false };
}

function join(parts: readonly string[]): string {
  const template = `/${parts.join('/')}`;
  return template.length > MAX_TEMPLATE ? OTHER_PATH : template;
}

function other(bare: string): { template: string; collection: boolean } {
  // Discovery and health paths are fixed strings; keep the few the framework reads.
  if (/^\/(api|apis|version|healthz|livez|readyz)?$/.test(bare))
    return { template: bare || '/', collection: false };
  return { template: OTHER_PATH, collection: false };
}

function verbOf(method: string, collection: boolean, watch: boolean): RequestVerb {
  switch (method) {
    case 'GET':
      return watch ? 'watch' : collection ? 'list' : 'get';
    case 'WATCH':
      return 'watch';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return collection ? 'deletecollection' : 'delete';
    default:
      return 'other';
  }
}
