import type { Repositories } from '../ports/repositories.ts';
import { InMemoryState } from './in-memory-state.ts';
import { InMemoryOrgRepository } from './in-memory-org-repository.ts';
import { InMemoryUserRepository } from './in-memory-user-repository.ts';
import { InMemoryProjectRepository } from './in-memory-project-repository.ts';
import { InMemoryEnvironmentRepository } from './in-memory-environment-repository.ts';
import { InMemorySdkKeyRepository } from './in-memory-sdk-key-repository.ts';
import { InMemoryApiTokenRepository } from './in-memory-api-token-repository.ts';
import { InMemoryAuditRepository } from './in-memory-audit-repository.ts';
import { InMemoryUnitOfWork } from './in-memory-unit-of-work.ts';
import { InMemoryFlagRepository } from './in-memory-flag-repository.ts';
import { InMemorySegmentRepository } from './in-memory-segment-repository.ts';
import { InMemoryEventDefinitionRepository } from './in-memory-event-definition-repository.ts';
import { InMemoryEventRepository } from './in-memory-event-repository.ts';
import { InMemoryExposureRepository } from './in-memory-exposure-repository.ts';
import { InMemoryIdempotencyRepository } from './in-memory-idempotency-repository.ts';
import { InMemoryExperimentRepository } from './in-memory-experiment-repository.ts';
import { InMemoryResultsRepository } from './in-memory-results-repository.ts';
import { InMemoryStatsJobRepository } from './in-memory-stats-job-repository.ts';
import { InMemoryExperimentDataRepository } from './in-memory-experiment-data-repository.ts';
import { InMemoryPowerDataRepository } from './in-memory-power-data-repository.ts';
import { InMemoryStatsScheduleRepository } from './in-memory-stats-schedule-repository.ts';
import { InMemoryRefreshTokenRepository } from './in-memory-refresh-token-repository.ts';
import { InMemoryLoginThrottleRepository } from './in-memory-login-throttle-repository.ts';
import { InMemorySessionRepository } from './in-memory-session-repository.ts';
import { InMemoryInvitationRepository } from './in-memory-invitation-repository.ts';
import { InMemoryAccountTokenRepository, InMemoryMailOutboxRepository } from './in-memory-mail-repositories.ts';
import { InMemoryContextSigningSecretRepository } from './in-memory-context-signing-secret-repository.ts';
import { InMemoryChangeRequestRepository } from './in-memory-change-request-repository.ts';
import { InMemoryContextAttributeRepository } from './in-memory-context-attribute-repository.ts';
import { InMemoryOrgDomainRepository } from './in-memory-org-domain-repository.ts';
import { InMemoryScheduledChangeRepository } from './in-memory-scheduled-change-repository.ts';
import { InMemoryAuthProviderRepository, InMemorySsoIdentityRepository, InMemorySsoLoginRepository } from './in-memory-sso-repositories.ts';

import { InMemoryWebhookRepository } from './in-memory-webhook-repository.ts';

export { InMemoryState } from './in-memory-state.ts';
export { InMemoryChangeNotifier } from './in-memory-change-notifier.ts';
export { InMemoryExclusiveLock } from './in-memory-exclusive-lock.ts';
export { testFlag, testSegment } from './fixtures.ts';
export { patternRunMs } from './pattern-run-time.ts';

/** Every port backed by one shared in-memory state: for unit tests and for the core used alone. */
export function createInMemoryRepositories(state = new InMemoryState()): Repositories {
  const repos: Repositories = {
    orgs: new InMemoryOrgRepository(state),
    users: new InMemoryUserRepository(state),
    projects: new InMemoryProjectRepository(state),
    environments: new InMemoryEnvironmentRepository(state),
    sdkKeys: new InMemorySdkKeyRepository(state),
    apiTokens: new InMemoryApiTokenRepository(state),
    audit: new InMemoryAuditRepository(state),
    flags: new InMemoryFlagRepository(state),
    segments: new InMemorySegmentRepository(state),
    eventDefinitions: new InMemoryEventDefinitionRepository(state),
    events: new InMemoryEventRepository(state),
    exposures: new InMemoryExposureRepository(state),
    idempotency: new InMemoryIdempotencyRepository(state),
    experiments: new InMemoryExperimentRepository(state),
    results: new InMemoryResultsRepository(state),
    statsJobs: new InMemoryStatsJobRepository(state),
    experimentData: new InMemoryExperimentDataRepository(state),
    power: new InMemoryPowerDataRepository(state),
    statsSchedule: new InMemoryStatsScheduleRepository(state),
    sessions: new InMemorySessionRepository(state),
    refreshTokens: new InMemoryRefreshTokenRepository(state),
    invitations: new InMemoryInvitationRepository(state),
    loginThrottle: new InMemoryLoginThrottleRepository(state),
    authProviders: new InMemoryAuthProviderRepository(state),
    ssoLogins: new InMemorySsoLoginRepository(state),
    ssoIdentities: new InMemorySsoIdentityRepository(state),
    mailOutbox: new InMemoryMailOutboxRepository(state),
    accountTokens: new InMemoryAccountTokenRepository(state),
    orgDomains: new InMemoryOrgDomainRepository(state),
    contextSigningSecrets: new InMemoryContextSigningSecretRepository(state),
    contextAttributes: new InMemoryContextAttributeRepository(state),
    webhooks: new InMemoryWebhookRepository(state),
    changeRequests: new InMemoryChangeRequestRepository(state),
    scheduledChanges: new InMemoryScheduledChangeRepository(state),
    unitOfWork: new InMemoryUnitOfWork(state, () => repos),
  };
  return repos;
}
