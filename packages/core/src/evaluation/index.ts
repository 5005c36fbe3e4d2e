/**
 * The evaluation engine: pure functions of a flag document, the evaluation input and the
 * environment's segments. No I/O; list-segment membership comes in as a function.
 */
export { BUCKET_COUNT, bucketFor, murmur3, pickBucket, resolveHashInput } from './bucketing.ts';
export { MAX_MATCHES_PROGRAM_SIZE, MAX_PATTERN_LENGTH, allConditionsHold, matchesProgramSize, conditionHolds, patternProblem, validateConditions } from './conditions.ts';
export { compileFlagToKeep, documentOfCompiled, evaluate, evaluateAll, evaluateCompiled, keptFlagForm } from './evaluate.ts';
export { DEFAULT_EVALUATION_BUDGET_MS } from './evaluation-budget.ts';
export type { CompiledFlag } from './compiled-flag.ts';
export type { EvaluationEnvironment } from './evaluate.ts';
export { keepForOutcome, keptForOutcome, newOutcomes, reserveOutcomeStore } from './outcomes.ts';
export type { Outcomes } from './outcomes.ts';
export { KNOWN_EVALUATION_FEATURES, evaluationFeaturesOf, prerequisiteKeysOf, unknownEvaluationFeatures } from './features.ts';
