/**
 * The evaluation budget: how long one evaluation call (one flag, or every flag of an environment
 * for one input) may keep running before the rest of it answers ERROR (docs/security.md
 * "Evaluation budget per request").
 *
 * Static limits bound each definition's regular-expression work, but not what a request adds up
 * over many flags, nor definitions stored before a limit existed. The budget is the backstop: an
 * evaluation checks the clock before each run of the regular-expression engine (the one step
 * whose cost grows with the input) and, in evaluateAll, between flags; once the time is up, every
 * flag still to evaluate answers ERROR instead of running. So no call holds the event loop much
 * longer than the budget: at most the budget plus one pattern run that had already started.
 *
 * The state is module-wide because evaluation is synchronous: the entry points (evaluate.ts) set it
 * for the call and restore what was there before (a list-membership callback that evaluates
 * cannot extend its caller's budget). The clock is read lazily: a call that runs no pattern and
 * evaluates one flag never reads it.
 */
/**
 * The budget of one evaluation call unless a host sets another: the server's EVALUATION_BUDGET_MS
 * and the SDK's evaluationBudgetMs default to it.
 */
export const DEFAULT_EVALUATION_BUDGET_MS = 100;

export const budget = {
  /** The active call's budget in milliseconds; 0: none. */
  ms: 0,
  /** When it runs out (clock time); 0: not started yet (the first check starts it); -1: used up. */
  deadline: 0,
};

const clock: () => number =
  typeof performance === 'object' && performance !== null && typeof performance.now === 'function' ? () => performance.now() : Date.now;

/** Thrown (one shared object, no stack to build) by a check that finds the budget used up. */
export const BUDGET_EXHAUSTED = new Error('the evaluation budget is used up');

/** Whether the active budget is used up; starts its clock on the first call. Call only when budget.ms !== 0. */
export function budgetUsedUp(): boolean {
  const deadline = budget.deadline;
  if (deadline === -1) return true;
  const now = clock();
  if (deadline === 0) {
    budget.deadline = now + budget.ms;
    return false;
  }
  if (now <= deadline) return false;
  budget.deadline = -1;
  return true;
}

/** Throws BUDGET_EXHAUSTED when a budget is active and used up (before an expensive step). */
export function chargeExpensiveStep(): void {
  if (budget.ms !== 0 && budgetUsedUp()) throw BUDGET_EXHAUSTED;
}
