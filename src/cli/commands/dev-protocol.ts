// What `konductor dev` and the `konductor run` child it restarts say to each other over the child's
// IPC channel. Kept apart from dev.ts so `run` does not load the watcher code.

/** Set to `1` in the child's environment by `konductor dev`. */
export const DEV_CHILD_ENV = 'KONDUCTOR_DEV_CHILD';

/**
 * The parent sends this when the child should load the handler files and start. Until then the child
 * has only booted (node, tsx, konductor), so a restart does not wait for that part.
 */
export const DEV_START_MESSAGE = 'konductor:start';

/** The child sends this once booted, when it starts waiting for {@link DEV_START_MESSAGE}. */
export const DEV_BOOTED_MESSAGE = 'konductor:booted';

/** The child sends this once its operator finished the initial listings. */
export const DEV_READY_MESSAGE = 'konductor:ready';
