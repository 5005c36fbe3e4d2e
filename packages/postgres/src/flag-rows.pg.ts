import { initialRulesFor, type Flag, type FlagBucketBy, type FlagLifetime, type FlagValueType, type HashingConfig, type Prerequisite, type Rule, type Variant } from '@switchyard/core';

/** A `flags` row as `SELECT f.*` / `RETURNING *` gives it (jsonb parsed, timestamptz as Date). */
export interface FlagDefinitionRow {
  id: string;
  key: string;
  description: string;
  value_type: FlagValueType;
  variants: Variant[];
  archived: boolean;
  client_visible: boolean;
  tags: string[];
  lifetime: FlagLifetime;
  maintainer: string | null;
  bucket_by: FlagBucketBy;
  version: number;
  created_at: Date;
  updated_at: Date;
}

/** A `flag_environment_states` row. */
export interface FlagStateRow {
  enabled: boolean;
  off_variant_key: string | null;
  rules: Rule[];
  prerequisites: Prerequisite[];
  hashing: HashingConfig[];
  version: number;
  updated_at: Date;
}

/** A definition row LEFT JOINed with one environment's state (all state columns null when absent). */
export interface MergedFlagRow extends FlagDefinitionRow {
  state_enabled: boolean | null;
  state_off_variant_key: string | null;
  state_rules: Rule[] | null;
  state_prerequisites: Prerequisite[] | null;
  state_hashing: HashingConfig[] | null;
  state_version: number | null;
  state_updated_at: Date | null;
}

/**
 * The project's view: definition version, environment fields empty (rules are per environment;
 * what an environment that never wrote sees is mergedFromRows').
 */
export function definitionFromRow(row: FlagDefinitionRow): Flag {
  return {
    key: row.key,
    description: row.description,
    value_type: row.value_type,
    variants: row.variants,
    enabled: false,
    off_variant_key: null,
    rules: [],
    hashing: [],
    version: row.version,
    archived: row.archived,
    client_visible: row.client_visible,
    tags: row.tags,
    lifetime: row.lifetime,
    maintainer: row.maintainer,
    bucket_by: row.bucket_by,
    created_at_ms: row.created_at.getTime(),
    updated_at_ms: row.updated_at.getTime(),
  };
}

/**
 * The rules of an environment that never wrote the flag: its default rule (docs/contract.md
 * "Default rule"), derived from the current variants and the environment's off variant (none
 * while unwritten). updateState derives them again for a first write that leaves `rules` out,
 * with the off variant that write leaves, so what it stores is what the view would show.
 */
export const unwrittenRules = (variants: readonly Variant[], offVariantKey: string | null = null): Rule[] => initialRulesFor(variants, offVariantKey);

/**
 * One environment's view; `state` undefined means the environment never wrote (version 0): off,
 * no off variant, the default rule (unwrittenRules).
 */
export function mergedFromRows(definition: FlagDefinitionRow, state: FlagStateRow | undefined): Flag {
  return {
    ...definitionFromRow(definition),
    enabled: state?.enabled ?? false,
    off_variant_key: state?.off_variant_key ?? null,
    rules: state ? state.rules : unwrittenRules(definition.variants),
    // Absent when none, as core's documents and the sync stream's decoded flags have it.
    ...(state !== undefined && state.prerequisites.length > 0 ? { prerequisites: state.prerequisites } : {}),
    hashing: state?.hashing ?? [],
    version: state?.version ?? 0,
    // A change to either half changes what the environment sees.
    updated_at_ms: Math.max(definition.updated_at.getTime(), state?.updated_at.getTime() ?? 0),
  };
}

/** Splits a LEFT JOIN row into its definition and (possibly absent) state. */
export function mergedFromJoinedRow(row: MergedFlagRow): Flag {
  const state: FlagStateRow | undefined =
    row.state_version === null
      ? undefined
      : {
          enabled: row.state_enabled ?? false,
          off_variant_key: row.state_off_variant_key,
          rules: row.state_rules ?? [],
          prerequisites: row.state_prerequisites ?? [],
          hashing: row.state_hashing ?? [],
          version: row.state_version,
          updated_at: row.state_updated_at ?? row.updated_at,
        };
  return mergedFromRows(row, state);
}
