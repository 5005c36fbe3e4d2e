import {
  invalidArgument,
  MAX_CONTEXT_ATTRIBUTE_NAME_LENGTH,
  MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT,
  MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT,
  SDK_KEY_USE_INTERVAL_MS,
  type ContextAttributeRepository,
  type EnvironmentScope,
  type EvaluationContext,
  type Principal,
  type SdkKeyRepository,
  type SdkKeyUse,
  type SeenContextAttribute,
  isKeyPrincipal,
} from '@switchyard/core';

/** At most this many uses in one report (a gateway sends at most this many per batch). */
export const MAX_KEY_USES_PER_REPORT = 500;
/** At most this many context attributes in one report (and at most 50 of one environment). */
export const MAX_CONTEXT_ATTRIBUTES_PER_REPORT = 500;

const isUse = (value: unknown): value is SdkKeyUse => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const use = value as Record<string, unknown>;
  return ['sdkKeyId', 'orgId', 'projectId', 'environmentId'].every((field) => typeof use[field] === 'string' && (use[field] as string).length <= 64);
};

const isNameText = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= MAX_CONTEXT_ATTRIBUTE_NAME_LENGTH;

const isSeenAttribute = (value: unknown): value is SeenContextAttribute => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const seen = value as Record<string, unknown>;
  return ['orgId', 'projectId', 'environmentId'].every((field) => typeof seen[field] === 'string' && (seen[field] as string).length <= 64) && isNameText(seen.contextType) && isNameText(seen.name);
};

/** True when no environment has more than MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT attributes in the report. */
function withinEnvironmentBound(attributes: readonly SeenContextAttribute[]): boolean {
  const perEnvironment = new Map<string, number>();
  for (const { environmentId } of attributes) {
    const count = (perEnvironment.get(environmentId) ?? 0) + 1;
    if (count > MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT) return false;
    perEnvironment.set(environmentId, count);
  }
  return true;
}

/**
 * Writes keys' last uses (docs/contract.md "Last use of a key": `last_used_at_ms`) and the attribute
 * names their evaluated contexts used (docs/contract.md "Context attributes"). The single process
 * hands it its KeyUsageRecorder's batches; a gateway sends its own over the hop
 * (KeyUsageGatewayService.RecordUses, no caller: the batch names keys, not one credential). Each
 * use is written only in the scope it names and only once per SDK_KEY_USE_INTERVAL_MS per key,
 * whoever reports it, so a report can do no more than mark a key of the named scope as used; an
 * attribute is written only into an environment of the scope it names, at most
 * MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT kept per environment.
 */
export class KeyUsageService {
  constructor(
    private readonly sdkKeys: Pick<SdkKeyRepository, 'recordUses'>,
    private readonly contextAttributes: Pick<ContextAttributeRepository, 'record'>,
  ) {}

  /**
   * @param attributes optional (a gateway from before attributes sends none).
   * @throws INVALID_ARGUMENT for a report that is not a list of at most 500 uses, or attributes
   * that are not a list of at most 500 {orgId, projectId, environmentId, contextType, name}
   * (names of 1 to 64 characters), at most 50 of one environment.
   */
  async recordUses(uses: unknown, attributes: unknown = []): Promise<void> {
    if (!Array.isArray(uses) || uses.length > MAX_KEY_USES_PER_REPORT || !uses.every(isUse)) {
      throw invalidArgument(`uses must be a list of at most ${MAX_KEY_USES_PER_REPORT} {sdkKeyId, orgId, projectId, environmentId}`, 'uses');
    }
    if (!Array.isArray(attributes) || attributes.length > MAX_CONTEXT_ATTRIBUTES_PER_REPORT || !attributes.every(isSeenAttribute) || !withinEnvironmentBound(attributes)) {
      throw invalidArgument(
        `attributes must be a list of at most ${MAX_CONTEXT_ATTRIBUTES_PER_REPORT} {orgId, projectId, environmentId, contextType, name}, ` +
          `at most ${MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT} of one environment, names of 1 to ${MAX_CONTEXT_ATTRIBUTE_NAME_LENGTH} characters`,
        'attributes',
      );
    }
    const plain = uses.map(({ sdkKeyId, orgId, projectId, environmentId }) => ({ sdkKeyId, orgId, projectId, environmentId }));
    if (plain.length > 0) await this.sdkKeys.recordUses(plain, SDK_KEY_USE_INTERVAL_MS);
    if (attributes.length > 0) {
      const seen = attributes.map(({ orgId, projectId, environmentId, contextType, name }) => ({ orgId, projectId, environmentId, contextType, name }));
      await this.contextAttributes.record(seen, MAX_CONTEXT_ATTRIBUTES_PER_ENVIRONMENT);
    }
  }
}

export interface KeyUsageRecorderOptions {
  /** A key's use is reported at most this often by this process (default SDK_KEY_USE_INTERVAL_MS). */
  intervalMs?: number;
  /** Uses are gathered this long before they are sent in one batch (default 1 s). */
  batchDelayMs?: number;
  /** Keys remembered as reported; beyond it the entries older than the interval are dropped. */
  maxTrackedKeys?: number;
  /** Environments whose context attributes are remembered (default 1000); beyond it, a new one's are not noted. */
  maxTrackedEnvironments?: number;
  /** (context type, name) pairs remembered per environment (default 200); beyond it, new ones are not noted. */
  maxTrackedAttributes?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
}

/** One environment's context attributes on this instance: pairs reported (→ when) and waiting. */
interface EnvironmentAttributes {
  reported: Map<string, number>;
  pending: Map<string, SeenContextAttribute>;
  /** When a pair of it was last noted: an environment quiet for the interval can be forgotten whole. */
  lastNotedAt: number;
}

/**
 * Notes the keys used on this instance — sync streams opened, evaluations answered — from the hot
 * path with no I/O: a key already reported within the interval costs one map lookup. New uses are
 * gathered for `batchDelayMs` and sent in batches of at most MAX_KEY_USES_PER_REPORT (to the
 * KeyUsageService in one process, over the gateway hop from a gateway). A batch that fails is
 * forgotten as reported, so the keys' next uses report them again.
 *
 * The same batches carry the (context type, attribute name) pairs of the contexts keys evaluated,
 * never their values, each pair at most once per interval. An outsider holding a key can send any
 * names, so everything is bounded (docs/security.md "Limits"): names of at most 64 characters, at
 * most `maxTrackedAttributes` pairs remembered per environment and `maxTrackedEnvironments`
 * environments (beyond them, new pairs are not noted until older ones are past the interval), at
 * most MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT pairs of one environment waiting per batch.
 */
export class KeyUsageRecorder {
  private readonly reported = new Map<string, number>();
  private pending = new Map<string, SdkKeyUse>();
  private readonly attributes = new Map<string, EnvironmentAttributes>();
  private readonly maxTrackedEnvironments: number;
  private readonly maxTrackedAttributes: number;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly intervalMs: number;
  private readonly batchDelayMs: number;
  private readonly maxTrackedKeys: number;
  private readonly now: () => number;

  constructor(
    private readonly send: (uses: SdkKeyUse[], attributes: SeenContextAttribute[]) => Promise<unknown>,
    private readonly options: KeyUsageRecorderOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? SDK_KEY_USE_INTERVAL_MS;
    this.batchDelayMs = options.batchDelayMs ?? 1_000;
    this.maxTrackedKeys = options.maxTrackedKeys ?? 100_000;
    this.maxTrackedEnvironments = options.maxTrackedEnvironments ?? 1_000;
    this.maxTrackedAttributes = options.maxTrackedAttributes ?? 200;
    this.now = options.now ?? Date.now;
  }

  /** Notes a use by the principal when it is a key (users' requests are not key uses). */
  used(principal: Principal): void {
    if (!isKeyPrincipal(principal)) return;
    const now = this.now();
    const last = this.reported.get(principal.sdkKeyId);
    if (last !== undefined && now - last < this.intervalMs) return;
    if (this.reported.size >= this.maxTrackedKeys) this.forgetOlderThan(now - this.intervalMs);
    this.reported.set(principal.sdkKeyId, now);
    this.pending.set(principal.sdkKeyId, { sdkKeyId: principal.sdkKeyId, orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId });
    this.schedule();
  }

  /**
   * Notes the attribute names of contexts a key evaluated in its environment `scope`, never their
   * values. Costs a map lookup per attribute once its pair is reported within the interval.
   */
  contextsSeen(scope: EnvironmentScope, contexts: readonly EvaluationContext[]): void {
    const { orgId, projectId, environmentId } = scope;
    const now = this.now();
    let environment = this.attributes.get(environmentId);
    if (environment === undefined) {
      if (this.attributes.size >= this.maxTrackedEnvironments) this.forgetEnvironmentsOlderThan(now - this.intervalMs);
      if (this.attributes.size >= this.maxTrackedEnvironments) return;
      environment = { reported: new Map(), pending: new Map(), lastNotedAt: now };
      this.attributes.set(environmentId, environment);
    }
    let noted = false;
    for (const context of contexts) {
      const contextType = context.context_type;
      if (!isNameText(contextType) || context.parameters === undefined) continue;
      for (const name of Object.keys(context.parameters)) {
        if (!isNameText(name)) continue;
        const pair = `${contextType}\u0000${name}`;
        const last = environment.reported.get(pair);
        if (last !== undefined && now - last < this.intervalMs) continue;
        if (environment.pending.size >= MAX_CONTEXT_ATTRIBUTES_PER_REPORT_ENVIRONMENT) return this.scheduleIf(noted);
        if (last === undefined && environment.reported.size >= this.maxTrackedAttributes) {
          for (const [known, at] of environment.reported) if (at <= now - this.intervalMs) environment.reported.delete(known);
          if (environment.reported.size >= this.maxTrackedAttributes) return this.scheduleIf(noted);
        }
        environment.reported.set(pair, now);
        environment.lastNotedAt = now;
        environment.pending.set(pair, { orgId, projectId, environmentId, contextType, name });
        noted = true;
      }
    }
    this.scheduleIf(noted);
  }

  /** Sends what is gathered now (and waits for a batch in flight). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.flushing) await this.flushing;
    const attributes = this.takePendingAttributes();
    if (this.pending.size === 0 && attributes.length === 0) return;
    const batch = [...this.pending.values()].slice(0, MAX_KEY_USES_PER_REPORT);
    for (const use of batch) this.pending.delete(use.sdkKeyId);
    this.flushing = this.send(batch, attributes).then(
      () => undefined,
      (error: unknown) => {
        for (const use of batch) this.reported.delete(use.sdkKeyId);
        for (const seen of attributes) this.attributes.get(seen.environmentId)?.reported.delete(`${seen.contextType}\u0000${seen.name}`);
        this.options.onError?.(error);
      },
    );
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
    if (this.pending.size > 0 || this.hasPendingAttributes()) await this.flush();
  }

  /** Sends what is gathered (at shutdown, before the hop or the pool closes). */
  stop(): Promise<void> {
    return this.flush();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.batchDelayMs);
    this.timer.unref();
  }

  private scheduleIf(noted: boolean): void {
    if (noted) this.schedule();
  }

  /** Up to MAX_CONTEXT_ATTRIBUTES_PER_REPORT waiting attributes, whole environments at a time (each holds at most 50). */
  private takePendingAttributes(): SeenContextAttribute[] {
    const taken: SeenContextAttribute[] = [];
    for (const environment of this.attributes.values()) {
      if (environment.pending.size === 0) continue;
      if (taken.length + environment.pending.size > MAX_CONTEXT_ATTRIBUTES_PER_REPORT) break;
      taken.push(...environment.pending.values());
      environment.pending.clear();
    }
    return taken;
  }

  private hasPendingAttributes(): boolean {
    for (const environment of this.attributes.values()) if (environment.pending.size > 0) return true;
    return false;
  }

  /** Forgets environments with nothing waiting and nothing reported within the interval. */
  private forgetEnvironmentsOlderThan(cutoffMs: number): void {
    for (const [id, environment] of this.attributes) {
      if (environment.pending.size > 0) continue;
      if (environment.lastNotedAt <= cutoffMs) this.attributes.delete(id);
    }
  }

  private forgetOlderThan(cutoffMs: number): void {
    for (const [id, at] of this.reported) if (at <= cutoffMs) this.reported.delete(id);
    // Every key was used within the interval: forget them all rather than grow (the SQL guard holds).
    if (this.reported.size >= this.maxTrackedKeys) this.reported.clear();
  }
}
