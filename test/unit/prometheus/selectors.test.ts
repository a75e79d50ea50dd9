import {
  labelSelectorText,
  matchesSelector,
  namespacesForMonitor,
  selectedNamespaces,
  selectServiceMonitors,
} from '../../../src/handlers/prometheus/selectors.js';
import type {
  LabelSelector,
  NamespaceInfo,
  PrometheusResource,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

function prometheus(spec: PrometheusResource['spec']): PrometheusResource {
  return { metadata: { name: 'main', namespace: 'monitoring' }, spec };
}

function monitor(
  namespace: string,
  name: string,
  labels?: Record<string, string>,
  namespaceSelector?: ServiceMonitorResource['spec']['namespaceSelector'],
): ServiceMonitorResource {
  return {
    metadata: { name, namespace, ...(labels !== undefined ? { labels } : {}) },
    spec: {
      selector: {},
      endpoints: [{ port: 'metrics' }],
      ...(namespaceSelector !== undefined ? { namespaceSelector } : {}),
    },
  };
}

const namespaces: NamespaceInfo[] = [
  { name: 'shop', labels: { monitoring: 'enabled', env: 'prod' } },
  { name: 'monitoring', labels: { monitoring: 'enabled' } },
  { name: 'dev', labels: { env: 'dev' } },
  { name: 'bare' },
];

describe('matchesSelector', () => {
  const labels = { app: 'web', tier: 'frontend' };

  it('null and undefined match nothing, not even an unlabelled object', () => {
    expect(matchesSelector(null, labels)).toBe(false);
    expect(matchesSelector(undefined, labels)).toBe(false);
    expect(matchesSelector(null, {})).toBe(false);
  });

  it('{} matches everything, including objects without labels', () => {
    expect(matchesSelector({}, labels)).toBe(true);
    expect(matchesSelector({}, {})).toBe(true);
    expect(matchesSelector({}, undefined)).toBe(true);
    expect(matchesSelector({ matchLabels: {}, matchExpressions: [] }, labels)).toBe(true);
  });

  it('matchLabels: every pair must be present with that value', () => {
    expect(matchesSelector({ matchLabels: { app: 'web' } }, labels)).toBe(true);
    expect(matchesSelector({ matchLabels: { app: 'web', tier: 'frontend' } }, labels)).toBe(true);
    expect(matchesSelector({ matchLabels: { app: 'web', tier: 'backend' } }, labels)).toBe(false);
    expect(matchesSelector({ matchLabels: { env: 'prod' } }, labels)).toBe(false);
  });

  it('matchLabels only looks at own labels', () => {
    expect(matchesSelector({ matchLabels: { toString: 'x' } }, {})).toBe(false);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {}),
    ).toBe(false);
  });

  it('In: label present with one of the values', () => {
    const sel: LabelSelector = {
      matchExpressions: [{ key: 'tier', operator: 'In', values: ['frontend', 'edge'] }],
    };
    expect(matchesSelector(sel, labels)).toBe(true);
    expect(matchesSelector(sel, { tier: 'backend' })).toBe(false);
    expect(matchesSelector(sel, {})).toBe(false);
  });

  it('NotIn: label absent, or present with another value', () => {
    const sel: LabelSelector = {
      matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['backend'] }],
    };
    expect(matchesSelector(sel, labels)).toBe(true);
    expect(matchesSelector(sel, {})).toBe(true);
    expect(matchesSelector(sel, { tier: 'backend' })).toBe(false);
  });

  it('Exists and DoesNotExist', () => {
    expect(
      matchesSelector({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, labels),
    ).toBe(true);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, { other: 'x' }),
    ).toBe(false);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] }, labels),
    ).toBe(true);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, labels),
    ).toBe(false);
    // An empty value still means the label exists.
    expect(
      matchesSelector({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, { app: '' }),
    ).toBe(true);
  });

  it('matchLabels AND all matchExpressions', () => {
    const sel: LabelSelector = {
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['frontend'] },
        { key: 'canary', operator: 'DoesNotExist' },
      ],
    };
    expect(matchesSelector(sel, labels)).toBe(true);
    expect(matchesSelector(sel, { ...labels, canary: 'true' })).toBe(false);
    expect(matchesSelector(sel, { ...labels, app: 'api' })).toBe(false);
  });

  it('an invalid requirement matches nothing, as apimachinery refuses the selector', () => {
    expect(
      matchesSelector({ matchExpressions: [{ key: 'app', operator: 'In', values: [] }] }, labels),
    ).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'app', operator: 'NotIn' }] }, labels)).toBe(
      false,
    );
    expect(
      matchesSelector(
        { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['web'] }] },
        labels,
      ),
    ).toBe(false);
    expect(
      matchesSelector(
        { matchExpressions: [{ key: 'app', operator: 'Gt' as 'In', values: ['1'] }] },
        labels,
      ),
    ).toBe(false);
  });
});

describe('selectedNamespaces', () => {
  it("null or absent namespace selector: only the Prometheus object's own namespace", () => {
    expect(
      selectedNamespaces(prometheus({ serviceMonitorNamespaceSelector: null }), namespaces),
    ).toEqual(['monitoring']);
    expect(selectedNamespaces(prometheus({}), namespaces)).toEqual(['monitoring']);
    // Even when the namespace list does not mention it.
    expect(selectedNamespaces(prometheus({}), [])).toEqual(['monitoring']);
  });

  it('{}: every namespace, sorted by name', () => {
    expect(
      selectedNamespaces(prometheus({ serviceMonitorNamespaceSelector: {} }), namespaces),
    ).toEqual(['bare', 'dev', 'monitoring', 'shop']);
  });

  it('labels: the matching namespaces, sorted by name', () => {
    expect(
      selectedNamespaces(
        prometheus({ serviceMonitorNamespaceSelector: { matchLabels: { monitoring: 'enabled' } } }),
        namespaces,
      ),
    ).toEqual(['monitoring', 'shop']);
    expect(
      selectedNamespaces(
        prometheus({
          serviceMonitorNamespaceSelector: {
            matchExpressions: [{ key: 'env', operator: 'Exists' }],
          },
        }),
        namespaces,
      ),
    ).toEqual(['dev', 'shop']);
    expect(
      selectedNamespaces(
        prometheus({ serviceMonitorNamespaceSelector: { matchLabels: { nope: 'x' } } }),
        namespaces,
      ),
    ).toEqual([]);
  });
});

describe('selectServiceMonitors', () => {
  const monitors = [
    monitor('shop', 'checkout', { team: 'shop' }),
    monitor('shop', 'cart', { team: 'shop' }),
    monitor('monitoring', 'self', { team: 'infra' }),
    monitor('dev', 'sandbox', { team: 'shop' }),
    monitor('bare', 'unlabelled'),
  ];
  const keys = (ms: ServiceMonitorResource[]): string[] =>
    ms.map((m) => `${m.metadata.namespace}/${m.metadata.name}`);

  it('null or absent serviceMonitorSelector selects none', () => {
    expect(
      selectServiceMonitors(
        prometheus({ serviceMonitorSelector: null, serviceMonitorNamespaceSelector: {} }),
        monitors,
        namespaces,
      ),
    ).toEqual([]);
    expect(
      selectServiceMonitors(
        prometheus({ serviceMonitorNamespaceSelector: {} }),
        monitors,
        namespaces,
      ),
    ).toEqual([]);
  });

  it('{} selects every monitor in the selected namespaces, sorted by <ns>/<name>', () => {
    expect(
      keys(
        selectServiceMonitors(
          prometheus({ serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} }),
          monitors,
          namespaces,
        ),
      ),
    ).toEqual(['bare/unlabelled', 'dev/sandbox', 'monitoring/self', 'shop/cart', 'shop/checkout']);
    // Null namespace selector: own namespace only.
    expect(
      keys(selectServiceMonitors(prometheus({ serviceMonitorSelector: {} }), monitors, namespaces)),
    ).toEqual(['monitoring/self']);
  });

  it('label selector combined with the namespace selector', () => {
    const p = prometheus({
      serviceMonitorSelector: { matchLabels: { team: 'shop' } },
      serviceMonitorNamespaceSelector: { matchLabels: { monitoring: 'enabled' } },
    });
    expect(keys(selectServiceMonitors(p, monitors, namespaces))).toEqual([
      'shop/cart',
      'shop/checkout',
    ]);
  });

  it('is independent of input order and keeps the first of duplicate keys', () => {
    const p = prometheus({ serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} });
    const forward = keys(selectServiceMonitors(p, monitors, namespaces));
    expect(
      keys(selectServiceMonitors(p, [...monitors].reverse(), [...namespaces].reverse())),
    ).toEqual(forward);
    const first = monitor('shop', 'cart', { team: 'shop' });
    const second = monitor('shop', 'cart', { team: 'shop' });
    const selected = selectServiceMonitors(p, [first, second], namespaces);
    expect(selected).toHaveLength(1);
    expect(selected[0]).toBe(first);
  });
});

describe('namespacesForMonitor', () => {
  it('any: true means all namespaces (undefined), even with matchNames', () => {
    expect(namespacesForMonitor(monitor('shop', 'm', {}, { any: true }))).toBeUndefined();
    expect(
      namespacesForMonitor(monitor('shop', 'm', {}, { any: true, matchNames: ['a'] })),
    ).toBeUndefined();
  });

  it('matchNames as given', () => {
    expect(namespacesForMonitor(monitor('shop', 'm', {}, { matchNames: ['b', 'a'] }))).toEqual([
      'b',
      'a',
    ]);
  });

  it("otherwise the monitor's own namespace", () => {
    expect(namespacesForMonitor(monitor('shop', 'm'))).toEqual(['shop']);
    expect(namespacesForMonitor(monitor('shop', 'm', {}, {}))).toEqual(['shop']);
    expect(namespacesForMonitor(monitor('shop', 'm', {}, { any: false, matchNames: [] }))).toEqual([
      'shop',
    ]);
  });
});

describe('labelSelectorText (apimachinery labels.Selector.String(), for role selectors)', () => {
  it('{} and absent are the empty text, which selects everything', () => {
    expect(labelSelectorText({})).toBe('');
    expect(labelSelectorText(undefined)).toBe('');
  });

  it('writes each operator as kubectl does, requirements sorted by key, In/NotIn values sorted', () => {
    expect(
      labelSelectorText({
        matchLabels: { tier: 'backend', 'app.kubernetes.io/name': 'web' },
        matchExpressions: [
          { key: 'track', operator: 'NotIn', values: ['canary', 'beta'] },
          { key: 'env', operator: 'In', values: ['prod', 'dev'] },
          { key: 'owner', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe(
      'app.kubernetes.io/name=web,env in (dev,prod),!legacy,owner,tier=backend,track notin (beta,canary)',
    );
  });

  it('a single In value keeps its parentheses', () => {
    expect(
      labelSelectorText({
        matchExpressions: [{ key: 'group', operator: 'In', values: ['group1'] }],
      }),
    ).toBe('group in (group1)');
  });
});
