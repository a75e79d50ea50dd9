import { newestOwnState } from '../../../src/framework/engines/daemon-loop.js';
import { widget } from '../../support/widget-objects.js';

describe("the object a daemon's context shows", () => {
  test('is the watched body when the daemon wrote nothing', () => {
    const body = widget({ resourceVersion: '5' });
    expect(newestOwnState(body, undefined)).toBe(body);
  });

  test("is the answer to the daemon's write while the watch has delivered nothing since the write was sent", () => {
    const written = widget({ resourceVersion: '6', status: { reason: 'lost quorum' } });
    expect(newestOwnState(widget({ resourceVersion: '5' }), { from: '5', object: written })).toBe(
      written,
    );
  });

  test('is the watched body once the watch moved past the version the write was sent from', () => {
    const body = widget({ resourceVersion: '7', status: { reason: 'lost quorum' } });
    expect(
      newestOwnState(body, {
        from: '5',
        object: widget({ resourceVersion: '6', status: { reason: 'lost quorum' } }),
      }),
    ).toBe(body);
  });
});
