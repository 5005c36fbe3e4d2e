import { readFileSync } from 'node:fs';
import type { EvaluationContext, Flag, FlagValue, Segment } from '../../src/index.ts';

/** A case of test-vectors/evaluation.json (test-vectors/README.md): every SDK runs the same file. */
export interface EvaluationCase {
  name: string;
  /** How `expected` was derived by hand (test-vectors/README.md); documentation, not an input. */
  why: string;
  flag: Flag;
  segments?: Segment[];
  list_members?: Record<string, { included: string[]; excluded: string[] }>;
  contexts: EvaluationContext[];
  project_id: string;
  environment_id: string;
  expected: {
    variant_key: string;
    value: FlagValue;
    is_enabled: boolean;
    reason: string;
    bucket?: number;
    error_code?: string;
  };
}

/** The cases of one test-vectors file. */
export function load<T>(file: string): T[] {
  const text = readFileSync(new URL(`../../test-vectors/${file}`, import.meta.url), 'utf8');
  return (JSON.parse(text) as { cases: T[] }).cases;
}

/** The evaluation environment of a case: its project, environment, segments and list members (excluded wins). */
export function environmentOf(c: EvaluationCase) {
  const members = c.list_members ?? {};
  return {
    projectId: c.project_id,
    environmentId: c.environment_id,
    segments: new Map((c.segments ?? []).map((s) => [s.key, s])),
    isListMember: (segmentKey: string, contextKey: string) =>
      (members[segmentKey]?.included.includes(contextKey) ?? false) && !(members[segmentKey]?.excluded.includes(contextKey) ?? false),
  };
}
