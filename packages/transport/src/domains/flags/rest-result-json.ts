import { createHash } from 'node:crypto';
import type { EvaluationResult, Flag } from '@switchyard/core';

const COMMA = Buffer.from(',');

/** One item of a JSON answer, as UTF-8 bytes, with a digest of them computed once when first asked. */
export class JsonItem {
  /** The first 64 bits of the bytes' SHA-256 as two words; -1 until first asked. */
  private digestLow = -1;
  private digestHigh = -1;
  private afterComma: Buffer | undefined;

  constructor(readonly bytes: Buffer) {}

  static of(value: unknown): JsonItem {
    return new JsonItem(Buffer.from(JSON.stringify(value)));
  }

  /** `,` and the bytes: the item anywhere but first in an array (one part to copy instead of two). */
  withComma(): Buffer {
    this.afterComma ??= Buffer.concat([COMMA, this.bytes]);
    return this.afterComma;
  }

  /** Writes the first 64 bits of the bytes' SHA-256 (computed once) into `words` at `at`. */
  writeDigest(words: Uint32Array, at: number): void {
    if (this.digestLow === -1) {
      const digest = createHash('sha256').update(this.bytes).digest();
      this.digestLow = digest.readUInt32LE(0);
      this.digestHigh = digest.readUInt32LE(4);
    }
    words[at] = this.digestLow;
    words[at + 1] = this.digestHigh;
  }
}

/**
 * A flag's kept answers, in one array: for each outcome, the result fields it was rendered from
 * and its item (OUTCOME_SLOTS slots). Finding an answer reads this one contiguous array, not an
 * object per outcome: evaluating one flag among many finds each flag's answers out of the CPU
 * caches, and every separate object read is a likely miss (docs/decisions.md "Evaluate route
 * performance").
 */
type Outcomes = unknown[];
const RULE_INDEX = 0;
const VARIANT_KEY = 1;
const REASON = 2;
const IS_ENABLED = 3;
const ERROR_CODE = 4;
const RULE_ID = 5;
const ITEM = 6;
const OUTCOME_SLOTS = 7;

/**
 * JSON arrays sent as bytes: `head`, the items separated by commas, `tail`, in one buffer. The
 * socket writes it as it is, with no string to join and none to encode on the way out.
 */
export function jsonArrayBytes(head: string, items: readonly JsonItem[], tail: string): Buffer {
  const parts = new Array<Buffer>(items.length + 2);
  parts[0] = Buffer.from(head);
  let length = parts[0].length;
  for (let i = 0; i < items.length; i++) {
    const part = i === 0 ? items[i]!.bytes : items[i]!.withComma();
    parts[i + 1] = part;
    length += part.length;
  }
  const end = Buffer.from(tail);
  parts[items.length + 1] = end;
  return Buffer.concat(parts, length + end.length);
}

/**
 * A strong ETag of an answer made of these items in this order: a hash of the items' digests
 * (each hashed once, when first used), so it costs a small fraction of hashing the whole answer,
 * and depends on nothing but the answer's content, so every instance computes the same one.
 */
export function etagOfItems(items: readonly JsonItem[]): string {
  const words = new Uint32Array(items.length * 2);
  for (let i = 0; i < items.length; i++) items[i]!.writeDigest(words, i * 2);
  return `"${createHash('sha256').update(words).digest('base64url').slice(0, 32)}"`;
}

/**
 * The JSON of evaluation results, kept per flag definition and outcome as UTF-8 bytes
 * (docs/decisions.md "Evaluate route performance"). A result is its flag's definition plus a
 * handful of fields (the variant, reason, enabled state, error code and matched rule); the value is
 * the variant's, read from the definition. A flag has few outcomes (its rules × variants), and
 * their JSON never changes while the definition object lives: a change of the flag replaces the
 * object in the snapshot, and the WeakMap lets the old answers go with it. A result with a
 * free-text error message (a flag that could not be evaluated, a missing segment) is rendered
 * every time.
 *
 * Serialising a result object costs more than evaluating the flag (the value may be any JSON, so
 * no schema-compiled serialiser does it fast); finding a kept answer compares five fields, most of
 * them the very strings of the definition, so it costs a few nanoseconds and allocates nothing.
 */
export class ResultJsonCache {
  private readonly byFlag = new WeakMap<Flag, Outcomes>();
  /** @param render the result's JSON text, as the route would have serialised it. */
  constructor(private readonly render: (result: EvaluationResult) => string) {}

  bytes(flag: Flag, result: EvaluationResult): Buffer {
    return this.item(flag, result).bytes;
  }

  item(flag: Flag, result: EvaluationResult): JsonItem {
    if (result.error_message !== undefined) return this.rendered(result);
    let outcomes = this.byFlag.get(flag);
    if (outcomes === undefined) {
      outcomes = [];
      this.byFlag.set(flag, outcomes);
    }
    return this.find(outcomes, result);
  }

  /** The items of every result, `results[i]` being flag `flags[i]`'s. */
  items(flags: readonly Flag[], results: readonly EvaluationResult[]): JsonItem[] {
    const items = new Array<JsonItem>(results.length);
    for (let i = 0; i < results.length; i++) items[i] = this.item(flags[i]!, results[i]!);
    return items;
  }

  /** `head`, the results' JSON separated by commas, `tail`: one JSON array answer. */
  array(head: string, flags: readonly Flag[], results: readonly EvaluationResult[], tail: string): Buffer {
    return jsonArrayBytes(head, this.items(flags, results), tail);
  }

  /** A result with a free-text message: rendered every time, never kept. */
  private rendered(result: EvaluationResult): JsonItem {
    return new JsonItem(Buffer.from(this.render(result)));
  }

  /** The kept item of this outcome among a flag's outcomes, rendered and kept on first sight. */
  private find(outcomes: Outcomes, result: EvaluationResult): JsonItem {
    for (let i = 0; i < outcomes.length; i += OUTCOME_SLOTS) {
      // The rule's index first: a number in this array, so the outcomes of other rules are passed
      // over without reading their strings (comparing two distinct strings reads both).
      if (
        outcomes[i + RULE_INDEX] === result.rule_index &&
        outcomes[i + VARIANT_KEY] === result.variant_key &&
        outcomes[i + REASON] === result.reason &&
        outcomes[i + IS_ENABLED] === result.is_enabled &&
        outcomes[i + ERROR_CODE] === result.error_code &&
        outcomes[i + RULE_ID] === result.rule_id
      ) {
        return outcomes[i + ITEM] as JsonItem;
      }
    }
    const item = new JsonItem(Buffer.from(this.render(result)));
    outcomes.push(result.rule_index, result.variant_key, result.reason, result.is_enabled, result.error_code, result.rule_id, item);
    return item;
  }
}
