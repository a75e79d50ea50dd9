/** The Prometheus operator as handler modules (public API only). */
export { PrometheusOperator } from './operator.js';
