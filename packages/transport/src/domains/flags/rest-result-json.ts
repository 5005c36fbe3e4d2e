import type { EvaluationResult, Flag } from '@switchyard/core';

/** One kept answer and the result fields it was rendered from. */
interface Outcome {
  variantKey: string;
  reason: EvaluationResult['reason'];
  isEnabled: boolean;
  errorCode: EvaluationResult['error_code'];
  ruleId: string | undefined;
  bytes: Buffer;
}

const COMMA = Buffer.from(',');

/**
 * JSON arrays sent as bytes: `head`, the items separated by commas, `tail`, in one buffer. The
 * socket writes it as it is, with no string to join and none to encode on the way out.
 */
export function jsonArrayBytes(head: string, items: readonly Buffer[], tail: string): Buffer {
  const parts: Buffer[] = [Buffer.from(head)];
  let length = parts[0]!.length;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) {
      parts.push(COMMA);
      length += 1;
    }
    parts.push(items[i]!);
    length += items[i]!.length;
  }
  const end = Buffer.from(tail);
  parts.push(end);
  return Buffer.concat(parts, length + end.length);
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
  private readonly byFlag = new WeakMap<Flag, Outcome[]>();

  /** @param render the result's JSON text, as the route would have serialised it. */
  constructor(private readonly render: (result: EvaluationResult) => string) {}

  bytes(flag: Flag, result: EvaluationResult): Buffer {
    if (result.error_message !== undefined) return Buffer.from(this.render(result));
    let outcomes = this.byFlag.get(flag);
    if (outcomes === undefined) {
      outcomes = [];
      this.byFlag.set(flag, outcomes);
    }
    for (let i = 0; i < outcomes.length; i++) {
      const kept = outcomes[i]!;
      if (
        kept.variantKey === result.variant_key &&
        kept.reason === result.reason &&
        kept.isEnabled === result.is_enabled &&
        kept.errorCode === result.error_code &&
        kept.ruleId === result.rule_id
      ) {
        return kept.bytes;
      }
    }
    const bytes = Buffer.from(this.render(result));
    outcomes.push({ variantKey: result.variant_key, reason: result.reason, isEnabled: result.is_enabled, errorCode: result.error_code, ruleId: result.rule_id, bytes });
    return bytes;
  }

  /** `head`, the results' JSON separated by commas, `tail`: one JSON array answer. */
  array(head: string, flags: readonly Flag[], results: readonly EvaluationResult[], tail: string): Buffer {
    const items = new Array<Buffer>(results.length);
    for (let i = 0; i < results.length; i++) items[i] = this.bytes(flags[i]!, results[i]!);
    return jsonArrayBytes(head, items, tail);
  }
}
