import {
  deriveRbacRules,
  mergeRules,
  parseRule,
  RuleSyntaxError,
  type HandlerUse,
} from '../../../src/cli/commands/rbac-rules.js';
import {
  crdResources,
  pluralize,
  resolveResourceName,
} from '../../../src/cli/commands/resource-names.js';

const WIDGETS = 'test.konductor.dev/v1';

const widgetCrd = crdResources([
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.test.konductor.dev' },
    spec: {
      group: 'test.konductor.dev',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wg'] },
      versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} } }],
    },
  },
]);

function use(kind: HandlerUse['kind'], apiVersion: string, name: string): HandlerUse {
  return { kind, resource: { apiVersion, name } };
}

describe('RBAC rules derived from handlers', () => {
  test('change handlers and timers get get/list/watch/patch on their resource and patch on its status', () => {
    const rbac = deriveRbacRules(
      [use('create', WIDGETS, 'widgets'), use('timer', WIDGETS, 'widgets')],
      { leaseName: 'op' },
    );
    expect(rbac.rules).toEqual([
      {
        apiGroups: ['test.konductor.dev'],
        resources: ['widgets'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      { apiGroups: ['test.konductor.dev'], resources: ['widgets/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
  });

  test('a resource with only @on.event handlers is only listed and watched', () => {
    const rbac = deriveRbacRules([use('event', 'v1', 'pods')], { leaseName: 'op' });
    expect(rbac.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
  });

  test('plural, kind and short name of one resource give one rule, listing the names handlers used', () => {
    const rbac = deriveRbacRules(
      [
        use('create', WIDGETS, 'widgets'),
        use('update', WIDGETS, 'Widget'),
        use('delete', WIDGETS, 'wg'),
      ],
      { leaseName: 'op', crds: widgetCrd },
    );
    expect(rbac.resources).toEqual([
      expect.objectContaining({
        group: 'test.konductor.dev',
        plural: 'widgets',
        writtenAs: ['widgets', 'Widget', 'wg'],
        source: 'crd',
        hasStatus: true,
      }),
    ]);
    expect(
      rbac.rules.filter((r) => r.apiGroups[0] === 'test.konductor.dev').map((r) => r.resources),
    ).toEqual([['widgets'], ['widgets/status']]);
  });

  test('resources of one group with the same verbs share a rule', () => {
    const rbac = deriveRbacRules(
      [use('create', 'apps/v1', 'deployments'), use('update', 'apps/v1', 'StatefulSet')],
      { leaseName: 'op' },
    );
    expect(rbac.rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['deployments', 'statefulsets'],
      verbs: ['get', 'list', 'watch', 'patch'],
    });
    expect(rbac.rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['deployments/status', 'statefulsets/status'],
      verbs: ['patch'],
    });
  });

  test('an @on.owned handler writes its owner and only lists and watches its child resource', () => {
    const owned: HandlerUse = {
      kind: 'owned',
      resource: { apiVersion: WIDGETS, name: 'widgets' },
      child: { resource: { apiVersion: 'v1', name: 'configmaps' } },
    };
    const rbac = deriveRbacRules([owned], { leaseName: 'op' });
    expect(rbac.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
      {
        apiGroups: ['test.konductor.dev'],
        resources: ['widgets'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      { apiGroups: ['test.konductor.dev'], resources: ['widgets/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
  });

  test('an @on.reconcile handler writes its objects, manages what it owns, and only lists and watches what it maps', () => {
    const reconcile: HandlerUse = {
      kind: 'reconcile',
      resource: { apiVersion: WIDGETS, name: 'widgets' },
      owns: [{ resource: { apiVersion: 'apps/v1', name: 'statefulsets' } }],
      watches: [{ resource: { apiVersion: 'v1', name: 'namespaces' } }],
    };
    const rbac = deriveRbacRules([reconcile], { leaseName: 'op' });
    expect(rbac.rules).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
      {
        apiGroups: ['test.konductor.dev'],
        resources: ['widgets'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      { apiGroups: ['test.konductor.dev'], resources: ['widgets/status'], verbs: ['patch'] },
      {
        apiGroups: ['apps'],
        resources: ['statefulsets'],
        verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
  });

  test('no status rule for a resource known to have no status subresource', () => {
    const rbac = deriveRbacRules([use('create', 'v1', 'ConfigMap')], { leaseName: 'op' });
    expect(rbac.rules.flatMap((r) => r.resources)).toEqual(['configmaps', 'events']);
  });

  test('the Lease rules allow listing and creating any Lease but reading and renewing only the named one', () => {
    const rbac = deriveRbacRules([use('create', WIDGETS, 'widgets')], { leaseName: 'my-operator' });
    expect(rbac.leaseRules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['my-operator'],
        verbs: ['get', 'update'],
      },
    ]);
  });

  test('no rule for Namespaces: the framework matches namespace globs on watch events', () => {
    const rbac = deriveRbacRules([use('create', WIDGETS, 'widgets')], { leaseName: 'op' });
    expect([...rbac.rules, ...rbac.leaseRules].flatMap((r) => r.resources)).not.toContain(
      'namespaces',
    );
  });

  test('extra rules are added, merged with the derived ones where group and verbs match', () => {
    const rbac = deriveRbacRules([use('create', 'v1', 'pods')], {
      leaseName: 'op',
      extraRules: [parseRule('secrets=get'), parseRule('services=patch,list,get,watch')],
    });
    expect(rbac.rules).toContainEqual({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] });
    expect(rbac.rules).toContainEqual({
      apiGroups: [''],
      resources: ['pods', 'services'],
      verbs: ['get', 'list', 'watch', 'patch'],
    });
  });

  test('merging keeps rules limited to resource names apart', () => {
    expect(
      mergeRules([
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['db'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'get'] },
      ]),
    ).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['db'] },
    ]);
  });
});

describe('offline resource names', () => {
  test('a CRD resolves kind, singular and short name exactly, with its scope and status subresource', () => {
    for (const name of ['widgets', 'Widget', 'widget', 'wg']) {
      expect(resolveResourceName({ apiVersion: WIDGETS, name }, widgetCrd)).toMatchObject({
        plural: 'widgets',
        source: 'crd',
        namespaced: true,
        hasStatus: true,
      });
    }
  });

  test('a CRD version without a status subresource has none', () => {
    const crd = crdResources([
      {
        kind: 'CustomResourceDefinition',
        metadata: { name: 'gadgets.example.com' },
        spec: {
          group: 'example.com',
          scope: 'Cluster',
          names: { plural: 'gadgets', kind: 'Gadget' },
          versions: [{ name: 'v1' }],
        },
      },
    ]);
    expect(
      resolveResourceName({ apiVersion: 'example.com/v1', name: 'Gadget' }, crd),
    ).toMatchObject({ plural: 'gadgets', namespaced: false, hasStatus: false });
  });

  test('built-in kinds and short names resolve to their plural and scope', () => {
    expect(resolveResourceName({ apiVersion: 'apps/v1', name: 'Deployment' })).toMatchObject({
      group: 'apps',
      plural: 'deployments',
      source: 'built-in',
      namespaced: true,
    });
    expect(resolveResourceName({ apiVersion: 'v1', name: 'ns' })).toMatchObject({
      group: '',
      plural: 'namespaces',
      namespaced: false,
    });
    expect(resolveResourceName({ apiVersion: 'v1', name: 'Endpoints' })).toMatchObject({
      plural: 'endpoints',
      source: 'built-in',
    });
  });

  test('an unknown lower-case name ending in s is taken as the plural as written', () => {
    expect(resolveResourceName({ apiVersion: 'example.com/v1', name: 'gadgets' })).toMatchObject({
      plural: 'gadgets',
      source: 'as-written',
      namespaced: undefined,
      hasStatus: undefined,
    });
  });

  test('an unknown kind is lower-cased and pluralized, and reported as guessed', () => {
    expect(
      resolveResourceName({ apiVersion: 'example.com/v1', name: 'BackupPolicy' }),
    ).toMatchObject({ plural: 'backuppolicies', source: 'guessed' });
  });

  test('English plurals as CRD generators make them', () => {
    expect(
      ['widget', 'policy', 'key', 'box', 'class', 'match', 'mesh', 'quiz'].map(pluralize),
    ).toEqual(['widgets', 'policies', 'keys', 'boxes', 'classes', 'matches', 'meshes', 'quizes']);
  });

  test('a CRD without names is refused, naming it', () => {
    expect(() =>
      crdResources([
        { kind: 'CustomResourceDefinition', metadata: { name: 'broken.example.com' }, spec: {} },
      ]),
    ).toThrow(/broken\.example\.com/);
  });
});

describe('--rule', () => {
  test.each([
    [
      'apps/deployments=get,list,watch,create,patch',
      {
        apiGroups: ['apps'],
        resources: ['deployments'],
        verbs: ['get', 'list', 'watch', 'create', 'patch'],
      },
    ],
    ['secrets=get', { apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
    ['core/pods/log=get', { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] }],
    [
      'apps/deployments/scale=patch,update',
      { apiGroups: ['apps'], resources: ['deployments/scale'], verbs: ['update', 'patch'] },
    ],
    [
      'example.com/gadgets=delete, get',
      { apiGroups: ['example.com'], resources: ['gadgets'], verbs: ['get', 'delete'] },
    ],
  ])('%s', (text, rule) => {
    expect(parseRule(text)).toEqual(rule);
  });

  test.each([
    ['apps/deployments', /no '='/],
    ['apps/deployments=', /names no verbs/],
    ['apps/deployments=get,destroy', /unknown verb.*'destroy'/],
    ['*/deployments=get', /API group/],
    ['apps/*=get', /not a resource name/],
    ['a/b/c/d=get', /is not \[<group>\/\]<resource>/],
    ['Apps/Deployments=get', /API group 'Apps'/],
  ])('%s is refused with a message saying what is wrong', (text, message) => {
    expect(() => parseRule(text)).toThrow(RuleSyntaxError);
    expect(() => parseRule(text)).toThrow(message);
  });
});
