import { on, type ChangeContext } from 'konductor';
import {
  IGNORED_FIELDS_REASON,
  ignoredFields,
  ignoredFieldsMessage,
  type MonitoringKind,
} from './supported-fields.js';

const API = 'monitoring.coreos.com/v1';

/**
 * Tells users which upstream fields of their monitoring objects have no effect here: one Warning Event
 * (reason `IgnoredFields`) and one log line per object and spec generation that sets any, nothing
 * otherwise. Handlers run on creation and on spec changes (every spec change is a new generation),
 * not on resume, so an operator restart does not repeat the warning.
 */
export class PrometheusIgnoredFields {
  private report(kind: MonitoringKind, { spec, metadata, events, logger }: ChangeContext): void {
    const paths = ignoredFields(kind, spec);
    if (paths.length === 0) return;
    const message = ignoredFieldsMessage(kind, paths, metadata.generation);
    logger.warn({ ignoredFields: paths.length }, message);
    events.warn(IGNORED_FIELDS_REASON, message);
  }

  @on.create(API, 'prometheuses')
  prometheusCreated(context: ChangeContext): void {
    this.report('Prometheus', context);
  }

  @on.field(API, 'prometheuses', 'spec')
  prometheusChanged(context: ChangeContext): void {
    this.report('Prometheus', context);
  }

  @on.create(API, 'servicemonitors')
  serviceMonitorCreated(context: ChangeContext): void {
    this.report('ServiceMonitor', context);
  }

  @on.field(API, 'servicemonitors', 'spec')
  serviceMonitorChanged(context: ChangeContext): void {
    this.report('ServiceMonitor', context);
  }

  @on.create(API, 'podmonitors')
  podMonitorCreated(context: ChangeContext): void {
    this.report('PodMonitor', context);
  }

  @on.field(API, 'podmonitors', 'spec')
  podMonitorChanged(context: ChangeContext): void {
    this.report('PodMonitor', context);
  }

  @on.create(API, 'prometheusrules')
  prometheusRuleCreated(context: ChangeContext): void {
    this.report('PrometheusRule', context);
  }

  @on.field(API, 'prometheusrules', 'spec')
  prometheusRuleChanged(context: ChangeContext): void {
    this.report('PrometheusRule', context);
  }
}
