import { FLAG_OPERATION_NAMES, MAX_FLAG_OPERATIONS, SCHEDULED_CHANGE_STATUSES } from '@switchyard/core';
import { MAX_SCHEDULE_LIST } from '@switchyard/services';
import { requestResponse } from '../change-requests/rest-schemas.ts';
import { key } from '../flags/rest-schemas.ts';

/**
 * JSON schemas of the scheduled-change and revert routes (docs/workflow.md "Scheduled changes",
 * "Revert"). The service checks every body again with messages naming the field (a gateway hop
 * passes it as sent); these describe the shapes for ajv and the OpenAPI document. Response
 * schemas double as serialisers: every field is listed.
 */

const time = { type: 'integer', minimum: 0, description: 'Milliseconds since the epoch (UTC).' } as const;

const operation = {
  type: 'object',
  required: ['op'],
  additionalProperties: true,
  description: 'One operation (docs/workflow.md "Operations"): set_enabled, set_off_variant, set_rule_serve, add_rule, remove_rule, set_rules or set_prerequisites.',
  properties: { op: { type: 'string', enum: [...FLAG_OPERATION_NAMES] } },
} as const;

const operations = { type: 'array', minItems: 1, maxItems: MAX_FLAG_OPERATIONS, items: operation } as const;

const actor = {
  type: 'object',
  required: ['type', 'id'],
  properties: { type: { type: 'string' }, id: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' } },
} as const;

const recordProperties = {
  id: { type: 'string' },
  environment_id: { type: 'string' },
  project_id: { type: 'string' },
  flag_key: key,
  execute_at_ms: time,
  operations: { type: 'array', items: operation },
  comment: { type: 'string' },
  status: { type: 'string', enum: [...SCHEDULED_CHANGE_STATUSES] },
  reason: { type: ['string', 'null'], description: 'Why it failed (or why the platform cancelled it: the flag was deleted or archived).' },
  created_by: actor,
  created_at_ms: time,
  updated_at_ms: time,
  applied_at_ms: { type: ['integer', 'null'], description: 'When the scheduler applied it or found it failed; later than execute_at_ms after downtime.' },
  version: { type: 'integer', minimum: 1 },
} as const;

const recordRequired = [
  'id',
  'environment_id',
  'project_id',
  'flag_key',
  'execute_at_ms',
  'operations',
  'comment',
  'status',
  'reason',
  'created_by',
  'created_at_ms',
  'updated_at_ms',
  'applied_at_ms',
  'version',
] as const;

export const scheduledChangeSchema = { type: 'object', required: recordRequired, properties: recordProperties } as const;

export const scheduledChangeAnswer = {
  type: 'object',
  required: [...recordRequired, 'contending'],
  properties: {
    ...recordProperties,
    contending: { type: 'array', items: scheduledChangeSchema, description: "The flag's other pending schedules in this environment that change the same thing." },
  },
} as const;

export const scheduledChangeList = { type: 'array', items: scheduledChangeSchema } as const;

const scheduledRequestEntry = {
  type: 'object',
  required: ['id', 'environment_id', 'project_id', 'title', 'execute_at_ms', 'scheduled_by', 'author', 'flag_keys', 'segment_keys'],
  properties: {
    id: { type: 'string' },
    environment_id: { type: 'string' },
    project_id: { type: 'string' },
    title: { type: 'string' },
    execute_at_ms: time,
    scheduled_by: { ...actor, type: ['object', 'null'] },
    author: { type: 'object', required: ['id', 'email'], properties: { id: { type: 'string' }, email: { type: ['string', 'null'] } } },
    flag_keys: { type: 'array', items: { type: 'string' } },
    segment_keys: { type: 'array', items: { type: 'string' } },
  },
} as const;

/** `?include=change_requests`: the calendar, an object (the list without it stays a bare array). */
export const scheduleCalendar = {
  type: 'object',
  required: ['scheduled_changes', 'change_requests'],
  properties: {
    scheduled_changes: scheduledChangeList,
    change_requests: { type: 'array', items: scheduledRequestEntry, description: 'Change requests scheduled for a time in the same window, earliest first.' },
  },
} as const;

export const createBody = {
  type: 'object',
  required: ['execute_at_ms', 'operations'],
  additionalProperties: false,
  properties: {
    execute_at_ms: { ...time, description: 'When to apply it: in the future, at most 5 years ahead.' },
    operations,
    comment: { type: ['string', 'null'], maxLength: 2000 },
  },
} as const;

export const updateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    execute_at_ms: { type: ['integer', 'null'], minimum: 0 },
    operations: { ...operations, type: ['array', 'null'] },
    comment: { type: ['string', 'null'], maxLength: 2000 },
    version: { type: ['integer', 'null'], minimum: 1, description: 'The version the edit was made against (409 ABORTED when it is another).' },
  },
} as const;

const digits = (description: string) => ({ type: 'string', pattern: '^[0-9]{1,16}$', description }) as const;

export const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    flag_key: { type: 'string', minLength: 1, maxLength: 128, description: 'Only this flag (the environment-wide list).' },
    status: { type: 'string', maxLength: 100, description: `Comma-separated statuses (${SCHEDULED_CHANGE_STATUSES.join(', ')}).` },
    from_ms: digits('Only schedules due at or after this time.'),
    to_ms: digits('Only schedules due before this time.'),
    limit: { type: 'string', pattern: '^[0-9]{1,4}$', description: `At most this many (1 to ${MAX_SCHEDULE_LIST}, default 100), earliest first.` },
    include: { type: 'string', enum: ['change_requests'], description: 'change_requests: answer {scheduled_changes, change_requests}, with the change requests scheduled for a time (the environment-wide list only).' },
  },
} as const;

export const revertBody = {
  type: 'object',
  required: ['audit_entry_id'],
  additionalProperties: false,
  properties: { audit_entry_id: { type: 'string', minLength: 1, maxLength: 100, description: "A change-history entry of this flag in this environment: its `before` state is applied as a new version." } },
} as const;

/** 202: where the environment requires approval, the change request the revert opened (as GET shows it). */
export const revertRequestAnswer = {
  type: 'object',
  required: ['change_request'],
  properties: { change_request: requestResponse },
} as const;
