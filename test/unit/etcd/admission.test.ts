import { versionChangeProblem } from '../../../src/handlers/etcd/admission.js';

describe('which etcd version changes an EtcdCluster may make', () => {
  test('a patch release or the next minor version is fine', () => {
    expect(versionChangeProblem('3.4.23', '3.4.24')).toBeUndefined();
    expect(versionChangeProblem('3.4.23', '3.5.0')).toBeUndefined();
  });

  test('skipping a minor version is refused with the version to go to first', () => {
    expect(versionChangeProblem('3.3.27', '3.5.9')).toMatch(
      /one minor version at a time: set 3\.4\.x first/,
    );
  });

  test('a downgrade is refused', () => {
    expect(versionChangeProblem('3.5.0', '3.4.23')).toMatch(/downgrade/);
    expect(versionChangeProblem('3.4.24', '3.4.23')).toMatch(/downgrade/);
  });

  test('a major version change is refused', () => {
    expect(versionChangeProblem('3.5.0', '4.0.0')).toMatch(/major version/);
  });
});
