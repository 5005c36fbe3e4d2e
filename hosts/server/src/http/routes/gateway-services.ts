import type {
  AuthService,
  CredentialVerifier,
  DefinitionSnapshots,
  EvaluationService,
  EventDefinitionService,
  ExperimentService,
  FlagService,
  IngestService,
  InvitationService,
  ManagementService,
  SegmentService,
  StatsService,
  SyncHub,
} from '@switchyard/services';

/**
 * What the REST gateway calls. In the single-process server these are the service objects
 * themselves (in-process); a split deployment would put gRPC clients with the same shape here.
 */
export interface GatewayServices {
  verifier: CredentialVerifier;
  auth: AuthService;
  management: ManagementService;
  invitations: InvitationService;
  flags: FlagService;
  segments: SegmentService;
  evaluation: EvaluationService;
  snapshots: DefinitionSnapshots;
  eventDefinitions: EventDefinitionService;
  /** Metric events and exposures (its writers' stats count the group-commit transactions). */
  ingest: IngestService;
  /** Definitions sync streams (FlagSyncService and FlagService.Sync). */
  sync: SyncHub;
  experiments: ExperimentService;
  /** Recompute jobs (svc.stats.v1); the StatsWorker runs them. */
  stats: StatsService;
}
