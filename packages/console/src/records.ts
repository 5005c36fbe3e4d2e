/** The API's records as the console reads them (docs/contract.md "Records"). */
import type { CorrectionFamily, Flag, FlagDifference, MetricAggregation, MetricDirection, MetricVerdict, MultipleTestingCorrection } from '@switchyard/core';
export type { Condition, CorrectionFamily, FieldDifference, Flag, FlagDifference, MetricAggregation, MetricDirection, MetricVerdict, MultipleTestingCorrection, Prerequisite, Rule, Segment, SegmentDifference, Variant } from '@switchyard/core';

/**
 * A flag as the flag page reads it: `client_visible` (docs/client-side.md "What a client sees")
 * is optional here so that the page also reads an answer from a server without the field.
 */
export type ConsoleFlag = Flag & { client_visible?: boolean };

export interface Org {
  org_id: string;
  org_name: string;
  role: string;
}

export interface Project {
  project_id: string;
  project_name: string;
  org_id: string;
  /** Whether new flags of the project start visible to client keys. */
  client_visible_default?: boolean;
  /** The thresholds of its flags' statuses and lifecycle stages (docs/insights.md "Thresholds"). */
  lifecycle?: LifecycleThresholds;
}

export interface Environment {
  environment_id: string;
  environment_name: string;
  project_id: string;
  /** Writes by people need `X-Confirm-Environment` (docs/access.md "Critical environments"). */
  critical?: boolean;
  /** Every write needs `X-Change-Comment`, kept as the change-history entry's comment. */
  require_comment?: boolean;
}

/** A role for some part of an org (docs/access.md "Role bindings"): no project = everywhere. */
export interface RoleBinding {
  role: 'viewer' | 'editor' | 'admin';
  project_id?: string;
  environment_id?: string;
}

/** `GET .../members/{user_id}/role-bindings`; `default`: no explicit list, `bindings` is the org role's. */
export interface MemberAccess {
  user_id: string;
  org_role: 'org_admin' | 'org_member';
  default: boolean;
  bindings: RoleBinding[];
}

/** An API token (docs/access.md "API tokens"); `token` only in the create answer. */
export interface ApiTokenRecord {
  id: string;
  token?: string;
  name: string;
  role: 'viewer' | 'editor' | 'admin';
  scope: { project_ids?: string[]; environment_ids?: string[] } | null;
  token_prefix: string;
  created_by: { user_id: string; email: string | null } | null;
  created_at_ms: number;
  expires_at_ms: number | null;
  last_used_at_ms: number | null;
}

export type ContextSigning = 'off' | 'key' | 'context';

/** An SDK key: a server key, or a client key with its settings (docs/client-side.md "Keys"). */
export interface SdkKey {
  sdk_key_id: string;
  environment_id: string;
  key_prefix: string;
  created_at: string;
  raw_key?: string;
  kind: 'server' | 'client';
  name: string;
  allowed_origins: string[];
  allow_missing_origin: boolean;
  context_signing: ContextSigning;
  include_disabled: boolean;
  /** Epoch ms, or null: no expiry. */
  expires_at_ms: number | null;
  /** Epoch ms of the key's last sync stream or evaluation (written at most once a minute), or null: never. */
  last_used_at_ms?: number | null;
}

/** `GET /v1/console/settings`: where SDKs reach this deployment (docs/console.md "Getting started checklist"). */
export interface ConsoleSettings {
  /** PUBLIC_URL, or null: the REST base is the console's own origin. */
  public_url: string | null;
  sync_port: number;
  sync_tls: boolean;
}

/** The client settings a create or PATCH body carries (snake_case, as the API takes them). */
export interface ClientKeySettingsBody {
  name?: string;
  allowed_origins?: string[];
  allow_missing_origin?: boolean;
  context_signing?: ContextSigning;
  include_disabled?: boolean;
  expires_at_ms?: number | null;
}

/**
 * An environment's context signing secret; `secret` only in the create answer. Its creation time
 * is read from `created_at_ms` (epoch ms) or `created_at`, whichever the server sends.
 */
export interface ContextSigningSecret {
  kid: string;
  created_at_ms?: number;
  created_at?: string | number;
  secret?: string;
}

export interface User {
  user_id: string;
  email: string;
  display_name: string;
  org_id: string;
  org_role: 'org_admin' | 'org_member';
  /** An org_member's role bindings; null (or absent from older servers): the org role's default. */
  bindings?: RoleBinding[] | null;
}

export interface Invitation {
  invitation_id: string;
  email: string;
  org_role: string;
  /** Null for invitations from before creators were recorded. */
  created_by: { user_id: string; email: string | null } | null;
  created_at: string;
  expires_at: string;
  token?: string;
  /** Create response: the link was queued for the invitee (with SMTP only for them: no token). */
  mailed?: boolean;
}

export interface EventDefinition {
  key: string;
  description: string;
  value_type: 'bool' | 'int' | 'double';
  created_at_ms: number;
  /** Whether client keys may send the event. */
  client_allowed?: boolean;
}

export interface Experiment {
  id: string;
  environment_id: string;
  name: string;
  description: string;
  flag_key: string;
  status: string;
  variant_keys: string[];
  metric_keys: string[];
  traffic_allocation: number;
  version: number;
  /**
   * The fields below come with metric definitions (docs/contract.md "Experiments"); a server from
   * before them leaves them out, and the pages then read `metric_keys` and the first variant as the control.
   */
  metrics?: MetricWire[];
  analysis?: AnalysisWire;
  /** The flag rule studied; null: the flag's first rule with an allocation. */
  rule_id?: string | null;
  control_variant_key?: string;
}

/** One aggregated event of a metric (an event metric, or either side of a ratio). */
export interface MetricSourceWire {
  event_key: string;
  aggregation: MetricAggregation;
  /** Only events this long after the participant's first exposure count; null or absent: to the end. */
  window_ms?: number | null;
}

/** An event metric (`event_key` set) or a ratio metric (`ratio` set), as sent and answered. */
export interface MetricWire {
  key?: string | null;
  event_key?: string | null;
  aggregation?: MetricAggregation | null;
  window_ms?: number | null;
  direction?: MetricDirection | null;
  capping?: { kind: 'absolute' | 'percentile'; lower?: number | null; upper?: number | null; ignore_zeros?: boolean | null } | null;
  cuped?: { lookback_ms?: number | null } | null;
  /** Answered as `{margin, margin_kind}` or null; `true`/`false` are accepted too (docs/contract.md "Experiments"). */
  guardrail?: boolean | GuardrailWire | null;
  ratio?: { numerator: MetricSourceWire; denominator: MetricSourceWire } | null;
  /**
   * A quantile metric (docs/statistics.md §15): p from 0.001 to 0.999 (0.9 is p90); answered on
   * quantile metrics only, always with p (null is only sent, by a form row whose percentile is empty).
   */
  quantile?: { p: number | null; unit?: 'participant' | 'event' | null } | null;
}

/** An experiment's analysis settings, as sent and answered. */
export interface AnalysisWire {
  alpha: number;
  sides: 'two' | 'one';
  relative_interval: 'delta' | 'fieller';
  correction: MultipleTestingCorrection;
  correction_family: CorrectionFamily;
  srm_threshold: number;
  srm_min_expected: number;
  /**
   * Issue 39's settings (docs/statistics.md "Issue 39 in the results"); absent from settings stored
   * before them, which read as frequentist, fixed-horizon, no hybrid, flat prior.
   */
  engine?: 'frequentist' | 'bayesian';
  /** Always-valid testing tuned for `tuning_n` participants (both arms); null: fixed-horizon only. */
  sequential?: { tuning_n?: number | null } | null;
  /** With `sequential`: α/2 sequential while running plus α/2 fixed-horizon at the iteration's end. */
  hybrid?: boolean;
  /** The Bayesian engine's N(mean, sd²) prior on the relative effect; null: flat. */
  prior?: { mean?: number | null; sd?: number | null } | null;
}

/** A guardrail's margin as answered: harm tolerated on the relative (0.02 = 2 %) or absolute effect. */
export interface GuardrailWire {
  margin?: number | null;
  margin_kind?: 'relative' | 'absolute' | null;
}

/** A guardrail metric's status against its margin (docs/statistics.md §13). */
export type GuardrailStatus = 'ok' | 'warning' | 'failing';

/** An effect with its interval and p-value; a null bound: that side of the interval is unbounded. */
export interface Effect {
  estimate: number;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
}

/**
 * One metric's statistics for one variant. The fields after p_value come with metric definitions;
 * results computed before them lack them (and the control's are null).
 */
export interface MetricStats {
  mean: number;
  variance: number;
  lift: number | null;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
  absolute?: Effect | null;
  relative?: Effect | null;
  adjusted_p_value?: number | null;
  capped_mean?: number;
  uncapped_mean?: number;
  cuped?: { theta: number; variance_reduction: number | null; balance_p_value: number | null } | null;
  verdict?: MetricVerdict | null;
  /** With `analysis.sequential`: the relative effect's running always-valid test (§9–§10). */
  sequential?: { estimate: number; ci_low: number | null; ci_high: number | null; p_value: number; adjusted_p_value?: number | null } | null;
  /** With the Bayesian engine: the relative effect's posterior (§12); risks are expected losses. */
  bayesian?: { chance_to_win: number; risk_control: number; risk_treatment: number; ci_low: number; ci_high: number } | null;
  /** A guardrail metric's status and one-sided tests against its margin (§13). */
  guardrail_status?: GuardrailStatus | null;
  guardrail?: { estimate: number; harm_p_value: number; non_inferiority_p_value: number; bound: number | null } | null;
  /**
   * A quantile metric's arm (docs/statistics.md §15), the control too: its quantile with the outer
   * (order-statistic) interval at the experiment's alpha, over `n` participants or events; null
   * when the arm has no values. `mean` is then this estimate and the effects compare quantiles.
   */
  quantile?: QuantileStats | null;
}

/** One arm's quantile as the results carry it (docs/contract.md "Experiments"). */
export interface QuantileStats {
  p: number;
  unit: 'participant' | 'event';
  n: number;
  estimate: number;
  ci_low: number;
  ci_high: number;
  se: number;
}

export interface VariantResult {
  variant_key: string;
  participant_count: number;
  metric_values: Record<string, number>;
  p_value: number;
  p_value_present: boolean;
  metric_stats: Record<string, MetricStats>;
}

export interface Results {
  experiment_id: string;
  variant_results: VariantResult[];
  computed_at_ms: number;
  is_stale: boolean;
  next_run_at_ms: number;
  computation_status: string;
  srm_p_value: number | null;
  /** Whether SRM warns (the threshold and minimum expected counts of `analysis`); null or absent in older results. */
  srm_warning?: boolean | null;
  /** The sequential SRM check's always-valid p-value (valid at every look); null or absent when not testable or in older results. */
  sequential_srm_p_value?: number | null;
  /** The settings the results were computed with; null or absent in older results. */
  analysis?: AnalysisWire | null;
}

export interface AuditEntry {
  id: string;
  at_ms: number;
  /** `name`: an API token's name (type 'api_token'). */
  actor: { type: string; id: string; email?: string; name?: string };
  action: string;
  resource_type: string;
  resource_id: string;
  project_id?: string;
  environment_id?: string;
  before?: unknown;
  after?: unknown;
  /** The write's `X-Change-Comment`; null or absent when none. */
  comment?: string | null;
  /** Facts that are neither before nor after (a copy's source: `copied_from_environment_name`). */
  details?: Record<string, unknown>;
}

/** GET /v1/environments/{env_id}/context-attributes: an attribute name contexts recently used (never a value). */
export interface ContextAttributeRecord {
  context_type: string;
  name: string;
  last_seen_at_ms: number;
}

/** GET /v1/environments/{target}/compare (docs/contract.md "Environment compare and copy"). */
export interface EnvironmentComparison {
  target_environment_id: string;
  from_environment_id: string;
  compared: number;
  flags: FlagDifference[];
}

/** What a copy carries (docs/contract.md "Environment compare and copy"). */
export type CopyPart = 'rules' | 'enabled' | 'prerequisites' | 'segments';

/** POST /v1/environments/{target}/copy's answer. */
export interface EnvironmentCopyRecord {
  target_environment_id: string;
  from_environment_id: string;
  include: CopyPart[];
  flags: Array<{ flag_key: string; before_version: number; after_version: number; fields: string[] }>;
  segments: Array<{ segment_key: string; kind: 'list' | 'rule'; action: 'created' | 'updated'; before_version: number; after_version: number; members_copied: number }>;
}

/** A webhook endpoint (docs/workflow.md "Webhooks"); `secret` only in the create and rotate answers. */
export interface WebhookRecord {
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  event_types: string[];
  filters: { project_ids: string[]; environment_ids: string[] };
  format: 'standard' | 'slack';
  disabled_reason?: string;
  consecutive_failures: number;
  previous_secret_expires_at_ms?: number;
  created_at_ms: number;
  updated_at_ms: number;
  secret?: string;
}

/** One delivery in an endpoint's log. */
export interface WebhookDeliveryRecord {
  id: string;
  endpoint_id: string;
  message_id: string;
  event_type: string;
  status: 'pending' | 'sending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at_ms?: number;
  status_code?: number;
  duration_ms?: number;
  error?: string;
  response?: string;
  created_at_ms: number;
  finished_at_ms?: number;
}

/** An environment's approval policy (docs/workflow.md "Change requests and approvals"). */
export interface ApprovalPolicy {
  environment_id: string;
  required: boolean;
  min_approvals: number;
  allow_self_approval: boolean;
  reset_on_change: boolean;
  kill_switch_exempt: boolean;
}

export interface ChangeRequestReview {
  id: string;
  reviewer_id: string;
  reviewer_email: string | null;
  verdict: 'approve' | 'reject' | 'comment';
  comment: string | null;
  content_hash: string;
  at_ms: number;
}

/** A change request as GET /v1/environments/{env_id}/change-requests/{id} shows it. */
export interface ChangeRequest {
  id: string;
  environment_id: string;
  title: string;
  description: string;
  changes: Array<{ flag_key?: string; segment_key?: string; operations: unknown[]; version: number }>;
  content_hash: string;
  status: 'draft' | 'open' | 'rejected' | 'applied' | 'cancelled' | 'conflicted' | 'scheduled';
  author: { id: string; email: string | null };
  revision: number;
  conflict: string | null;
  applied_by: { applier_id: string; approvers: string[] } | null;
  approvals: Array<{ reviewer_id: string; reviewer_email: string | null; at_ms: number }>;
  approvals_needed: number;
  reviews: ChangeRequestReview[];
  created_at_ms: number;
  updated_at_ms: number;
  /** When a scheduled request is due (kept once it ran or was cancelled); null if never scheduled. */
  execute_at_ms: number | null;
  scheduled_by: { type: string; id: string; email?: string; name?: string } | null;
}

/** GET .../change-requests/{id}/preview: each change's state now and after. */
export interface ChangeRequestPreview {
  changes: Array<{ flag_key?: string; segment_key?: string; version_made_against: number; current_version: number; before: unknown; after: unknown; problem: string | null }>;
}

/** Where a power input came from (docs/contract.md "Power and duration"). */
export interface PowerInputs {
  mean: number | null;
  variance: number | null;
  exposures_per_day: number | null;
  cuped_r2: number;
  /** Units of the window read; null: nothing was read (every value given). */
  participants: number | null;
  window_days: number;
  /** The window (or the experiment's participants) hit the store's bound: the estimates cover the first units only. */
  truncated: boolean;
  source: { mean: 'events' | 'given'; variance: 'events' | 'given'; exposures_per_day: 'events' | 'given' | 'experiment' | null; cuped_r2: 'events' | 'given' | 'none' };
}

/** A test's plan: the sample per arm (the control first), all arms together, and days at the rate; null when not computable. */
export interface PowerPlan {
  sample_per_arm: number[] | null;
  total: number | null;
  days: number | null;
}

/** POST /v1/environments/{env_id}/experiments/power's answer. */
export interface PowerEstimate {
  settings: { mde: number; alpha: number; power: number; sides: 'two' | 'one'; weights: number[]; sequential: { tuning_n: number } | null };
  inputs: PowerInputs;
  fixed: PowerPlan;
  sequential: PowerPlan | null;
}

/** GET /v1/environments/{env_id}/experiments/{id}/power's answer. */
export interface ExperimentPower {
  experiment_id: string;
  /** The variant keys, the control first (the order of `sample_per_arm`). */
  arms: string[];
  metrics: Array<
    PowerEstimate & {
      metric_key: string;
      /** While the latest iteration runs (ACTIVE). */
      current: { participants_per_arm: Record<string, number>; power: number | null; sequential_power: number | null; projected_end_ms: number | null } | null;
    }
  >;
}

/** A flag's status in one environment (docs/insights.md "Statuses"). */
export type FlagStatus = 'new' | 'active' | 'launched' | 'inactive';

/** A flag as an environment's list gives it with `?include=insights`. */
export type ListedFlag = Flag & { status?: FlagStatus; last_evaluated_at_ms?: number | null };

export type InsightsGranularity = 'hour' | 'day';

/** One hour or UTC day of `…/flags/{flag_id}/insights`: counts per variant (all reasons). */
export interface InsightsPoint {
  at_ms: number;
  variants: Record<string, number>;
}

/** `GET /v1/environments/{env_id}/flags/{flag_id}/insights` (docs/insights.md "Reading the counts"). */
export interface FlagInsights {
  series: InsightsPoint[];
  last_evaluated_at_ms: number | null;
  status: FlagStatus;
}

export type LifecycleStage = 'live' | 'ready_for_code_removal' | 'ready_to_archive' | 'archived';

/** A project's lifecycle thresholds, in whole days 1..365. */
export interface LifecycleThresholds {
  status_window_days: number;
  code_removal_min_age_days: number;
  archive_after_days: number;
  unchanged_fallback_days: number;
}

export interface LifecycleEnvironment {
  id: string;
  name: string;
  critical: boolean;
  /** Its statuses decide the stages (the critical environments, or all when none is). */
  counted: boolean;
  /** Some flag of the project was evaluated there within the status window. */
  reports_evaluations: boolean;
}

export interface LifecycleFlag {
  key: string;
  lifetime: 'temporary' | 'permanent';
  archived: boolean;
  stage: LifecycleStage;
  environments: Record<string, { status: FlagStatus; last_evaluated_at_ms: number | null }>;
}

/** `GET /v1/projects/{project_id}/flag-lifecycle` (docs/insights.md "Lifecycle stages"). */
export interface FlagLifecycle {
  thresholds: LifecycleThresholds;
  environments: LifecycleEnvironment[];
  flags: LifecycleFlag[];
  /** More than 10,000 flags: only the first by key are listed. */
  truncated: boolean;
}
