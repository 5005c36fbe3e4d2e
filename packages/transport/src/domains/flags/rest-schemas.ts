import { CONDITION_OPS, FLAG_BUCKET_BYS, FLAG_LIFETIMES, FLAG_VALUE_TYPES, MAX_MAINTAINER_LENGTH, MAX_TAGS } from '@switchyard/core';

/**
 * JSON schemas of the flag and evaluation routes (docs/contract.md "Flags and evaluation"; segments
 * reuse the flag's key, version and condition shapes: domains/segments/rest-schemas.ts). They describe the
 * shapes for ajv and the OpenAPI document; the meaning of the documents (values matching the
 * flag's value_type, references to variants and segments, weights summing to 1000, regular
 * expressions compiling) is checked by core's validators, whose messages name the exact field.
 *
 * Response schemas double as Fastify's serialisers: a field not listed here is not sent, so every
 * field of the records must appear.
 */

export const key = { type: 'string', minLength: 1, maxLength: 128 } as const;
export const int64 = { type: 'integer', minimum: 0 } as const;
export const optionalVersion = { type: ['integer', 'null'], minimum: 0, description: 'Expected version (optimistic locking); a stale one answers 409 ABORTED.' } as const;
/**
 * A type list rather than anyOf: ajv checks a type list with one typeof, while anyOf runs a
 * sub-validator per branch (on the evaluate route, half the body validation). Type lists need
 * ajv's `allowUnionTypes`, which the app sets (createHttpApp).
 */
const scalar = { type: ['string', 'number', 'boolean'] } as const;
const anyJson = { description: "Any JSON value; it must match the flag's value_type." } as const;

// --- flags ---

export const conditionSchema = {
  type: 'object',
  required: ['attribute', 'op', 'values'],
  properties: {
    context_type: { type: 'string', description: 'Omitted: the first context that has the attribute.' },
    attribute: { type: 'string', minLength: 1, description: '"key" is the context key.' },
    op: { type: 'string', enum: [...CONDITION_OPS] },
    values: { type: 'array', items: scalar, description: 'For `matches`: RE2 regular expressions of at most 1000 characters (no backreferences or lookaround).' },
    negate: { type: 'boolean' },
  },
} as const;

const variantSchema = { type: 'object', required: ['key', 'value'], properties: { key, value: anyJson } } as const;

const allocationSchema = {
  type: 'object',
  required: ['buckets'],
  properties: {
    context_hash_specs: {
      type: 'object',
      description: 'Keyed by context type: the parameters whose values, joined by "/", are hashed (empty: the context key).',
      additionalProperties: { type: 'object', properties: { parameter_names: { type: 'array', items: { type: 'string' } } } },
    },
    buckets: {
      type: 'array',
      description: 'weight_milli in units of 0.1%; the weights sum to 1000.',
      items: { type: 'object', required: ['variant_key', 'weight_milli'], properties: { variant_key: key, weight_milli: { type: 'integer' } } },
    },
  },
} as const;

export const ruleSchema = {
  type: 'object',
  description: 'All conditions and all segments must match. Exactly one of variant_key or allocation.',
  properties: {
    id: key,
    description: { type: 'string' },
    conditions: { type: 'array', items: conditionSchema },
    segment_keys: { type: 'array', items: key },
    variant_key: key,
    allocation: allocationSchema,
  },
} as const;

export const prerequisiteSchema = {
  type: 'object',
  description: 'A flag this one depends on in the environment: it must be on and serve one of variant_keys (docs/contract.md "Prerequisites").',
  required: ['flag_key', 'variant_keys'],
  properties: {
    flag_key: key,
    variant_keys: { type: 'array', items: key },
  },
} as const;

const hashingConfigSchema = {
  type: 'object',
  required: ['parameter_key', 'parameter_type', 'order'],
  properties: {
    parameter_key: { type: 'string', description: 'A context parameter, or "key" for the context key.' },
    parameter_type: { type: 'string', description: 'The context type the parameter is read from.' },
    order: { type: 'integer', minimum: -2147483648, maximum: 2147483647 },
  },
} as const;

/** The Flag record (docs/contract.md "Flags and evaluation") plus `archived`. */
export const flagSchema = {
  type: 'object',
  required: ['key', 'enabled'],
  properties: {
    key,
    description: { type: 'string' },
    value_type: { type: 'string', enum: [...FLAG_VALUE_TYPES] },
    variants: { type: 'array', items: variantSchema },
    enabled: { type: 'boolean' },
    off_variant_key: { type: ['string', 'null'] },
    rules: { type: 'array', items: ruleSchema },
    prerequisites: { type: 'array', items: prerequisiteSchema, description: 'Per environment; [] when none (always present).' },
    hashing: { type: 'array', items: hashingConfigSchema },
    version: int64,
    archived: { type: 'boolean' },
    client_visible: { type: 'boolean', description: 'Whether client keys (browsers, apps) may evaluate the flag (docs/client-side.md)' },
    tags: { type: 'array', items: { type: 'string' }, description: 'Project-level labels, sorted and de-duplicated.' },
    lifetime: { type: 'string', enum: [...FLAG_LIFETIMES], description: 'Project-level: whether the flag is meant to be removed once rolled out.' },
    maintainer: { type: ['string', 'null'], description: 'Project-level: who looks after the flag (free text, e.g. an email or a team); null: nobody named.' },
    bucket_by: {
      type: 'string',
      enum: [...FLAG_BUCKET_BYS],
      description: "Project-level: what a split's bucket depends on; project: the same bucket in every environment (docs/contract.md \"Flags and evaluation\").",
    },
    created_at_ms: int64,
    updated_at_ms: int64,
    last_evaluated_at_ms: {
      type: ['integer', 'null'],
      description: 'Environment lists with include=insights only: when the flag was last evaluated here (epoch ms, flushed once a minute); null: never (docs/insights.md).',
    },
    status: {
      type: 'string',
      enum: ['new', 'active', 'launched', 'inactive'],
      description: "Environment lists with include=insights only: the flag's status here over the project's status window (docs/insights.md \"Statuses\").",
    },
  },
} as const;

/** The `flag` object of a create/update body: every field optional here (the service says which it needs). */
const flagInputSchema = {
  type: ['object', 'null'],
  properties: {
    key,
    description: { type: ['string', 'null'], maxLength: 2000 },
    value_type: { type: 'string', enum: [...FLAG_VALUE_TYPES] },
    variants: { type: 'array', items: variantSchema },
    enabled: { type: ['boolean', 'null'] },
    off_variant_key: { type: ['string', 'null'] },
    rules: {
      type: 'array',
      items: ruleSchema,
      description: 'Per environment. Absent on create (environment route): the default rule, serving the first non-off variant (docs/contract.md "Default rule"); [] stays empty.',
    },
    prerequisites: {
      type: ['array', 'null'],
      items: { type: 'object' },
      description: 'Per environment, at most 50 {flag_key, variant_keys}. Absent or null: unchanged (none on create); [] removes them all.',
    },
    hashing: { type: 'array', items: hashingConfigSchema },
    client_visible: { type: ['boolean', 'null'] },
    tags: {
      type: ['array', 'null'],
      items: { type: 'string' },
      description: `Project-level, at most ${MAX_TAGS}, each ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$; stored sorted and de-duplicated. Absent or null: unchanged ([] on create).`,
    },
    lifetime: { type: ['string', 'null'], description: `Project-level: ${FLAG_LIFETIMES.join(' or ')}. Absent or null: unchanged (permanent on create).` },
    maintainer: { type: ['string', 'null'], description: `Project-level, at most ${MAX_MAINTAINER_LENGTH} characters. Absent: unchanged (none on create); null or "": none.` },
    bucket_by: { type: ['string', 'null'], description: `Project-level: ${FLAG_BUCKET_BYS.join(' or ')}. Absent or null: unchanged (environment on create). A change reshuffles the users of every percentage split.` },
    version: optionalVersion,
  },
} as const;

/** `GET` flag lists' filter (checked by the FlagService: 400 INVALID_ARGUMENT naming `tag` or `lifetime`). */
export const flagListQuery = {
  type: 'object',
  properties: {
    tag: {
      type: ['string', 'array'],
      items: { type: 'string' },
      description: `Repeatable (at most ${MAX_TAGS}): only flags carrying every tag given.`,
    },
    lifetime: { type: 'string', description: `Only flags of this lifetime: ${FLAG_LIFETIMES.join(' or ')}.` },
    include: { type: 'string', enum: ['insights'], description: 'insights: each flag carries last_evaluated_at_ms and status (environment lists; docs/insights.md).' },
  },
} as const;

export interface FlagListQuery {
  tag?: string | string[];
  lifetime?: string;
  include?: 'insights';
}

export const flagWriteBody = {
  type: 'object',
  description: 'Top-level key, enabled, client_visible and version win over the same fields inside flag.',
  properties: {
    flag: flagInputSchema,
    key: { type: ['string', 'null'], maxLength: 128 },
    enabled: { type: ['boolean', 'null'] },
    client_visible: { type: ['boolean', 'null'], description: 'Project-level: on create, absent takes the project default' },
    version: optionalVersion,
  },
} as const;

export const flagCreateBody = { ...flagWriteBody, required: ['flag'] } as const;

export const rulesBody = {
  type: 'object',
  required: ['rules'],
  properties: { rules: { type: 'array', items: ruleSchema }, version: optionalVersion },
} as const;

export const variantsBody = {
  type: 'object',
  required: ['variants'],
  description: 'Adds the variants; a variant whose key exists gets the new value.',
  properties: { variants: { type: 'array', items: variantSchema } },
} as const;

export const hashingBody = {
  type: 'object',
  required: ['configs'],
  properties: { configs: { type: 'array', items: hashingConfigSchema }, version: optionalVersion },
} as const;

export const hashingResponse = {
  type: 'object',
  required: ['flag', 'configs'],
  properties: { flag: flagSchema, configs: { type: 'array', items: hashingConfigSchema } },
} as const;

// --- evaluation ---

const attributes = {
  type: ['object', 'null'],
  description: 'Context parameters by name: scalars only (null entries are ignored); strings of at most 4096 characters (UTF-16 code units), longer ones answer 400 INVALID_ARGUMENT.',
  additionalProperties: { type: [...scalar.type, 'null'] },
} as const;

export const evaluateBody = {
  type: 'object',
  required: ['context_key', 'context_type'],
  properties: {
    context_key: { type: 'string', minLength: 1, maxLength: 1024 },
    context_type: { type: 'string', minLength: 1, maxLength: 64 },
    flag_key: { type: ['string', 'null'], minLength: 1, maxLength: 128, description: 'Omitted: every flag of the environment is evaluated.' },
    attributes,
    contexts: {
      type: 'array',
      maxItems: 9,
      description:
        'Multi-context input: further contexts evaluated together with the one given by context_key/context_type/attributes. ' +
        'Each context type may appear once; conditions with a context_type read the context of that type.',
      items: {
        type: 'object',
        required: ['context_type', 'key'],
        properties: { context_type: { type: 'string', minLength: 1, maxLength: 64 }, key: { type: 'string', minLength: 1, maxLength: 1024 }, attributes },
      },
    },
  },
} as const;

const evaluationProperties = {
  evaluated: { type: 'boolean' },
  flag_key: { type: 'string' },
  variant_key: { type: 'string', description: 'Empty when no variant applies (e.g. disabled without an off variant).' },
  is_enabled: { type: 'boolean' },
  value: { description: "The variant's value (null when no variant applies)." },
  reason: { type: 'string', enum: ['DISABLED', 'TARGETING_MATCH', 'SPLIT', 'DEFAULT', 'PREREQUISITE_FAILED', 'ERROR'] },
  prerequisite_key: { type: 'string', description: 'With reason PREREQUISITE_FAILED: the first prerequisite flag that did not hold (the off variant is served).' },
  error_code: { type: 'string', enum: ['FLAG_NOT_FOUND', 'SEGMENT_NOT_FOUND', 'INVALID_CONTEXT', 'GENERAL'] },
  error_message: { type: 'string' },
} as const;

/**
 * One object for both answers (with flag_key: that flag's fields; without: `flags`), rather than
 * a oneOf, which Fastify's serialiser would have to validate on every response of the hot path.
 */
export const evaluateResponse = {
  type: 'object',
  required: ['evaluated'],
  description: 'With flag_key in the request: that flag\'s result. Without: `flags`, one result per flag of the environment.',
  properties: {
    ...evaluationProperties,
    flags: { type: 'array', items: { type: 'object', required: ['evaluated', 'flag_key', 'variant_key', 'is_enabled', 'reason'], properties: evaluationProperties } },
  },
} as const;
