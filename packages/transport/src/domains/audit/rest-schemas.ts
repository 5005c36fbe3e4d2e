import { DEFAULT_AUDIT_PAGE, MAX_AUDIT_PAGE } from '@switchyard/services';
import { digits, uuidParam } from '../../http/schemas.ts';

const pageProperties = {
  cursor: { type: 'string', maxLength: 100, description: 'next_cursor of the previous page (opaque).' },
  limit: { ...digits(`Entries per page, 1 to ${MAX_AUDIT_PAGE} (default ${DEFAULT_AUDIT_PAGE}).`), pattern: '^[0-9]{1,3}$' },
} as const;

export const auditLogQuery = {
  type: 'object',
  properties: {
    resource_type: { type: 'string', minLength: 1, maxLength: 64, description: 'Only entries of this resource type (flag, segment, ...).' },
    resource_id: { type: 'string', minLength: 1, maxLength: 256, description: 'Only entries of this resource (a flag or segment key, an id).' },
    environment_id: { ...uuidParam, description: 'Only entries of this environment.' },
    ...pageProperties,
  },
} as const;

export const flagHistoryQuery = { type: 'object', properties: pageProperties } as const;

/** Any JSON value: before/after are the resource as its own routes answer it. */
const anyJson = { description: 'The resource as the API shows it (absent for a creation, or a deletion).' } as const;

export const auditEntrySchema = {
  type: 'object',
  required: ['id', 'at_ms', 'actor', 'action', 'resource_type', 'resource_id'],
  properties: {
    id: { type: 'string' },
    at_ms: { type: 'integer', description: 'When, in epoch milliseconds.' },
    actor: {
      type: 'object',
      required: ['type', 'id'],
      properties: {
        type: { type: 'string', enum: ['user', 'sdk_key', 'system', 'api_token'] },
        id: { type: 'string', description: 'The user id, SDK key id, API token id, or the system part that acted.' },
        email: { type: 'string', description: "The user's email at the time, when known." },
        name: { type: 'string', description: "The API token's name at the time (actor type api_token)." },
      },
    },
    action: { type: 'string', description: 'resource.verb, e.g. flag.rules (docs/contract.md "Change history").' },
    resource_type: { type: 'string' },
    resource_id: { type: 'string' },
    project_id: { type: 'string' },
    environment_id: { type: 'string', description: 'Absent for org- and project-level changes (a flag definition).' },
    before: anyJson,
    after: anyJson,
    details: { type: 'object', additionalProperties: true, description: 'Facts beside before/after (a transition reason, member keys added).' },
    comment: { type: 'string', description: 'The X-Change-Comment the write sent (docs/access.md "Critical environments"); absent when none.' },
  },
} as const;

export const auditPageSchema = {
  type: 'object',
  required: ['entries', 'next_cursor'],
  properties: {
    entries: { type: 'array', items: auditEntrySchema },
    next_cursor: { type: ['string', 'null'], description: 'Pass as cursor for the next (older) page; null on the last.' },
  },
} as const;

export const orgParams = { type: 'object', required: ['org_id'], properties: { org_id: uuidParam } } as const;
export const flagHistoryParams = {
  type: 'object',
  required: ['env_id', 'flag_id'],
  properties: { env_id: uuidParam, flag_id: { type: 'string', minLength: 1, maxLength: 128, description: 'The flag key.' } },
} as const;
