import { createHash } from 'node:crypto';
import { keepForOutcome, keptForOutcome, reserveOutcomeStore, type EvaluationResult, type Outcomes } from '@switchyard/core';

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
 * Something derived from evaluation results (their JSON), kept per flag definition and outcome
 * (docs/decisions.md "Evaluate route performance"). A result is its flag's definition plus a
 * handful of fields (the variant, reason, enabled state and matched rule) that the outcome fixes:
 * a rule's fixed variant, a split's bucket range, the off variant. What is derived is kept in a
 * store of the outcome's own in the flag's compiled form (core's outcomes.ts), which the evaluation
 * has just read: finding it is two array reads, with no lookup by flag and no field to compare. A
 * change of the flag compiles a new form with empty stores, and the old values go with the old
 * definition. A result with a free-text error message has no outcome and is derived every time.
 *
 * Serialising a result object costs more than evaluating the flag (the value may be any JSON, so
 * no schema-compiled serialiser does it fast).
 *
 * What derives must read only the fields an outcome fixes: not `bucket`, which differs between
 * results of the same bucket range.
 */
class KeptPerOutcome<T> {
  /** This cache's store in every outcome: one per module-level cache, reserved once. */
  private readonly store = reserveOutcomeStore();

  /** @param derive what to keep of a result (for the answers: its JSON, as the route would serialise it). */
  constructor(private readonly derive: (result: EvaluationResult) => T) {}

  /** Result `i`'s value, from its outcome's store or derived (and kept, when it has an outcome). */
  protected kept(results: readonly EvaluationResult[], outcomes: Outcomes, i: number): T {
    const kept = keptForOutcome(outcomes, i, this.store) as T | undefined;
    if (kept !== undefined) return kept;
    const value = this.derive(results[i]!);
    keepForOutcome(outcomes, i, this.store, value);
    return value;
  }
}

/** The JSON of evaluation results as UTF-8 bytes, for answers joining many (KeptPerOutcome). */
export class ResultJsonCache extends KeptPerOutcome<JsonItem> {
  /** @param render the result's JSON text, as the route would have serialised it. */
  constructor(render: (result: EvaluationResult) => string) {
    super((result) => new JsonItem(Buffer.from(render(result))));
  }

  /** Result `i`'s JSON. */
  item(results: readonly EvaluationResult[], outcomes: Outcomes, i: number): JsonItem {
    return this.kept(results, outcomes, i);
  }

  /** Every result's item, in order. */
  items(results: readonly EvaluationResult[], outcomes: Outcomes): JsonItem[] {
    const items = new Array<JsonItem>(results.length);
    for (let i = 0; i < results.length; i++) items[i] = this.kept(results, outcomes, i);
    return items;
  }

  /** `head`, the results' JSON separated by commas, `tail`: one JSON array answer. */
  array(head: string, results: readonly EvaluationResult[], outcomes: Outcomes, tail: string): Buffer {
    return jsonArrayBytes(head, this.items(results, outcomes), tail);
  }
}

/**
 * One result's JSON as a string (KeptPerOutcome), for answers made of one result (the evaluate
 * route asked for one flag). A string holds its characters in itself: the answer is one object to
 * read, where the bytes are three (the item, the Buffer, its memory), and in a server rotating
 * over many flags each is a cache miss that the next has to wait for. The string is written to
 * the socket with the headers in one write.
 */
export class ResultTextCache extends KeptPerOutcome<string> {
  text(results: readonly EvaluationResult[], outcomes: Outcomes, i: number): string {
    return this.kept(results, outcomes, i);
  }
}
