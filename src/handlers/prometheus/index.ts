/** The Prometheus operator as handler modules (public API only). */
export { PrometheusOperator, type PrometheusOperatorOptions } from './operator.js';
export { PrometheusIgnoredFields } from './ignored-fields-reporter.js';
export {
  PrometheusAdmission,
  podMonitorAdmissionProblems,
  serviceMonitorAdmissionProblems,
} from './admission.js';
export {
  IGNORED_FIELDS_REASON,
  SUPPORTED_FIELDS,
  ignoredFields,
  ignoredFieldsMessage,
  type MonitoringKind,
  type Supported,
} from './supported-fields.js';
