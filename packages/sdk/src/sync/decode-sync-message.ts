import type { Condition, Flag, FlagValueType, HashingConfig, Prerequisite, Rule, Segment } from '@switchyard/core';

/**
 * svc.flags.v1.SyncResponse as the SDK's grpc-js client hands it over (snake_case, defaults
 * filled in, enums as names, oneofs with their discriminator) → core Flag and Segment documents.
 * This is the inverse of the server's mapping (docs/decisions.md "Sync stream").
 */

interface VariantValueMessage {
  value?: string;
  bool_value?: boolean;
  int_value?: number;
  double_value?: number;
  string_value?: string;
  json_value?: string;
}
interface FlagRuleMessage {
  rule_payload?: Uint8Array | null;
  variant_key?: string;
  allocation?: { context_hash_specs?: Record<string, { parameter_names?: string[] } | null>; buckets?: Array<{ variant_key: string; weight_milli: number }> } | null;
  id?: string;
  description?: string;
}
export interface FeatureFlagMessage {
  key: string;
  enabled?: boolean;
  value_type?: string | number;
  variants?: Array<{ key: string; value?: VariantValueMessage | null }>;
  rules?: FlagRuleMessage[];
  description?: string;
  off_variant_key?: string;
  hashing?: Array<{ parameter_key: string; parameter_type: string; order: number }>;
  version?: number;
  archived?: boolean;
  /** proto3 `optional`: absent from servers older than client keys (then hidden from clients). */
  client_visible?: boolean;
  created_at_ms?: number;
  updated_at_ms?: number;
  /** Empty or absent: none. */
  prerequisites?: Array<{ flag_key?: string; variant_keys?: string[] }>;
  /** FlagBucketBy as an enum name (a number for a value this proto does not know); absent or UNSPECIFIED: ENVIRONMENT. */
  bucket_by?: string | number;
  /** Metadata (no effect on evaluation); absent from servers older than the fields. */
  tags?: string[];
  lifetime?: string | number;
  maintainer?: string;
}
interface RuleSegmentMessage {
  key: string;
  context_type?: string;
  rule_payload?: Uint8Array | null;
  id?: string;
  version?: number;
}
interface ListSegmentMetaMessage {
  key: string;
  context_type?: string;
  id?: string;
  version?: number;
}
export interface SegmentMessage {
  segment?: string;
  rule_segment?: RuleSegmentMessage | null;
  list_segment?: ListSegmentMetaMessage | null;
}
export interface SyncResponseMessage {
  flags?: FeatureFlagMessage[];
  segments?: SegmentMessage[];
  sequence_number?: number;
  server_timestamp_ms?: number;
  environment_id?: string;
  removed_flag_keys?: string[];
  removed_segment_keys?: string[];
  full_snapshot?: boolean;
  project_id?: string;
  experiment_flag_keys?: string[];
  features?: string[];
}

/** One sync message in core shapes. Definitions that could not be decoded are listed in `problems` and left out. */
export interface DefinitionUpdate {
  fullSnapshot: boolean;
  sequenceNumber: number;
  serverTimestampMs: number;
  environmentId: string;
  projectId: string;
  flags: Flag[];
  segments: Segment[];
  removedFlagKeys: string[];
  removedSegmentKeys: string[];
  experimentFlagKeys: string[];
  /** The evaluation features the environment's definitions use (the complete set; empty: none). */
  features: string[];
  problems: string[];
}

const VALUE_TYPE_BY_ENUM: Readonly<Record<string, FlagValueType>> = {
  FLAG_VALUE_TYPE_BOOL: 'bool',
  FLAG_VALUE_TYPE_INT: 'int',
  FLAG_VALUE_TYPE_DOUBLE: 'double',
  FLAG_VALUE_TYPE_STRING: 'string',
  FLAG_VALUE_TYPE_JSON: 'json',
};
const MEMBER_BY_VALUE_TYPE: Readonly<Record<FlagValueType, keyof VariantValueMessage>> = {
  bool: 'bool_value',
  int: 'int_value',
  double: 'double_value',
  string: 'string_value',
  json: 'json_value',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

function payload(bytes: Uint8Array | null | undefined, what: string): Record<string, unknown> {
  if (!bytes || bytes.length === 0) return {};
  const parsed: unknown = JSON.parse(utf8.decode(bytes));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

function variantValue(valueType: FlagValueType, message: VariantValueMessage | null | undefined): unknown {
  const member = MEMBER_BY_VALUE_TYPE[valueType];
  const raw = message?.[member];
  if (raw === undefined || (message?.value !== undefined && message.value !== member)) throw new Error(`a variant value is not set as ${member}`);
  return valueType === 'json' ? JSON.parse(raw as string) : raw;
}

function rule(message: FlagRuleMessage, index: number): Rule {
  const body = payload(message.rule_payload, `rule ${index} payload`);
  const out: Rule = { id: message.id ?? '', conditions: (body.conditions as Condition[] | undefined) ?? [] };
  if (message.description) out.description = message.description;
  if (Array.isArray(body.segment_keys) && body.segment_keys.length > 0) out.segment_keys = body.segment_keys as string[];
  // proto3 cannot tell an empty string from an absent one: '' means "no variant_key".
  if (message.variant_key) out.variant_key = message.variant_key;
  if (message.allocation) {
    out.allocation = {
      context_hash_specs: Object.fromEntries(
        Object.entries(message.allocation.context_hash_specs ?? {}).map(([type, spec]) => [type, { parameter_names: spec?.parameter_names ?? [] }]),
      ),
      buckets: (message.allocation.buckets ?? []).map((b) => ({ variant_key: b.variant_key, weight_milli: b.weight_milli })),
    };
  }
  return out;
}

/** A FeatureFlag message as a core Flag; throws on anything it cannot read. */
export function flagFromMessage(message: FeatureFlagMessage): Flag {
  const valueType = typeof message.value_type === 'string' ? VALUE_TYPE_BY_ENUM[message.value_type] : undefined;
  if (valueType === undefined) throw new Error(`flag "${message.key}" has an unknown value_type ${String(message.value_type)}`);
  const hashing: HashingConfig[] = (message.hashing ?? []).map((c) => ({ parameter_key: c.parameter_key, parameter_type: c.parameter_type, order: c.order }));
  const prerequisites: Prerequisite[] = (message.prerequisites ?? []).map((p) => {
    if (typeof p.flag_key !== 'string' || p.flag_key === '') throw new Error(`flag "${message.key}" has a prerequisite without a flag_key`);
    return { flag_key: p.flag_key, variant_keys: [...(p.variant_keys ?? [])] };
  });
  const flag: Flag = {
    key: message.key,
    description: message.description ?? '',
    value_type: valueType,
    variants: (message.variants ?? []).map((v) => ({ key: v.key, value: variantValue(valueType, v.value) as Flag['variants'][number]['value'] })),
    enabled: message.enabled === true,
    off_variant_key: message.off_variant_key ? message.off_variant_key : null,
    rules: (message.rules ?? []).map(rule),
    hashing,
    version: Number(message.version ?? 0),
    archived: message.archived === true,
    client_visible: message.client_visible === true,
    created_at_ms: Number(message.created_at_ms ?? 0),
    updated_at_ms: Number(message.updated_at_ms ?? 0),
  };
  // Absent when there are none, as in the server's documents.
  if (prerequisites.length > 0) flag.prerequisites = prerequisites;
  // Metadata, kept as the server's document has it (a gateway's snapshot holds what the services'
  // does); it never changes what evaluation serves, so a lifetime this SDK does not know is read as permanent.
  flag.tags = [...(message.tags ?? [])];
  flag.lifetime = message.lifetime === 'FLAG_LIFETIME_TEMPORARY' ? 'temporary' : 'permanent';
  flag.maintainer = typeof message.maintainer === 'string' && message.maintainer !== '' ? message.maintainer : null;
  // A bucket_by this SDK does not know makes the flag unreadable rather than bucketed another way.
  const bucketBy = message.bucket_by;
  if (bucketBy === 'FLAG_BUCKET_BY_PROJECT') flag.bucket_by = 'project';
  else if (bucketBy === undefined || bucketBy === null || bucketBy === 'FLAG_BUCKET_BY_ENVIRONMENT' || bucketBy === 'FLAG_BUCKET_BY_UNSPECIFIED' || bucketBy === 0) flag.bucket_by = 'environment';
  else throw new Error(`flag "${message.key}" has an unknown bucket_by ${String(bucketBy)}`);
  return flag;
}

/** A Segment message (rule in full, list as metadata) as a core Segment. */
export function segmentFromMessage(message: SegmentMessage): Segment {
  const base = { description: '', included_count: 0, excluded_count: 0, created_at_ms: 0, updated_at_ms: 0 };
  if (message.rule_segment) {
    const s = message.rule_segment;
    const body = payload(s.rule_payload, `segment "${s.key}" payload`);
    return { ...base, id: s.id ?? '', key: s.key, context_type: s.context_type ?? '', kind: 'rule', conditions: (body.conditions as Condition[] | undefined) ?? [], version: Number(s.version ?? 0) };
  }
  if (message.list_segment) {
    const s = message.list_segment;
    return { ...base, id: s.id ?? '', key: s.key, context_type: s.context_type ?? '', kind: 'list', conditions: [], version: Number(s.version ?? 0) };
  }
  throw new Error('a segment message carries neither rule_segment nor list_segment');
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A whole SyncResponse; a definition that cannot be decoded is reported in `problems` and skipped. */
export function decodeSyncMessage(message: SyncResponseMessage): DefinitionUpdate {
  const problems: string[] = [];
  const flags: Flag[] = [];
  for (const flag of message.flags ?? []) {
    try {
      flags.push(flagFromMessage(flag));
    } catch (error) {
      problems.push(`flag "${flag.key}" skipped: ${describe(error)}`);
    }
  }
  const segments: Segment[] = [];
  for (const segment of message.segments ?? []) {
    try {
      segments.push(segmentFromMessage(segment));
    } catch (error) {
      problems.push(`segment skipped: ${describe(error)}`);
    }
  }
  return {
    fullSnapshot: message.full_snapshot === true,
    sequenceNumber: Number(message.sequence_number ?? 0),
    serverTimestampMs: Number(message.server_timestamp_ms ?? 0),
    environmentId: message.environment_id ?? '',
    projectId: message.project_id ?? '',
    flags,
    segments,
    removedFlagKeys: [...(message.removed_flag_keys ?? [])],
    removedSegmentKeys: [...(message.removed_segment_keys ?? [])],
    experimentFlagKeys: [...(message.experiment_flag_keys ?? [])],
    features: [...(message.features ?? [])],
    problems,
  };
}
