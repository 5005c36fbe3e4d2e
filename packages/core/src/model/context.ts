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
