import {
  checkHashing,
  checkKey,
  checkOffVariant,
  checkRules,
  checkValueType,
  checkVariants,
  versionConflict,
  invalidArgument,
  notFound,
  referencedSegmentKeys,
  type ChangeNotifier,
  type EnvironmentScope,
  type Flag,
  type FlagEnvironmentStateInput,
  type HashingConfig,
  type Principal,
  type ProjectScope,
  type Repositories,
  type Rule,
  type Variant,
} from '@switchyard/core';
import { actorOf, requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from './definition-events.ts';

/** Where a flag route points: one environment (merged view) or a project's definitions. */
export type FlagTarget = { environment: EnvironmentScope } | { project: ProjectScope };

/** The create/update body (docs/contract.md "Flags"): `{flag, key?, enabled?, version?}`; top-level fields win. */
export interface FlagWriteBody {
  flag?: Record<string, unknown> | null;
  key?: string | null;
  enabled?: boolean | null;
  version?: number | null;
}

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/** Merges the top-level fields over the `flag` object (docs/contract.md "Flags"). */
function mergeBody(body: FlagWriteBody): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...(body.flag ?? {}) };
  if (present(body.key)) fields.key = body.key;
  if (present(body.enabled)) fields.enabled = body.enabled;
  if (present(body.version)) fields.version = body.version;
  return fields;
}

function optionalVersion(value: unknown): number | undefined {
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidArgument('version must be an integer >= 0', 'version');
  return value;
}

function optionalDescription(value: unknown): string | undefined {
  if (!present(value)) return undefined;
  if (typeof value !== 'string' || value.length > 2000) throw invalidArgument('description must be a string of at most 2000 characters', 'description');
  return value;
}

function optionalEnabled(value: unknown): boolean | undefined {
  if (!present(value)) return undefined;
  if (typeof value !== 'boolean') throw invalidArgument('enabled must be a boolean', 'enabled');
  return value;
}

/**
 * FlagService (svc.flags.v1): flag definitions (project-level) and their per-environment state,
 * validated before anything is written, with optimistic locking on every mutation. Each change
 * is announced on DEFINITIONS_CHANGED_CHANNEL so evaluation snapshots and sync streams refresh
 * on every instance.
 */
export class FlagService {
  constructor(
    private readonly repos: Pick<Repositories, 'flags' | 'segments' | 'audit'>,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves a route's id; `via: 'project'` accepts a project id or an environment id. */
  async target(principal: Principal, id: string, via: 'environment' | 'project'): Promise<FlagTarget> {
    if (via === 'environment') return { environment: await this.scopes.environment(principal, id) };
    return this.scopes.projectOrEnvironment(principal, id);
  }

  async list(principal: Principal, target: FlagTarget): Promise<Flag[]> {
    this.authorize(principal, 'flag.read', target);
    return 'environment' in target ? this.repos.flags.list(target.environment) : this.repos.flags.listDefinitions(target.project);
  }

  async get(principal: Principal, target: FlagTarget, key: string): Promise<Flag> {
    this.authorize(principal, 'flag.read', target);
    const flag = 'environment' in target ? await this.repos.flags.get(target.environment, key) : await this.repos.flags.getDefinition(target.project, key);
    if (!flag) throw notFound('flag', key);
    return flag;
  }

  /** Creates the definition and, on an environment route, that environment's state. */
  async create(principal: Principal, target: FlagTarget, body: FlagWriteBody): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    const fields = mergeBody(body);
    const key = checkKey(fields.key, 'key');
    const valueType = checkValueType(fields.value_type);
    const variants = checkVariants(valueType, fields.variants ?? []);
    const description = optionalDescription(fields.description) ?? '';
    const project = this.projectScope(target);
    let state: FlagEnvironmentStateInput | null = null;
    if ('environment' in target) state = await this.checkState(target.environment, variants, fields);
    else if (present(fields.rules) || present(fields.enabled) || present(fields.off_variant_key)) {
      throw invalidArgument('a project-level flag has no rules, enabled or off_variant_key: set them on an environment', 'flag');
    }

    let flag = await this.repos.flags.createDefinition(project, { key, description, value_type: valueType, variants });
    if ('environment' in target && state) flag = await this.repos.flags.updateState(target.environment, key, state, 0);
    await this.changed(principal, target, 'flag.create', key);
    return flag;
  }

  /** Replaces the fields present in the body; `version` (if given) must match. */
  async update(principal: Principal, target: FlagTarget, key: string, body: FlagWriteBody): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    const fields = mergeBody(body);
    if (present(fields.key) && fields.key !== key) throw invalidArgument('key cannot change', 'key');
    const version = optionalVersion(fields.version);
    const current = await this.get(principal, target, key);
    const valueType = present(fields.value_type) ? checkValueType(fields.value_type) : current.value_type;
    const variants = present(fields.variants) || valueType !== current.value_type ? checkVariants(valueType, fields.variants ?? current.variants) : current.variants;
    const description = optionalDescription(fields.description);
    const definitionChanged = description !== undefined || present(fields.variants) || valueType !== current.value_type;

    if ('project' in target) {
      if (present(fields.rules) || present(fields.enabled) || present(fields.off_variant_key)) {
        throw invalidArgument('a project-level flag has no rules, enabled or off_variant_key: set them on an environment', 'flag');
      }
      const flag = await this.repos.flags.updateDefinition(target.project, key, { description, value_type: valueType, variants }, version);
      await this.changed(principal, target, 'flag.update', key);
      return flag;
    }
    const state = await this.checkState(target.environment, variants, { ...current, ...fields });
    // The environment's version guards the whole update: the state is written first, under that
    // check, so of two concurrent writers the loser fails before it touches the definition.
    if (version !== undefined && version !== current.version) {
      throw versionConflict('flag', version, current.version);
    }
    let flag = await this.repos.flags.updateState(target.environment, key, state, current.version);
    if (definitionChanged) {
      await this.repos.flags.updateDefinition(this.projectScope(target), key, { description, value_type: valueType, variants });
      flag = (await this.repos.flags.get(target.environment, key)) ?? flag;
    }
    await this.changed(principal, target, 'flag.update', key, definitionChanged ? 'project' : 'environment');
    return flag;
  }

  async remove(principal: Principal, target: FlagTarget, key: string, version?: number): Promise<void> {
    this.authorize(principal, 'flag.write', target);
    const expected = await this.definitionVersionFor(principal, target, key, version);
    await this.repos.flags.deleteDefinition(this.projectScope(target), key, expected);
    await this.changed(principal, target, 'flag.delete', key);
  }

  async archive(principal: Principal, target: FlagTarget, key: string, archived: boolean, version?: number): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    const expected = await this.definitionVersionFor(principal, target, key, version);
    await this.repos.flags.setArchived(this.projectScope(target), key, archived, expected);
    await this.changed(principal, target, archived ? 'flag.archive' : 'flag.unarchive', key);
    return this.get(principal, target, key);
  }

  /** `PUT .../rules`: replaces the environment's targeting rules. */
  async replaceRules(principal: Principal, target: FlagTarget, key: string, rules: unknown, version?: number): Promise<Flag> {
    const environment = this.requireEnvironment(target, 'rules');
    this.authorize(principal, 'flag.write', target);
    const current = await this.get(principal, target, key);
    const checked = checkRules(new Set(current.variants.map((v) => v.key)), rules);
    await this.checkSegmentsExist(environment, checked);
    const flag = await this.repos.flags.updateState(environment, key, { rules: checked }, version ?? current.version);
    await this.changed(principal, target, 'flag.rules', key, 'environment');
    return flag;
  }

  /** `POST .../variants`: adds variants; an existing key gets the new value. */
  async upsertVariants(principal: Principal, target: FlagTarget, key: string, variants: unknown): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    const current = await this.get(principal, target, key);
    const incoming = checkVariants(current.value_type, variants);
    const merged: Variant[] = current.variants.map((v) => incoming.find((n) => n.key === v.key) ?? v);
    for (const variant of incoming) if (!merged.some((v) => v.key === variant.key)) merged.push(variant);
    checkVariants(current.value_type, merged);
    await this.repos.flags.updateDefinition(this.projectScope(target), key, { variants: merged });
    await this.changed(principal, target, 'flag.variants', key);
    return this.get(principal, target, key);
  }

  /** `PUT .../hashing`: the flag's default hash input in this environment. */
  async updateHashing(principal: Principal, target: FlagTarget, key: string, configs: unknown, version?: number): Promise<{ flag: Flag; configs: HashingConfig[] }> {
    const environment = this.requireEnvironment(target, 'hashing');
    this.authorize(principal, 'flag.write', target);
    const checked = checkHashing(configs);
    const current = await this.get(principal, target, key);
    const flag = await this.repos.flags.updateState(environment, key, { hashing: checked }, version ?? current.version);
    await this.changed(principal, target, 'flag.hashing', key, 'environment');
    return { flag, configs: flag.hashing };
  }

  // --- helpers ---

  private authorize(principal: Principal, action: 'flag.read' | 'flag.write', target: FlagTarget): void {
    const scope = 'environment' in target ? target.environment : target.project;
    requireAllowed(principal, action, { orgId: scope.orgId, ...('environment' in target ? { environmentId: target.environment.environmentId } : {}) });
  }

  private projectScope(target: FlagTarget): ProjectScope {
    const scope = 'environment' in target ? target.environment : target.project;
    return { orgId: scope.orgId, projectId: scope.projectId };
  }

  private requireEnvironment(target: FlagTarget, what: string): EnvironmentScope {
    if (!('environment' in target)) throw invalidArgument(`${what} are set per environment: use an environment id`, 'id');
    return target.environment;
  }

  /**
   * Delete and archive act on the definition; on an environment route the supplied `version` is
   * the environment's (what that route shows), so it is checked there and the definition is then
   * changed without a second check.
   */
  private async definitionVersionFor(principal: Principal, target: FlagTarget, key: string, version?: number): Promise<number | undefined> {
    if (!('environment' in target) || version === undefined) return version;
    const current = await this.get(principal, target, key);
    if (current.version !== version) {
      throw versionConflict('flag', version, current.version);
    }
    return undefined;
  }

  private async checkState(environment: EnvironmentScope, variants: Variant[], fields: Record<string, unknown>): Promise<FlagEnvironmentStateInput> {
    const variantKeys = new Set(variants.map((v) => v.key));
    const rules: Rule[] = checkRules(variantKeys, fields.rules ?? []);
    await this.checkSegmentsExist(environment, rules);
    return {
      enabled: optionalEnabled(fields.enabled) ?? false,
      off_variant_key: checkOffVariant(variantKeys, fields.off_variant_key),
      rules,
      hashing: checkHashing(fields.hashing ?? []),
    };
  }

  private async checkSegmentsExist(environment: EnvironmentScope, rules: Rule[]): Promise<void> {
    const wanted = referencedSegmentKeys(rules);
    if (wanted.length === 0) return;
    const existing = new Set((await this.repos.segments.list(environment)).map((s) => s.key));
    const missing = wanted.filter((key) => !existing.has(key));
    if (missing.length > 0) throw invalidArgument(`rules reference segments that do not exist in this environment: ${missing.join(', ')}`, 'rules');
  }

  /**
   * Audits and announces a change. A definition change is visible in every environment of the
   * project, so it is announced for the project; a state change only for its environment.
   */
  private async changed(principal: Principal, target: FlagTarget, action: string, key: string, reach: 'environment' | 'project' = 'project'): Promise<void> {
    const scope = 'environment' in target ? target.environment : target.project;
    await this.repos.audit.append({ orgId: scope.orgId, actor: actorOf(principal), action, resourceType: 'flag', resourceId: key, atMs: this.now(), details: { target: 'environment' in target ? target.environment.environmentId : target.project.projectId } });
    await this.notifier.publish(
      DEFINITIONS_CHANGED_CHANNEL,
      encodeChange('environment' in target && reach === 'environment' ? { environmentId: target.environment.environmentId } : { projectId: scope.projectId }),
    );
  }
}
