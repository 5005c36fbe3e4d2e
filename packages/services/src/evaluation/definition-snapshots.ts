import { evaluationFeaturesOf, prerequisiteKeysOf, type ChangeNotifier, type CompiledFlag, type EnvironmentScope, type Flag, type Repositories, type Segment } from '@switchyard/core';

const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';
import { DEFINITIONS_CHANGED_CHANNEL, decodeChange } from '../flags/definition-events.ts';

/**
 * What changed: one environment, a project's environments, or (neither) everything. `resync`: the
 * holder may have missed changes (a lost notification connection, a fresh upstream snapshot), so
 * sync streams get a full snapshot and revoked keys are looked for.
 */
export interface SnapshotChange {
  environmentId?: string;
  projectId?: string;
  resync?: boolean;
}

/** Everything evaluation reads of one environment, loaded once and shared by every request. */
export interface EnvironmentSnapshot {
  scope: EnvironmentScope;
  /** Active (not archived) flags by key, in key order. */
  flags: ReadonlyMap<string, Flag>;
  /** The same flags as a list, in the same order: an all-flags evaluation reads it without copying. */
  flagList: readonly Flag[];
  segments: ReadonlyMap<string, Segment>;
  /**
   * The list segments each flag's evaluation may read (their membership needs a database lookup):
   * those its rules name and those of its prerequisites, transitively. Flags that read none are absent.
   */
  listSegmentKeysByFlag: ReadonlyMap<string, readonly string[]>;
  /**
   * The evaluation features the definitions use (core's evaluationFeaturesOf, plus those the
   * upstream named in a gateway), sorted: the sync stream's `features` (docs/contract.md "Sync stream").
   */
  features: readonly string[];
  /** Flags under an ACTIVE experiment: evaluating them records an exposure. */
  experimentFlagKeys: ReadonlySet<string>;
  loadedAtMs: number;
  /**
   * Flags' compiled forms by key, each added on the flag's first evaluation by key (null: it does
   * not compile), so evaluating one flag reads one object found by one lookup (evaluation-service.ts
   * keptFor). At most one entry per flag of the snapshot; the snapshot's flags are never
   * changed in place (a change replaces the snapshot), as core's evaluateCompiled requires.
   */
  compiledFlags: Map<string, CompiledFlag | null>;
}

/**
 * In-memory snapshots of environments' definitions, so evaluation costs no database round trip
 * (list-segment membership aside). A change anywhere is announced on DEFINITIONS_CHANGED_CHANNEL
 * and drops the affected snapshots on every instance; the next request reloads (one load at a
 * time per environment). A lost notification connection drops everything.
 */
export class DefinitionSnapshots {
  /**
   * One entry per environment: its load, and once that load has finished, its result (read
   * without an await). A change deletes the entry, so a load it overtook finds its entry gone.
   */
  private readonly snapshots = new Map<string, { loading: Promise<EnvironmentSnapshot>; loaded?: EnvironmentSnapshot }>();
  /** The project of every environment ever loaded (it never changes), so a project change drops its snapshots at once. */
  private readonly projectOf = new Map<string, string>();
  private subscription: { unsubscribe(): Promise<void> } | null = null;
  private readonly listeners = new Set<(change: SnapshotChange) => void>();

  constructor(
    private readonly repos: Pick<Repositories, 'flags' | 'segments' | 'experiments'>,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.notifier.subscribe(
      DEFINITIONS_CHANGED_CHANNEL,
      (payload) => {
        const change = decodeChange(payload);
        if (change) this.invalidate(change);
      },
      () => this.invalidateAll(),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.unsubscribe();
    this.subscription = null;
  }

  get(scope: EnvironmentScope): Promise<EnvironmentSnapshot> {
    const environmentId = scope.environmentId;
    const existing = this.snapshots.get(environmentId);
    if (existing) return existing.loading;
    const entry: { loading: Promise<EnvironmentSnapshot>; loaded?: EnvironmentSnapshot } = { loading: this.load(scope) };
    this.snapshots.set(environmentId, entry);
    this.projectOf.set(environmentId, scope.projectId);
    entry.loading.then(
      // Setting it on a dropped entry is harmless: nobody reads that entry any more.
      (value) => {
        entry.loaded = value;
      },
      // A failed load must not stick: the next request tries again.
      () => {
        if (this.snapshots.get(environmentId) === entry) this.snapshots.delete(environmentId);
      },
    );
    return entry.loading;
  }

  /**
   * The environment's snapshot when it is loaded and no change has dropped it since; undefined
   * otherwise (then `get` loads it). Lets the evaluate hot path skip an await per request.
   */
  current(environmentId: string): EnvironmentSnapshot | undefined {
    return this.snapshots.get(environmentId)?.loaded;
  }

  /** Calls `listener` after each invalidation (sync streams push updates on it). */
  onChange(listener: (change: SnapshotChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  invalidate(change: { environmentId: string } | { projectId: string }): void {
    if ('environmentId' in change) {
      this.snapshots.delete(change.environmentId);
    } else {
      // Synchronously, loading snapshots included: a load that read the database before the
      // change must not serve a request made after the change was acknowledged.
      for (const environmentId of this.snapshots.keys()) {
        if (this.projectOf.get(environmentId) === change.projectId) this.snapshots.delete(environmentId);
      }
    }
    for (const listener of this.listeners) listener(change);
  }

  invalidateAll(): void {
    this.snapshots.clear();
    for (const listener of this.listeners) listener({});
  }

  private async load(scope: EnvironmentScope): Promise<EnvironmentSnapshot> {
    const [flags, segments, experiments] = await Promise.all([
      this.repos.flags.list(scope),
      this.repos.segments.list(scope),
      this.repos.experiments.list(scope),
    ]);
    const experimentFlagKeys = experiments.filter((e) => e.status === ACTIVE).map((e) => e.flagKey);
    return buildEnvironmentSnapshot(scope, flags, segments, experimentFlagKeys, this.now());
  }
}

/**
 * One environment's snapshot from its definitions, whatever their source: the database here, the
 * services' sync stream in a gateway (packages/transport/src/remote/remote-definition-snapshots.ts), so
 * both evaluate from identically built snapshots. Archived flags are left out; `flags` are kept in
 * the order given (the repositories and the sync stream's full snapshots list them by key).
 */
export function buildEnvironmentSnapshot(
  scope: EnvironmentScope,
  flags: Iterable<Flag>,
  segments: Iterable<Segment>,
  experimentFlagKeys: Iterable<string>,
  loadedAtMs: number,
  upstreamFeatures: Iterable<string> = [],
): EnvironmentSnapshot {
  const segmentMap = new Map<string, Segment>();
  for (const segment of segments) segmentMap.set(segment.key, segment);
  const activeFlags = new Map<string, Flag>();
  for (const flag of flags) if (!flag.archived) activeFlags.set(flag.key, flag);
  const ownListSegments = (flag: Flag | undefined): string[] =>
    flag === undefined ? [] : flag.rules.flatMap((rule) => rule.segment_keys ?? []).filter((key) => segmentMap.get(key)?.kind === 'list');
  const listSegmentKeysByFlag = new Map<string, string[]>();
  for (const flag of activeFlags.values()) {
    // A prerequisite is evaluated for the same input: the list segments it reads are read too.
    const read = ownListSegments(flag);
    if (flag.prerequisites !== undefined && flag.prerequisites.length > 0) {
      for (const key of prerequisiteKeysOf(flag, activeFlags)) read.push(...ownListSegments(activeFlags.get(key)));
    }
    const keys = [...new Set(read)];
    if (keys.length > 0) listSegmentKeysByFlag.set(flag.key, keys);
  }
  const features = [...new Set([...evaluationFeaturesOf(activeFlags.values()), ...upstreamFeatures])].sort();
  return {
    scope,
    flags: activeFlags,
    flagList: [...activeFlags.values()],
    segments: segmentMap,
    listSegmentKeysByFlag,
    features,
    experimentFlagKeys: new Set(experimentFlagKeys),
    loadedAtMs,
    compiledFlags: new Map(),
  };
}
