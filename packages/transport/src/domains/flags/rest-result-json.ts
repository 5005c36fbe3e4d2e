import type { EvaluationResult, Flag } from '@switchyard/core';

/**
 * The JSON text of evaluation results, kept per flag definition and outcome (docs/decisions.md
 * "Evaluate route performance"). A flag has few outcomes (its variants × the reasons that served
 * them), and the text of one never changes while its definition object lives: a change of the
 * flag replaces the object in the snapshot, and the WeakMap lets the old texts go with it.
 *
 * Serialising a result object costs more than evaluating the flag (the value may be any JSON, so
 * no schema-compiled serialiser can do it fast); a lookup and a join cost a fraction of that.
 */
export class ResultJsonCache {
  private readonly byFlag = new WeakMap<Flag, Map<string, string>>();

  /**
   * @param render the result's JSON text, as the route would have serialised it.
   * @param outcomeOf what the text depends on besides the flag definition, or null for a result
   *   not to keep (one with a free-text error message).
   */
  constructor(
    private readonly render: (result: EvaluationResult) => string,
    private readonly outcomeOf: (result: EvaluationResult) => string | null,
  ) {}

  json(flag: Flag, result: EvaluationResult): string {
    const outcome = this.outcomeOf(result);
    if (outcome === null) return this.render(result);
    let texts = this.byFlag.get(flag);
    if (texts === undefined) {
      texts = new Map();
      this.byFlag.set(flag, texts);
    }
    let text = texts.get(outcome);
    if (text === undefined) {
      text = this.render(result);
      texts.set(outcome, text);
    }
    return text;
  }

  /** The results' texts, comma-separated (the inside of a JSON array). */
  joined(flags: readonly Flag[], results: readonly EvaluationResult[]): string {
    const texts = new Array<string>(results.length);
    for (let i = 0; i < results.length; i++) texts[i] = this.json(flags[i]!, results[i]!);
    return texts.join(',');
  }
}
