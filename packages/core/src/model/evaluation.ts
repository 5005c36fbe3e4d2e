import type { FlagValue } from './definitions.ts';

export type EvaluationReason = 'DISABLED' | 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'PREREQUISITE_FAILED' | 'ERROR';

export type EvaluationErrorCode = 'FLAG_NOT_FOUND' | 'SEGMENT_NOT_FOUND' | 'INVALID_CONTEXT' | 'GENERAL';

/** What evaluate() returns. It never throws: problems come back as reason/error fields. */
export interface EvaluationResult {
  flag_key: string;
  variant_key: string;
  value: FlagValue;
  is_enabled: boolean;
  reason: EvaluationReason;
  /** Index of the rule that matched, when one did. */
  rule_index?: number;
  rule_id?: string;
  /** The 0..99999 bucket used by the split, when a split decided. */
  bucket?: number;
  /** With reason PREREQUISITE_FAILED: the first prerequisite that did not hold. */
  prerequisite_key?: string;
  error_code?: EvaluationErrorCode;
  error_message?: string;
}
