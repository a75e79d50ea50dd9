/**
 * External label names are checked against the label-name rule of the
 * Prometheus version deployed, so a name 2.x refuses (`some-other-key`) refuses the Prometheus
 * object (status reason and Event through `validatePrometheus`) instead of shipping a configuration
 * that fails to load.
 */
import { generateConfig, validatePrometheus } from '../../../src/handlers/prometheus/config.js';
import type { PrometheusResource, PrometheusSpec } from '../../../src/handlers/prometheus/types.js';

function prometheus(spec: PrometheusSpec): PrometheusResource {
  return {
    metadata: { namespace: 'monitoring', name: 'main' },
    spec: { serviceMonitorSelector: {}, ...spec },
  };
}

describe('external label names', () => {
  it('on 2.x (the default v2.42.0) a name with a dash is refused, naming it and the version', () => {
    expect(
      validatePrometheus(
        prometheus({ externalLabels: { cluster: 'prod', 'some-other-key': 'x' } }),
      ),
    ).toEqual([
      'spec.externalLabels: "some-other-key" is not a valid label name for Prometheus v2.42.0 (the default) (must be letters, digits and underscores, not starting with a digit)',
    ]);
  });

  it.each(['1st', 'a.b', 'ünïcode', ''])('2.x refuses %j', (name) => {
    expect(
      validatePrometheus(prometheus({ version: 'v2.53.0', externalLabels: { [name]: 'x' } })),
    ).toEqual([expect.stringMatching(/is not a valid label name for Prometheus v2\.53\.0/)]);
  });

  it('from 3.0 any non-empty UTF-8 name is accepted', () => {
    expect(
      validatePrometheus(
        prometheus({
          version: 'v3.0.0',
          externalLabels: { 'some-other-key': 'x', 'a.b': 'y', ünïcode: 'z' },
        }),
      ),
    ).toEqual([]);
    expect(
      validatePrometheus(prometheus({ version: '3.5.0', externalLabels: { '': 'x' } })),
    ).toEqual([
      expect.stringMatching(
        /^spec\.externalLabels: "" is not a valid label name for Prometheus 3\.5\.0 \(must be a non-empty UTF-8 string\)/,
      ),
    ]);
  });

  it('a 3.0 release candidate still has the 2.x rule, in semver order as upstream decides', () => {
    expect(
      validatePrometheus(
        prometheus({ version: 'v3.0.0-rc.0', externalLabels: { 'some-other-key': 'x' } }),
      ),
    ).toHaveLength(1);
  });

  it('the reserved names are not checked: they are ignored, never rendered', () => {
    expect(
      validatePrometheus(
        prometheus({ externalLabels: { prometheus: 'x', prometheus_replica: 'y' } }),
      ),
    ).toEqual([]);
  });

  it('valid names render as before, sorted', () => {
    const labels = generateConfig(
      prometheus({ externalLabels: { zone: 'a', cluster: 'prod' } }),
      [],
      [],
    ).config.global.external_labels;
    expect(Object.keys(labels)).toEqual(['cluster', 'prometheus', 'prometheus_replica', 'zone']);
  });

  it('generateConfig refuses to render an unloadable configuration', () => {
    expect(() =>
      generateConfig(prometheus({ externalLabels: { 'some-other-key': 'x' } }), [], []),
    ).toThrow(/"some-other-key" is not a valid label name/);
  });
});

describe('spec.version', () => {
  it.each(['v2.42.0', '2.42.0', 'v3.1.0-rc.1', 'v2.45.0+build.1', ''])('accepts %j', (version) => {
    expect(validatePrometheus(prometheus({ version }))).toEqual([]);
  });

  it.each(['latest', 'v2.42', 'main'])(
    'refuses %j, which names no Prometheus version',
    (version) => {
      expect(validatePrometheus(prometheus({ version }))).toEqual([
        `spec.version: "${version}" is not a Prometheus version (e.g. v2.42.0)`,
      ]);
    },
  );
});
