import type {
  ApiTokenService,
  ContextAttributeService,
  AuditLogService,
  ClientOriginService,
  AuthProviderService,
  AuthService,
  ClientMetrics,
  ClientRateLimiter,
  ContextSigningService,
  ContextTokenVerifier,
  CredentialVerifier,
  DefinitionSnapshots,
  EnvironmentCopyService,
  ChangeRequestService,
  ScheduledChangeService,
  EvaluationService,
  EventDefinitionService,
  ExperimentService,
  FlagService,
  FlagsAsCodeService,
  IngestService,
  InsightsService,
  InvitationService,
  KeyUsageRecorder,
  KeyUsageService,
  MailOutboxService,
  ManagementService,
  OrgDomainService,
  PasswordResetService,
  RoleBindingService,
  SegmentService,
  SsoLoginService,
  StatsService,
  SyncHub,
  WebhookService,
} from '@switchyard/services';
import type { ClientAccess } from './domains/client/rest-client-access.ts';
import type { BrowserStreams } from './domains/client/rest-event-streams.ts';
import type { ClientAnswers } from './domains/client/rest-client-answers.ts';
import type { ConsoleAddresses } from './domains/console/rest-routes.ts';

/** What routes ask of the credential verifier: the in-process CredentialVerifier, or a gateway's remote one. */
export type CallerVerifier = Pick<CredentialVerifier, 'verify' | 'verifyBearer' | 'verifySdkKey' | 'cachedSdkKey'>;

/**
 * What the REST gateway calls. In the single-process server these are the service objects
 * themselves (in-process); a gateway puts gRPC clients of the services process here (remote/), and
 * its own verifier, definitions and evaluation (docs/architecture.md).
 */
export interface GatewayServices {
  verifier: CallerVerifier;
  auth: AuthService;
  management: ManagementService;
  invitations: InvitationService;
  /** API tokens of an org (docs/access.md "API tokens"). */
  apiTokens: ApiTokenService;
  /** Members' role bindings per project and environment (docs/access.md "Managing bindings"). */
  roleBindings: RoleBindingService;
  /** Password reset by emailed link (docs/security.md "Password reset"). */
  passwordReset: PasswordResetService;
  /** The local outbox of development (docs/security.md "Email delivery"). */
  mailOutbox: MailOutboxService;
  /** Domains an org proved by DNS TXT (docs/security.md). */
  orgDomains: OrgDomainService;
  /** The change history (docs/contract.md "Change history"). */
  auditLog: AuditLogService;
  /** Single sign-on: the org's identity providers, and the logins through them. */
  authProviders: AuthProviderService;
  sso: SsoLoginService;
  flags: FlagService;
  /** Flags as code: a project's export and import (docs/flags-as-code.md). */
  flagsAsCode: FlagsAsCodeService;
  segments: SegmentService;
  /** Environment compare and copy (docs/contract.md "Environment compare and copy"). */
  environmentCopy: EnvironmentCopyService;
  /** Approval policies and change requests (docs/workflow.md "Change requests and approvals"). */
  changeRequests: ChangeRequestService;
  /** Scheduled changes and revert (docs/workflow.md "Scheduled changes", "Revert"). */
  scheduledChanges: ScheduledChangeService;
  /** Attribute names evaluated contexts used per environment (GET /v1/environments/{env_id}/context-attributes). */
  contextAttributes: ContextAttributeService;
  evaluation: EvaluationService;
  /**
   * Evaluation counts per flag (docs/insights.md): the insights route and flag lists read them; a
   * gateway's flusher sends its counts to `recordCounts` over the hop.
   */
  insights: InsightsService;
  /**
   * OFREP answers for client keys (docs/client-side.md "What a client sees"): in one process over
   * `evaluation`; a gateway asks the services for them (rules and segments stay there).
   */
  clientAnswers: Pick<ClientAnswers, 'bulk' | 'single'>;
  snapshots: Pick<DefinitionSnapshots, 'get' | 'current' | 'onChange'>;
  eventDefinitions: EventDefinitionService;
  /** Metric events and exposures (its writers' stats count the group-commit transactions). */
  ingest: IngestService;
  /** Definitions sync streams (FlagSyncService and FlagService.Sync). */
  sync: SyncHub;
  /** Browser event streams of client keys (docs/client-side.md "7. Streaming"); absent: bulk answers name none. */
  clientStreams?: BrowserStreams;
  experiments: ExperimentService;
  /** Recompute jobs (svc.stats.v1); the StatsWorker runs them. */
  stats: StatsService;
  /** The union of the client keys' allowed origins (a gateway asks the services; CORS preflights read clientAccess). */
  clientOrigins: ClientOriginService;
  /** The origin rules of the client routes and CORS (docs/client-side.md "CORS and origins"); local in every topology. */
  clientAccess: ClientAccess;
  /**
   * Client keys' token buckets, in the memory of the instance answering (the gateway in the
   * split topology): docs/client-side.md "6. Limits". Routes call it through domains/client/rest-client-limits.ts.
   */
  clientLimits: ClientRateLimiter;
  /** Per-key-kind counters of the client routes (requests, 304s, 429s, origin and signature refusals, streams). */
  clientMetrics: ClientMetrics;
  /**
   * Writes keys' last uses (`last_used_at_ms`) and their contexts' attribute names: the target of
   * this instance's `keyUses` batches in one process, of a gateway's over the hop (KeyUsageGatewayService).
   */
  keyUsage: KeyUsageService;
  /**
   * Notes each key's sync stream or evaluation on the instance answering, at most once a minute per
   * key, and the attribute names of the contexts it evaluated (bounded), and sends them in batches
   * to `keyUsage`; local in every topology.
   */
  keyUses: Pick<KeyUsageRecorder, 'used' | 'contextsSeen'>;
  /** The REST base and sync port the console puts in SDK snippets (GET /v1/console/settings); local in every topology. */
  consoleAddresses: ConsoleAddresses;
  /** Context signing secrets per environment (docs/client-side.md "4. Signed contexts"). */
  contextSigning: ContextSigningService;
  /** An org's signed webhook endpoints, their delivery logs and test sends (docs/workflow.md "Webhooks"). */
  webhooks: WebhookService;
  /**
   * Verifies client keys' context tokens from keys held in memory, on the instance answering (a
   * gateway holds its environments' keys, fetched over the hop and dropped on the credential watch's word).
   */
  contextTokens: ContextTokenVerifier;
}
