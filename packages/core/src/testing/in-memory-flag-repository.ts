import { alreadyExists, failedPrecondition, notFound, versionConflict } from '../errors/domain-error.ts';
import { initialRulesFor } from '../flags/default-rule.ts';
import { variantUses } from '../flags/variant-uses.ts';
import { checkPrerequisiteGraph, refuseRemovingPrerequisiteVariants, refuseWhilePrerequisite, type PrerequisiteHolder, type PrerequisiteNode } from '../flags/prerequisites.ts';
import type { Flag } from '../model/definitions.ts';
import type { FlagDefinitionInput, FlagEnvironmentStateInput, FlagRepository } from '../ports/flag-ports.ts';
import type { EnvironmentScope, ProjectScope } from '../ports/scopes.ts';
import { compareKeys } from './compare-keys.ts';
import type { InMemoryState, StoredFlagDefinition, StoredFlagState } from './in-memory-state.ts';

/**
 * Copies through JSON, as the jsonb columns do: callers never share objects with the store, and
 * `undefined` properties vanish exactly as they do in PostgreSQL.
 */
const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * The state an environment sees before its first write (no row in flag_environment_states): off,
 * no off variant, the default rule of the current variants (as flag-rows.pg.ts' unwrittenRules).
 */
const absentState = (stored: StoredFlagDefinition): StoredFlagState => ({
  enabled: false,
  off_variant_key: null,
  rules: initialRulesFor(stored.flag.variants, null),
  prerequisites: [],
  hashing: [],
  version: 0,
  updated_at_ms: 0,
});

/**
 * FlagRepository over InMemoryState: definitions in `state.flags`, per-environment states in
 * `state.flagStates` keyed `${environmentId}/${flagId}`. Behaves as PgFlagRepository does; both
 * run the same contract suite.
 */
export class InMemoryFlagRepository implements FlagRepository {
  constructor(private readonly state: InMemoryState) {}

  async createDefinition(scope: ProjectScope, input: FlagDefinitionInput): Promise<Flag> {
    const project = this.state.requireProject(scope);
    if (this.findDefinition(scope, input.key)) throw alreadyExists('flag', input.key);
    const now = this.state.now();
    const stored: StoredFlagDefinition = {
      id: this.state.newId(),
      orgId: scope.orgId,
      projectId: scope.projectId,
      flag: {
        key: input.key,
        description: input.description,
        value_type: input.value_type,
        variants: viaJson(input.variants),
        archived: false,
        client_visible: input.client_visible ?? project.clientVisibleDefault,
        tags: viaJson(input.tags ?? []),
        lifetime: input.lifetime ?? 'permanent',
        maintainer: input.maintainer ?? null,
        bucket_by: input.bucket_by ?? 'environment',
        version: 1,
        created_at_ms: now,
        updated_at_ms: now,
      },
    };
    this.state.flags.set(stored.id, stored);
    return definitionView(stored);
  }

  async getDefinition(scope: ProjectScope, key: string): Promise<Flag | null> {
    const stored = this.findDefinition(scope, key);
    return stored ? definitionView(stored) : null;
  }

  async listDefinitions(scope: ProjectScope): Promise<Flag[]> {
    return this.definitionsOf(scope).map(definitionView);
  }

  async updateDefinition(
    scope: ProjectScope,
    key: string,
    patch: Partial<Omit<FlagDefinitionInput, 'key'>>,
    expectedVersion?: number,
  ): Promise<Flag> {
    const stored = this.requireDefinition(scope, key, expectedVersion);
    const flag = stored.flag;
    if (patch.variants !== undefined) {
      // As PostgreSQL does under the flag's lock: a variant a stored state serves stays.
      const kept = new Set(patch.variants.map((variant) => variant.key));
      const removed = flag.variants.map((variant) => variant.key).filter((variantKey) => !kept.has(variantKey));
      const states = [...this.state.flagStates.entries()].filter(([k]) => k.endsWith(`/${stored.id}`)).map(([, state]) => state);
      const served = removed.filter((variantKey) => states.some((state) => variantUses(state, variantKey).length > 0));
      if (served.length > 0) throw failedPrecondition(`a variant that is served cannot be removed: ${served.map((v) => `'${v}'`).join(', ')}`);
      refuseRemovingPrerequisiteVariants(key, removed, this.prerequisiteHolders(scope));
    }
    if (patch.description !== undefined) flag.description = patch.description;
    if (patch.value_type !== undefined) flag.value_type = patch.value_type;
    if (patch.variants !== undefined) flag.variants = viaJson(patch.variants);
    if (patch.client_visible !== undefined) flag.client_visible = patch.client_visible;
    if (patch.tags !== undefined) flag.tags = viaJson(patch.tags);
    if (patch.lifetime !== undefined) flag.lifetime = patch.lifetime;
    if (patch.maintainer !== undefined) flag.maintainer = patch.maintainer;
    if (patch.bucket_by !== undefined) flag.bucket_by = patch.bucket_by;
    this.touchDefinition(stored);
    return definitionView(stored);
  }

  async deleteDefinition(scope: ProjectScope, key: string, expectedVersion?: number): Promise<void> {
    const stored = this.requireDefinition(scope, key, expectedVersion);
    refuseWhilePrerequisite(key, this.prerequisiteHolders(scope), 'deleted');
    this.state.flags.delete(stored.id);
    // As ON DELETE CASCADE does: every environment's state goes with the definition.
    const suffix = `/${stored.id}`;
    for (const stateKey of [...this.state.flagStates.keys()]) {
      if (stateKey.endsWith(suffix)) this.state.flagStates.delete(stateKey);
    }
  }

  async setArchived(scope: ProjectScope, key: string, archived: boolean, expectedVersion?: number): Promise<Flag> {
    const stored = this.requireDefinition(scope, key, expectedVersion);
    if (archived) refuseWhilePrerequisite(key, this.prerequisiteHolders(scope), 'archived');
    stored.flag.archived = archived;
    this.touchDefinition(stored);
    return definitionView(stored);
  }

  async get(scope: EnvironmentScope, key: string): Promise<Flag | null> {
    if (!this.state.hasEnvironment(scope)) return null;
    const stored = this.findDefinition(scope, key);
    return stored ? mergedView(stored, this.stateOf(scope, stored)) : null;
  }

  async list(scope: EnvironmentScope): Promise<Flag[]> {
    if (!this.state.hasEnvironment(scope)) return [];
    return this.definitionsOf(scope).map((stored) => mergedView(stored, this.stateOf(scope, stored)));
  }

  async updateState(
    scope: EnvironmentScope,
    key: string,
    patch: FlagEnvironmentStateInput,
    expectedVersion?: number,
  ): Promise<Flag> {
    this.state.requireEnvironment(scope);
    const stored = this.findDefinition(scope, key);
    if (!stored) throw notFound('flag', key);
    const current = this.stateOf(scope, stored);
    if (expectedVersion !== undefined && expectedVersion !== current.version) {
      throw versionConflict('flag state', expectedVersion, current.version);
    }
    if (patch.prerequisites !== undefined && patch.prerequisites.length > 0) {
      const nodes = new Map<string, PrerequisiteNode>(
        this.definitionsOf(scope).map((other) => [other.flag.key, { variants: other.flag.variants, archived: other.flag.archived, prerequisites: this.stateOf(scope, other).prerequisites }]),
      );
      checkPrerequisiteGraph(key, patch.prerequisites, nodes);
    }
    // null is a value here (no off variant); only an absent field keeps the current one.
    const offVariantKey = patch.off_variant_key === undefined ? current.off_variant_key : patch.off_variant_key;
    // A first write that leaves rules out stores the default rule for the off variant it leaves.
    const keptRules = current.version === 0 ? initialRulesFor(stored.flag.variants, offVariantKey) : current.rules;
    const next: StoredFlagState = {
      enabled: patch.enabled ?? current.enabled,
      off_variant_key: offVariantKey,
      rules: patch.rules === undefined ? keptRules : viaJson(patch.rules),
      prerequisites: patch.prerequisites === undefined ? current.prerequisites : viaJson(patch.prerequisites),
      hashing: patch.hashing === undefined ? current.hashing : viaJson(patch.hashing),
      version: current.version + 1,
      updated_at_ms: this.state.now(),
    };
    this.state.flagStates.set(stateKey(scope, stored), next);
    return mergedView(stored, next);
  }

  private findDefinition(scope: ProjectScope, key: string): StoredFlagDefinition | undefined {
    for (const stored of this.state.flags.values()) {
      if (stored.orgId === scope.orgId && stored.projectId === scope.projectId && stored.flag.key === key) return stored;
    }
    return undefined;
  }

  private definitionsOf(scope: ProjectScope): StoredFlagDefinition[] {
    return [...this.state.flags.values()]
      .filter((stored) => stored.orgId === scope.orgId && stored.projectId === scope.projectId)
      .sort((a, b) => compareKeys(a.flag.key, b.flag.key));
  }

  /** The definition, or NOT_FOUND; ABORTED when an expected version is given and differs. */
  private requireDefinition(scope: ProjectScope, key: string, expectedVersion: number | undefined): StoredFlagDefinition {
    const stored = this.findDefinition(scope, key);
    if (!stored) throw notFound('flag', key);
    if (expectedVersion !== undefined && expectedVersion !== stored.flag.version) {
      throw versionConflict('flag', expectedVersion, stored.flag.version);
    }
    return stored;
  }

  private touchDefinition(stored: StoredFlagDefinition): void {
    stored.flag.version += 1;
    stored.flag.updated_at_ms = this.state.now();
  }

  /** Every written state of the project's flags, with its flag key and environment name. */
  private prerequisiteHolders(scope: ProjectScope): PrerequisiteHolder[] {
    const holders: PrerequisiteHolder[] = [];
    for (const stored of this.definitionsOf(scope)) {
      for (const [k, state] of this.state.flagStates) {
        if (!k.endsWith(`/${stored.id}`) || state.prerequisites.length === 0) continue;
        const environmentId = k.slice(0, k.indexOf('/'));
        holders.push({ flag_key: stored.flag.key, environment: this.state.environments.get(environmentId)?.name ?? environmentId, prerequisites: state.prerequisites });
      }
    }
    return holders;
  }

  private stateOf(scope: EnvironmentScope, stored: StoredFlagDefinition): StoredFlagState {
    return this.state.flagStates.get(stateKey(scope, stored)) ?? absentState(stored);
  }
}

const stateKey = (scope: EnvironmentScope, stored: StoredFlagDefinition): string => `${scope.environmentId}/${stored.id}`;

/** The project's view: definition version, environment fields at their defaults. */
function definitionView(stored: StoredFlagDefinition): Flag {
  return viaJson({ ...stored.flag, enabled: false, off_variant_key: null, rules: [], hashing: [] });
}

/** One environment's view: definition fields, that environment's state and state version. */
function mergedView(stored: StoredFlagDefinition, state: StoredFlagState): Flag {
  return viaJson({
    ...stored.flag,
    enabled: state.enabled,
    off_variant_key: state.off_variant_key,
    rules: state.rules,
    // Absent when none, as PostgreSQL's view has it.
    ...(state.prerequisites.length > 0 ? { prerequisites: state.prerequisites } : {}),
    hashing: state.hashing,
    version: state.version,
    // A change to either half changes what the environment sees.
    updated_at_ms: Math.max(stored.flag.updated_at_ms, state.updated_at_ms),
  });
}
