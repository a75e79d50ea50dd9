import type { Resource } from '../src/framework/api/resource.js';

/** The benchmark uses the test CRD `widgets.test.konductor.dev`. */
export const widgetResource: Resource = {
  group: 'test.konductor.dev',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
  hasStatus: true,
};
