import { keptFlagForm, unknownEvaluationFeatures, type CompiledFlag, type Flag, type Segment } from '@switchyard/core';
import type { DefinitionUpdate } from '../sync/decode-sync-message.ts';

/** What applying one update changed. */
export interface AppliedChange {
  /** Flags whose definition (or a segment they name) changed, added or removed, sorted. */
  changedFlagKeys: string[];
  /**
   * List segments whose cached list-check answers must go: those resent or removed (the server
   * resends a list segment when its members change), or every one on a full snapshot
   * (`allListSegments`), since members may have changed while nobody was listening.
   */
  changedListSegmentKeys: string[];
  allListSegments: boolean;
}

/** The definitions the store holds, as the file cache writes them. */
export interface StoreSnapshot {
  environmentId: string;
  projectId: string;
  flags: Flag[];
  segments: Segment[];
  experimentFlagKeys: string[];
  /** The evaluation features the definitions use, as the server named them (absent: none). */
  features?: string[];
  serverTimestampMs: number;
}

const same = (a: unknown, b: unknown): boolean => a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));

/**
 * The definitions an SDK evaluates with: one environment's active flags and segments (core
 * documents), its project (bucketing needs it) and the flags under an ACTIVE experiment.
 * Full snapshots replace everything; increments add, change and remove in order. The caller
 * checks sequence numbers; the store only applies.
 */
export class DefinitionStore {
  private flagMap = new Map<string, Flag>();
  /**
   * Each flag's compiled form (compileFlagToKeep), made on its first evaluation and kept until the
   * next change (null: it does not compile, and evaluating the document answers the error). The
   * store's documents are never changed in place: every change brings new ones.
   */
  private compiledMap = new Map<string, CompiledFlag | null>();
  private segmentMap = new Map<string, Segment>();
  private experimentKeys: ReadonlySet<string> = new Set();
  private featureList: readonly string[] = [];
  private unknownFeatureList: readonly string[] = [];
  private loaded = false;
  private applied = 0;
  environmentId: string | undefined;
  projectId = '';
  serverTimestampMs = 0;

  constructor(environmentId?: string) {
    this.environmentId = environmentId;
  }

  /** How many updates were applied: what was made of the definitions is current while this is unchanged. */
  get generation(): number {
    return this.applied;
  }

  /** Whether any definitions were loaded (from the server, a cache file, a bootstrap or test data). */
  get hasDefinitions(): boolean {
    return this.loaded;
  }

  get flags(): ReadonlyMap<string, Flag> {
    return this.flagMap;
  }

  get segments(): ReadonlyMap<string, Segment> {
    return this.segmentMap;
  }

  get experimentFlagKeys(): ReadonlySet<string> {
    return this.experimentKeys;
  }

  /** The evaluation features the server said the definitions use (docs/contract.md "Sync stream"). */
  get features(): readonly string[] {
    return this.featureList;
  }

  /**
   * The features named that this SDK does not know (core's KNOWN_EVALUATION_FEATURES): while
   * there is one, the definitions mean something this SDK cannot evaluate, and it refuses to.
   */
  get unknownFeatures(): readonly string[] {
    return this.unknownFeatureList;
  }

  flag(key: string): Flag | undefined {
    return this.flagMap.get(key);
  }

  /**
   * The flag's kept compiled form for evaluateCompiled: one lookup where evaluate() looks the
   * document's form up and checks it. Undefined when there is no such flag, null when it does not
   * compile.
   */
  compiledFlag(key: string): CompiledFlag | null | undefined {
    return keptFlagForm(this.compiledMap, this.flagMap, key);
  }

  /** Applies one sync message (or a snapshot from elsewhere, as a full update). */
  apply(
    update: Pick<DefinitionUpdate, 'fullSnapshot' | 'environmentId' | 'projectId' | 'flags' | 'segments' | 'removedFlagKeys' | 'removedSegmentKeys' | 'experimentFlagKeys' | 'serverTimestampMs'> & {
      features?: readonly string[] | undefined;
    },
  ): AppliedChange {
    const beforeFlags = this.flagMap;
    const beforeSegments = this.segmentMap;
    const flags = update.fullSnapshot ? new Map<string, Flag>() : new Map(beforeFlags);
    const segments = update.fullSnapshot ? new Map<string, Segment>() : new Map(beforeSegments);
    for (const key of update.removedFlagKeys) flags.delete(key);
    for (const key of update.removedSegmentKeys) segments.delete(key);
    for (const flag of update.flags) if (!flag.archived) flags.set(flag.key, flag);
    for (const flag of update.flags) if (flag.archived) flags.delete(flag.key);
    for (const segment of update.segments) segments.set(segment.key, segment);

    // Segments that changed for evaluation: rule segments by content, list segments whenever
    // resent (their members changed) or removed.
    const changedSegments = new Set<string>();
    const changedListSegments = new Set<string>();
    for (const [key, segment] of segments) {
      const before = beforeSegments.get(key);
      if (!same(before, segment)) changedSegments.add(key);
    }
    for (const [key, before] of beforeSegments) {
      if (!segments.has(key)) {
        changedSegments.add(key);
        if (before.kind === 'list') changedListSegments.add(key);
      }
    }
    if (!update.fullSnapshot) {
      for (const segment of update.segments) {
        changedSegments.add(segment.key);
        if (segment.kind === 'list') changedListSegments.add(segment.key);
      }
    }

    const changedFlags = new Set<string>();
    for (const [key, flag] of flags) {
      if (!same(beforeFlags.get(key), flag)) changedFlags.add(key);
      else if (changedSegments.size > 0 && flag.rules.some((rule) => rule.segment_keys?.some((s) => changedSegments.has(s)))) changedFlags.add(key);
    }
    for (const key of beforeFlags.keys()) if (!flags.has(key)) changedFlags.add(key);
    // A flag evaluates its prerequisites: it changes with them, and with theirs (to a fixed point;
    // a cycle ends because a flag is added once).
    for (let grew = changedFlags.size > 0; grew; ) {
      grew = false;
      for (const [key, flag] of flags) {
        if (changedFlags.has(key) || !Array.isArray(flag.prerequisites)) continue;
        if (flag.prerequisites.some((p) => changedFlags.has(p.flag_key))) {
          changedFlags.add(key);
          grew = true;
        }
      }
    }
    // Features every message names in full: a change in what this SDK cannot evaluate changes every flag.
    const features = [...(update.features ?? [])].sort();
    const unknownFeatures = unknownEvaluationFeatures(features);
    if (unknownFeatures.join('\u0000') !== this.unknownFeatureList.join('\u0000')) {
      for (const key of flags.keys()) changedFlags.add(key);
      for (const key of beforeFlags.keys()) changedFlags.add(key);
    }

    this.flagMap = flags;
    this.compiledMap = new Map();
    this.segmentMap = segments;
    this.experimentKeys = new Set(update.experimentFlagKeys);
    this.featureList = features;
    this.unknownFeatureList = unknownFeatures;
    if (update.environmentId) this.environmentId = update.environmentId;
    if (update.projectId) this.projectId = update.projectId;
    if (update.serverTimestampMs > 0) this.serverTimestampMs = update.serverTimestampMs;
    this.loaded = true;
    this.applied++;
    return {
      changedFlagKeys: [...changedFlags].sort(),
      changedListSegmentKeys: [...changedListSegments].sort(),
      allListSegments: update.fullSnapshot,
    };
  }

  /** Replaces everything with a snapshot (cache file, bootstrap, test data). */
  load(snapshot: StoreSnapshot): AppliedChange {
    return this.apply({ ...snapshot, fullSnapshot: true, removedFlagKeys: [], removedSegmentKeys: [] });
  }

  snapshot(): StoreSnapshot {
    return {
      environmentId: this.environmentId ?? '',
      projectId: this.projectId,
      flags: [...this.flagMap.values()],
      segments: [...this.segmentMap.values()],
      experimentFlagKeys: [...this.experimentKeys].sort(),
      features: [...this.featureList],
      serverTimestampMs: this.serverTimestampMs,
    };
  }
}
