/** Which problems the Prometheus operator reports again, and how much it remembers to decide. */
import { ReportedProblems } from '../../../src/handlers/prometheus/reported-problems.js';

const object = (
  uid: string,
  generation = 1,
): { metadata: { uid: string; generation: number } } => ({ metadata: { uid, generation } });

describe('ReportedProblems', () => {
  it('a problem is reported once per object generation and message', () => {
    const reported = new ReportedProblems();
    expect(reported.firstTime(object('a'), 'bad regex')).toBe(true);
    expect(reported.firstTime(object('a'), 'bad regex')).toBe(false);
    expect(reported.firstTime(object('a'), 'bad path')).toBe(true);
    expect(reported.firstTime(object('b'), 'bad regex')).toBe(true);
  });

  it('a new generation is reported again, and what its older one had is forgotten', () => {
    const reported = new ReportedProblems();
    reported.firstTime(object('a', 1), 'bad regex');
    reported.firstTime(object('a', 1), 'bad path');
    expect(reported.firstTime(object('a', 2), 'bad regex')).toBe(true);
    expect(reported.size).toBe(1);
  });

  it('an object without a uid is always reported', () => {
    const reported = new ReportedProblems();
    expect(reported.firstTime({ metadata: {} }, 'bad')).toBe(true);
    expect(reported.firstTime({ metadata: {} }, 'bad')).toBe(true);
  });

  it('objects no longer in the cache are forgotten', () => {
    const reported = new ReportedProblems();
    reported.firstTime(object('a'), 'bad');
    reported.firstTime(object('b'), 'bad');
    reported.retain(new Set(['b']));
    expect(reported.size).toBe(1);
    expect(reported.firstTime(object('b'), 'bad')).toBe(false);
  });

  it('past its limit the objects reported longest ago are forgotten first', () => {
    const reported = new ReportedProblems(3);
    for (const uid of ['a', 'b', 'c', 'd']) reported.firstTime(object(uid), 'bad');
    expect(reported.size).toBe(3);
    expect(reported.firstTime(object('d'), 'bad')).toBe(false);
    expect(reported.firstTime(object('a'), 'bad')).toBe(true);
  });
});
