import { basename, dirname, join } from 'node:path';
import { findEtcd, isExecutable, onPath } from '../../../src/testing/binaries.js';

/**
 * The local programs containers run: `etcd` and `etcdctl` are the test binaries (the etcd the control
 * plane runs, and the etcdctl beside it); anything else (`sh`, `wget`) comes from PATH.
 */
export class ContainerExecutables {
  private etcdPath: string | undefined;

  /** The executable for a container's first word, by its base name; undefined when there is none. */
  find(program: string): string | undefined {
    const name = basename(program);
    if (name === 'etcd') return this.etcd();
    if (name === 'etcdctl') {
      const etcd = this.etcd();
      const sibling = etcd ? join(dirname(etcd), 'etcdctl') : undefined;
      return sibling && isExecutable(sibling) ? sibling : onPath('etcdctl');
    }
    return onPath(name);
  }

  private etcd(): string | undefined {
    this.etcdPath ??= findEtcd();
    return this.etcdPath;
  }
}
