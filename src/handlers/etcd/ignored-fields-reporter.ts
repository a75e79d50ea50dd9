import { on, type ChangeContext } from 'konductor';
import {
  IGNORED_FIELDS_REASON,
  ignoredFields,
  ignoredFieldsMessage,
  type EtcdKind,
} from './supported-fields.js';
import { API_VERSION } from './types.js';

/**
 * Tells users which etcd-operator fields of their objects have no effect here (`pod.antiAffinity`,
 * `pod.persistentVolumeClaimSpec`, ...): one Warning Event (reason `IgnoredFields`) and one log line per object and
 * spec generation that sets any, nothing otherwise. Handlers run on creation and on spec changes (every
 * spec change is a new generation), not on resume, so an operator restart does not repeat the warning.
 */
export class EtcdIgnoredFields {
  private report(kind: EtcdKind, { spec, metadata, events, logger }: ChangeContext): void {
    const paths = ignoredFields(kind, spec);
    if (paths.length === 0) return;
    const message = ignoredFieldsMessage(kind, paths, metadata.generation);
    logger.warn({ ignoredFields: paths.length }, message);
    events.warn(IGNORED_FIELDS_REASON, message);
  }

  @on.create(API_VERSION, 'etcdclusters')
  clusterCreated(context: ChangeContext): void {
    this.report('EtcdCluster', context);
  }

  @on.field(API_VERSION, 'etcdclusters', 'spec')
  clusterChanged(context: ChangeContext): void {
    this.report('EtcdCluster', context);
  }

  @on.create(API_VERSION, 'etcdbackups')
  backupCreated(context: ChangeContext): void {
    this.report('EtcdBackup', context);
  }

  @on.field(API_VERSION, 'etcdbackups', 'spec')
  backupChanged(context: ChangeContext): void {
    this.report('EtcdBackup', context);
  }

  @on.create(API_VERSION, 'etcdrestores')
  restoreCreated(context: ChangeContext): void {
    this.report('EtcdRestore', context);
  }

  @on.field(API_VERSION, 'etcdrestores', 'spec')
  restoreChanged(context: ChangeContext): void {
    this.report('EtcdRestore', context);
  }
}
