import type { ApiClient } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { LeaderElector } from './leader-election.js';
import type { OperatorOptions, OperatorTimings } from './operator-options.js';
import { defaultReplicaIdentity } from './replica-identity.js';

/** What {@link campaignForWork} needs from the operator. */
export interface Campaign {
  election: OperatorOptions['leaderElection'];
  /** The Lease's name when the options name none (the identity's). */
  leaseName: string;
  timings: OperatorTimings['lease'];
  client: ApiClient;
  logger: Logger;
  metrics: Metrics;
  startWork: () => void;
  /** Stops all work after this replica (`identity`) lost leadership. */
  stopWork: (identity: string) => Promise<void>;
}

/**
 * Starts the work at once without leader election, or each time this replica wins the Lease; the
 * `leader` gauge says which replica works. Returns the elector, if any.
 */
export function campaignForWork(campaign: Campaign): LeaderElector | undefined {
  const { election, logger, metrics } = campaign;
  if (!election) {
    metrics.set('leader', 1);
    campaign.startWork();
    return undefined;
  }
  metrics.set('leader', 0);
  const identity = election.identity ?? defaultReplicaIdentity();
  const elector = new LeaderElector({
    namespace: election.namespace,
    name: election.name ?? campaign.leaseName,
    identity,
    ...campaign.timings,
    client: campaign.client,
    logger,
  });
  void elector.run({
    onStartedLeading: () => {
      logger.info({ identity }, 'leading: starting work');
      metrics.set('leader', 1);
      campaign.startWork();
    },
    onStoppedLeading: async () => {
      metrics.set('leader', 0);
      await campaign.stopWork(identity);
    },
  });
  return elector;
}
