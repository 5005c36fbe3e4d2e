import type { LifecycleThresholds } from '../insights/flag-lifecycle.ts';
import type { AnalysisSettings, EffectEstimate, ExperimentMetric, ExperimentRunningState, GuardrailStatus, MetricVerdict } from '../experiments/analysis-model.ts';
import type { ApiTokenScope, BindingRole, ClientKeySettings, RoleBinding } from '../rbac/authorize.ts';
/**
 * Tenancy, identity and experimentation records. These are internal records (camelCase);
 * hosts map them to the snake_case wire records of docs/contract.md "Records" at the edge.
 */

export type OrgRole = 'org_admin' | 'org_member';
export const ORG_ROLES: readonly OrgRole[] = ['org_admin', 'org_member'];

export interface Org {
  id: string;
  name: string;
  isSystem: boolean;
  createdAtMs: number;
}

export interface User {
  id: string;
  email: string;
  displayName: string;
  /** bcrypt hash; never leaves the auth layer. */
  passwordHash: string;
  createdAtMs: number;
  /**
   * When the holder proved control of the address (an emailed link); null: never, so the real
   * holder may still claim the account (docs/security.md "Email addresses").
   */
  emailVerifiedAtMs: number | null;
}

export interface Membership {
  orgId: string;
  userId: string;
  role: OrgRole;
  createdAtMs: number;
  /**
   * An org_member's roles per project and environment (docs/access.md "Roles and bindings");
   * null: the org role's default (org_admin: admin everywhere, org_member: editor everywhere).
   */
  bindings: RoleBinding[] | null;
}

export interface Project {
  id: string;
  orgId: string;
  name: string;
  createdAtMs: number;
  /** New flags' `client_visible` when their create does not say (docs/client-side.md "What a client sees"). */
  clientVisibleDefault: boolean;
  /** Thresholds of the flags' statuses and lifecycle stages (docs/insights.md). */
  lifecycle: LifecycleThresholds;
}

export interface Environment {
  id: string;
  orgId: string;
  projectId: string;
  name: string;
  createdAtMs: number;
  /** A person's write here needs a confirmation (docs/access.md "Critical environments"). */
  critical: boolean;
  /** Every write here needs a comment, kept in its change history entry. */
  requireComment: boolean;
}

export interface SdkKey {
  id: string;
  orgId: string;
  projectId: string;
  environmentId: string;
  /** First characters of the plaintext, shown in listings so people can tell keys apart. */
  keyPrefix: string;
  /** Hex SHA-256 of the plaintext key; the plaintext itself is never stored. */
  keyHash: string;
  createdAtMs: number;
  revokedAtMs: number | null;
  /** `server` keys run in servers; `client` keys ship in browsers and apps (docs/client-side.md). */
  kind: SdkKeyKind;
  /** Client settings; the defaults on server keys, where they mean nothing. */
  settings: ClientKeySettings;
  /**
   * When the key last opened a sync stream or evaluated, to the minute (recorded at most once a
   * minute per key: SdkKeyRepository.recordUses); null: never.
   */
  lastUsedAtMs: number | null;
}

/** One use of a key, with the scope it belongs to (every write is scoped: SdkKeyRepository.recordUses). */
export interface SdkKeyUse {
  sdkKeyId: string;
  orgId: string;
  projectId: string;
  environmentId: string;
}

/** A key's use is written at most this often (docs/contract.md "Last use of a key": `last_used_at_ms`). */
export const SDK_KEY_USE_INTERVAL_MS = 60_000;

export const SDK_KEY_KINDS = ['server', 'client'] as const;
export type SdkKeyKind = (typeof SDK_KEY_KINDS)[number];

export type MetricValueType = 'bool' | 'int' | 'double';
export const METRIC_VALUE_TYPES: readonly MetricValueType[] = ['bool', 'int', 'double'];

export interface EventDefinition {
  environmentId: string;
  key: string;
  description: string;
  valueType: MetricValueType;
  /** Whether client keys (browsers, apps) may send this event (docs/client-side.md "5. Exposures and events"). */
  clientAllowed: boolean;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface MetricEvent {
  environmentId: string;
  metricKey: string;
  contextType: string;
  contextKey: string;
  /** bool events are stored as 1/0; a missing bool value counts as true (docs/contract.md "Events, exposures and idempotency"). */
  value: number;
  timestampMs: number;
}

export interface Exposure {
  environmentId: string;
  flagKey: string;
  variantKey: string;
  contextType: string;
  contextKey: string;
  timestampMs: number;
  /**
   * The rule whose percentage allocation served the variant ('' when none did: a targeted
   * variant, the default, the off variant); null or absent when the client did not say (older
   * SDKs), and then the exposure counts for any experiment on the flag.
   */
  ruleId?: string | null;
}

export const EXPERIMENT_STATUSES = [
  'EXPERIMENT_STATUS_DRAFT',
  'EXPERIMENT_STATUS_ACTIVE',
  'EXPERIMENT_STATUS_PAUSED',
  'EXPERIMENT_STATUS_CONCLUDED',
] as const;
export type ExperimentStatus = (typeof EXPERIMENT_STATUSES)[number];

export interface Experiment {
  id: string;
  environmentId: string;
  name: string;
  description: string;
  flagKey: string;
  status: ExperimentStatus;
  variantKeys: string[];
  /** The keys of `metrics`, in order (what readers from before metric definitions read). */
  metricKeys: string[];
  trafficAllocation: number;
  /**
   * The flag rule whose allocation the experiment studies; null: the flag's first rule that
   * allocates over the experiment's variants (experiments/studied-rule.ts).
   */
  ruleId: string | null;
  /** One of variantKeys (by default the first): the arm every other is compared with. */
  controlVariantKey: string;
  /** How each metric is computed (docs/contract.md "Experiments"); the first is the primary metric. */
  metrics: ExperimentMetric[];
  analysis: AnalysisSettings;
  version: number;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface ExperimentIteration {
  id: string;
  experimentId: string;
  iterationNumber: number;
  startedAtMs: number;
  /** 0 while the iteration runs. */
  endedAtMs: number;
  metricKeys: string[];
  trafficAllocation: number;
}

export interface MetricStats {
  mean: number;
  variance: number;
  lift: number | null;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
  /**
   * The fields below come with metric definitions (docs/statistics.md); results stored before
   * them lack them. For the control: absolute, relative, adjusted_p_value and cuped are null and
   * the verdict is absent.
   */
  /** Treatment − control (CUPED-adjusted when CUPED is on). */
  absolute?: EffectEstimate | null;
  /** (treatment − control) / |control| (CUPED-adjusted when CUPED is on). */
  relative?: EffectEstimate | null;
  /** The relative effect's p-value after the experiment's multiple-testing correction. */
  adjusted_p_value?: number | null;
  capped_mean?: number;
  uncapped_mean?: number;
  cuped?: { theta: number; variance_reduction: number; balance_p_value: number | null } | null;
  verdict?: MetricVerdict;
  /**
   * With `analysis.sequential`: the relative effect's running always-valid test (the running
   * minimum p-value and interval intersection over the iteration's looks; docs/statistics.md §9–§10)
   * and that p-value after the experiment's correction. Absent otherwise.
   */
  sequential?: { estimate: number; ci_low: number | null; ci_high: number | null; p_value: number; adjusted_p_value: number | null } | null;
  /** With the Bayesian engine: the relative effect's posterior (§12). Absent otherwise. */
  bayesian?: { chance_to_win: number; risk_control: number; risk_treatment: number; ci_low: number; ci_high: number } | null;
  /** For a guardrail metric: its status and the test against its margin (§13). Absent otherwise. */
  guardrail_status?: GuardrailStatus | null;
  guardrail?: { estimate: number; harm_p_value: number; non_inferiority_p_value: number; bound: number | null } | null;
  /**
   * A quantile metric (docs/statistics.md §15): the arm's quantile with its outer (order-statistic)
   * interval at the experiment's α; null when the arm has no values. Absent for other metrics. For
   * a quantile metric `mean` is this estimate, and absolute / relative compare the quantiles.
   */
  quantile?: { p: number; unit: 'participant' | 'event'; n: number; estimate: number; ci_low: number; ci_high: number; se: number } | null;
}

export interface VariantResult {
  variantKey: string;
  participantCount: number;
  metricValues: Record<string, number>;
  metricStats: Record<string, MetricStats>;
  pValue: number;
  pValuePresent: boolean;
}

export interface ExperimentResults {
  experimentId: string;
  iterationId: string | null;
  variantResults: VariantResult[];
  srmPValue: number | null;
  /** SRM p-value below the threshold with enough participants expected (absent in results stored before it). */
  srmWarning?: boolean;
  /** The settings the results were computed with (absent in results stored before them). */
  analysis?: AnalysisSettings;
  /** The sequential SRM check's always-valid p-value (docs/statistics.md §11); absent in results stored before it. */
  sequentialSrmPValue?: number | null;
  /** What the worker carries to its next look at the iteration; internal, never answered. */
  runningState?: ExperimentRunningState | null;
  computedAtMs: number;
  nextRunAtMs: number;
  computationStatus: string;
}

export type StatsJobStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface StatsJob {
  id: string;
  orgId: string;
  experimentId: string;
  status: StatsJobStatus;
  /** Empty unless status is failed. */
  error: string;
  createdAtMs: number;
  /** 0 until the job starts. */
  startedAtMs: number;
  /** 0 until the job completes (or fails). */
  completedAtMs: number;
  /** A running job whose lease passed is claimable again: a crashed worker leaves nothing stuck. */
  leaseExpiresAtMs: number;
  attempts: number;
}

/** Who made a change (docs/contract.md "Change history"). `system`: the platform itself (bootstrap). */
export interface AuditActor {
  type: 'user' | 'sdk_key' | 'system' | 'api_token';
  /** The user id, the SDK key id, the API token id, or a name for the system part that acted. */
  id: string;
  /** The user's email when it was known at the time of the change. */
  email?: string;
  /** The API token's name at the time of the change. */
  name?: string;
}

/**
 * One change of the audit log (docs/contract.md "Change history"). `before`/`after` hold the
 * resource as the API shows it (never a secret): `before` is null for a creation, `after` for a
 * deletion.
 */
export interface AuditEntry {
  id: string;
  orgId: string;
  atMs: number;
  actor: AuditActor;
  action: string;
  resourceType: string;
  resourceId: string;
  /** The project the resource lives in, when it lives in one. */
  projectId: string | null;
  /** The environment the change applies to; null for org- and project-level changes. */
  environmentId: string | null;
  before: unknown;
  after: unknown;
  /** Facts that are neither before nor after (a transition's reason, an SSO subject); {} when none. */
  details: Record<string, unknown>;
  /** The comment the write gave (X-Change-Comment); null when none. */
  comment: string | null;
}

/** What a write records; the store assigns the id. */
export type AuditDraft = Omit<AuditEntry, 'id' | 'comment'> & { comment?: string | null };

/**
 * An API token (a service account; docs/access.md "API tokens"). The plaintext `swy_...` is shown
 * once at creation and stored only as its SHA-256.
 */
export interface ApiToken {
  id: string;
  orgId: string;
  name: string;
  role: BindingRole;
  scope: ApiTokenScope;
  /** First characters of the plaintext, to tell tokens apart in lists. */
  tokenPrefix: string;
  /** The person who created it; null once that account is gone. */
  createdByUserId: string | null;
  createdAtMs: number;
  /** After this instant the token authenticates nothing; null: no expiry. */
  expiresAtMs: number | null;
  revokedAtMs: number | null;
  /** When it last authenticated a request (at most once a minute); null: never. */
  lastUsedAtMs: number | null;
}
