import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { LedgerWidgets } from '../../fixtures/handlers/ledger-widgets.js';
import { readLedger, TrackedChanges, type LedgerVerdict } from '../../support/chaos/ledger.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';
import { FaultProxy, type ProxiedRequest } from '../../../src/testing/chaos/index.js';

const STORM_MS = 20_000;
const RETRY_AFTER_SECONDS = 2;
/** Timers may fire a millisecond early; the proxy timestamps arrivals, which only adds latency. */
const TIMER_SLACK_MS = 20;

let kc: KubeConfig;
let scratch: string;
let proxy: FaultProxy | undefined;
let running: TestOperator | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-throttle-'));
});

afterAll(async () => {
  await running?.stop();
  await proxy?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('a 429 storm', () => {
  test(
    `of ${STORM_MS / 1000} s with Retry-After: ${RETRY_AFTER_SECONDS}: the operator waits as told between requests to an endpoint and does not amplify load ` +
      '(requests ≤ storm / Retry-After + 1 per endpoint), then handles every change made during the storm (lost 0, phantom 0, duplicates 0)',
    async () => {
      const namespace = await uniqueNamespace(kc, 'chaos-throttle');
      const ledger = join(scratch, 'ledger.jsonl');
      process.env.CHAOS_LEDGER = ledger;
      const widgets = new Widgets(kc, namespace); // the test's own writes never pass the proxy
      const changes = new TrackedChanges(ledger, widgets);
      const create = (name: string, size: number): Promise<void> => changes.create(name, size);
      const resize = (name: string, size: number): Promise<void> => changes.resize(name, size);
      const remove = (name: string): Promise<void> => changes.remove(name);
      const verdict = (): LedgerVerdict => changes.verdict();

      for (let i = 0; i < 6; i++) await create(`before-${i}`, i + 1);
      proxy = await FaultProxy.forControlPlane({
        dir: dirname(process.env.KONDUCTOR_TEST_KUBECONFIG!),
        kubeConfig: () => kc,
      });
      running = await runOperator({
        kubeConfig: proxy.kubeConfig(),
        handlers: [LedgerWidgets],
        storage: chaosStorage(),
        namespaces: [namespace],
      });
      await waitFor(() => verdict().lost.length === 0, {
        what: 'the initial widgets to be handled',
        timeoutMs: 30_000,
      });
      await sleep(1_000); // let the handlers' status writes and their echoes settle

      // The storm: every request gets 429; the open watch is reset so the operator has to ask again.
      proxy.throttle(RETRY_AFTER_SECONDS);
      const upstreamBefore = proxy.stats().upstreamConnections;
      const stormStart = Date.now();
      proxy.resetConnections();
      for (let i = 0; i < 4; i++) await create(`during-${i}`, 100 + i);
      for (let i = 0; i < 3; i++) await resize(`before-${i}`, 200 + i);
      await remove('before-5');
      await sleep(STORM_MS / 2 - (Date.now() - stormStart));
      await resize('before-0', 300);
      await resize('during-0', 301);
      await create('during-late', 302);
      await remove('before-4');
      await sleep(STORM_MS - (Date.now() - stormStart));
      expect(readLedger(ledger).filter((e) => e.time >= stormStart)).toEqual([]); // nothing got through
      const stormStats = proxy.stats();
      proxy.pass();
      const stormMs = Date.now() - stormStart;

      // Waiting as told: per endpoint (path without query), consecutive requests at least Retry-After apart,
      // and so at most storm / Retry-After + 1 of them.
      const throttled = proxy.requests.filter((r) => r.mode === 'throttle');
      const byEndpoint = new Map<string, ProxiedRequest[]>();
      for (const request of throttled) {
        const endpoint = `${request.method} ${request.path.split('?')[0]}`;
        byEndpoint.set(endpoint, [...(byEndpoint.get(endpoint) ?? []), request]);
      }
      expect(byEndpoint.size).toBeGreaterThan(0);
      const perEndpointLimit = Math.floor(stormMs / (RETRY_AFTER_SECONDS * 1000)) + 1;
      const gaps: number[] = [];
      for (const [endpoint, requests] of byEndpoint) {
        expect(`${endpoint}: ${requests.length}`).toBe(
          `${endpoint}: ${Math.min(requests.length, perEndpointLimit)}`,
        );
        for (let i = 1; i < requests.length; i++) gaps.push(requests[i]!.at - requests[i - 1]!.at);
      }
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(RETRY_AFTER_SECONDS * 1000 - TIMER_SLACK_MS);
      // Nothing reached the API server during the storm, and every request was answered 429.
      expect(stormStats.upstreamConnections).toBe(upstreamBefore);
      expect(stormStats.byMode.throttle.throttled).toBe(stormStats.byMode.throttle.requests);
      expect(stormStats.byMode.throttle.requests).toBeLessThanOrEqual(
        perEndpointLimit * byEndpoint.size,
      );
      // It kept asking, too: at least one request per Retry-After for most of the storm.
      expect(stormStats.byMode.throttle.requests).toBeGreaterThanOrEqual(
        Math.floor(perEndpointLimit / 2),
      );

      // Afterwards every change made during the storm is handled, once, at its latest state.
      const recoveryStart = Date.now();
      await waitFor(() => verdict().lost.length === 0, {
        what: 'every change made during the storm to be handled',
        timeoutMs: 30_000,
      });
      const recoveryMs = Date.now() - recoveryStart;
      // Once answered again, the next request comes when the last Retry-After ends, not after an extra backoff.
      expect(recoveryMs).toBeLessThanOrEqual(RETRY_AFTER_SECONDS * 1000 + 8_000);
      await sleep(1_000); // room for a duplicate or a late phantom to show up
      const final = verdict();
      expect(final.lost).toEqual([]);
      expect(final.phantom).toEqual([]);
      expect(final.duplicates).toBe(0);

      console.log(
        `429 storm ${Math.round(stormMs / 1000)} s, Retry-After ${RETRY_AFTER_SECONDS} s: ${stormStats.byMode.throttle.requests} requests ` +
          `(${[...byEndpoint].map(([endpoint, requests]) => `${requests.length} × ${endpoint}`).join(', ')}; limit ${perEndpointLimit} per endpoint), ` +
          `shortest gap ${Math.min(...gaps)} ms, ${stormStats.byMode.throttle.connections} new connections; caught up ${recoveryMs} ms after the storm; ` +
          `changes ${final.changesMade}, handled ${final.changesHandled}`,
      );
      recordChaos({
        scenario: scenarioName('throttle-429-20s', chaosStorage()),
        faults: 1,
        changesMade: final.changesMade,
        changesHandled: final.changesHandled,
        lost: final.lost.length,
        duplicates: final.duplicates,
      });
    },
    120_000,
  );
});
