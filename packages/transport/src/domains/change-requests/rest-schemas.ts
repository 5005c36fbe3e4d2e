import { MAX_DESCRIPTION_LENGTH, MAX_MIN_APPROVALS, MAX_REQUEST_CHANGES, MAX_REVIEW_COMMENT_LENGTH, MAX_TITLE_LENGTH } from '@switchyard/core';
import { MAX_LISTED_CHANGE_REQUESTS } from '@switchyard/services';
import { uuidParam } from '../../http/schemas.ts';

/**
 * JSON schemas of the approval-policy and change-request routes (docs/workflow.md "Change requests and approvals"). The
 * service checks every body again with messages naming the field (a gateway hop passes it as
 * sent); operations are the flag operations vocabulary and segment operations, checked there.
 * Response schemas double as Fastify's serialisers: every field of the answers is listed.
 */

const anyJson = { description: 'Any JSON (as the flag and segment routes show it).' } as const;

export const requestParams = { type: 'object', required: ['env_id', 'id'], properties: { env_id: uuidParam, id: uuidParam } } as const;

const policyFields = {
  required: { type: 'boolean', description: 'Direct writes of flag configuration, segments and scheduled changes are refused (409); changes go through approved requests.' },
  min_approvals: { type: 'integer', minimum: 1, maximum: MAX_MIN_APPROVALS },
  allow_self_approval: { type: 'boolean' },
  reset_on_change: { type: 'boolean', description: 'Reviews count only for the exact content reviewed.' },
  kill_switch_exempt: { type: 'boolean', description: 'Turning a flag off (and nothing else) may be written directly.' },
} as const;

export const policyBody = { type: 'object', additionalProperties: false, properties: policyFields } as const;

export const policyResponse = {
  type: 'object',
  required: ['environment_id', ...Object.keys(policyFields)],
  properties: { environment_id: { type: 'string' }, ...policyFields },
} as const;

const change = {
  type: 'object',
  description: 'A flag change `{flag_key, operations, version?}` or a segment change `{segment_key, operations, version?}`; a missing version is the current one.',
  properties: {
    flag_key: { type: 'string' },
    segment_key: { type: 'string' },
    operations: { type: 'array', items: anyJson },
    version: { type: 'integer', minimum: 0 },
  },
} as const;

export const requestBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    title: { type: 'string', maxLength: MAX_TITLE_LENGTH },
    description: { type: ['string', 'null'], maxLength: MAX_DESCRIPTION_LENGTH },
    changes: { type: 'array', maxItems: MAX_REQUEST_CHANGES, items: change },
    submit: { type: ['boolean', 'null'], description: 'Create: open it for review at once (otherwise a draft).' },
    revision: { type: ['integer', 'null'], description: "Edit: the request's revision you read (a stale one answers 409 ABORTED)." },
  },
} as const;

export const reviewBody = {
  type: 'object',
  required: ['verdict'],
  additionalProperties: false,
  properties: {
    verdict: { type: 'string', enum: ['approve', 'reject', 'comment'] },
    comment: { type: ['string', 'null'], maxLength: MAX_REVIEW_COMMENT_LENGTH },
    content_hash: { type: ['string', 'null'], description: 'The content you reviewed: refused (409) when the request changed since.' },
  },
} as const;

export const listQuery = {
  type: 'object',
  properties: {
    status: { type: 'string', maxLength: 100, description: 'Comma-separated stored statuses: draft, open, applied, cancelled, conflicted, scheduled.' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LISTED_CHANGE_REQUESTS },
  },
} as const;

const review = {
  type: 'object',
  required: ['id', 'reviewer_id', 'reviewer_email', 'verdict', 'comment', 'content_hash', 'at_ms'],
  properties: {
    id: { type: 'string' },
    reviewer_id: { type: 'string' },
    reviewer_email: { type: ['string', 'null'] },
    verdict: { type: 'string', enum: ['approve', 'reject', 'comment'] },
    comment: { type: ['string', 'null'] },
    content_hash: { type: 'string' },
    at_ms: { type: 'integer' },
  },
} as const;

export const requestResponse = {
  type: 'object',
  required: ['id', 'project_id', 'environment_id', 'title', 'description', 'changes', 'content_hash', 'status', 'author', 'revision', 'conflict', 'applied_by', 'approvals', 'approvals_needed', 'reviews', 'created_at_ms', 'updated_at_ms', 'submitted_at_ms', 'applied_at_ms', 'execute_at_ms', 'scheduled_by'],
  properties: {
    id: { type: 'string' },
    project_id: { type: 'string' },
    environment_id: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    changes: { type: 'array', items: change },
    content_hash: { type: 'string', description: 'sha256 of the canonical JSON of the changes: what reviews are given on.' },
    status: { type: 'string', enum: ['draft', 'open', 'rejected', 'applied', 'cancelled', 'conflicted', 'scheduled'] },
    author: { type: 'object', required: ['id', 'email'], properties: { id: { type: 'string' }, email: { type: ['string', 'null'] } } },
    revision: { type: 'integer' },
    conflict: { type: ['string', 'null'] },
    applied_by: { type: ['object', 'null'], properties: { applier_id: { type: 'string' }, approvers: { type: 'array', items: { type: 'string' } } } },
    approvals: {
      type: 'array',
      items: { type: 'object', required: ['reviewer_id', 'reviewer_email', 'at_ms'], properties: { reviewer_id: { type: 'string' }, reviewer_email: { type: ['string', 'null'] }, at_ms: { type: 'integer' } } },
    },
    approvals_needed: { type: 'integer' },
    reviews: { type: 'array', items: review },
    created_at_ms: { type: 'integer' },
    updated_at_ms: { type: 'integer' },
    submitted_at_ms: { type: ['integer', 'null'] },
    applied_at_ms: { type: ['integer', 'null'] },
    execute_at_ms: { type: ['integer', 'null'], description: 'When a scheduled request is due (kept once it ran or was cancelled); null if never scheduled.' },
    scheduled_by: {
      type: ['object', 'null'],
      description: 'Who scheduled it: {type: user|api_token, id, email?, name?}.',
      properties: { type: { type: 'string' }, id: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' } },
    },
  },
} as const;

export const applyBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    execute_at_ms: { type: ['integer', 'null'], minimum: 0, description: 'Apply at this time instead of now (in the future, at most 5 years ahead): the request becomes scheduled.' },
  },
} as const;

export const listResponse = { type: 'object', required: ['change_requests'], properties: { change_requests: { type: 'array', items: requestResponse } } } as const;

export const previewResponse = {
  type: 'object',
  required: ['changes'],
  properties: {
    changes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['version_made_against', 'current_version', 'before', 'after', 'problem'],
        properties: {
          flag_key: { type: 'string' },
          segment_key: { type: 'string' },
          version_made_against: { type: 'integer' },
          current_version: { type: 'integer' },
          before: anyJson,
          after: anyJson,
          problem: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;
