import { downloadURL } from '../../../src/handlers/etcd/backup-server.js';
import { restoreSourceProblem } from '../../../src/handlers/etcd/restore-annotations.js';

describe('the restore-from annotation a seed Pod downloads from', () => {
  test('accepts the download URL the operator writes', () => {
    expect(
      restoreSourceProblem(
        downloadURL(
          'http://etcd-restore-operator.konductor-system:19999',
          'team-a',
          'main',
          'a'.repeat(64),
        ),
      ),
    ).toBeUndefined();
    expect(
      restoreSourceProblem(
        downloadURL('https://127.0.0.1:19999', 'team-a', 'main', 'b'.repeat(64)),
      ),
    ).toBeUndefined();
  });

  test.each([
    ['-o/etc/passwd', 'is not a URL'],
    ['--config=/x', 'is not a URL'],
    ['file:///etc/passwd', 'uses file: (only http and https)'],
    ['http://user:secret@host/v1/backup/ns/x', 'carries credentials'],
    ['http://host/anything', 'is not a backup download path (/v1/backup/<namespace>/<restore>)'],
    [
      'http://host/v1/backup/ns/x/../../y',
      'is not a backup download path (/v1/backup/<namespace>/<restore>)',
    ],
  ])('refuses %s: it %s', (value, problem) => {
    expect(restoreSourceProblem(value)).toBe(problem);
  });
});
