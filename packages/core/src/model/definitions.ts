/**
 * Flag and segment definition documents.
 *
 * These types use the wire JSON shape (snake_case) on purpose: the same documents are stored as
 * JSONB, returned by REST, carried in sync-stream payloads and used by the conformance test vectors
 * (test-vectors/*.json) that SDKs in other languages run. One shape everywhere means no mapping
 * layer between what is stored, what is evaluated and what SDKs receive.
 */

export const FLAG_VALUE_TYPES = ['bool', 'int', 'double', 'string', 'json'] as const;
export type FlagValueType = (typeof FLAG_VALUE_TYPES)[number];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A variant's value. Its JS type must match the flag's value_type (json: any JSON value). */
export type FlagValue = JsonValue;

export interface Variant {
  key: string;
  value: FlagValue;
}

export const CONDITION_OPS = [
  'eq',
  'in',
  'contains',
  'starts_with',
  'ends_with',
  'matches',
  'lt',
  'lte',
  'gt',
  'gte',
  'semver_eq',
  'semver_lt',
  'semver_gt',
  'before',
  'after',
  'exists',
] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

/** Scalar a condition compares against. */
export type ConditionValue = string | number | boolean;

/**
 * One test on a context attribute. `attribute: "key"` means the context key.
 * `context_type` omitted: the first context of the evaluation input that has the attribute.
 */
export interface Condition {
  context_type?: string;
  attribute: string;
  op: ConditionOp;
  values: ConditionValue[];
  negate?: boolean;
}

export interface ContextHashSpec {
  /** Parameters whose values, joined by "/", form the hash input; empty: the context key. */
  parameter_names: string[];
}

export interface AllocationBucket {
  variant_key: string;
  /** Units of 0.1 percent: 1000 = 100.0 percent. Buckets of one allocation sum to 1000. */
  weight_milli: number;
}

export interface PercentageAllocation {
  /** Keyed by context type; the first listed type present in the input is hashed. */
  context_hash_specs: Record<string, ContextHashSpec>;
  buckets: AllocationBucket[];
}

export interface Rule {
  id: string;
  description?: string;
  /** All must hold (AND). */
  conditions: Condition[];
  /** All named segments must match. */
  segment_keys?: string[];
  /** Exactly one of variant_key or allocation. */
  variant_key?: string;
  allocation?: PercentageAllocation;
}

/**
 * A flag this one depends on, in the same environment (docs/contract.md "Prerequisites"): it
 * holds when that flag is on and serves one of `variant_keys` for the same input.
 */
export interface Prerequisite {
  flag_key: string;
  variant_keys: string[];
}

/** Flag-level default hash input: `parameter_type` names the context type. */
export interface HashingConfig {
  parameter_key: string;
  parameter_type: string;
  order: number;
}

export const FLAG_LIFETIMES = ['temporary', 'permanent'] as const;
/** Whether a flag is meant to be removed once rolled out (`temporary`) or to stay (`permanent`). */
export type FlagLifetime = (typeof FLAG_LIFETIMES)[number];

export const FLAG_BUCKET_BYS = ['environment', 'project'] as const;
/**
 * What a percentage split's bucket depends on besides the hash input and the flag key:
 * `environment` (the project and the environment: one user lands in independent buckets in each
 * environment) or `project` (the project only: the same bucket in every environment of the project).
 */
export type FlagBucketBy = (typeof FLAG_BUCKET_BYS)[number];

/**
 * A flag as one environment sees it: the project-level definition (key, description, value_type,
 * variants) merged with that environment's state (enabled, off_variant_key, rules, hashing, version).
 */
export interface Flag {
  key: string;
  description: string;
  value_type: FlagValueType;
  variants: Variant[];
  enabled: boolean;
  off_variant_key: string | null;
  rules: Rule[];
  /** Checked in order after the on/off check and before the rules; absent: none. */
  prerequisites?: Prerequisite[];
  hashing: HashingConfig[];
  version: number;
  archived: boolean;
  /**
   * Whether client keys (browsers, apps) may evaluate the flag: project-level, default from the
   * project's `client_visible_default` (docs/client-side.md "What a client sees").
   */
  client_visible: boolean;
  /**
   * Project-level metadata (docs/contract.md "Flags and evaluation"): labels, sorted and
   * de-duplicated; whether the flag is meant to go; who looks after it. Always present in what the
   * repositories and the API return; absent in a document (a test vector, an SDK's decoded flag):
   * `[]`, `permanent`, null. They never change what evaluation serves.
   */
  tags?: string[];
  lifetime?: FlagLifetime;
  maintainer?: string | null;
  /**
   * Project-level: what a split's bucket depends on (FlagBucketBy). Absent: `environment`.
   * `project` is an evaluation feature (`bucket_by_project`, evaluation/features.ts).
   */
  bucket_by?: FlagBucketBy;
  created_at_ms: number;
  updated_at_ms: number;
}

export type SegmentKind = 'list' | 'rule';

/**
 * A segment record. List segments keep their members in a separate store (millions of keys),
 * so the record carries counts only; rule segments carry their conditions.
 */
export interface Segment {
  id: string;
  key: string;
  context_type: string;
  kind: SegmentKind;
  description: string;
  conditions: Condition[];
  included_count: number;
  excluded_count: number;
  version: number;
  created_at_ms: number;
  updated_at_ms: number;
}
