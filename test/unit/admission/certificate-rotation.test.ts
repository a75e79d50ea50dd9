import { CLOCK_SKEW_MS } from '../../../src/framework/admission/certificates.js';
import {
  defaultOverlapMs,
  planIsIdle,
  planRotation,
  servingRenewalAt,
  type Lifetime,
  type RotationPlan,
  type RotationState,
  type RotationTimes,
} from '../../../src/framework/admission/certificate-rotation.js';
import { systemClock } from '../../../src/framework/clock/clock.js';
import { MAX_TIMEOUT_MS } from '../../../src/framework/clock/long-timeout.js';
import { installFakeClock, uninstallFakeClock } from '../../support/fake-clock.js';

// The rotation plan: what is issued, staged, switched and dropped at which instant. A pure function,
// so the whole life of a CA is walked here in virtual time.
const DAY = 86_400_000;
const start = Date.parse('2026-01-01T00:00:00Z');
const times: RotationTimes = {
  caValidityMs: 365 * DAY,
  servingValidityMs: 90 * DAY,
  overlapMs: 9 * DAY,
};

/** A certificate issued at `at` for `validityMs`, as the store would record it. */
const issued = (at: number, validityMs: number, cap = Infinity): Lifetime => ({
  notBefore: at - CLOCK_SKEW_MS,
  notAfter: Math.min(at + validityMs, cap),
});

/** A named model of the Secret: which CA signs the serving certificate, which are in the bundle. */
interface Model {
  cas: Map<string, Lifetime>;
  signer?: string;
  next?: string;
  retired: string[];
  serving?: { life: Lifetime; signedBy: string };
}

const view = (model: Model): RotationState => ({
  authority: model.signer === undefined ? undefined : model.cas.get(model.signer),
  next: model.next === undefined ? undefined : model.cas.get(model.next),
  retired: model.retired.map((name) => model.cas.get(name)!),
  serving: model.serving?.life,
});

const bundleOf = (model: Model): string[] =>
  [...model.retired, model.signer, model.next].filter((name): name is string => name !== undefined);

/** Applies a plan the way CertificateStore does. */
function apply(model: Model, plan: RotationPlan, now: number): void {
  const newCa = (): string => {
    const name = `ca${model.cas.size + 1}`;
    model.cas.set(name, issued(now, times.caValidityMs));
    return name;
  };
  if (plan.issueAuthority) {
    model.signer = newCa();
    model.next = undefined;
    model.retired = [];
  }
  model.retired = model.retired.filter((_, index) => !plan.dropRetired.includes(index));
  if (plan.stageAuthority) model.next = newCa();
  if (plan.promoteAuthority) {
    model.retired.push(model.signer!);
    model.signer = model.next;
    model.next = undefined;
  }
  if (plan.renewServing)
    model.serving = {
      life: issued(now, times.servingValidityMs, model.cas.get(model.signer!)!.notAfter),
      signedBy: model.signer!,
    };
}

/** Runs the store's loop from `start` to `until`, recording the bundle and signer after each step. */
function run(until: number): {
  model: Model;
  steps: Array<{ at: number; plan: RotationPlan; bundle: string[]; signedBy: string }>;
} {
  const model: Model = { cas: new Map(), retired: [] };
  const steps: Array<{ at: number; plan: RotationPlan; bundle: string[]; signedBy: string }> = [];
  let now = start;
  while (now < until) {
    const plan = planRotation(view(model), now, times);
    if (!planIsIdle(plan)) {
      apply(model, plan, now);
      steps.push({ at: now, plan, bundle: bundleOf(model), signedBy: model.serving!.signedBy });
    }
    now = planRotation(view(model), now, times).nextCheckAt;
  }
  return { model, steps };
}

describe('planRotation', () => {
  test('with nothing stored, issues a CA and a serving certificate', () => {
    const plan = planRotation({ retired: [] }, start, times);

    expect(plan).toMatchObject({
      issueAuthority: true,
      renewServing: true,
      stageAuthority: false,
      promoteAuthority: false,
    });
  });

  test('after issuing, plans nothing until the serving certificate is 2/3 through its life', () => {
    const state: RotationState = {
      authority: issued(start, times.caValidityMs),
      retired: [],
      serving: issued(start, times.servingValidityMs),
    };

    const plan = planRotation(state, start + DAY, times);

    expect(planIsIdle(plan)).toBe(true);
    expect(plan.nextCheckAt).toBe(start + 60 * DAY);
    expect(planRotation(state, start + 60 * DAY, times)).toMatchObject({
      renewServing: true,
      stageAuthority: false,
    });
  });

  test('renews at 2/3 of the serving life, measured from when it was issued', () => {
    expect(servingRenewalAt(issued(start, 90 * DAY))).toBe(start + 60 * DAY);
    expect(servingRenewalAt(issued(start, 3000))).toBe(start + 2000);
  });

  test('issues a new CA when the stored one has expired (nothing that verifies can be kept)', () => {
    const state: RotationState = {
      authority: issued(start, DAY),
      retired: [],
      serving: issued(start, DAY),
    };

    expect(planRotation(state, start + DAY, times)).toMatchObject({
      issueAuthority: true,
      renewServing: true,
    });
  });

  test('stages a new CA at 2/3 of the CA life without touching the serving certificate', () => {
    const authority = issued(start, times.caValidityMs);
    const serving = issued(start + 240 * DAY, times.servingValidityMs);
    const at = start + (365 * DAY * 2) / 3;

    expect(planRotation({ authority, retired: [], serving }, at - 1, times).stageAuthority).toBe(
      false,
    );
    expect(planRotation({ authority, retired: [], serving }, at, times)).toMatchObject({
      stageAuthority: true,
      promoteAuthority: false,
      renewServing: false,
    });
  });

  test('promotes a staged CA one overlap after it was staged, renewing the serving certificate with it', () => {
    const authority = issued(start, times.caValidityMs);
    const next = issued(start + 244 * DAY, times.caValidityMs);
    const serving = issued(start + 240 * DAY, times.servingValidityMs);

    expect(
      planRotation({ authority, next, retired: [], serving }, start + 244 * DAY, times).nextCheckAt,
    ).toBe(start + 253 * DAY);
    expect(
      planRotation({ authority, next, retired: [], serving }, start + 253 * DAY, times),
    ).toMatchObject({ promoteAuthority: true, renewServing: true });
  });

  test('drops a retired CA one overlap after the serving certificate switched away from it', () => {
    const retired = issued(start, times.caValidityMs);
    const state: RotationState = {
      authority: issued(start + 244 * DAY, times.caValidityMs),
      retired: [retired],
      serving: issued(start + 253 * DAY, times.servingValidityMs),
    };

    expect(planRotation(state, start + 253 * DAY, times).dropRetired).toEqual([]);
    expect(planRotation(state, start + 253 * DAY, times).nextCheckAt).toBe(start + 262 * DAY);
    expect(planRotation(state, start + 262 * DAY, times).dropRetired).toEqual([0]);
  });

  test('keeps a retired CA while the serving certificate is being replaced', () => {
    const state: RotationState = {
      authority: issued(start + 244 * DAY, times.caValidityMs),
      retired: [issued(start, times.caValidityMs)],
      serving: undefined,
    };

    expect(planRotation(state, start + 300 * DAY, times)).toMatchObject({
      renewServing: true,
      dropRetired: [],
    });
  });

  test('over two years: every serving certificate is signed by a CA in the bundle, and a CA is trusted an overlap before it signs and after it stops', () => {
    const { steps } = run(start + 2 * 365 * DAY);
    const trustedSince = new Map<string, number>();
    const signingUntil = new Map<string, number>();
    let signer: string | undefined;

    for (const step of steps) {
      for (const ca of step.bundle) if (!trustedSince.has(ca)) trustedSince.set(ca, step.at);
      expect(step.bundle).toContain(step.signedBy);
      if (signer !== undefined && signer !== step.signedBy) signingUntil.set(signer, step.at);
      if (signer !== step.signedBy && step.plan.issueAuthority === false) {
        expect(step.at - trustedSince.get(step.signedBy)!).toBeGreaterThanOrEqual(times.overlapMs);
      }
      signer = step.signedBy;
      for (const [ca, until] of signingUntil) {
        if (!step.bundle.includes(ca))
          expect(step.at - until).toBeGreaterThanOrEqual(times.overlapMs);
      }
    }
    expect(steps.filter((step) => step.plan.issueAuthority)).toHaveLength(1);
    expect(steps.filter((step) => step.plan.promoteAuthority).length).toBeGreaterThanOrEqual(2);
  });

  test('a CA rotation goes bundle [old] → [old, new] signed by old → [old, new] signed by new → [new]', () => {
    const { steps } = run(start + 300 * DAY);
    const rotation = steps.filter(
      (step) =>
        step.plan.stageAuthority || step.plan.promoteAuthority || step.plan.dropRetired.length > 0,
    );

    expect(rotation.map((step) => ({ bundle: step.bundle, signedBy: step.signedBy }))).toEqual([
      { bundle: ['ca1', 'ca2'], signedBy: 'ca1' },
      { bundle: ['ca1', 'ca2'], signedBy: 'ca2' },
      { bundle: ['ca2'], signedBy: 'ca2' },
    ]);
  });

  test('the default overlap is a tenth of the serving life, at least the poll interval', () => {
    expect(defaultOverlapMs(90 * DAY, 60_000)).toBe(9 * DAY);
    expect(defaultOverlapMs(5000, 1000)).toBe(1000);
  });
});

describe('scheduling the next look', () => {
  afterEach(uninstallFakeClock);

  test('a next look past setTimeout’s 24.8-day limit fires when due, not at once', () => {
    const clock = installFakeClock({ now: start });
    const state: RotationState = {
      authority: issued(start, times.caValidityMs),
      retired: [],
      serving: issued(start, times.servingValidityMs),
    };
    const { nextCheckAt } = planRotation(state, start, times);
    const firedAt: number[] = [];
    expect(nextCheckAt - start).toBeGreaterThan(MAX_TIMEOUT_MS);

    systemClock.setTimeout(() => firedAt.push(clock.now()), nextCheckAt - start);
    clock.advance(nextCheckAt - start - 1);
    expect(firedAt).toEqual([]);
    clock.advance(1);
    expect(firedAt).toEqual([nextCheckAt]);
  });
});
