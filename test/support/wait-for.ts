/**
 * The one polling helper for specs, unit and integration alike: the testing kit's public `waitFor`,
 * so specs poll exactly as users' tests do.
 *
 * `await waitFor(probe, { what, timeoutMs, intervalMs })` calls `probe` until it returns a truthy value
 * and resolves to that value; after `timeoutMs` (default 20 s) it fails naming `what`. A probe that
 * throws fails the wait at once (wrap it if errors are expected while the condition settles).
 */
export { waitFor } from '../../src/testing/operator-harness.js';
