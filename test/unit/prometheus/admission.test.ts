import { serviceMonitorAdmissionProblems } from '../../../src/handlers/prometheus/admission.js';
import type { ServiceMonitorResource } from '../../../src/handlers/prometheus/types.js';

function monitor(spec: Record<string, unknown>): ServiceMonitorResource {
  return {
    metadata: { namespace: 'team-a', name: 'app' },
    spec: { selector: {}, endpoints: [{ port: 'metrics' }], ...spec },
  } as unknown as ServiceMonitorResource;
}

describe('ServiceMonitors refused at admission', () => {
  test('a regex RE2 rejects is refused, naming the field', () => {
    const problems = serviceMonitorAdmissionProblems(
      monitor({
        endpoints: [
          { port: 'm', relabelings: [{ sourceLabels: ['a'], regex: '(?=x)', action: 'keep' }] },
        ],
      }),
    );
    expect(problems.join('; ')).toMatch(/spec\.endpoints\[0\]\.relabelings\[0\]\.regex/);
  });

  test('an invalid selector value is refused, naming the field', () => {
    const problems = serviceMonitorAdmissionProblems(
      monitor({ selector: { matchLabels: { app: 'not valid!' } } }),
    );
    expect(problems.join('; ')).toMatch(/spec\.selector\.matchLabels/);
  });

  test('what depends on a Prometheus (its interval, its version) is not refused here', () => {
    expect(
      serviceMonitorAdmissionProblems(monitor({ endpoints: [{ port: 'm', scrapeTimeout: '2m' }] })),
    ).toEqual([]);
  });

  test('a usable monitor passes', () => {
    expect(serviceMonitorAdmissionProblems(monitor({}))).toEqual([]);
  });
});
