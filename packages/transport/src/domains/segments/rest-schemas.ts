import { digits, nonEmptyString, optionalString } from '../../http/schemas.ts';
import { conditionSchema, int64, key, optionalVersion } from '../flags/rest-schemas.ts';

/**
 * JSON schemas of the segment routes (docs/contract.md "Segments"), for ajv and the OpenAPI
 * document alike; response schemas double as Fastify's serialisers, so every field of the records
 * must appear.
 */

const keyList = { type: ['array', 'null'], maxItems: 10_000, items: { type: 'string' } } as const;

export const segmentBody = {
  type: 'object',
  properties: {
    key,
    context_type: { type: 'string' },
    kind: { type: 'string', enum: ['list', 'rule'] },
    description: optionalString,
    included_keys: { ...keyList, description: 'List segments: replaces the included keys (at most 10,000 per request; use PATCH .../members beyond).' },
    excluded_keys: { ...keyList, description: 'List segments: replaces the excluded keys. Excluded wins over included.' },
    conditions: { type: ['array', 'null'], items: conditionSchema, description: 'Rule segments only.' },
    version: optionalVersion,
  },
} as const;

export const segmentCreateBody = { ...segmentBody, required: ['key', 'context_type', 'kind'] } as const;

/** Segment record: list segments carry member counts, rule segments their conditions. */
export const segmentSchema = {
  type: 'object',
  required: ['id', 'key', 'context_type', 'kind', 'version'],
  properties: {
    id: { type: 'string' },
    key,
    context_type: { type: 'string' },
    kind: { type: 'string', enum: ['list', 'rule'] },
    description: { type: 'string' },
    conditions: { type: 'array', items: conditionSchema },
    included_count: int64,
    excluded_count: int64,
    version: int64,
    created_at_ms: int64,
    updated_at_ms: int64,
  },
} as const;

export const memberChangesBody = {
  type: 'object',
  description: 'Removals are applied before additions; each list holds at most 10,000 keys.',
  properties: { add_included: keyList, remove_included: keyList, add_excluded: keyList, remove_excluded: keyList },
} as const;

export const membersQuery = {
  type: 'object',
  properties: {
    list: { type: 'string', enum: ['included', 'excluded'], default: 'included' },
    cursor: { type: 'string', maxLength: 1000, description: 'next_cursor of the previous page.' },
    limit: { ...digits('Page size, 1 to 10000 (default 1000).'), pattern: '^[0-9]{1,5}$' },
  },
} as const;

export const membersResponse = {
  type: 'object',
  required: ['keys', 'next_cursor'],
  properties: { keys: { type: 'array', items: { type: 'string' } }, next_cursor: { type: ['string', 'null'] } },
} as const;

export const listCheckBody = {
  type: 'object',
  required: ['segment_key', 'context_key', 'context_type'],
  properties: { segment_key: nonEmptyString, context_key: nonEmptyString, context_type: nonEmptyString },
} as const;

export const MAX_LIST_CHECKS = 1000;

export const listCheckBatchBody = { type: 'array', maxItems: MAX_LIST_CHECKS, items: listCheckBody } as const;

export const listCheckResponse = { type: 'object', required: ['is_member'], properties: { is_member: { type: 'boolean' } } } as const;

export const listCheckBatchResponse = {
  type: 'array',
  items: {
    type: 'object',
    required: ['segment_key', 'context_key', 'is_member'],
    properties: { segment_key: { type: 'string' }, context_key: { type: 'string' }, is_member: { type: 'boolean' } },
  },
} as const;
