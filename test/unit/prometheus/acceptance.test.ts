import {
  ACCEPTED,
  monitorVerdicts,
  nextBindings,
  ruleVerdicts,
  selectionOf,
  type Binding,
  type Verdict,
} from '../../../src/handlers/prometheus/acceptance.js';
import { ALL_GROUPS } from '../../../src/handlers/prometheus/rules.js';

const main = { namespace: 'monitoring', name: 'main' };
const other = { namespace: 'team', name: 'other' };
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const yes: Verdict = {
  accepted: true,
  reason: 'Accepted',
  message: 'in the configuration of Prometheus monitoring/main',
};
const no: Verdict = {
  accepted: false,
  reason: 'InvalidConfiguration',
  message: 'skipped by Prometheus monitoring/main: bad regex',
};

function meta(namespace: string, name: string): { metadata: { namespace: string; name: string } } {
  return { metadata: { namespace, name } };
}

function binding(
  prometheus: { namespace: string; name: string },
  status: 'True' | 'False',
  at: string,
  generation = 1,
): Binding {
  const verdict = status === 'True' ? yes : no;
  return {
    group: 'monitoring.coreos.com',
    resource: 'prometheuses',
    ...prometheus,
    conditions: [
      {
        type: ACCEPTED,
        status,
        reason: verdict.reason,
        message: verdict.message,
        observedGeneration: generation,
        lastTransitionTime: at,
      },
    ],
  };
}

describe('monitor verdicts', () => {
  it('accepts every selected monitor that is neither skipped nor left out', () => {
    const verdicts = monitorVerdicts(
      main,
      { services: [meta('a', 'web')], pods: [meta('a', 'pods')] },
      [],
      [],
      1000,
    );
    expect([...verdicts.keys()]).toEqual(['ServiceMonitor/a/web', 'PodMonitor/a/pods']);
    expect([...verdicts.values()].every((verdict) => verdict.accepted)).toBe(true);
  });

  it('refuses a skipped monitor as InvalidConfiguration, naming its problems', () => {
    const verdicts = monitorVerdicts(
      main,
      { services: [meta('a', 'web')], pods: [meta('a', 'pods')] },
      [{ monitor: 'podMonitor/a/pods', problems: ['invalid regex "("'] }],
      [],
      1000,
    );
    expect(verdicts.get('PodMonitor/a/pods')).toEqual({
      accepted: false,
      reason: 'InvalidConfiguration',
      message: 'skipped by Prometheus monitoring/main: invalid regex "("',
    });
    expect(verdicts.get('ServiceMonitor/a/web')?.accepted).toBe(true);
  });

  it('refuses a monitor left out for size as ConfigTooLarge', () => {
    const verdicts = monitorVerdicts(
      main,
      { services: [meta('a', 'big')], pods: [] },
      [],
      [{ monitor: 'a/big', gzipBytes: 5000 }],
      1000,
    );
    expect(verdicts.get('ServiceMonitor/a/big')).toMatchObject({
      accepted: false,
      reason: 'ConfigTooLarge',
    });
    expect(verdicts.get('ServiceMonitor/a/big')?.message).toContain('about 5000 gzipped bytes');
  });

  it('counts selected and accepted per kind for the Prometheus status', () => {
    const verdicts = monitorVerdicts(
      main,
      { services: [meta('a', 'x'), meta('a', 'y')], pods: [meta('a', 'p')] },
      [{ monitor: 'a/y', problems: ['bad'] }],
      [],
      1000,
    );
    expect(selectionOf(verdicts, 'ServiceMonitor')).toEqual({ selected: 2, accepted: 1 });
    expect(selectionOf(verdicts, 'PodMonitor')).toEqual({ selected: 1, accepted: 1 });
    expect(selectionOf(verdicts, 'PrometheusRule')).toEqual({ selected: 0, accepted: 0 });
  });
});

describe('rule verdicts', () => {
  const rule = meta('a', 'alerts');

  it('accepts a rule whose every group loads', () => {
    expect(
      ruleVerdicts(main, [{ rule, refused: [] }]).get('PrometheusRule/a/alerts')?.accepted,
    ).toBe(true);
  });

  it('refuses a rule with a refused group, saying its other groups still load', () => {
    const verdict = ruleVerdicts(main, [
      { rule, refused: [{ group: 'broken', problems: ['parse error'] }] },
    ]).get('PrometheusRule/a/alerts');
    expect(verdict).toMatchObject({ accepted: false, reason: 'InvalidRuleGroup' });
    expect(verdict?.message).toBe(
      '1 rule group(s) refused by Prometheus monitoring/main (its other groups still load): "broken": parse error',
    );
  });

  it('refuses a rule refused whole for its size as RuleTooLarge', () => {
    const verdict = ruleVerdicts(main, [
      { rule, refused: [{ group: ALL_GROUPS, problems: ['over 1 MiB'] }], tooLarge: true },
    ]).get('PrometheusRule/a/alerts');
    expect(verdict).toEqual({
      accepted: false,
      reason: 'RuleTooLarge',
      message: 'refused by Prometheus monitoring/main: over 1 MiB',
    });
  });
});

describe('next bindings', () => {
  it('adds a binding for a newly selected object, observing its generation', () => {
    expect(nextBindings(undefined, main, yes, 3, T0)).toEqual([binding(main, 'True', T0, 3)]);
  });

  it('writes nothing when the verdict is unchanged', () => {
    expect(nextBindings([binding(main, 'True', T0)], main, yes, 1, T1)).toBeUndefined();
  });

  it('writes nothing for an object the Prometheus neither selects nor had a binding on', () => {
    expect(nextBindings([binding(other, 'True', T0)], main, undefined, 1, T1)).toBeUndefined();
    expect(nextBindings(undefined, main, undefined, 1, T1)).toBeUndefined();
  });

  it('keeps the transition time when only the generation or message changes', () => {
    const next = nextBindings(
      [binding(main, 'True', T0, 1)],
      main,
      { ...yes, message: 'new words' },
      2,
      T1,
    );
    expect(next?.[0]?.conditions[0]).toMatchObject({
      status: 'True',
      message: 'new words',
      observedGeneration: 2,
      lastTransitionTime: T0,
    });
  });

  it('moves the transition time when the status flips', () => {
    const next = nextBindings([binding(main, 'True', T0)], main, no, 2, T1);
    expect(next?.[0]?.conditions[0]).toMatchObject({
      status: 'False',
      reason: 'InvalidConfiguration',
      lastTransitionTime: T1,
    });
  });

  it("keeps other Prometheuses' bindings in place and removes its own when it stops selecting", () => {
    const current = [binding(other, 'True', T0), binding(main, 'False', T0)];
    expect(nextBindings(current, main, undefined, 1, T1)).toEqual([binding(other, 'True', T0)]);
    expect(nextBindings(current, main, yes, 1, T1)).toEqual([
      binding(other, 'True', T0),
      binding(main, 'True', T1),
    ]);
  });

  it('drops entries that are not bindings, whatever else was written into the status', () => {
    expect(nextBindings('not a list', main, undefined, 1, T1)).toEqual([]);
    expect(nextBindings([null, 7, binding(other, 'True', T0)], main, yes, 1, T1)).toEqual([
      binding(other, 'True', T0),
      binding(main, 'True', T1),
    ]);
    const broken = { ...binding(main, 'True', T0), conditions: [null] };
    expect(nextBindings([broken], main, yes, 1, T1)).toEqual([binding(main, 'True', T1)]);
  });
});
