/*
 * Runs before every integration test file (jest `setupFiles`): points KONDUCTOR_TEST_KUBECONFIG at
 * the control plane of this file's jest worker (global-setup.js starts one per worker), so files
 * running at the same time in two workers never share an API server.
 */
const worker = process.env.JEST_WORKER_ID ?? '1';
const own = process.env[`KONDUCTOR_TEST_KUBECONFIG_${worker}`];
if (own) process.env.KONDUCTOR_TEST_KUBECONFIG = own;
export {};
