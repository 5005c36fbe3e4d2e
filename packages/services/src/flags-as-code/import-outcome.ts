import type { ErrorCode } from '@switchyard/core';

/** What an entry of an import's answer is about. */
export type ImportItemKind = 'flag' | 'flag_environment' | 'segment' | 'event_definition' | 'environment';

export interface ImportChange {
  kind: ImportItemKind;
  key: string;
  /** The environment's name, for everything but a flag's definition. */
  environment?: string;
  /** The fields that changed, as they were (absent for a creation). */
  before?: Record<string, unknown>;
  /** ... and as they are now (absent for a deletion). */
  after?: Record<string, unknown>;
}

export interface ImportRefusal {
  kind: ImportItemKind;
  key: string;
  environment?: string;
  error: string;
  code: ErrorCode;
}

/**
 * The answer of an import (docs/flags-as-code.md "Import"): what it created, changed and deleted,
 * and what it refused with the reason. `applied` is true only when every change committed: an
 * import with a refusal, like a dry run, writes nothing.
 */
export interface ImportOutcome {
  dry_run: boolean;
  applied: boolean;
  created: ImportChange[];
  changed: ImportChange[];
  deleted: ImportChange[];
  refused: ImportRefusal[];
}

/** JSON text with object keys sorted: two values are the same document exactly when their texts are equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    const sorted: Record<string, unknown> = {};
    for (const name of Object.keys(inner).sort()) sorted[name] = (inner as Record<string, unknown>)[name];
    return sorted;
  });
}

export const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

interface Tracked {
  kind: ImportItemKind;
  key: string;
  environment: string | undefined;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/**
 * The entities an import touched, each with its state before the import's first write to it and
 * after its last, so several writes to one entity (a flag's definition before and after its
 * environments) answer as one change, and a write that ends where it began answers nothing.
 */
export class ImportLedger {
  private readonly tracked = new Map<string, Tracked>();
  readonly refused: ImportRefusal[] = [];

  /** Notes one write: `before` is kept from the first, `after` from the last. */
  wrote(kind: ImportItemKind, key: string, environment: string | undefined, before: Record<string, unknown> | null, after: Record<string, unknown> | null): void {
    const id = JSON.stringify([kind, environment ?? null, key]);
    const known = this.tracked.get(id);
    if (known) known.after = after;
    else this.tracked.set(id, { kind, key, environment, before, after });
  }

  refuse(kind: ImportItemKind, key: string, environment: string | undefined, error: string, code: ErrorCode): void {
    this.refused.push({ kind, key, ...(environment === undefined ? {} : { environment }), error, code });
  }

  outcome(dryRun: boolean, applied: boolean): ImportOutcome {
    const outcome: ImportOutcome = { dry_run: dryRun, applied, created: [], changed: [], deleted: [], refused: this.refused };
    for (const { kind, key, environment, before, after } of this.tracked.values()) {
      const where = { kind, key, ...(environment === undefined ? {} : { environment }) };
      if (before === null && after === null) continue;
      if (before === null) outcome.created.push({ ...where, after: after! });
      else if (after === null) outcome.deleted.push({ ...where, before });
      else {
        const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((name) => !sameJson(before[name], after[name]));
        if (names.length === 0) continue;
        outcome.changed.push({ ...where, before: pick(before, names), after: pick(after, names) });
      }
    }
    return outcome;
  }
}

function pick(value: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) if (value[name] !== undefined) picked[name] = value[name];
  return picked;
}
