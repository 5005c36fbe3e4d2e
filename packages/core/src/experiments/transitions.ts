/**
 * The experiment lifecycle of docs/contract.md "Experiments and statistics", as pure functions: which status moves are legal and how
 * a status named by a client is read. The repository applies a move (with its iterations); this
 * module alone decides whether the move may happen.
 */
import { failedPrecondition, invalidArgument } from '../errors/domain-error.ts';
import { EXPERIMENT_STATUSES, type ExperimentStatus } from '../model/entities.ts';

const DRAFT: ExperimentStatus = 'EXPERIMENT_STATUS_DRAFT';
const ACTIVE: ExperimentStatus = 'EXPERIMENT_STATUS_ACTIVE';
const PAUSED: ExperimentStatus = 'EXPERIMENT_STATUS_PAUSED';
const CONCLUDED: ExperimentStatus = 'EXPERIMENT_STATUS_CONCLUDED';

/**
 * Every legal move: DRAFT→ACTIVE, ACTIVE→PAUSED, PAUSED→ACTIVE, and DRAFT|ACTIVE|PAUSED→CONCLUDED.
 * CONCLUDED is final; nothing returns to DRAFT.
 */
export const EXPERIMENT_TRANSITIONS: Readonly<Record<ExperimentStatus, readonly ExperimentStatus[]>> = {
  EXPERIMENT_STATUS_DRAFT: [ACTIVE, CONCLUDED],
  EXPERIMENT_STATUS_ACTIVE: [PAUSED, CONCLUDED],
  EXPERIMENT_STATUS_PAUSED: [ACTIVE, CONCLUDED],
  EXPERIMENT_STATUS_CONCLUDED: [],
};

/** Whether `from` → `to` is a legal move (a "move" to the same status never is). */
export function canTransition(from: ExperimentStatus, to: ExperimentStatus): boolean {
  return EXPERIMENT_TRANSITIONS[from].includes(to);
}

/**
 * The status after the move, or FAILED_PRECONDITION naming the current status and the moves it
 * allows (the message is shown to clients as is).
 * @throws FAILED_PRECONDITION for an illegal move
 */
export function nextStatus(from: ExperimentStatus, to: ExperimentStatus): ExperimentStatus {
  if (canTransition(from, to)) return to;
  const allowed = EXPERIMENT_TRANSITIONS[from];
  throw failedPrecondition(
    `cannot move an experiment from ${from} to ${to}` +
      (allowed.length === 0 ? `: ${from} is final` : `; allowed from ${from}: ${allowed.join(', ')}`),
  );
}

/**
 * Reads a status as clients send it: the enum name (`EXPERIMENT_STATUS_ACTIVE`) or its short form
 * (`active`), in any letter case. UNSPECIFIED and anything else are INVALID_ARGUMENT.
 * @throws INVALID_ARGUMENT naming `field`
 */
export function parseExperimentStatus(value: unknown, field = 'new_status'): ExperimentStatus {
  if (typeof value === 'string') {
    const upper = value.trim().toUpperCase();
    const name = upper.startsWith('EXPERIMENT_STATUS_') ? upper : `EXPERIMENT_STATUS_${upper}`;
    const found = EXPERIMENT_STATUSES.find((status) => status === name);
    if (found) return found;
  }
  const short = EXPERIMENT_STATUSES.map((status) => status.slice('EXPERIMENT_STATUS_'.length).toLowerCase());
  throw invalidArgument(`${field} must be one of ${short.join(', ')} (or the EXPERIMENT_STATUS_* names)`, field);
}

/** Statuses for exports that want them spelled out. */
export const EXPERIMENT_STATUS = { DRAFT, ACTIVE, PAUSED, CONCLUDED } as const;
