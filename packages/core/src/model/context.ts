/** A scalar context parameter (svc.common.v1.ParameterValue). Semver values travel as strings. */
export type ParameterValue = string | number | boolean;

/** svc.common.v1.Context: who or what a flag is evaluated for. */
export interface EvaluationContext {
  context_type: string;
  key: string;
  parameters?: Record<string, ParameterValue>;
  /** Parameter names that must never appear in logs or telemetry. */
  private_parameters?: string[];
}

/**
 * Longest string attribute value (in UTF-16 code units, JavaScript's `string.length`: 4096
 * characters of the Basic Multilingual Plane) that an evaluation entry point accepts. Matching is
 * linear in the input, so this bounds what one `matches` condition (and any string op) can cost a
 * request; every edge (REST evaluate, OFREP) refuses longer values with INVALID_ARGUMENT naming
 * the attribute (docs/security.md).
 */
export const MAX_ATTRIBUTE_STRING_LENGTH = 4096;
