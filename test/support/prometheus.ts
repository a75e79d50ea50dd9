import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { installCrds, readCrds } from '../../src/testing/index.js';
import { sharedKubeConfig } from './cluster.js';

/** The monitoring.coreos.com CRDs the Prometheus operator serves. */
export const MONITORING_CRDS = fileURLToPath(
  new URL('../../crds/monitoring.coreos.com.yaml', import.meta.url),
);
export const monitoringGroup = { group: 'monitoring.coreos.com', version: 'v1' };

/** The shared control plane with the monitoring CRDs installed, and the clients specs read it with. */
export interface MonitoringPlane {
  kc: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  apps: AppsV1Api;
}

export async function monitoringPlane(): Promise<MonitoringPlane> {
  const kc = sharedKubeConfig();
  await installCrds(kc, readCrds(MONITORING_CRDS));
  return {
    kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
  };
}
