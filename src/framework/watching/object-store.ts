import type { KubeObject } from '../objects/kube-object.js';

/**
 * What a watch stream keeps: the objects it knows, by UID (the stream's own bookkeeping), and, once a
 * read cache has asked for one, the same objects by namespace and name, so that it finds one object,
 * or one namespace's, without scanning 100,000. That second index is built on the first such read and
 * kept from then on: a resource nobody reads through the cache pays nothing for it (a Map entry per
 * object, about 46 bytes). It holds the objects' own name strings, not new ones.
 */
export class ObjectStore<T extends KubeObject = KubeObject> extends Map<string, T> {
  private byNamespace: Map<string, Map<string, T>> | undefined = undefined;

  override set(uid: string, object: T): this {
    super.set(uid, object);
    if (this.byNamespace) index(this.byNamespace, object);
    return this;
  }

  override delete(uid: string): boolean {
    const object = super.get(uid);
    if (!super.delete(uid) || !object) return false;
    const byNamespace = this.byNamespace;
    if (!byNamespace) return true;
    const namespace = object.metadata?.namespace ?? '';
    const names = byNamespace.get(namespace);
    const name = object.metadata?.name ?? '';
    // A newer object of the same name (recreated, listed before the old one is dropped) keeps its entry.
    if (names?.get(name)?.metadata?.uid === uid) {
      names.delete(name);
      if (names.size === 0) byNamespace.delete(namespace);
    }
    return true;
  }

  override clear(): void {
    super.clear();
    this.byNamespace?.clear();
  }

  /** The object named `name` in `namespace` ('' for cluster-scoped objects), if the store holds it. */
  named(namespace: string, name: string): T | undefined {
    return this.names().get(namespace)?.get(name);
  }

  /** The objects of one namespace ('' for cluster-scoped objects). */
  inNamespace(namespace: string): Iterable<T> {
    return this.names().get(namespace)?.values() ?? [];
  }

  private names(): Map<string, Map<string, T>> {
    if (!this.byNamespace) {
      const byNamespace = new Map<string, Map<string, T>>();
      for (const object of super.values()) index(byNamespace, object);
      this.byNamespace = byNamespace;
    }
    return this.byNamespace;
  }
}

function index<T extends KubeObject>(byNamespace: Map<string, Map<string, T>>, object: T): void {
  const namespace = object.metadata?.namespace ?? '';
  let names = byNamespace.get(namespace);
  if (!names) byNamespace.set(namespace, (names = new Map()));
  names.set(object.metadata?.name ?? '', object);
}
