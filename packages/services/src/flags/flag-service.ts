import {
  checkBucketBy,
  checkFlagListFilter,
  checkLifetime,
  checkMaintainer,
  checkTags,
  flagMatchesFilter,
  withMetadataDefaults,
  checkHashing,
  checkKey,
  checkOffVariant,
  checkPrerequisites,
  checkRules,
  checkValueType,
  checkVariants,
  failedPrecondition,
  variantUses,
  initialRulesFor,
  versionConflict,
  invalidArgument,
  notFound,
  type ChangeNotifier,
  type EnvironmentScope,
  type Flag,
  type FlagDefinitionInput,
  type FlagEnvironmentStateInput,
  type HashingConfig,
  type Principal,
  type ProjectScope,
  type Repositories,
  type Rule,
  type Variant,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import type { ScopeResolver } from '../scopes.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from './definition-events.ts';
import { asShown, checkSegmentReferences, checkStudiedRules, servesOnlyItsVariants } from './flag-state-checks.ts';
import { cancelFlagSchedules } from '../schedules/schedule-cancellation.ts';

/** Where a flag route points: one environment (merged view) or a project's definitions. */
export type FlagTarget = { environment: EnvironmentScope } | { project: ProjectScope };

/** The create/update body (docs/contract.md "Flags"): `{flag, key?, enabled?, version?}`; top-level fields win. */
export interface FlagWriteBody {
  flag?: Record<string, unknown> | null;
  key?: string | null;
  enabled?: boolean | null;
  /** Project-level (docs/client-side.md "What a client sees"). */
  client_visible?: boolean | null;
  version?: number | null;
}

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/** Merges the top-level fields over the `flag` object (docs/contract.md "Flags"). */
function mergeBody(body: FlagWriteBody): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...(body.flag ?? {}) };
  if (present(body.key)) fields.key = body.key;
  if (present(body.enabled)) fields.enabled = body.enabled;
  if (present(body.client_visible)) fields.client_visible = body.client_visible;
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

function optionalClientVisible(value: unknown): boolean | undefined {
  if (!present(value)) return undefined;
  if (typeof value !== 'boolean') throw invalidArgument('client_visible must be a boolean', 'client_visible');
  return value;
}

/**
 * The project-level metadata fields present in the body, checked (docs/contract.md "Flag
 * metadata"). Absent (or null, except `maintainer`, where null removes it): not in the result.
 */
function metadataFields(fields: Record<string, unknown>): Pick<FlagDefinitionInput, 'tags' | 'lifetime' | 'maintainer' | 'bucket_by'> {
  const out: Pick<FlagDefinitionInput, 'tags' | 'lifetime' | 'maintainer' | 'bucket_by'> = {};
  if (present(fields.tags)) out.tags = checkTags(fields.tags);
  if (present(fields.lifetime)) out.lifetime = checkLifetime(fields.lifetime);
  if (fields.maintainer !== undefined) out.maintainer = checkMaintainer(fields.maintainer);
  if (present(fields.bucket_by)) out.bucket_by = checkBucketBy(fields.bucket_by);
  return out;
}

/** The metadata fields of `requested` that differ from the flag's current ones (the rest left out). */
function changedMetadata(
  requested: Pick<FlagDefinitionInput, 'tags' | 'lifetime' | 'maintainer' | 'bucket_by'>,
  current: Flag,
): Pick<FlagDefinitionInput, 'tags' | 'lifetime' | 'maintainer' | 'bucket_by'> {
  const shown = withMetadataDefaults(current);
  const out: Pick<FlagDefinitionInput, 'tags' | 'lifetime' | 'maintainer' | 'bucket_by'> = {};
  if (requested.tags !== undefined && requested.tags.join('\n') !== shown.tags!.join('\n')) out.tags = requested.tags;
  if (requested.lifetime !== undefined && requested.lifetime !== shown.lifetime) out.lifetime = requested.lifetime;
  if (requested.maintainer !== undefined && requested.maintainer !== shown.maintainer) out.maintainer = requested.maintainer;
  if (requested.bucket_by !== undefined && requested.bucket_by !== shown.bucket_by) out.bucket_by = requested.bucket_by;
  return out;
}

/** Which level of a flag an audit entry describes: its definition, or one environment's flag. */
type FlagLevel = { environment: EnvironmentScope } | 'definition';

/**
 * FlagService (svc.flags.v1): flag definitions (project-level) and their per-environment state,
 * validated before anything is written, with optimistic locking on every mutation. Each write
 * runs in one unit of work with its audit entries — one per level it changes: the definition
 * (no environment) and/or one environment's flag (docs/decisions.md "Change history") — and is
 * then announced on DEFINITIONS_CHANGED_CHANNEL so evaluation snapshots and sync streams refresh
 * on every instance.
 */
export class FlagService {
  constructor(
    private readonly repos: Pick<Repositories, 'flags' | 'segments' | 'environments' | 'experiments' | 'unitOfWork'>,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves a route's id; `via: 'project'` accepts a project id or an environment id. */
  async target(principal: Principal, id: string, via: 'environment' | 'project'): Promise<FlagTarget> {
    if (via === 'environment') return { environment: await this.scopes.environment(principal, id) };
    return this.scopes.projectOrEnvironment(principal, id);
  }

  /**
   * The flags of an environment or project; `query` (the list routes' `tag` and `lifetime`,
   * unchecked) keeps those carrying every tag named and of that lifetime.
   * @throws INVALID_ARGUMENT naming `tag` or `lifetime`.
   */
  async list(principal: Principal, target: FlagTarget, query: { tag?: unknown; lifetime?: unknown } = {}): Promise<Flag[]> {
    this.authorize(principal, 'flag.read', target);
    const filter = checkFlagListFilter(query);
    const flags = 'environment' in target ? await this.repos.flags.list(target.environment) : await this.repos.flags.listDefinitions(target.project);
    return flags.filter((flag) => flagMatchesFilter(flag, filter)).map(asShown);
  }

  async get(principal: Principal, target: FlagTarget, key: string): Promise<Flag> {
    return asShown(await this.find(principal, target, key));
  }

  /** The stored document (prerequisites absent when none), for the writes' checks and audit entries. */
  private async find(principal: Principal, target: FlagTarget, key: string): Promise<Flag> {
    this.authorize(principal, 'flag.read', target);
    const flag = 'environment' in target ? await this.repos.flags.get(target.environment, key) : await this.repos.flags.getDefinition(target.project, key);
    if (!flag) throw notFound('flag', key);
    return flag;
  }

  /**
   * Creates the definition and, on an environment route, that environment's state. There, `rules`
   * left out (null over the gateway's JSON) means the default rule (initialRulesFor;
   * docs/contract.md "Default rule"); an explicit `[]` stays empty. On the project route no state
   * is written: every environment shows the default rule until its first write (the
   * repositories' unwritten view).
   */
  async create(principal: Principal, target: FlagTarget, body: FlagWriteBody): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    this.authorizeDefinitionWrite(principal, target);
    const fields = mergeBody(body);
    const key = checkKey(fields.key, 'key');
    const valueType = checkValueType(fields.value_type);
    const variants = checkVariants(valueType, fields.variants ?? []);
    const description = optionalDescription(fields.description) ?? '';
    // Absent: the project's client_visible_default, read by the repository in the same statement.
    const clientVisible = optionalClientVisible(fields.client_visible);
    const metadata = metadataFields(fields);
    const project = this.projectScope(target);
    let state: FlagEnvironmentStateInput | null = null;
    if ('environment' in target) state = await this.checkState(target.environment, key, variants, fields, 'default rule when absent');
    else if (present(fields.rules) || present(fields.enabled) || present(fields.off_variant_key) || present(fields.prerequisites)) {
      throw invalidArgument('a project-level flag has no rules, prerequisites, enabled or off_variant_key: set them on an environment', 'flag');
    }

    const flag = await this.repos.unitOfWork.run(async (tx) => {
      let created = await tx.flags.createDefinition(project, {
        key,
        description,
        value_type: valueType,
        variants,
        ...(clientVisible === undefined ? {} : { client_visible: clientVisible }),
        ...metadata,
      });
      await this.record(tx, principal, project, key, 'flag.create', 'definition', null, await tx.flags.getDefinition(project, key));
      if ('environment' in target && state) {
        created = await tx.flags.updateState(target.environment, key, state, 0);
        await this.record(tx, principal, project, key, 'flag.create', target, null, created);
      }
      return created;
    });
    await this.announce(target);
    return asShown(flag);
  }

  /** Replaces the fields present in the body; `version` (if given) must match. */
  async update(principal: Principal, target: FlagTarget, key: string, body: FlagWriteBody): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    const fields = mergeBody(body);
    if (present(fields.key) && fields.key !== key) throw invalidArgument('key cannot change', 'key');
    const version = optionalVersion(fields.version);
    const current = await this.find(principal, target, key);
    const valueType = present(fields.value_type) ? checkValueType(fields.value_type) : current.value_type;
    const variants = present(fields.variants) || valueType !== current.value_type ? checkVariants(valueType, fields.variants ?? current.variants) : current.variants;
    const description = optionalDescription(fields.description);
    const requestedVisible = optionalClientVisible(fields.client_visible);
    const clientVisible = requestedVisible !== undefined && requestedVisible !== current.client_visible ? requestedVisible : undefined;
    // Tags, lifetime, maintainer and bucket_by are the definition's too: a change needs the
    // definition's authorization and is in its change-history entry (an unchanged value is no change).
    const metadata = changedMetadata(metadataFields(fields), current);
    const definitionChanged =
      description !== undefined || present(fields.variants) || valueType !== current.value_type || clientVisible !== undefined || Object.keys(metadata).length > 0;
    if (definitionChanged) this.authorizeDefinitionWrite(principal, target);
    if (variants !== current.variants) await this.checkRemovedVariants(this.projectScope(target), key, current.variants, variants);
    if (metadata.bucket_by !== undefined) await this.checkNoActiveExperiment(this.projectScope(target), key);

    if ('project' in target) {
      if (present(fields.rules) || present(fields.enabled) || present(fields.off_variant_key) || present(fields.prerequisites)) {
        throw invalidArgument('a project-level flag has no rules, prerequisites, enabled or off_variant_key: set them on an environment', 'flag');
      }
      const flag = await this.repos.unitOfWork.run(async (tx) => {
        const updated = await tx.flags.updateDefinition(target.project, key, { description, value_type: valueType, variants, client_visible: clientVisible, ...metadata }, version);
        await this.record(tx, principal, target.project, key, 'flag.update', 'definition', current, updated);
        return updated;
      });
      await this.announce(target);
      return asShown(flag);
    }
    // An environment that never wrote the flag (version 0) shows a derived default rule: unless the
    // body sets rules, its first write derives it again from the variants and off variant it leaves.
    // Prerequisites left out keep the current list (the repository checks a given one's references
    // and cycles under its lock), so they are not merged in from what the flag shows.
    const { rules: shownRules, prerequisites: _shownPrerequisites, ...shown } = current;
    const unwritten = current.version === 0;
    const state = await this.checkState(
      target.environment,
      key,
      variants,
      unwritten ? { ...shown, ...fields } : { ...shown, rules: shownRules, ...fields },
      unwritten ? 'default rule when absent' : 'none',
    );
    await this.checkStudiedRules(target.environment, current, state.rules ?? current.rules);
    // The environment's version guards the whole update: the state is written first, under that
    // check, so of two concurrent writers the loser fails before it touches the definition.
    if (version !== undefined && version !== current.version) {
      throw versionConflict('flag', version, current.version);
    }
    const project = this.projectScope(target);
    const flag = await this.repos.unitOfWork.run(async (tx) => {
      let updated = await tx.flags.updateState(target.environment, key, state, current.version);
      if (definitionChanged) {
        const definitionBefore = await tx.flags.getDefinition(project, key);
        await tx.flags.updateDefinition(project, key, { description, value_type: valueType, variants, client_visible: clientVisible, ...metadata });
        await this.record(tx, principal, project, key, 'flag.update', 'definition', definitionBefore, await tx.flags.getDefinition(project, key));
        updated = (await tx.flags.get(target.environment, key)) ?? updated;
      }
      servesOnlyItsVariants(updated);
      await this.record(tx, principal, project, key, 'flag.update', target, current, updated);
      return updated;
    });
    await this.announce(target, definitionChanged ? 'project' : 'environment');
    return asShown(flag);
  }

  async remove(principal: Principal, target: FlagTarget, key: string, version?: number): Promise<void> {
    this.authorize(principal, 'flag.write', target);
    this.authorizeDefinitionWrite(principal, target);
    const expected = await this.definitionVersionFor(principal, target, key, version);
    const project = this.projectScope(target);
    await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.flags.getDefinition(project, key);
      await tx.flags.deleteDefinition(project, key, expected);
      await this.record(tx, principal, project, key, 'flag.delete', 'definition', before, null);
      await cancelFlagSchedules(tx, principal, project, key, 'the flag was deleted', this.now());
    });
    await this.announce(target);
  }

  async archive(principal: Principal, target: FlagTarget, key: string, archived: boolean, version?: number): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    this.authorizeDefinitionWrite(principal, target);
    const expected = await this.definitionVersionFor(principal, target, key, version);
    const project = this.projectScope(target);
    await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.flags.getDefinition(project, key);
      const after = await tx.flags.setArchived(project, key, archived, expected);
      await this.record(tx, principal, project, key, archived ? 'flag.archive' : 'flag.unarchive', 'definition', before, after);
      if (archived) await cancelFlagSchedules(tx, principal, project, key, 'the flag was archived', this.now());
    });
    await this.announce(target);
    return this.get(principal, target, key);
  }

  /** `PUT .../rules`: replaces the environment's targeting rules. */
  async replaceRules(principal: Principal, target: FlagTarget, key: string, rules: unknown, version?: number): Promise<Flag> {
    const environment = this.requireEnvironment(target, 'rules');
    this.authorize(principal, 'flag.write', target);
    const current = await this.find(principal, target, key);
    const checked = checkRules(new Set(current.variants.map((v) => v.key)), rules);
    await this.checkSegmentReferences(environment, checked);
    await this.checkStudiedRules(environment, current, checked);
    const flag = await this.repos.unitOfWork.run(async (tx) => {
      const updated = await tx.flags.updateState(environment, key, { rules: checked }, version ?? current.version);
      servesOnlyItsVariants(updated);
      await this.record(tx, principal, environment, key, 'flag.rules', { environment }, current, updated);
      return updated;
    });
    await this.announce(target, 'environment');
    return asShown(flag);
  }

  /** `POST .../variants`: adds variants; an existing key gets the new value. */
  async upsertVariants(principal: Principal, target: FlagTarget, key: string, variants: unknown): Promise<Flag> {
    this.authorize(principal, 'flag.write', target);
    this.authorizeDefinitionWrite(principal, target);
    const current = await this.find(principal, target, key);
    const incoming = checkVariants(current.value_type, variants);
    const merged: Variant[] = current.variants.map((v) => incoming.find((n) => n.key === v.key) ?? v);
    for (const variant of incoming) if (!merged.some((v) => v.key === variant.key)) merged.push(variant);
    checkVariants(current.value_type, merged);
    const project = this.projectScope(target);
    await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.flags.getDefinition(project, key);
      await tx.flags.updateDefinition(project, key, { variants: merged });
      await this.record(tx, principal, project, key, 'flag.variants', 'definition', before, await tx.flags.getDefinition(project, key));
    });
    await this.announce(target);
    return this.get(principal, target, key);
  }

  /** `PUT .../hashing`: the flag's default hash input in this environment. */
  async updateHashing(principal: Principal, target: FlagTarget, key: string, configs: unknown, version?: number): Promise<{ flag: Flag; configs: HashingConfig[] }> {
    const environment = this.requireEnvironment(target, 'hashing');
    this.authorize(principal, 'flag.write', target);
    const checked = checkHashing(configs);
    const current = await this.find(principal, target, key);
    const flag = await this.repos.unitOfWork.run(async (tx) => {
      const updated = await tx.flags.updateState(environment, key, { hashing: checked }, version ?? current.version);
      await this.record(tx, principal, environment, key, 'flag.hashing', { environment }, current, updated);
      return updated;
    });
    await this.announce(target, 'environment');
    return { flag: asShown(flag), configs: flag.hashing };
  }

  // --- helpers ---

  private authorize(principal: Principal, action: 'flag.read' | 'flag.write', target: FlagTarget): void {
    // A project route's definitions are project-level (no environment): editor on the project writes them.
    requireAllowed(principal, action, 'environment' in target ? target.environment : { orgId: target.project.orgId, projectId: target.project.projectId });
  }

  /**
   * A write of the project's definition (create, delete, archive, variants, value type, description,
   * client visibility, tags, lifetime, maintainer, bucket_by), also through an environment route: editor on the project, not only on the
   * environment (docs/access.md "Roles and bindings (decision rules)").
   */
  private authorizeDefinitionWrite(principal: Principal, target: FlagTarget): void {
    const project = this.projectScope(target);
    requireAllowed(principal, 'flag.write', { orgId: project.orgId, projectId: project.projectId });
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
    const current = await this.find(principal, target, key);
    if (current.version !== version) {
      throw versionConflict('flag', version, current.version);
    }
    return undefined;
  }

  /** An ACTIVE experiment's studied rule stays (flag-state-checks.ts). */
  private checkStudiedRules(environment: EnvironmentScope, current: Flag, rules: Rule[]): Promise<void> {
    return checkStudiedRules(this.repos, environment, current, rules);
  }

  /**
   * A variant may leave the flag only when nothing serves it: no rule and no off variant in any
   * environment of the project (409 FAILED_PRECONDITION naming where it is served). Checked
   * before the write, as a segment's delete checks its users: a rule saved in the same instant,
   * against the variants it read just before, is not seen.
   */
  /**
   * A change of bucket_by reshuffles every split of the flag (docs/decisions.md "bucket_by"): under
   * an ACTIVE experiment that would move participants between arms mid-run, so it is refused
   * (409 FAILED_PRECONDITION naming the experiments), in every environment of the project since
   * bucket_by is project-level. Pausing or concluding the experiment first lets it through.
   */
  private async checkNoActiveExperiment(project: ProjectScope, key: string): Promise<void> {
    const running: string[] = [];
    for (const environment of await this.repos.environments.list(project)) {
      const scope = { ...project, environmentId: environment.id };
      for (const experiment of await this.repos.experiments.list(scope)) {
        if (experiment.flagKey === key && experiment.status === 'EXPERIMENT_STATUS_ACTIVE') running.push(`'${experiment.name || experiment.id}' in ${environment.name}`);
      }
    }
    if (running.length > 0) {
      throw failedPrecondition(`bucket_by cannot change while an experiment on the flag is ACTIVE (it would move participants between arms; pause or conclude it first): ${running.join(', ')}`);
    }
  }

  private async checkRemovedVariants(project: ProjectScope, key: string, before: Variant[], after: Variant[]): Promise<void> {
    const kept = new Set(after.map((v) => v.key));
    const removed = before.map((v) => v.key).filter((k) => !kept.has(k));
    if (removed.length === 0) return;
    const problems: string[] = [];
    for (const environment of await this.repos.environments.list(project)) {
      const flag = await this.repos.flags.get({ ...project, environmentId: environment.id }, key);
      // Version 0: the environment never wrote the flag; its default rule is derived on read from
      // the variants that remain, so it never serves a removed one.
      if (!flag || flag.version === 0) continue;
      for (const variant of removed) {
        const uses = variantUses(flag, variant);
        if (uses.length > 0) problems.push(`'${variant}' is served in ${environment.name} by ${uses.join(' and ')}`);
      }
    }
    if (problems.length > 0) throw failedPrecondition(`a variant that is served cannot be removed: ${problems.join('; ')}`);
  }

  /**
   * `absentRules`: what `rules` left out means — none (an update of a written environment merges
   * the current rules in), or the default rule (create; the first write of an environment).
   */
  private async checkState(
    environment: EnvironmentScope,
    key: string,
    variants: Variant[],
    fields: Record<string, unknown>,
    absentRules: 'none' | 'default rule when absent' = 'none',
  ): Promise<FlagEnvironmentStateInput> {
    const variantKeys = new Set(variants.map((v) => v.key));
    const given = present(fields.rules) || absentRules === 'none' ? checkRules(variantKeys, fields.rules ?? []) : null;
    const offVariantKey = checkOffVariant(variantKeys, fields.off_variant_key);
    const rules: Rule[] = given ?? initialRulesFor(variants, offVariantKey);
    await this.checkSegmentReferences(environment, rules);
    // Absent: the current list (none on a first write). Given: its shape here; its references,
    // cycles and chain length in the repository's write, under the environment's prerequisite lock.
    const prerequisites = present(fields.prerequisites) ? checkPrerequisites(key, fields.prerequisites) : undefined;
    return {
      enabled: optionalEnabled(fields.enabled) ?? false,
      off_variant_key: offVariantKey,
      rules,
      ...(prerequisites === undefined ? {} : { prerequisites }),
      hashing: checkHashing(fields.hashing ?? []),
    };
  }

  /** The segments the rules name exist, within the flag's pattern budget (flag-state-checks.ts). */
  private checkSegmentReferences(environment: EnvironmentScope, rules: Rule[]): Promise<void> {
    return checkSegmentReferences(this.repos, environment, rules);
  }

  /**
   * The audit entry of one level of a flag: the definition (project-level, no environment; its
   * before/after as the project route shows it) or one environment's flag (as that environment's
   * route shows it).
   */
  private async record(tx: Repositories, principal: Principal, project: ProjectScope, key: string, action: string, level: FlagLevel, before: Flag | null, after: Flag | null): Promise<void> {
    await recordChange(tx, principal, {
      orgId: project.orgId,
      action,
      resourceType: 'flag',
      resourceId: key,
      projectId: project.projectId,
      environmentId: level === 'definition' ? null : level.environment.environmentId,
      before,
      after,
    }, this.now());
  }

  /**
   * Announces a committed change. A definition change is visible in every environment of the
   * project, so it is announced for the project; a state change only for its environment.
   */
  private async announce(target: FlagTarget, reach: 'environment' | 'project' = 'project'): Promise<void> {
    const scope = 'environment' in target ? target.environment : target.project;
    await this.notifier.publish(
      DEFINITIONS_CHANGED_CHANNEL,
      encodeChange('environment' in target && reach === 'environment' ? { environmentId: target.environment.environmentId } : { projectId: scope.projectId }),
    );
  }
}
