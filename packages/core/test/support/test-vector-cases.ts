import { readFileSync } from 'node:fs';
import type { EvaluationContext, Flag, FlagValue, Segment } from '../../src/index.ts';

/** A case of test-vectors/evaluation.json (test-vectors/README.md): every SDK runs the same file. */
export interface EvaluationCase {
  name: string;
  /** How `expected` was derived by hand (test-vectors/README.md); documentation, not an input. */
  why: string;
  flag: Flag;
  /** The environment's other flags (prerequisites name them); the case's flag is in the environment too. */
  flags?: Flag[];
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
    prerequisite_key?: string;
  };
}

/** The flags of a case's environment by key: its other flags and its own. */
export function flagsOf(c: EvaluationCase): Map<string, Flag> {
  return new Map([...(c.flags ?? []), c.flag].map((flag) => [flag.key, flag]));
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
    flags: flagsOf(c),
    isListMember: (segmentKey: string, contextKey: string) =>
      (members[segmentKey]?.included.includes(contextKey) ?? false) && !(members[segmentKey]?.excluded.includes(contextKey) ?? false),
  };
}
