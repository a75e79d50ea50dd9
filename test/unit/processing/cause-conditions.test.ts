import { handler, Harness } from './change-processor-harness.js';
import { widget } from '../../support/widget-objects.js';

describe('conditions from cause handlers', () => {
  test("a create handler's conditions and the generation they saw go out in its status write", async () => {
    const created = handler('create', 'created', {}, ({ conditions }) =>
      conditions.set('Ready', false, { reason: 'Provisioning', message: 'waiting for the volume' }),
    );
    const h = new Harness([created], {
      ...widget(),
      metadata: { ...widget().metadata, generation: 4 },
    });

    await h.deliver();

    const status = h.api.object.status as { conditions?: unknown[]; observedGeneration?: number };
    expect(status.conditions).toEqual([
      {
        type: 'Ready',
        status: 'False',
        observedGeneration: 4,
        lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        reason: 'Provisioning',
        message: 'waiting for the volume',
      },
    ]);
    expect(status.observedGeneration).toBe(4);
  });
});
