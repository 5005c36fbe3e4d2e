import { FLAGS_DOCUMENT_FORMAT, FLAGS_DOCUMENT_LIMITS } from './document.ts';

/**
 * The JSON Schema (draft-07) of the flags-as-code document, published as
 * docs/flags-as-code.schema.json (a test keeps the two the same) and used by the import route to
 * refuse a malformed body before any work. It describes shapes; the values' rules (a variant's
 * value against the flag's type, weights summing to 100 %, known segments...) are the services'.
 */
const key = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' } as const;
const version = { type: 'integer', minimum: 0, description: 'Optional: the import changes the entry only while its stored version is this one (an export writes it with include_versions=true).' } as const;
const scalar = { type: ['string', 'number', 'boolean'] } as const;
const keyList = { type: 'array', maxItems: FLAGS_DOCUMENT_LIMITS.membersPerList, items: { type: 'string', minLength: 1, maxLength: 512 } } as const;

const condition = {
  type: 'object',
  required: ['attribute', 'op', 'values'],
  properties: {
    context_type: { type: 'string' },
    attribute: { type: 'string' },
    op: { type: 'string', description: 'docs/contract.md "Flags and evaluation": eq, in, contains, starts_with, ends_with, matches, lt, lte, gt, gte, semver_eq, semver_lt, semver_gt, before, after, exists' },
    values: { type: 'array', items: scalar },
    negate: { type: 'boolean' },
  },
} as const;

const rule = {
  type: 'object',
  required: ['id'],
  properties: {
    id: { type: 'string' },
    description: { type: 'string' },
    conditions: { type: 'array', items: condition },
    segment_keys: { type: 'array', items: key },
    variant_key: { type: 'string' },
    allocation: {
      type: 'object',
      required: ['buckets'],
      properties: {
        context_hash_specs: { type: 'object', additionalProperties: { type: 'object', properties: { parameter_names: { type: 'array', items: { type: 'string' } } } } },
        buckets: {
          type: 'array',
          items: { type: 'object', required: ['variant_key', 'weight_milli'], properties: { variant_key: { type: 'string' }, weight_milli: { type: 'integer', minimum: 0, maximum: 1000 } } },
        },
      },
    },
  },
} as const;

const flag = {
  type: 'object',
  additionalProperties: false,
  required: ['key'],
  description: "A flag's project-level definition. A field left out is left as it is (a new flag: its default; value_type is required then).",
  properties: {
    key,
    description: { type: 'string', maxLength: 2000 },
    value_type: { enum: ['bool', 'int', 'double', 'string', 'json'] },
    variants: { type: 'array', items: { type: 'object', required: ['key', 'value'], properties: { key: { type: 'string' }, value: {} } } },
    tags: { type: 'array', items: { type: 'string' } },
    lifetime: { enum: ['temporary', 'permanent'] },
    maintainer: { type: ['string', 'null'] },
    client_visible: { type: 'boolean' },
    bucket_by: { enum: ['environment', 'project'] },
    archived: { type: 'boolean' },
    version,
  },
} as const;

const flagEnvironment = {
  type: 'object',
  additionalProperties: false,
  description: "A flag's configuration in one environment. A field left out is left as it is.",
  properties: {
    enabled: { type: 'boolean' },
    off_variant_key: { type: ['string', 'null'] },
    rules: { type: 'array', items: rule },
    prerequisites: { type: 'array', items: { type: 'object', required: ['flag_key', 'variant_keys'], properties: { flag_key: key, variant_keys: { type: 'array', items: { type: 'string' } } } } },
    hashing: {
      type: 'array',
      items: { type: 'object', required: ['parameter_key', 'parameter_type', 'order'], properties: { parameter_key: { type: 'string' }, parameter_type: { type: 'string' }, order: { type: 'integer' } } },
    },
    version,
  },
} as const;

const segment = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'kind'],
  properties: {
    key,
    kind: { enum: ['list', 'rule'] },
    context_type: { type: 'string' },
    description: { type: 'string' },
    conditions: { type: 'array', items: condition },
    included_keys: keyList,
    excluded_keys: keyList,
    members_omitted: { type: 'boolean', description: 'Written by an export whose lists were too long for the document; an import leaves the members as they are.' },
  },
} as const;

const eventDefinition = {
  type: 'object',
  additionalProperties: false,
  required: ['key'],
  properties: {
    key,
    value_type: { enum: ['bool', 'int', 'double'] },
    description: { type: 'string', maxLength: 2000 },
    client_allowed: { type: 'boolean' },
  },
} as const;

export const FLAGS_DOCUMENT_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://switchyard.dev/schemas/flags-v1.json',
  title: 'Switchyard flags-as-code document',
  description: 'docs/flags-as-code.md',
  type: 'object',
  additionalProperties: false,
  required: ['format'],
  properties: {
    format: { const: FLAGS_DOCUMENT_FORMAT },
    flags: { type: 'array', maxItems: FLAGS_DOCUMENT_LIMITS.flags, items: flag },
    environments: {
      type: 'object',
      description: "By environment name. An environment left out is left as it is; an import does not create environments.",
      maxProperties: FLAGS_DOCUMENT_LIMITS.environments,
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        properties: {
          flags: { type: 'object', maxProperties: FLAGS_DOCUMENT_LIMITS.flags, propertyNames: key, additionalProperties: flagEnvironment },
          segments: { type: 'array', maxItems: FLAGS_DOCUMENT_LIMITS.segmentsPerEnvironment, items: segment },
          event_definitions: { type: 'array', maxItems: FLAGS_DOCUMENT_LIMITS.eventDefinitionsPerEnvironment, items: eventDefinition },
        },
      },
    },
  },
} as const;
