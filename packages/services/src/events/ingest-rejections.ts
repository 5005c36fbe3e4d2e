/**
 * Why an entry of an ingest request (events, events/batch, exposures; svc.events.v1 Ingest) was
 * rejected: one stable code per rejected entry (docs/contract.md "Events, exposures and
 * idempotency", "Why an entry is rejected"). New codes may be added; a code never changes meaning.
 */
export const REJECTION_REASONS = [
  /** Events: the metric key is not an event definition of the environment (client keys: not one marked client_allowed). */
  'unknown_metric',
  /** Events: the value does not fit the definition's type (int 1.5, a string, ...). */
  'wrong_value_type',
  /** Exposures: the flag is not an active flag of the environment (client keys: not a client-visible one). */
  'unknown_flag',
  /** Exposures (server keys and tokens): the variant is not one of the flag's variants. */
  'unknown_variant',
  /** `field` is absent, null or "" (a numeric event's value included). */
  'missing_field',
  /** `field` has the wrong JSON type, or (timestamp_ms) is not a non-negative integer. */
  'invalid_field',
  /** `field` is longer than allowed (context_type 64, context_key 512 characters). */
  'field_too_long',
  /** Exposures from client keys: the flag is client-visible but not under an ACTIVE experiment. */
  'no_active_experiment',
  /** Exposures from client keys: the server's own evaluation of the context serves another variant (or the flag is off). */
  'variant_not_served',
  /** Client keys with signed contexts: the entry's context is not the signed one. */
  'context_mismatch',
  /** Exposures from client keys: the context cannot be evaluated (too long, too many attributes). */
  'invalid_context',
] as const;

export type RejectionReason = (typeof REJECTION_REASONS)[number];

/** The reasons that name the entry's field. */
export type FieldReason = 'missing_field' | 'invalid_field' | 'field_too_long';

/** Why one entry is refused: a field reason names its field; the others do not. */
export type Problem = { reason: FieldReason; field: string } | { reason: Exclude<RejectionReason, FieldReason> };

/** One rejected entry of an ingest answer. */
export type Rejection = {
  /** The entry's position in the request (0-based; the single-event route's event is 0). */
  index: number;
  /** Its metric key (events) or flag key (exposures); "" when it has none that is a string. */
  key: string;
} & Problem;

/** The ingest answer of docs/contract.md "Events and exposures" (and svc.events.v1.IngestResponse). */
export interface IngestAnswer {
  accepted_count: number;
  /** The key of each rejected entry, once per key, in order of first appearance. */
  rejected_keys: string[];
  /**
   * One entry per rejected entry, in request order. Bounded by the request: at most
   * MAX_EVENTS_PER_REQUEST (100 for a client key). A repeat of an Idempotency-Key first answered
   * before this field existed replays that answer as stored, without it.
   */
  rejected: Rejection[];
}

/** Collects rejected entries in order, and their keys once each in order of first appearance. */
export class Rejections {
  private readonly keys = new Set<string>();
  private readonly entries: Rejection[] = [];

  add(index: number, key: unknown, problem: Problem): void {
    const text = typeof key === 'string' ? key : '';
    this.keys.add(text);
    this.entries.push({ index, key: text, ...problem });
  }

  answer(acceptedCount: number): IngestAnswer {
    return { accepted_count: acceptedCount, rejected_keys: [...this.keys], rejected: this.entries };
  }
}

/** An entry's result: its row, or why it is rejected. */
export const isProblem = (value: object): value is Problem => 'reason' in value;

/**
 * The problem with a required text field, or null when it is a non-empty string of at most
 * maxLength characters. Absent, null and "" are all missing: gRPC cannot tell an unset string from "".
 */
export function textProblem(value: unknown, field: string, maxLength = Number.POSITIVE_INFINITY): Problem | null {
  if (value === undefined || value === null || value === '') return { reason: 'missing_field', field };
  if (typeof value !== 'string') return { reason: 'invalid_field', field };
  if (value.length > maxLength) return { reason: 'field_too_long', field };
  return null;
}
