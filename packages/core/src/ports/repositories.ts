import type { AuditRepository, UnitOfWork } from './audit-ports.ts';
import type { ExperimentRepository, ResultsRepository, StatsJobRepository } from './experiment-ports.ts';
import type { ExperimentDataRepository, PowerDataRepository, StatsScheduleRepository } from './experiment-data-ports.ts';
import type { EventDefinitionRepository, EventRepository, ExposureRepository, IdempotencyRepository } from './event-ports.ts';
import type { FlagRepository, SegmentRepository } from './flag-ports.ts';
import type { AuthProviderRepository, SsoIdentityRepository, SsoLoginRepository } from './sso-ports.ts';
import type { InvitationRepository, LoginThrottleRepository, RefreshTokenRepository, SessionRepository } from './session-ports.ts';
import type { AccountTokenRepository, MailOutboxRepository } from './mail-ports.ts';
import type { OrgDomainRepository } from './org-domain-ports.ts';
import type { WebhookRepository } from './webhook-ports.ts';
import type { ContextSigningSecretRepository } from '../client/context-signing-ports.ts';
import type { ContextAttributeRepository } from '../flags/context-attribute-ports.ts';
import type { ChangeRequestRepository } from './change-request-ports.ts';
import type { ScheduledChangeRepository } from '../flags/scheduled-change-ports.ts';
import type { ApiTokenRepository, EnvironmentRepository, OrgRepository, ProjectRepository, SdkKeyRepository, UserRepository } from './tenancy-ports.ts';

/** Every port, as one bundle the composition root hands to services. */
export interface Repositories {
  orgs: OrgRepository;
  users: UserRepository;
  projects: ProjectRepository;
  environments: EnvironmentRepository;
  sdkKeys: SdkKeyRepository;
  /** API tokens (service accounts; docs/access.md "API tokens"). */
  apiTokens: ApiTokenRepository;
  flags: FlagRepository;
  segments: SegmentRepository;
  eventDefinitions: EventDefinitionRepository;
  events: EventRepository;
  exposures: ExposureRepository;
  idempotency: IdempotencyRepository;
  experiments: ExperimentRepository;
  results: ResultsRepository;
  statsJobs: StatsJobRepository;
  /** Experiment aggregation over events and exposures (in SQL), and results staleness. */
  experimentData: ExperimentDataRepository;
  /** Bounded reads of the power and duration calculator (docs/statistics.md §14). */
  power: PowerDataRepository;
  /** The stats scheduler's cross-org view of jobs. */
  statsSchedule: StatsScheduleRepository;
  audit: AuditRepository;
  /** Runs writes and their audit entry in one transaction (docs/decisions.md "Change history"). */
  unitOfWork: UnitOfWork;
  sessions: SessionRepository;
  refreshTokens: RefreshTokenRepository;
  invitations: InvitationRepository;
  loginThrottle: LoginThrottleRepository;
  /** Single sign-on (docs/sso.md). */
  authProviders: AuthProviderRepository;
  ssoLogins: SsoLoginRepository;
  ssoIdentities: SsoIdentityRepository;
  /** Mails waiting for the mail worker, and the local outbox in development. */
  mailOutbox: MailOutboxRepository;
  /** Emailed single-use secrets (password reset, address verification). */
  accountTokens: AccountTokenRepository;
  /** Domains orgs proved they control (DNS TXT). */
  orgDomains: OrgDomainRepository;
  /** Per environment, the secrets context tokens are signed with (docs/client-side.md "4. Signed contexts"). */
  contextSigningSecrets: ContextSigningSecretRepository;
  /** Per environment, the attribute names evaluated contexts used (docs/contract.md "Context attributes"). */
  contextAttributes: ContextAttributeRepository;
  /** Webhook endpoints and their outbox of deliveries (docs/workflow.md "Webhooks"). */
  webhooks: WebhookRepository;
  /** Per environment, the approval policy and the change requests (docs/workflow.md "Change requests and approvals"). */
  changeRequests: ChangeRequestRepository;
  /** Flag changes applied at a time (docs/workflow.md "Scheduled changes"). */
  scheduledChanges: ScheduledChangeRepository;
}
