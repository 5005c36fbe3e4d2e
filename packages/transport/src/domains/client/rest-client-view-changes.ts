import { prerequisiteKeysOf, type Flag, type Segment } from '@switchyard/core';
import { isClientVisible } from '@switchyard/services';
import type { SyncPayload } from '@switchyard/services';

/** Whether a flag exists for client keys: the services' one rule (docs/client-side.md "3. What a client sees"). */
export { isClientVisible };

/**
 * What clients of one environment can see change: its visible flags, the flags they depend on
 * (prerequisites, transitively, hidden ones included: their answers decide the visible flags') and
 * the segments all of those use.
 */
interface EnvironmentView {
  flags: Map<string, Flag>;
  visible: Set<string>;
  /** Keys of the visible flags' prerequisites, transitively (named ones that do not exist included: their creation is news). */
  usedFlags: Set<string>;
  usedSegments: Set<string>;
}

function usedOf(flags: Map<string, Flag>, isVisible: (flag: Flag) => boolean): { usedFlags: Set<string>; usedSegments: Set<string> } {
  const usedFlags = new Set<string>();
  const usedSegments = new Set<string>();
  const addSegments = (flag: Flag | undefined): void => {
    if (flag !== undefined) for (const rule of flag.rules) for (const key of rule.segment_keys ?? []) usedSegments.add(key);
  };
  for (const flag of flags.values()) {
    if (!isVisible(flag)) continue;
    addSegments(flag);
    if (flag.prerequisites === undefined || flag.prerequisites.length === 0) continue;
    for (const key of prerequisiteKeysOf(flag, flags)) {
      if (usedFlags.has(key)) continue;
      usedFlags.add(key);
      addSegments(flags.get(key));
    }
  }
  return { usedFlags, usedSegments };
}

/**
 * Decides, once per sync payload, whether it changes what a client key of the environment may
 * see: a client-visible flag changed, appeared, disappeared or became hidden, a flag one depends
 * on (a prerequisite, transitively, hidden or not) changed, or a segment that any of those uses
 * changed. Payloads of one environment come in the channel's order (environment-channel.ts); the first stream to see a payload decides for all (a WeakMap, so a
 * decision lives as long as its payload). Full snapshots reset the environment's view; what they
 * mean for a stream is the stream's business (its first one is no news, later ones may be).
 */
export class ClientViewChanges {
  private readonly decisions = new WeakMap<SyncPayload, boolean>();
  private readonly views = new Map<string, EnvironmentView>();

  constructor(private readonly isVisible: (flag: Flag) => boolean = isClientVisible) {}

  changesClientView(payload: SyncPayload): boolean {
    const known = this.decisions.get(payload);
    if (known !== undefined) return known;
    const decision = this.apply(payload);
    this.decisions.set(payload, decision);
    return decision;
  }

  /** The environment has no browser stream left here: its view is rebuilt by the next one's snapshot. */
  forget(environmentId: string): void {
    this.views.delete(environmentId);
  }

  private apply(payload: SyncPayload): boolean {
    const previous = this.views.get(payload.environmentId);
    if (payload.fullSnapshot) {
      // A stream's first snapshot is no news (the stream skips it); any later one follows a lost
      // notification or a stream that fell behind, so changes may have been missed: refetch.
      this.views.set(payload.environmentId, this.viewOf(new Map(payload.flags.map((flag) => [flag.key, flag]))));
      return true;
    }
    // A change against a view never seen (cannot happen: a stream starts with a snapshot): say so.
    if (previous === undefined) return true;
    const changed = this.touchesView(previous, payload.flags, payload.removedFlagKeys, payload.segments, payload.removedSegmentKeys);
    const flags = new Map(previous.flags);
    for (const flag of payload.flags) flags.set(flag.key, flag);
    for (const key of payload.removedFlagKeys) flags.delete(key);
    const next = this.viewOf(flags);
    this.views.set(payload.environmentId, next);
    return changed || payload.segments.some((segment) => next.usedSegments.has(segment.key));
  }

  private viewOf(flags: Map<string, Flag>): EnvironmentView {
    const visible = new Set<string>();
    for (const flag of flags.values()) if (this.isVisible(flag)) visible.add(flag.key);
    return { flags, visible, ...usedOf(flags, this.isVisible) };
  }

  private touchesView(view: EnvironmentView, flags: readonly Flag[], removedFlags: readonly string[], segments: readonly Segment[], removedSegments: readonly string[]): boolean {
    if (flags.some((flag) => this.isVisible(flag) || view.visible.has(flag.key) || view.usedFlags.has(flag.key))) return true;
    if (removedFlags.some((key) => view.visible.has(key) || view.usedFlags.has(key))) return true;
    if (segments.some((segment) => view.usedSegments.has(segment.key))) return true;
    return removedSegments.some((key) => view.usedSegments.has(key));
  }
}
