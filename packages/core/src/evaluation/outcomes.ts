import { OUTCOME_STORES, type CompiledFlag } from './compiled-flag.ts';

/**
 * Which outcome of its flag each result of an evaluation is, for hosts that keep something
 * derived from results (docs/decisions.md "Evaluate route performance").
 *
 * An outcome is what a flag definition can serve, whatever the input: a rule's fixed variant, a
 * split's bucket range, the off variant served as DEFAULT or as DISABLED. Every result of the same
 * outcome has the same fields except `bucket` (a split's exact bucket); so what a host derives from
 * those fields (the JSON of an answer, say) can be kept once per outcome. The slots to keep it in
 * are part of the flag's compiled form, next to the data the evaluation has just read: the host
 * finds them without a lookup of its own, which for a server rotating over many flags is a cache
 * miss or several saved per answer.
 *
 * Results that carry a free-text error message (a flag that could not be evaluated, an invalid
 * context, a missing segment) have no outcome: their fields depend on more than the definition.
 * A flag document changed in place is compiled again, with new, empty stores.
 *
 * Layout: for result i, slot 2i holds the compiled form holding its stores (undefined: none), slot
 * 2i + 1 their offset in it.
 */
export type Outcomes = unknown[];

/** An Outcomes for an evaluation of `count` flags (evaluateAll fills it). */
export function newOutcomes(count: number): Outcomes {
  // One flag (the evaluate route's usual request) gets a literal: no fill loop.
  return count === 1 ? [undefined, 0] : new Array<unknown>(count * 2).fill(undefined);
}

/** Records that result `i` is the outcome whose stores start at `compiled[at]`. */
export function setOutcome(outcomes: Outcomes, i: number, compiled: CompiledFlag, at: number): void {
  outcomes[2 * i] = compiled;
  outcomes[2 * i + 1] = at;
}

/** Records that result `i` has no outcome (nothing derived from it may be kept). */
export function clearOutcome(outcomes: Outcomes, i: number): void {
  outcomes[2 * i] = undefined;
}

let storesReserved = 0;

/**
 * A store number of one's own, for keeping one derived thing per outcome. Each consumer (a module,
 * not an instance: the stores live as long as the flag definitions) reserves one once.
 */
export function reserveOutcomeStore(): number {
  if (storesReserved >= OUTCOME_STORES) throw new Error(`at most ${OUTCOME_STORES} outcome stores can be reserved`);
  return storesReserved++;
}

/** Only a reserved store number reaches the compiled form: any other would read or overwrite the flag's own data. */
function checkStore(store: number): void {
  if (!(store >= 0 && store < storesReserved && Number.isInteger(store))) throw new RangeError(`outcome store ${store} was not reserved`);
}

/** What was kept in `store` for result i's outcome; undefined when nothing was, or the result has no outcome. */
export function keptForOutcome(outcomes: Outcomes, i: number, store: number): unknown {
  checkStore(store);
  const compiled = outcomes[2 * i] as CompiledFlag | undefined;
  return compiled === undefined ? undefined : compiled[(outcomes[2 * i + 1] as number) + store];
}

/** Keeps `value` in `store` for result i's outcome; does nothing for a result without one. */
export function keepForOutcome(outcomes: Outcomes, i: number, store: number, value: unknown): void {
  checkStore(store);
  const compiled = outcomes[2 * i] as CompiledFlag | undefined;
  if (compiled !== undefined) compiled[(outcomes[2 * i + 1] as number) + store] = value;
}
