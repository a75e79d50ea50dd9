/**
 * Fault injection for chaos tests: {@link FaultProxy} sits between an operator and the API server
 * and cuts, black-holes, slows down or throttles (429) its traffic on demand.
 * @packageDocumentation
 * @module konductor/testing/chaos
 */
export {
  FaultProxy,
  type FaultCounts,
  type FaultMode,
  type FaultModeName,
  type FaultProxyOptions,
  type FaultProxyStats,
  type ProxiedControlPlane,
  type ProxiedRequest,
} from './fault-proxy.js';
