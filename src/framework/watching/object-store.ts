import type { KubeObject } from '../objects/kube-object.js';

/**
 * What a watch stream keeps: the objects it knows, by UID (the stream's own bookkeeping), and the
 * same objects by namespace and name, so that a read cache finds one object, or one namespace's,
 * without scanning 100,000. The second index holds the objects' own name strings, not new ones.
 */
export class ObjectStore<T extends KubeObject = KubeObject> extends Map<string, T> {
  private readonly byNamespace = new Map<string, Map<string, T>>();

  override set(uid: string, object: T): this {
    super.set(uid, object);
    // Map's constructor calls set before this class's fields exist.
    if (!this.byNamespace) return this;
    const namespace = object.metadata?.namespace ?? '';
    let names = this.byNamespace.get(namespace);
    if (!names) this.byNamespace.set(namespace, (names = new Map()));
    names.set(object.metadata?.name ?? '', object);
    return this;
  }

  override delete(uid: string): boolean {
    const object = super.get(uid);
    if (!super.delete(uid) || !object) return false;
    const namespace = object.metadata?.namespace ?? '';
    const names = this.byNamespace.get(namespace);
    const name = object.metadata?.name ?? '';
    // A newer object of the same name (recreated, listed before the old one is dropped) keeps its entry.
    if (names?.get(name)?.metadata?.uid === uid) {
      names.delete(name);
      if (names.size === 0) this.byNamespace.delete(namespace);
    }
    return true;
  }

  override clear(): void {
    super.clear();
    this.byNamespace.clear();
  }

  /** The object named `name` in `namespace` ('' for cluster-scoped objects), if the store holds it. */
  named(namespace: string, name: string): T | undefined {
    return this.byNamespace.get(namespace)?.get(name);
  }

  /** The objects of one namespace ('' for cluster-scoped objects). */
  inNamespace(namespace: string): Iterable<T> {
    return this.byNamespace.get(namespace)?.values() ?? [];
  }
}
