export type { MakeTenancyRepositories, TenancyRepositories } from './tenancy-contract-support.ts';
export { orgRepositoryContract } from './org-repository.contract.ts';
export { userRepositoryContract } from './user-repository.contract.ts';
export { projectRepositoryContract } from './project-repository.contract.ts';
export { environmentRepositoryContract } from './environment-repository.contract.ts';
export { sdkKeyRepositoryContract } from './sdk-key-repository.contract.ts';
export { auditRepositoryContract } from './audit-repository.contract.ts';
export { unitOfWorkContract } from './unit-of-work.contract.ts';
export type { EventExperimentRepositories, EventExperimentWorld, MakeEventExperimentRepos } from './event-experiment-fixture.ts';
export {
  eventDefinitionRepositoryContract,
  eventRepositoriesContract,
  eventRepositoryContract,
  exposureRepositoryContract,
  idempotencyRepositoryContract,
} from './event-repositories.contract.ts';
export { experimentRepositoryContract, resultsRepositoryContract } from './experiment-repositories.contract.ts';
export { statsJobRepositoryContract } from './stats-job-repository.contract.ts';
export type { ContractCheck, FlagSegmentFixture, MakeFlagSegmentRepos } from './flag-segment-fixture.ts';
export { flagRepositoryContract } from './flag-repository.contract.ts';
export { segmentRepositoryContract } from './segment-repository.contract.ts';
export type { MakeSessionRepositories, SessionRepositories } from './session-repositories.contract.ts';
export {
  invitationRepositoryContract,
  loginThrottleRepositoryContract,
  refreshTokenRepositoryContract,
  sessionRepositoriesContract,
  sessionRepositoryContract,
} from './session-repositories.contract.ts';
export type { ChangeNotifierFixture, MakeChangeNotifiers } from './change-notifier.contract.ts';
export { changeNotifierContract } from './change-notifier.contract.ts';
export type { ExperimentDataRepositories, ExperimentDataWorld, MakeExperimentDataRepos } from './experiment-data-repositories.contract.ts';
export { experimentDataRepositoryContract, statsScheduleRepositoryContract } from './experiment-data-repositories.contract.ts';
export { metricAggregationContract } from './metric-aggregation.contract.ts';
export type { MakeExclusiveLocks } from './exclusive-lock.contract.ts';
export { exclusiveLockContract } from './exclusive-lock.contract.ts';
export type { MakeSsoRepositories, SsoRepositories } from './sso-repositories.contract.ts';
export {
  authProviderRepositoryContract,
  ssoIdentityRepositoryContract,
  ssoLoginRepositoryContract,
  ssoRepositoriesContract,
  ssoSessionContract,
} from './sso-repositories.contract.ts';
export type { MailRepositories, MakeMailRepositories } from './mail-repositories.contract.ts';
export { accountTokenRepositoryContract, addressProofRepositoriesContract, mailOutboxRepositoryContract } from './mail-repositories.contract.ts';
export { contextSigningSecretRepositoryContract, type MakeContextSigningRepositories } from './context-signing-secret-repository.contract.ts';
export { contextAttributeRepositoryContract, type MakeContextAttributeRepositories } from './context-attribute-repository.contract.ts';
export { apiTokenRepositoryContract } from './api-token-repository.contract.ts';
export { scheduledChangeRepositoryContract } from './scheduled-change-repository.contract.ts';
export { changeRequestRepositoryContract, type MakeChangeRequestRepositories } from './change-request-repository.contract.ts';
