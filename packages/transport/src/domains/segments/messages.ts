import type { Segment } from '@switchyard/core';
import type { SegmentBody } from '@switchyard/services';
import { decodePayload, encodePayload } from '../flags/messages.ts';

/**
 * svc.segments.v1 messages ⇄ the Segment documents of core and the SegmentService body
 * (docs/contract.md "Segments"). Validation stays the SegmentService's.
 */

export interface ListSegmentMessage {
  key: string;
  context_type: string;
  included_keys: string[];
  excluded_keys: string[];
  id: string;
  version: number;
}
export interface RuleSegmentMessage {
  key: string;
  context_type: string;
  rule_payload: Buffer | Uint8Array;
  id: string;
  version: number;
}
export interface ListSegmentMetaMessage {
  key: string;
  context_type: string;
  id: string;
  version: number;
}

/** A rule segment; its conditions travel as the UTF-8 JSON payload `{conditions}`. */
export const ruleSegmentMessage = (segment: Segment): RuleSegmentMessage => ({
  key: segment.key,
  context_type: segment.context_type,
  rule_payload: encodePayload({ conditions: segment.conditions }),
  id: segment.id,
  version: segment.version,
});

/** A list segment with (the first page of) its members, read by the caller. */
export const listSegmentMessage = (segment: Segment, included: string[], excluded: string[]): ListSegmentMessage => ({
  key: segment.key,
  context_type: segment.context_type,
  included_keys: included,
  excluded_keys: excluded,
  id: segment.id,
  version: segment.version,
});

export const listSegmentMeta = (segment: Segment): ListSegmentMetaMessage => ({
  key: segment.key,
  context_type: segment.context_type,
  id: segment.id,
  version: segment.version,
});

/** A RuleSegment as a SegmentService body (create or update). */
export function ruleSegmentBody(message: RuleSegmentMessage, field = 'rule_segment'): SegmentBody {
  const payload = decodePayload(message.rule_payload, `${field}.rule_payload`, ['conditions']);
  return { key: message.key, context_type: message.context_type, kind: 'rule', conditions: payload.conditions ?? [] };
}

/** A ListSegment as a SegmentService body: on update, both key lists replace the stored ones. */
export const listSegmentBody = (message: ListSegmentMessage): SegmentBody => ({
  key: message.key,
  context_type: message.context_type,
  kind: 'list',
  included_keys: message.included_keys,
  excluded_keys: message.excluded_keys,
});
