/** The Prometheus operator as handler modules (public API only). */
export { PrometheusOperator, type PrometheusOperatorOptions } from './operator.js';
