import {
  DEFAULT_ANALYSIS,
  DomainError,
  failedPrecondition,
  metricEventKeys,
  metricFromKey,
  parseAnalysis,
  parseMetrics,
  studiedRule,
  invalidArgument,
  nextStatus,
  notFound,
  parseExperimentStatus,
  versionConflict,
  type EnvironmentScope,
  type Experiment,
  type ExperimentInput,
  type ExperimentIteration,
  type ExperimentMetric,
  type ExperimentResults,
  type Flag,
  type Principal,
  type Repositories,
  type ChangeNotifier,
} from '@switchyard/core';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { eventValueTypes, requireRegisteredEventKeys } from './event-value-types.ts';
import { experimentRecord } from './experiment-records.ts';
import type { ScopeResolver } from '../scopes.ts';
import { PowerCalculator, type ExperimentPowerAnswer, type ExperimentPowerQuery, type PowerAnswer, type PowerBody } from './power-service.ts';
import {
  MAX_EXPERIMENT_DESCRIPTION,
  MAX_EXPERIMENT_NAME,
  MAX_METRIC_KEYS,
  MAX_TRANSITION_REASON,
  MAX_VARIANT_KEYS,
  checkFlagKey,
  checkKeyList,
  checkTrafficAllocation,
  optionalText,
  optionalVersion,
  present,
  type ExperimentBody,
  type TransitionBody,
} from './experiment-input.ts';

const DRAFT = 'EXPERIMENT_STATUS_DRAFT';
const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';

const sameKeys = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((key, i) => key === b[i]);

function checkKeyText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 128) throw invalidArgument(`${field} must be a non-empty string of at most 128 characters`, field);
  return value;
}

/** control_variant_key: one of the experiment's variants. */
function checkControl(value: unknown, variantKeys: readonly string[]): string {
  const key = checkKeyText(value, 'control_variant_key');
  if (!variantKeys.includes(key)) throw invalidArgument(`control_variant_key '${key}' must be one of variant_keys (${variantKeys.join(', ')})`, 'control_variant_key');
  return key;
}

/** rule_id: the id of one of the flag's rules (whether it allocates over the variants is checked on start). */
function checkRule(flag: Flag, value: unknown): string {
  const id = checkKeyText(value, 'rule_id');
  if (!flag.rules.some((rule) => rule.id === id)) {
    throw invalidArgument(`rule_id '${id}' is not a rule of flag '${flag.key}' (its rules: ${flag.rules.map((rule) => rule.id).join(', ') || 'none'})`, 'rule_id');
  }
  return id;
}

/**
 * ExperimentationService (svc.experiments.v1): experiments of an environment, their lifecycle
 * (core's transition rule; the repository opens and closes iterations in the same transaction)
 * and their latest results, with `is_stale` worked out on every read.
 *
 * Writes are validated against the environment: the flag must exist (and not be archived), the
 * variant keys must be its variants (default: all of them, at least two), the control one of them,
 * the rule a rule of the flag, the metrics' event keys registered event definitions (core's
 * analysis-input.ts checks their shape). The flag, the variants, the rule and the control change
 * only in DRAFT; metrics and analysis settings in any status (docs/decisions.md "Experiments and
 * statistics"). Entering ACTIVE needs the studied rule (core's studied-rule.ts).
 */
export class ExperimentService {
  constructor(
    private readonly repos: Pick<Repositories, 'experiments' | 'results' | 'experimentData' | 'flags' | 'eventDefinitions' | 'unitOfWork' | 'power'>,
    private readonly scopes: ScopeResolver,
    private readonly now: () => number = Date.now,
    /** Told when an environment's set of ACTIVE experiments changes: evaluate records exposures for their flags. */
    private readonly notifier?: ChangeNotifier,
  ) {
    this.calculator = new PowerCalculator(repos, now);
  }

  private readonly calculator: PowerCalculator;

  /** The scope of an environment id from a URL or request (another org's: NOT_FOUND). */
  scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  async list(principal: Principal, scope: EnvironmentScope): Promise<Experiment[]> {
    this.authorize(principal, 'experiment.read', scope);
    return this.repos.experiments.list(scope);
  }

  async get(principal: Principal, scope: EnvironmentScope, experimentId: string): Promise<Experiment> {
    this.authorize(principal, 'experiment.read', scope);
    return this.require(scope, experimentId);
  }

  async create(principal: Principal, scope: EnvironmentScope, body: ExperimentBody): Promise<Experiment> {
    this.authorize(principal, 'experiment.write', scope);
    const flag = await this.requireFlag(scope, checkFlagKey(body.flag_key));
    const variantKeys = this.checkVariants(flag, body.variant_keys);
    const input: ExperimentInput = {
      name: optionalText(body.name, 'name', MAX_EXPERIMENT_NAME) ?? '',
      description: optionalText(body.description, 'description', MAX_EXPERIMENT_DESCRIPTION) ?? '',
      flagKey: flag.key,
      variantKeys,
      metrics: (await this.checkMetrics(scope, body)) ?? [],
      trafficAllocation: present(body.traffic_allocation) ? checkTrafficAllocation(body.traffic_allocation) : 1,
      ruleId: present(body.rule_id) ? checkRule(flag, body.rule_id) : null,
      controlVariantKey: present(body.control_variant_key) ? checkControl(body.control_variant_key, variantKeys) : (variantKeys[0] ?? ''),
      analysis: present(body.analysis) ? parseAnalysis(body.analysis) : { ...DEFAULT_ANALYSIS },
    };
    return this.repos.unitOfWork.run(async (tx) => {
      const experiment = await tx.experiments.create(scope, input);
      await this.record(tx, principal, scope, 'experiment.create', experiment.id, null, experiment);
      return experiment;
    });
  }

  /** PATCH and PUT: the fields given change, the others keep their value. */
  async update(principal: Principal, scope: EnvironmentScope, experimentId: string, body: ExperimentBody): Promise<Experiment> {
    this.authorize(principal, 'experiment.write', scope);
    const version = optionalVersion(body.version);
    const current = await this.require(scope, experimentId);
    const patch: Partial<ExperimentInput> = {};
    const name = optionalText(body.name, 'name', MAX_EXPERIMENT_NAME);
    if (name !== undefined) patch.name = name;
    const description = optionalText(body.description, 'description', MAX_EXPERIMENT_DESCRIPTION);
    if (description !== undefined) patch.description = description;
    if (present(body.traffic_allocation)) patch.trafficAllocation = checkTrafficAllocation(body.traffic_allocation);
    const metrics = await this.checkMetrics(scope, body);
    if (metrics !== undefined) patch.metrics = metrics;
    if (present(body.analysis)) patch.analysis = parseAnalysis(body.analysis);

    // 1. The flag and its variants: only in DRAFT, and only when they really change (a PUT may
    //    send them back unchanged). A new flag without variant_keys takes all its variants.
    const flagKey = present(body.flag_key) ? checkFlagKey(body.flag_key) : current.flagKey;
    const variantsGiven = present(body.variant_keys);
    let flag: Flag | undefined;
    if (flagKey !== current.flagKey || (variantsGiven && !sameKeys(checkKeyList(body.variant_keys, 'variant_keys', MAX_VARIANT_KEYS), current.variantKeys))) {
      if (current.status !== DRAFT) {
        throw failedPrecondition(`flag_key and variant_keys can change only in ${DRAFT} (the experiment is ${current.status})`);
      }
      flag = await this.requireFlag(scope, flagKey);
      patch.flagKey = flag.key;
      patch.variantKeys = this.checkVariants(flag, variantsGiven ? body.variant_keys : undefined);
    }
    // 2. The rule and the control, also only in DRAFT when they really change. New variant_keys
    //    without control_variant_key make their first the control (as before the field existed);
    //    rule_id null is a value (the default rule), absent keeps it.
    const variantKeys = patch.variantKeys ?? current.variantKeys;
    const control = present(body.control_variant_key)
      ? checkKeyText(body.control_variant_key, 'control_variant_key')
      : patch.variantKeys !== undefined ? (patch.variantKeys[0] ?? '') : current.controlVariantKey;
    const ruleId = body.rule_id === undefined ? current.ruleId : body.rule_id === null ? null : checkKeyText(body.rule_id, 'rule_id');
    const controlChanges = control !== current.controlVariantKey;
    const ruleChanges = ruleId !== current.ruleId;
    if ((controlChanges || ruleChanges) && current.status !== DRAFT) {
      throw failedPrecondition(`rule_id and control_variant_key can change only in ${DRAFT} (the experiment is ${current.status})`);
    }
    if (controlChanges || patch.variantKeys !== undefined) checkControl(control, variantKeys);
    if (controlChanges) patch.controlVariantKey = control;
    if (ruleId !== null && (ruleChanges || patch.flagKey !== undefined)) checkRule(flag ?? (await this.requireFlag(scope, flagKey)), ruleId);
    if (ruleChanges) patch.ruleId = ruleId;
    if (version !== undefined && version !== current.version) {
      throw versionConflict('experiment', version, current.version);
    }
    // 3. A change allowed only in DRAFT is checked against the status read above: guard the write
    //    with that version, so a transition in between makes this write fail (ABORTED) instead of slipping through.
    const draftOnly = patch.flagKey !== undefined || patch.variantKeys !== undefined || controlChanges || ruleChanges;
    const guard = version ?? (draftOnly ? current.version : undefined);
    return this.repos.unitOfWork.run(async (tx) => {
      // Read again in the transaction: without a version guard another write may have come
      // between the checks above and this update.
      const before = await tx.experiments.get(scope, experimentId);
      const updated = await tx.experiments.update(scope, experimentId, patch, guard);
      await this.record(tx, principal, scope, 'experiment.update', experimentId, before, updated);
      return updated;
    });
  }

  /** Deletes with its iterations and results; returns the deleted experiment. */
  async remove(principal: Principal, scope: EnvironmentScope, experimentId: string, version?: number): Promise<Experiment> {
    this.authorize(principal, 'experiment.write', scope);
    const deleted = await this.repos.unitOfWork.run(async (tx) => {
      const removed = await tx.experiments.delete(scope, experimentId, version);
      await this.record(tx, principal, scope, 'experiment.delete', experimentId, removed, null);
      return removed;
    });
    await this.announce(scope);
    return deleted;
  }

  /**
   * Moves the experiment to `new_status` (docs/contract.md "Experiments and statistics"): 409 FAILED_PRECONDITION for a move the
   * lifecycle forbids, 409 ABORTED when the experiment changed meanwhile (or `version` is stale).
   * Entering ACTIVE needs the flag to still exist. The reason goes to the audit log.
   */
  async transition(principal: Principal, scope: EnvironmentScope, experimentId: string, body: TransitionBody): Promise<Experiment> {
    this.authorize(principal, 'experiment.write', scope);
    const to = parseExperimentStatus(body.new_status, 'new_status');
    const reason = optionalText(body.reason, 'reason', MAX_TRANSITION_REASON) ?? '';
    const version = optionalVersion(body.version);
    const current = await this.require(scope, experimentId);
    nextStatus(current.status, to);
    if (to === ACTIVE) {
      const flag = await this.repos.flags.get(scope, current.flagKey);
      if (!flag || flag.archived) throw failedPrecondition(`flag '${current.flagKey}' no longer exists in this environment: the experiment cannot run`);
      // The rule whose allocation the experiment studies must be there, on every entry into ACTIVE:
      // the flag's rules may have changed while it was paused.
      const studied = studiedRule(flag, current);
      if ('reason' in studied) throw failedPrecondition(`${studied.reason}: the experiment cannot run`);
    }
    // Entering ACTIVE was checked against the experiment read above (its rule and control): guard
    // the move with that version, so a change in between makes it fail (ABORTED) instead of slipping through.
    const guard = version ?? (to === ACTIVE ? current.version : undefined);
    const moved = await this.repos.unitOfWork.run(async (tx) => {
      const after = await tx.experiments.transition(scope, experimentId, { from: current.status, to, atMs: this.now() }, guard);
      await this.record(tx, principal, scope, 'experiment.transition', experimentId, current, after, { from: current.status, to, reason });
      return after;
    });
    await this.announce(scope);
    return moved;
  }

  async iterations(principal: Principal, scope: EnvironmentScope, experimentId: string): Promise<ExperimentIteration[]> {
    this.authorize(principal, 'experiment.read', scope);
    await this.require(scope, experimentId);
    return this.repos.experiments.listIterations(scope, experimentId);
  }

  /**
   * The latest computed results and whether they are stale (docs/contract.md "Experiments and statistics": exposures of the flag
   * or events of the metrics arrived after computed_at_ms).
   * @throws NOT_FOUND for an unknown experiment, or before the first computation
   */
  async results(principal: Principal, scope: EnvironmentScope, experimentId: string): Promise<{ results: ExperimentResults; isStale: boolean }> {
    this.authorize(principal, 'experiment.read', scope);
    const experiment = await this.require(scope, experimentId);
    const results = await this.repos.results.get(scope, experimentId);
    if (!results) {
      throw new DomainError('NOT_FOUND', `results of experiment '${experimentId}' not computed yet (POST /v1/experiments/${experimentId}/recompute)`);
    }
    const isStale = await this.repos.experimentData.dataArrivedSince(scope, {
      flagKey: experiment.flagKey,
      // The event keys the metrics read (a metric's key need not be one).
      metricKeys: [...new Set(experiment.metrics.flatMap(metricEventKeys))],
      sinceMs: results.computedAtMs,
    });
    return { results, isStale };
  }

  /**
   * Power and duration for an experiment not yet created (docs/contract.md "Power and duration",
   * docs/statistics.md §14): a read of the environment's events, so `experiment.read`.
   */
  async power(principal: Principal, scope: EnvironmentScope, body: PowerBody): Promise<PowerAnswer> {
    this.authorize(principal, 'experiment.read', scope);
    return this.calculator.estimate(scope, body ?? {});
  }

  /** Power and duration of an existing experiment, per metric, with its current power while it runs. */
  async experimentPower(principal: Principal, scope: EnvironmentScope, experimentId: string, query: ExperimentPowerQuery): Promise<ExperimentPowerAnswer> {
    this.authorize(principal, 'experiment.read', scope);
    const experiment = await this.require(scope, experimentId);
    return this.calculator.forExperiment(scope, experiment, query ?? {});
  }

  // --- helpers ---

  private authorize(principal: Principal, action: 'experiment.read' | 'experiment.write', scope: EnvironmentScope): void {
    requireAllowed(principal, action, { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
  }

  private async require(scope: EnvironmentScope, experimentId: string): Promise<Experiment> {
    const experiment = await this.repos.experiments.get(scope, experimentId);
    if (!experiment) throw notFound('experiment', experimentId);
    return experiment;
  }

  private async requireFlag(scope: EnvironmentScope, key: string): Promise<Flag> {
    const flag = await this.repos.flags.get(scope, key);
    if (!flag) throw invalidArgument(`flag '${key}' does not exist in this environment`, 'flag_key');
    if (flag.archived) throw invalidArgument(`flag '${key}' is archived`, 'flag_key');
    return flag;
  }

  /** The given keys (each a variant of the flag), or all the flag's variants; at least two. */
  private checkVariants(flag: Flag, value: unknown): string[] {
    const known = flag.variants.map((variant) => variant.key);
    const keys = present(value) ? checkKeyList(value, 'variant_keys', MAX_VARIANT_KEYS) : known.slice(0, MAX_VARIANT_KEYS);
    const unknown = keys.filter((key) => !known.includes(key));
    if (unknown.length > 0) throw invalidArgument(`variant_keys: ${unknown.join(', ')} not among the variants of flag '${flag.key}' (${known.join(', ')})`, 'variant_keys');
    if (keys.length < 2) {
      throw invalidArgument(`an experiment compares at least 2 variants (flag '${flag.key}' ${present(value) ? 'was given' : 'has'} ${keys.length})`, 'variant_keys');
    }
    return keys;
  }

  /**
   * The metrics a body sets, or undefined when it sets none: `metrics` parsed by core, or
   * `metric_keys` each as metricFromKey (by the event's value type). Both at once only when
   * metric_keys lists exactly the metrics' keys (a record sent back as it was answered). Every
   * event key read must be a registered event definition of the environment.
   */
  private async checkMetrics(scope: EnvironmentScope, body: ExperimentBody): Promise<ExperimentMetric[] | undefined> {
    const keys = present(body.metric_keys) ? checkKeyList(body.metric_keys, 'metric_keys', MAX_METRIC_KEYS) : undefined;
    if (!present(body.metrics)) {
      if (keys === undefined) return undefined;
      if (keys.length === 0) return [];
      const valueTypes = await eventValueTypes(this.repos, scope);
      const unknown = keys.filter((key) => !valueTypes.has(key));
      if (unknown.length > 0) throw invalidArgument(`metric_keys: ${unknown.join(', ')} not registered as event definitions of this environment`, 'metric_keys');
      return keys.map((key) => metricFromKey(key, valueTypes.get(key) ?? 'double'));
    }
    const metrics = parseMetrics(body.metrics);
    if (keys !== undefined && !sameKeys(keys, metrics.map((metric) => metric.key))) {
      throw invalidArgument('send metrics or metric_keys, not both (metric_keys may come with metrics only listing exactly their keys, in order)', 'metric_keys');
    }
    if (metrics.length === 0) return metrics;
    requireRegisteredEventKeys(metrics, await eventValueTypes(this.repos, scope), (i) => `metrics[${i}]`);
    return metrics;
  }

  /** The evaluation snapshots carry the flags under ACTIVE experiments: refresh them everywhere. */
  private async announce(scope: EnvironmentScope): Promise<void> {
    await this.notifier?.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: scope.environmentId }));
  }

  private async record(tx: Repositories, principal: Principal, scope: EnvironmentScope, action: string, experimentId: string, before: Experiment | null, after: Experiment | null, details: Record<string, unknown> = {}): Promise<void> {
    await recordChange(tx, principal, {
      orgId: scope.orgId,
      action,
      resourceType: 'experiment',
      resourceId: experimentId,
      projectId: scope.projectId,
      environmentId: scope.environmentId,
      before: before && experimentRecord(before),
      after: after && experimentRecord(after),
      details,
    }, this.now());
  }
}
