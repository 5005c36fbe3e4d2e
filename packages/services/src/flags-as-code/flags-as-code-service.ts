import {
  authorize,
  FLAGS_DOCUMENT_LIMITS,
  invalidArgument,
  isDomainError,
  parseFlagsDocument,
  type ChangeNotifier,
  type DocumentEnvironment,
  type DocumentFlag,
  type Environment,
  type EnvironmentScope,
  type Flag,
  type FlagsDocument,
  type Principal,
  type ProjectScope,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { EventDefinitionCache } from '../events/event-definition-cache.ts';
import { EventDefinitionService } from '../events/event-definition-service.ts';
import { FlagService, type FlagTarget } from '../flags/flag-service.ts';
import type { ScopeResolver } from '../scopes.ts';
import { SegmentService } from '../segments/segment-service.ts';
import { exportDocument } from './document-export.ts';
import { configForm, CONFIG_FIELDS, definitionForm, DEFINITION_FIELDS, eventDefinitionForm, fieldsOf, segmentForm } from './document-forms.ts';
import { ImportLedger, sameJson, type ImportItemKind, type ImportOutcome } from './import-outcome.ts';
import { listChange, readMembers } from './segment-members.ts';

export interface ExportOptions {
  /** Environments to include, by id; absent: every environment of the project. */
  environmentIds?: string[];
  /** Write each flag's definition and configuration version, so that an import of the document changes only what is still as exported. */
  includeVersions?: boolean;
}

export interface ImportOptions {
  dryRun: boolean;
  /** Delete flags the document does not list, and segments and event definitions its environments do not list. */
  prune: boolean;
}

/** A write that ended where it began: its savepoint is rolled back so it leaves no version bump or history entry. */
const NO_CHANGE = Symbol('no change');
/** Ends a dry run, or an import with a refusal, by rolling its transaction back. */
class RolledBack extends Error {}

type Repos = Pick<Repositories, 'flags' | 'segments' | 'environments' | 'experiments' | 'eventDefinitions' | 'projects' | 'unitOfWork'>;

/**
 * Flags as code (docs/flags-as-code.md): a project's flags, and chosen environments' flag
 * configurations, segments and event definitions, as one document; and the import of such a
 * document as one transaction.
 *
 * An import makes every change through the same service methods as a person's write (their
 * validation, permissions, optimistic versions, protected environments and change-history
 * entries), inside one unit of work: each change in a savepoint of its own, so a refused change
 * is reported with its reason and the others still checked. The answer is the exact difference
 * the transaction made; a dry run, or any refusal, rolls it all back. Announcements to
 * evaluation and sync streams are held until the commit.
 */
export class FlagsAsCodeService {
  constructor(
    private readonly repos: Repos,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly eventDefinitionCache: Pick<EventDefinitionCache, 'changed'>,
    private readonly now: () => number = Date.now,
  ) {}

  scope(principal: Principal, projectId: string): Promise<ProjectScope> {
    return this.scopes.project(principal, projectId);
  }

  /** Needs read access to the project's flags (a viewer of the project), then each list's own read permission. */
  async export(principal: Principal, project: ProjectScope, options: ExportOptions = {}): Promise<FlagsDocument> {
    requireAllowed(principal, 'flag.read', project);
    const environments = await this.chosenEnvironments(principal, project, options.environmentIds);
    const services = this.servicesOn(this.repos, this.notifier, this.eventDefinitionCache);
    return exportDocument(services, principal, project, environments, options.includeVersions ?? false);
  }

  /**
   * Needs write access to the project's flags (an editor of the project: a document defines flags),
   * checked before anything is read; each change then checks its own permission as the API would.
   */
  async import(principal: Principal, project: ProjectScope, input: unknown, options: ImportOptions): Promise<ImportOutcome> {
    requireAllowed(principal, 'flag.write', project);
    const document = parseFlagsDocument(input);
    const announcements = new Map<string, [string, string]>();
    const cacheChanges = new Map<string, EnvironmentScope>();
    const deferredNotifier: ChangeNotifier = {
      publish: async (channel, payload) => void announcements.set(`${channel}\n${payload}`, [channel, payload]),
      subscribe: () => Promise.reject(new Error('an import does not subscribe')),
    };
    const deferredCache = { changed: async (scope: EnvironmentScope) => void cacheChanges.set(scope.environmentId, scope) };
    const ledger = new ImportLedger();
    try {
      await this.repos.unitOfWork.run(async (tx) => {
        await new ImportRun(this.servicesOn(tx, deferredNotifier, deferredCache), tx, principal, project, document, options.prune, ledger).run();
        if (options.dryRun || ledger.refused.length > 0) throw new RolledBack();
      });
    } catch (error) {
      if (error instanceof RolledBack) return ledger.outcome(options.dryRun, false);
      throw error;
    }
    for (const [channel, payload] of announcements.values()) await this.notifier.publish(channel, payload);
    for (const scope of cacheChanges.values()) await this.eventDefinitionCache.changed(scope);
    return ledger.outcome(false, true);
  }

  /**
   * The environments asked for, or (none asked for) every environment whose flags the caller may
   * read: someone who edits staging only exports staging. Asked for by id, one the caller may not
   * read is refused by its reads (PERMISSION_DENIED) rather than left out unsaid.
   */
  private async chosenEnvironments(principal: Principal, project: ProjectScope, ids: readonly string[] | undefined): Promise<Environment[]> {
    const all = await this.repos.environments.list(project);
    if (ids === undefined || ids.length === 0) {
      return all.filter((environment) => authorize(principal, 'flag.read', { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id }).allowed);
    }
    const byId = new Map(all.map((environment) => [environment.id, environment]));
    const chosen: Environment[] = [];
    for (const id of new Set(ids)) {
      const environment = byId.get(id);
      if (!environment) throw invalidArgument(`environment_ids: '${id}' is not an environment of this project`, 'environment_ids');
      chosen.push(environment);
    }
    return chosen;
  }

  private servicesOn(repos: Repos, notifier: ChangeNotifier, cache: Pick<EventDefinitionCache, 'changed'>): ImportServices {
    return {
      flags: new FlagService(repos, this.scopes, notifier, this.now),
      segments: new SegmentService(repos, this.scopes, notifier, this.now),
      eventDefinitions: new EventDefinitionService(repos, this.scopes, cache, this.now),
    };
  }
}

export interface ImportServices {
  flags: FlagService;
  segments: SegmentService;
  eventDefinitions: EventDefinitionService;
}

/** One import, inside its transaction: the steps in the order that lets references resolve. */
class ImportRun {
  private readonly projectTarget: FlagTarget;
  private definitions = new Map<string, Flag>();
  private readonly environments = new Map<string, EnvironmentScope>();

  constructor(
    private readonly services: ImportServices,
    private readonly tx: Repos,
    private readonly principal: Principal,
    private readonly project: ProjectScope,
    private readonly document: FlagsDocument,
    private readonly prune: boolean,
    private readonly ledger: ImportLedger,
  ) {
    this.projectTarget = { project };
  }

  async run(): Promise<void> {
    this.definitions = new Map((await this.services.flags.list(this.principal, this.projectTarget)).map((flag) => [flag.key, flag]));
    const byName = new Map((await this.tx.environments.list(this.project)).map((environment) => [environment.name, environment]));
    for (const name of Object.keys(this.document.environments)) {
      const environment = byName.get(name);
      if (!environment) {
        this.ledger.refuse('environment', name, undefined, `the project has no environment named '${name}' (an import does not create environments)`, 'NOT_FOUND');
        continue;
      }
      this.environments.set(name, { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id });
    }

    // 1. Definitions, with every variant they have now kept (rules still name them until step 4).
    for (const flag of this.document.flags) await this.writeDefinition(flag);
    // 2-4. Each environment's event definitions, segments (rules name them) and flag configurations.
    for (const [name, scope] of this.environments) {
      const environment = this.document.environments[name]!;
      await this.writeEventDefinitions(name, scope, environment);
      await this.writeSegments(name, scope, environment);
      await this.writeConfigs(name, scope, environment);
    }
    // 5. Archiving and removing variants, once no configuration names them any more.
    for (const flag of this.document.flags) await this.finishDefinition(flag);
    // 6. Pruning, after every configuration stopped naming what goes.
    if (this.prune) await this.pruneAll();
  }

  /** One change in a savepoint: refused (with its reason) or noted, never half done. */
  private async step(kind: ImportItemKind, key: string, environment: string | undefined, work: () => Promise<{ before: Record<string, unknown> | null; after: Record<string, unknown> | null }>): Promise<void> {
    try {
      await this.tx.unitOfWork.run(async () => {
        const { before, after } = await work();
        if (before !== null && after !== null && sameJson(before, after)) throw NO_CHANGE;
        this.ledger.wrote(kind, key, environment, before, after);
      });
    } catch (error) {
      if (error === NO_CHANGE) return;
      if (isDomainError(error)) {
        this.ledger.refuse(kind, key, environment, error.message, error.code);
        return;
      }
      throw error;
    }
  }

  private async writeDefinition(flag: DocumentFlag): Promise<void> {
    const current = this.definitions.get(flag.key);
    const wanted = fieldsOf(flag, DEFINITION_FIELDS.filter((name) => name !== 'archived'));
    if (!current) {
      await this.step('flag', flag.key, undefined, async () => {
        const created = await this.services.flags.create(this.principal, this.projectTarget, { flag: { key: flag.key, ...wanted } });
        this.definitions.set(flag.key, created);
        return { before: null, after: definitionForm(created) };
      });
      return;
    }
    const changed = differing(definitionForm(current), wanted);
    if (changed.variants !== undefined && (changed.value_type === undefined || changed.value_type === current.value_type)) {
      // Variants the document drops may still be served until the configurations change: dropped at the end (finishDefinition).
      const kept = new Set((changed.variants as Array<{ key?: unknown }>).map((variant) => variant?.key));
      changed.variants = [...(changed.variants as unknown[]), ...current.variants.filter((variant) => !kept.has(variant.key))];
      if (sameJson(changed.variants, current.variants)) delete changed.variants;
    }
    const unarchive = flag.archived === false && current.archived;
    if (Object.keys(changed).length === 0 && !unarchive && flag.version === undefined) return;
    await this.step('flag', flag.key, undefined, async () => {
      let updated = current;
      if (unarchive) updated = await this.services.flags.archive(this.principal, this.projectTarget, flag.key, false, flag.version);
      if (Object.keys(changed).length > 0 || (!unarchive && flag.version !== undefined)) {
        updated = await this.services.flags.update(this.principal, this.projectTarget, flag.key, { flag: changed, ...(unarchive || flag.version === undefined ? {} : { version: flag.version }) });
      }
      this.definitions.set(flag.key, updated);
      return { before: definitionForm(current), after: definitionForm(updated) };
    });
  }

  private async finishDefinition(flag: DocumentFlag): Promise<void> {
    const current = this.definitions.get(flag.key);
    if (!current) return;
    const dropsVariants = flag.variants !== undefined && !sameJson(current.variants, flag.variants);
    const archive = flag.archived === true && !current.archived;
    if (!dropsVariants && !archive) return;
    await this.step('flag', flag.key, undefined, async () => {
      let updated = current;
      if (dropsVariants) updated = await this.services.flags.update(this.principal, this.projectTarget, flag.key, { flag: { variants: flag.variants } });
      if (archive) updated = await this.services.flags.archive(this.principal, this.projectTarget, flag.key, true);
      this.definitions.set(flag.key, updated);
      return { before: definitionForm(current), after: definitionForm(updated) };
    });
  }

  private async writeEventDefinitions(name: string, scope: EnvironmentScope, environment: DocumentEnvironment): Promise<void> {
    const service = this.services.eventDefinitions;
    const current = new Map((await service.list(this.principal, scope)).map((definition) => [definition.key, definition]));
    for (const definition of environment.event_definitions) {
      const existing = current.get(definition.key);
      const { key, ...fields } = definition;
      if (!existing) {
        await this.step('event_definition', key, name, async () => ({ before: null, after: eventDefinitionForm(await service.create(this.principal, scope, definition)) }));
        continue;
      }
      const changed = differing(eventDefinitionForm(existing), fields);
      if (Object.keys(changed).length === 0) continue;
      await this.step('event_definition', key, name, async () => ({
        before: eventDefinitionForm(existing),
        after: eventDefinitionForm(await service.update(this.principal, scope, key, changed)),
      }));
    }
  }

  private async writeSegments(name: string, scope: EnvironmentScope, environment: DocumentEnvironment): Promise<void> {
    const service = this.services.segments;
    const current = new Map((await service.list(this.principal, scope)).map((segment) => [segment.key, segment]));
    for (const segment of environment.segments) {
      const existing = current.get(segment.key);
      const { key, members_omitted: _omitted, ...fields } = segment;
      if (!existing) {
        await this.step('segment', key, name, async () => ({ before: null, after: segmentForm(await service.create(this.principal, scope, { key, ...fields })) }));
        continue;
      }
      const { included_keys, excluded_keys, ...recordFields } = fields;
      const changed = differing(segmentForm(existing), recordFields);
      const before: Record<string, unknown> = segmentForm(existing);
      const after: Record<string, unknown> = {};
      const lists: { included_keys?: string[]; excluded_keys?: string[] } = {};
      if (existing.kind === 'list' && changed.kind === undefined) {
        for (const [list, field, keys] of [['included', 'included_keys', included_keys], ['excluded', 'excluded_keys', excluded_keys]] as const) {
          if (keys === undefined) continue;
          const stored = await readMembers(service, this.principal, scope, key, list, FLAGS_DOCUMENT_LIMITS.membersPerList);
          const change = stored === null ? { added: keys.length, removed: existing[`${list}_count`] } : listChange(stored, keys);
          if (stored !== null && change.added === 0 && change.removed === 0) continue;
          lists[field] = keys;
          before[field] = { count: existing[`${list}_count`] };
          after[field] = { count: new Set(keys).size, ...change };
        }
      } else if (included_keys !== undefined || excluded_keys !== undefined) {
        Object.assign(lists, { included_keys, excluded_keys });
      }
      if (Object.keys(changed).length === 0 && Object.keys(lists).length === 0) continue;
      await this.step('segment', key, name, async () => {
        const updated = await service.update(this.principal, scope, key, { ...changed, ...lists });
        return { before, after: { ...segmentForm(updated), ...after } };
      });
    }
  }

  /**
   * The environment's flag configurations, each flag's prerequisites first. The flags are read
   * once per environment (a configuration's write changes no other flag's), not once per entry.
   */
  private async writeConfigs(name: string, scope: EnvironmentScope, environment: DocumentEnvironment): Promise<void> {
    const target: FlagTarget = { environment: scope };
    const flags = this.services.flags;
    const keys = prerequisitesFirst(environment);
    let shown: Map<string, Flag>;
    try {
      shown = new Map((await flags.list(this.principal, target)).map((flag) => [flag.key, flag]));
    } catch (error) {
      if (!isDomainError(error)) throw error;
      for (const key of keys) this.ledger.refuse('flag_environment', key, name, error.message, error.code);
      return;
    }
    for (const key of keys) {
      const { version, ...fields } = environment.flags[key]!;
      const current = shown.get(key);
      if (!this.definitions.has(key) || current === undefined) {
        this.ledger.refuse('flag_environment', key, name, `flag '${key}' is neither in the project nor in the document's flags`, 'NOT_FOUND');
        continue;
      }
      const changed = differing(configForm(current), fieldsOf(fields, CONFIG_FIELDS));
      if (Object.keys(changed).length === 0 && version === undefined) continue;
      await this.step('flag_environment', key, name, async () => {
        const updated = await flags.update(this.principal, target, key, { flag: changed, ...(version === undefined ? {} : { version }) });
        return { before: configForm(current), after: configForm(updated) };
      });
    }
  }

  private async pruneAll(): Promise<void> {
    const listed = new Set(this.document.flags.map((flag) => flag.key));
    for (const [key, flag] of this.definitions) {
      if (listed.has(key)) continue;
      await this.step('flag', key, undefined, async () => {
        await this.services.flags.remove(this.principal, this.projectTarget, key);
        return { before: definitionForm(flag), after: null };
      });
    }
    for (const [name, scope] of this.environments) {
      const environment = this.document.environments[name]!;
      const segments = new Set(environment.segments.map((segment) => segment.key));
      for (const segment of await this.services.segments.list(this.principal, scope)) {
        if (segments.has(segment.key)) continue;
        await this.step('segment', segment.key, name, async () => {
          await this.services.segments.remove(this.principal, scope, segment.key);
          return { before: segmentForm(segment), after: null };
        });
      }
      const definitions = new Set(environment.event_definitions.map((definition) => definition.key));
      for (const definition of await this.services.eventDefinitions.list(this.principal, scope)) {
        if (definitions.has(definition.key)) continue;
        await this.step('event_definition', definition.key, name, async () => {
          await this.services.eventDefinitions.remove(this.principal, scope, definition.key);
          return { before: eventDefinitionForm(definition), after: null };
        });
      }
    }
  }
}

/** The wanted fields whose value differs from the current form's. */
function differing(current: Record<string, unknown>, wanted: Record<string, unknown>): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(wanted)) if (!sameJson(current[name], value)) changed[name] = value;
  return changed;
}

/**
 * The environment's flag keys with each flag's prerequisites (as the document gives them) before
 * it, so that a document which reverses a dependency writes the new direction only after the old
 * one is gone; a cycle in the document itself is left for the write to refuse.
 */
function prerequisitesFirst(environment: DocumentEnvironment): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (key: string): void => {
    if (state.has(key) || environment.flags[key] === undefined) return;
    state.set(key, 'visiting');
    const prerequisites = environment.flags[key]!.prerequisites;
    if (Array.isArray(prerequisites)) {
      for (const prerequisite of prerequisites) {
        const named = (prerequisite as { flag_key?: unknown } | null)?.flag_key;
        if (typeof named === 'string') visit(named);
      }
    }
    state.set(key, 'done');
    order.push(key);
  };
  for (const key of Object.keys(environment.flags)) visit(key);
  return order;
}
