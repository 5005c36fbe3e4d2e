import type { EnvironmentScope } from '../ports/scopes.ts';

/**
 * One attribute name seen in a context evaluated for a key of an environment (docs/contract.md
 * "Context attributes"): its context type and name only, never a value.
 */
export interface SeenContextAttribute {
  orgId: string;
  projectId: string;
  environmentId: string;
  contextType: string;
  name: string;
}

/** An environment's remembered attribute name, with when it was last seen. */
export interface ContextAttribute {
  contextType: string;
  name: string;
  lastSeenAtMs: number;
}

/** Longest context type or attribute name remembered; longer ones are not noted. */
export const MAX_CONTEXT_ATTRIBUTE_NAME_LENGTH = 64;
/** Rows kept per environment: a write beyond it drops the environment's least recently seen names. */
export const MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT = 500;
/** New (context type, name) pairs of one environment sent in one report (one flush of a process). */
export const MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT = 50;

/** The attribute names contexts used per environment (suggestions in the console's rule editor). */
export interface ContextAttributeRepository {
  /**
   * Sets each attribute's last sighting to now, adding it when new — only into an environment
   * that exists in the scope the attribute names (another tenant's scope adds nothing) — then
   * drops each touched environment's least recently seen attributes beyond `maxPerEnvironment`
   * (ties: the later context type and name go first). Returns how many rows were written.
   */
  record(attributes: readonly SeenContextAttribute[], maxPerEnvironment: number): Promise<number>;
  /** The environment's attributes, most recently seen first (ties: by context type, then name), at most `limit`. */
  list(scope: EnvironmentScope, limit: number): Promise<ContextAttribute[]>;
}
