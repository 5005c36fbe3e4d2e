import { COMPARED_FLAG_FIELDS } from '@switchyard/core';
import { COPY_PARTS, MAX_COPY_FLAGS } from '@switchyard/services';
import { key } from '../flags/rest-schemas.ts';

/**
 * JSON schemas of the environment compare and copy routes (docs/contract.md "Environment compare
 * and copy"). The service checks the body again (a gateway hop passes it as sent) with messages
 * naming the field; these describe the shapes for ajv and the OpenAPI document. Response schemas
 * double as Fastify's serialisers: every field of the answers is listed.
 */

const version = { type: 'integer', minimum: 0 } as const;
const anyJson = { description: 'The field\'s value as the flag routes show it (any JSON).' } as const;
const compareField = { type: 'string', enum: [...COMPARED_FLAG_FIELDS] } as const;
const segmentField = { type: 'string', enum: ['kind', 'context_type', 'description', 'conditions', 'included', 'excluded'] } as const;

export const compareQuery = {
  type: 'object',
  required: ['from_environment_id'],
  properties: { from_environment_id: { type: 'string', minLength: 1, maxLength: 100, description: 'The environment compared with the target (the source of a copy).' } },
} as const;

const segmentDifference = {
  type: 'object',
  required: ['segment_key', 'status', 'kind', 'fields', 'members_compared'],
  properties: {
    segment_key: key,
    status: { type: 'string', enum: ['missing', 'differs'] },
    kind: { type: 'string', enum: ['list', 'rule'] },
    fields: { type: 'array', items: segmentField },
    members_compared: { type: 'boolean', description: 'False: a list segment too large to read whole; its member counts were compared instead.' },
  },
} as const;

const flagDifference = {
  type: 'object',
  required: ['flag_key', 'archived', 'from_version', 'target_version', 'written', 'fields', 'segments'],
  properties: {
    flag_key: key,
    archived: { type: 'boolean' },
    from_version: { ...version, description: '0: never written in the source (it shows the default view).' },
    target_version: { ...version, description: '0: never written in the target.' },
    written: { type: 'string', enum: ['both', 'from_only', 'target_only', 'neither'] },
    fields: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field', 'before', 'after'],
        properties: { field: compareField, before: { ...anyJson, description: "The target's value." }, after: { ...anyJson, description: "The source's value (what a copy writes)." } },
      },
    },
    segments: { type: 'array', items: segmentDifference, description: "When the rules differ: the segments the source's rules name that the target lacks or holds differently." },
  },
} as const;

export const comparisonResponse = {
  type: 'object',
  required: ['target_environment_id', 'from_environment_id', 'compared', 'flags'],
  properties: {
    target_environment_id: { type: 'string' },
    from_environment_id: { type: 'string' },
    compared: { type: 'integer', minimum: 0, description: 'How many flags the project has.' },
    flags: { type: 'array', items: flagDifference },
  },
} as const;

export const copyBody = {
  type: 'object',
  required: ['from_environment_id', 'flag_keys', 'include'],
  additionalProperties: false,
  properties: {
    from_environment_id: { type: 'string', minLength: 1, maxLength: 100 },
    flag_keys: { type: 'array', minItems: 1, maxItems: MAX_COPY_FLAGS * 2, items: key, description: `At most ${MAX_COPY_FLAGS} distinct keys; a repeated key counts once.` },
    include: { type: 'array', minItems: 1, maxItems: COPY_PARTS.length, items: { type: 'string', enum: [...COPY_PARTS] } },
    versions: {
      type: ['object', 'null'],
      additionalProperties: version,
      description: "Per flag key, the target state's expected version (409 ABORTED naming the flag when it is another).",
    },
  },
} as const;

export const copyResponse = {
  type: 'object',
  required: ['target_environment_id', 'from_environment_id', 'include', 'flags', 'segments'],
  properties: {
    target_environment_id: { type: 'string' },
    from_environment_id: { type: 'string' },
    include: { type: 'array', items: { type: 'string', enum: [...COPY_PARTS] } },
    flags: {
      type: 'array',
      items: {
        type: 'object',
        required: ['flag_key', 'before_version', 'after_version', 'fields'],
        properties: { flag_key: key, before_version: version, after_version: version, fields: { type: 'array', items: compareField } },
      },
    },
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['segment_key', 'kind', 'action', 'before_version', 'after_version', 'members_copied'],
        properties: {
          segment_key: key,
          kind: { type: 'string', enum: ['list', 'rule'] },
          action: { type: 'string', enum: ['created', 'updated'] },
          before_version: version,
          after_version: version,
          members_copied: { type: 'integer', minimum: 0 },
        },
      },
    },
  },
} as const;
