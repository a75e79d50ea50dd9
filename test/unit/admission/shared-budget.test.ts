import { SharedBudget } from '../../../src/framework/admission/shared-budget.js';

describe('a budget shared by the requests in flight, with a share per source', () => {
  test('a source takes up to its share; past it, it is refused while another source still takes', () => {
    const budget = new SharedBudget(100, 50);
    expect([budget.take('pod', 30), budget.take('pod', 20), budget.take('pod', 1)]).toEqual([
      true,
      true,
      false,
    ]);
    expect(budget.take('api-server', 50)).toBe(true);
    expect([budget.held, budget.heldBy('pod'), budget.heldBy('api-server')]).toEqual([100, 50, 50]);
  });

  test('the whole budget bounds all sources together, whatever their shares', () => {
    const budget = new SharedBudget(100, 60);
    expect([budget.take('a', 60), budget.take('b', 41), budget.take('b', 40)]).toEqual([
      true,
      false,
      true,
    ]);
  });

  test('what is given back can be taken again, and a source holding nothing is forgotten', () => {
    const budget = new SharedBudget(100, 50);
    budget.take('pod', 50);
    budget.give('pod', 50);
    expect([budget.held, budget.heldBy('pod'), budget.take('pod', 50)]).toEqual([0, 0, true]);
  });

  test('a share larger than the budget is capped at it', () => {
    const budget = new SharedBudget(10, 1_000);
    expect([budget.take('a', 10), budget.take('a', 1)]).toEqual([true, false]);
  });

  test('a refused take holds nothing', () => {
    const budget = new SharedBudget(100, 50);
    expect(budget.take('pod', 51)).toBe(false);
    expect([budget.held, budget.heldBy('pod')]).toEqual([0, 0]);
  });
});
