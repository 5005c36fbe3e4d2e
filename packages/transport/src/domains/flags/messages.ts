import { invalidArgument, type Flag, type FlagBucketBy, type FlagLifetime, type FlagValueType, type HashingConfig, type Prerequisite, type Rule } from '@switchyard/core';

/**
 * svc.flags.v1 messages (as proto-loader hands them over: snake_case, defaults filled in, enums as
 * names, oneofs with their discriminator) ⇄ the Flag/Rule JSON documents of core. Only the shape
 * changes here; what a valid flag is stays the FlagService's (and core's) decision, so a gRPC
 * write is checked exactly like a REST one.
 */

export type VariantMember = 'bool_value' | 'int_value' | 'double_value' | 'string_value' | 'json_value';

export interface VariantValueMessage {
  value?: VariantMember;
  bool_value?: boolean;
  int_value?: number;
  double_value?: number;
  string_value?: string;
  json_value?: string;
}
export interface VariantMessage {
  key: string;
  value: VariantValueMessage | null;
}
export interface PercentageAllocationMessage {
  context_hash_specs: Record<string, { parameter_names: string[] } | null>;
  buckets: Array<{ variant_key: string; weight_milli: number }>;
}
export interface FlagRuleMessage {
  rule_payload: Buffer | Uint8Array;
  variant_key: string;
  allocation: PercentageAllocationMessage | null;
  id: string;
  description: string;
}
export interface FlagHashingConfigMessage {
  parameter_key: string;
  parameter_type: string;
  order: number;
}
export interface FlagPrerequisiteMessage {
  flag_key: string;
  variant_keys: string[];
}
export interface FeatureFlagMessage {
  key: string;
  enabled: boolean;
  /** An enum name; a number when the sender knows a value this proto does not. */
  value_type: string | number;
  variants: VariantMessage[];
  rules: FlagRuleMessage[];
  description: string;
  off_variant_key: string;
  hashing: FlagHashingConfigMessage[];
  version: number;
  archived: boolean;
  created_at_ms: number;
  updated_at_ms: number;
  /** proto3 `optional`: absent when the sender did not set it. */
  client_visible?: boolean;
  /** Absent from messages of senders built before the field (read as none). */
  prerequisites?: FlagPrerequisiteMessage[];
  /** Absent from messages of senders built before the field (read as none). */
  tags?: string[];
  /** An enum name (FlagLifetime); a number when the sender knows a value this proto does not. */
  lifetime?: string | number;
  /** proto3 `optional`: absent when none (output) or unchanged (UPDATE); "" removes it. */
  maintainer?: string;
  /** An enum name (FlagBucketBy); a number when the sender knows a value this proto does not. */
  bucket_by?: string | number;
}

const ENUM_BY_LIFETIME: Record<FlagLifetime, string> = { temporary: 'FLAG_LIFETIME_TEMPORARY', permanent: 'FLAG_LIFETIME_PERMANENT' };
const ENUM_BY_BUCKET_BY: Record<FlagBucketBy, string> = { environment: 'FLAG_BUCKET_BY_ENVIRONMENT', project: 'FLAG_BUCKET_BY_PROJECT' };

/** FLAG_LIFETIME_X → x; UNSPECIFIED or absent → undefined; anything else INVALID_ARGUMENT. */
export function lifetimeFromEnum(value: string | number | undefined | null, field = 'flag.lifetime'): FlagLifetime | undefined {
  if (value === undefined || value === null || value === 'FLAG_LIFETIME_UNSPECIFIED' || value === 0) return undefined;
  const found = Object.entries(ENUM_BY_LIFETIME).find(([, name]) => name === value);
  if (found === undefined) throw invalidArgument(`${field} ${String(value)} is not a known FlagLifetime`, field);
  return found[0] as FlagLifetime;
}

/** FLAG_BUCKET_BY_X → x; UNSPECIFIED or absent → undefined; anything else INVALID_ARGUMENT. */
export function bucketByFromEnum(value: string | number | undefined | null, field = 'flag.bucket_by'): FlagBucketBy | undefined {
  if (value === undefined || value === null || value === 'FLAG_BUCKET_BY_UNSPECIFIED' || value === 0) return undefined;
  const found = Object.entries(ENUM_BY_BUCKET_BY).find(([, name]) => name === value);
  if (found === undefined) throw invalidArgument(`${field} ${String(value)} is not a known FlagBucketBy`, field);
  return found[0] as FlagBucketBy;
}

const ENUM_BY_VALUE_TYPE: Record<FlagValueType, string> = {
  bool: 'FLAG_VALUE_TYPE_BOOL',
  int: 'FLAG_VALUE_TYPE_INT',
  double: 'FLAG_VALUE_TYPE_DOUBLE',
  string: 'FLAG_VALUE_TYPE_STRING',
  json: 'FLAG_VALUE_TYPE_JSON',
};
const VALUE_TYPE_BY_ENUM: ReadonlyMap<string, FlagValueType> = new Map(
  Object.entries(ENUM_BY_VALUE_TYPE).map(([type, name]) => [name, type as FlagValueType]),
);
const MEMBER_BY_VALUE_TYPE: Record<FlagValueType, VariantMember> = {
  bool: 'bool_value',
  int: 'int_value',
  double: 'double_value',
  string: 'string_value',
  json: 'json_value',
};

/** FLAG_VALUE_TYPE_X → x; UNSPECIFIED → undefined (the caller decides whether that is allowed). */
export function valueTypeFromEnum(value: string | number, field = 'flag.value_type'): FlagValueType | undefined {
  if (value === 'FLAG_VALUE_TYPE_UNSPECIFIED' || value === 0) return undefined;
  const type = typeof value === 'string' ? VALUE_TYPE_BY_ENUM.get(value) : undefined;
  if (type === undefined) throw invalidArgument(`${field} ${String(value)} is not a known FlagValueType`, field);
  return type;
}

// --- payload bytes ---

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The JSON object carried in a `rule_payload`, with only the members `allowed`. Empty bytes are
 * `{}`. Anything else (invalid UTF-8, not JSON, not an object, unknown members) is
 * INVALID_ARGUMENT: a member we silently dropped would be a rule that does not do what was sent.
 */
export function decodePayload(bytes: Uint8Array | null | undefined, field: string, allowed: readonly string[]): Record<string, unknown> {
  if (!bytes || bytes.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(bytes));
  } catch {
    throw invalidArgument(`${field} must be UTF-8 JSON`, field);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidArgument(`${field} must be a JSON object {${allowed.join(', ')}}`, field);
  }
  const unknown = Object.keys(parsed).filter((name) => !allowed.includes(name));
  if (unknown.length > 0) throw invalidArgument(`${field} has unknown members: ${unknown.join(', ')} (allowed: ${allowed.join(', ')})`, field);
  return parsed as Record<string, unknown>;
}

export const encodePayload = (payload: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify(payload), 'utf8');

// --- core → messages ---

function variantValueMessage(valueType: FlagValueType, value: unknown): VariantValueMessage {
  const member = MEMBER_BY_VALUE_TYPE[valueType];
  return { [member]: valueType === 'json' ? JSON.stringify(value) : value };
}

function ruleMessage(rule: Rule): FlagRuleMessage {
  return {
    rule_payload: encodePayload({ conditions: rule.conditions, segment_keys: rule.segment_keys ?? [] }),
    variant_key: rule.variant_key ?? '',
    allocation: rule.allocation
      ? {
          context_hash_specs: Object.fromEntries(
            Object.entries(rule.allocation.context_hash_specs).map(([type, spec]) => [type, { parameter_names: spec.parameter_names }]),
          ),
          buckets: rule.allocation.buckets.map((b) => ({ variant_key: b.variant_key, weight_milli: b.weight_milli })),
        }
      : null,
    id: rule.id,
    description: rule.description ?? '',
  };
}

export const hashingMessages = (configs: readonly HashingConfig[]): FlagHashingConfigMessage[] =>
  configs.map((c) => ({ parameter_key: c.parameter_key, parameter_type: c.parameter_type, order: c.order }));

/** A flag as svc.flags.v1.FeatureFlag. */
export function featureFlagMessage(flag: Flag): FeatureFlagMessage {
  return {
    key: flag.key,
    enabled: flag.enabled,
    value_type: ENUM_BY_VALUE_TYPE[flag.value_type],
    variants: flag.variants.map((v) => ({ key: v.key, value: variantValueMessage(flag.value_type, v.value) })),
    rules: flag.rules.map(ruleMessage),
    description: flag.description,
    off_variant_key: flag.off_variant_key ?? '',
    hashing: hashingMessages(flag.hashing),
    version: flag.version,
    archived: flag.archived,
    created_at_ms: flag.created_at_ms,
    updated_at_ms: flag.updated_at_ms,
    client_visible: flag.client_visible,
    prerequisites: prerequisiteMessages(flag.prerequisites ?? []),
    tags: [...(flag.tags ?? [])],
    lifetime: ENUM_BY_LIFETIME[flag.lifetime ?? 'permanent'],
    ...(flag.maintainer === undefined || flag.maintainer === null ? {} : { maintainer: flag.maintainer }),
    bucket_by: ENUM_BY_BUCKET_BY[flag.bucket_by ?? 'environment'],
  };
}

export const prerequisiteMessages = (prerequisites: readonly Prerequisite[]): FlagPrerequisiteMessage[] =>
  prerequisites.map((p) => ({ flag_key: p.flag_key, variant_keys: [...p.variant_keys] }));

// --- messages → core JSON (unchecked: the FlagService validates) ---

/**
 * A variant value in JSON. With the flag's type known, the member set must be that type's (a
 * string_value on an INT flag is a client bug, not a string to coerce); with the type unknown
 * (UPDATE keeping the stored type) the member decides and the FlagService checks the result.
 */
function variantValue(valueType: FlagValueType | undefined, message: VariantValueMessage | null, field: string): unknown {
  const member = message?.value;
  if (!message || !member) throw invalidArgument(`${field} must be set`, field);
  if (valueType !== undefined && member !== MEMBER_BY_VALUE_TYPE[valueType]) {
    throw invalidArgument(`${field} must be set as ${MEMBER_BY_VALUE_TYPE[valueType]} to match the flag's value_type ${valueType}, got ${member}`, field);
  }
  if (member !== 'json_value') return message[member];
  try {
    return JSON.parse(message.json_value ?? '');
  } catch {
    throw invalidArgument(`${field}.json_value must be JSON text`, `${field}.json_value`);
  }
}

function ruleJson(rule: FlagRuleMessage, field: string): Record<string, unknown> {
  const payload = decodePayload(rule.rule_payload, `${field}.rule_payload`, ['conditions', 'segment_keys']);
  const json: Record<string, unknown> = { id: rule.id, description: rule.description, conditions: payload.conditions ?? [] };
  if (payload.segment_keys !== undefined) json.segment_keys = payload.segment_keys;
  // proto3 cannot tell an empty string from an absent one: '' means "no variant_key".
  if (rule.variant_key !== '') json.variant_key = rule.variant_key;
  if (rule.allocation) {
    json.allocation = {
      context_hash_specs: Object.fromEntries(
        Object.entries(rule.allocation.context_hash_specs).map(([type, spec]) => [type, { parameter_names: spec?.parameter_names ?? [] }]),
      ),
      buckets: rule.allocation.buckets.map((b) => ({ variant_key: b.variant_key, weight_milli: b.weight_milli })),
    };
  }
  return json;
}

export const hashingJson = (configs: readonly FlagHashingConfigMessage[]): HashingConfig[] =>
  configs.map((c) => ({ parameter_key: c.parameter_key, parameter_type: c.parameter_type, order: c.order }));

/**
 * The writable fields of a FeatureFlag as the `flag` object of a FlagService create/update body.
 * value_type UNSPECIFIED is left out (create rejects it, update keeps the stored type); output-only
 * fields (version, archived, timestamps) are never copied.
 */
export function flagFieldsFromMessage(message: FeatureFlagMessage): Record<string, unknown> {
  const valueType = valueTypeFromEnum(message.value_type);
  const fields: Record<string, unknown> = {
    key: message.key,
    description: message.description,
    enabled: message.enabled,
    variants: message.variants.map((v, i) => ({ key: v.key, value: variantValue(valueType, v.value, `flag.variants[${i}].value`) })),
    off_variant_key: message.off_variant_key === '' ? null : message.off_variant_key,
    rules: message.rules.map((rule, i) => ruleJson(rule, `flag.rules[${i}]`)),
    hashing: hashingJson(message.hashing),
    // Replaced like the rules (proto3 has no absent list); the FlagService checks them.
    prerequisites: (message.prerequisites ?? []).map((p) => ({ flag_key: p.flag_key, variant_keys: p.variant_keys ?? [] })),
  };
  if (valueType !== undefined) fields.value_type = valueType;
  // Unset: the project's default on CREATE, unchanged on UPDATE.
  if (message.client_visible !== undefined && message.client_visible !== null) fields.client_visible = message.client_visible;
  // Replaced like the rules (proto3 has no absent list); the FlagService checks them.
  fields.tags = [...(message.tags ?? [])];
  // UNSPECIFIED: the default on CREATE, unchanged on UPDATE.
  const lifetime = lifetimeFromEnum(message.lifetime);
  if (lifetime !== undefined) fields.lifetime = lifetime;
  const bucketBy = bucketByFromEnum(message.bucket_by);
  if (bucketBy !== undefined) fields.bucket_by = bucketBy;
  // Unset: none on CREATE, unchanged on UPDATE; "" removes it.
  if (message.maintainer !== undefined && message.maintainer !== null) fields.maintainer = message.maintainer === '' ? null : message.maintainer;
  return fields;
}
