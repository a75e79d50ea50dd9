import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';

/** Parent of the kit's scratch folders: `/dev/shm` when writable (etcd's fsyncs cost nothing on tmpfs), else the OS temp folder. */
export function defaultBaseDir(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
