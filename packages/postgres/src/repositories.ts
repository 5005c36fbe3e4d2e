import type { Repositories } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { PgOrgRepository } from './org-repository.pg.ts';
import { PgUserRepository } from './user-repository.pg.ts';
import { PgProjectRepository } from './project-repository.pg.ts';
import { PgEnvironmentRepository } from './environment-repository.pg.ts';
import { PgSdkKeyRepository } from './sdk-key-repository.pg.ts';
import { PgApiTokenRepository } from './api-token-repository.pg.ts';
import { PgAuditRepository } from './audit-repository.pg.ts';
import { PgUnitOfWork } from './unit-of-work.pg.ts';
import { PgFlagRepository } from './flag-repository.pg.ts';
import { PgSegmentRepository } from './segment-repository.pg.ts';
import { PgEventDefinitionRepository } from './event-definition-repository.pg.ts';
import { PgEventRepository } from './event-repository.pg.ts';
import { PgExposureRepository } from './exposure-repository.pg.ts';
import { PgIdempotencyRepository } from './idempotency-repository.pg.ts';
import { PgExperimentRepository } from './experiment-repository.pg.ts';
import { PgResultsRepository } from './results-repository.pg.ts';
import { PgStatsJobRepository } from './stats-job-repository.pg.ts';
import { PgExperimentDataRepository } from './experiment-data-repository.pg.ts';
import { PgPowerDataRepository } from './power-data.pg.ts';
import { PgStatsScheduleRepository } from './stats-schedule-repository.pg.ts';
import { PgRefreshTokenRepository } from './refresh-token-repository.pg.ts';
import { PgLoginThrottleRepository } from './login-throttle-repository.pg.ts';
import { PgSessionRepository } from './session-repository.pg.ts';
import { PgInvitationRepository } from './invitation-repository.pg.ts';
import { PgAuthProviderRepository } from './auth-provider-repository.pg.ts';
import { PgSsoLoginRepository } from './sso-login-repository.pg.ts';
import { PgSsoIdentityRepository } from './sso-identity-repository.pg.ts';
import { PgMailOutboxRepository } from './mail-outbox-repository.pg.ts';
import { PgAccountTokenRepository } from './account-token-repository.pg.ts';
import { PgContextSigningSecretRepository } from './context-signing-secret-repository.pg.ts';
import { PgContextAttributeRepository } from './context-attribute-repository.pg.ts';
import { PgChangeRequestRepository } from './change-request-repository.pg.ts';
import { PgOrgDomainRepository } from './org-domain-repository.pg.ts';
import { PgWebhookRepository } from './webhook-repository.pg.ts';
import { PgScheduledChangeRepository } from './scheduled-change-repository.pg.ts';

/** Every core port implemented on one postgres.js pool. */
export function createPostgresRepositories(sql: Sql): Repositories {
  return {
    unitOfWork: new PgUnitOfWork(sql, createPostgresRepositories),
    orgs: new PgOrgRepository(sql),
    users: new PgUserRepository(sql),
    projects: new PgProjectRepository(sql),
    environments: new PgEnvironmentRepository(sql),
    sdkKeys: new PgSdkKeyRepository(sql),
    apiTokens: new PgApiTokenRepository(sql),
    audit: new PgAuditRepository(sql),
    flags: new PgFlagRepository(sql),
    segments: new PgSegmentRepository(sql),
    eventDefinitions: new PgEventDefinitionRepository(sql),
    events: new PgEventRepository(sql),
    exposures: new PgExposureRepository(sql),
    idempotency: new PgIdempotencyRepository(sql),
    experiments: new PgExperimentRepository(sql),
    results: new PgResultsRepository(sql),
    statsJobs: new PgStatsJobRepository(sql),
    experimentData: new PgExperimentDataRepository(sql),
    power: new PgPowerDataRepository(sql),
    statsSchedule: new PgStatsScheduleRepository(sql),
    sessions: new PgSessionRepository(sql),
    refreshTokens: new PgRefreshTokenRepository(sql),
    invitations: new PgInvitationRepository(sql),
    loginThrottle: new PgLoginThrottleRepository(sql),
    authProviders: new PgAuthProviderRepository(sql),
    ssoLogins: new PgSsoLoginRepository(sql),
    ssoIdentities: new PgSsoIdentityRepository(sql),
    mailOutbox: new PgMailOutboxRepository(sql),
    accountTokens: new PgAccountTokenRepository(sql),
    orgDomains: new PgOrgDomainRepository(sql),
    contextSigningSecrets: new PgContextSigningSecretRepository(sql),
    contextAttributes: new PgContextAttributeRepository(sql),
    webhooks: new PgWebhookRepository(sql),
    changeRequests: new PgChangeRequestRepository(sql),
    scheduledChanges: new PgScheduledChangeRepository(sql),
  };
}
