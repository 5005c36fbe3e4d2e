import type { Flag, Segment } from '@switchyard/core';
import type { EnvironmentSnapshot } from '../evaluation/definition-snapshots.ts';

interface Entry<T> {
  document: T;
  /** The document's JSON: two loads of an unchanged definition give the same text. */
  fingerprint: string;
}

/** The definitions of one environment as last sent to its streams. */
export interface DefinitionState {
  flags: ReadonlyMap<string, Entry<Flag>>;
  segments: ReadonlyMap<string, Entry<Segment>>;
  /** When the snapshot was read from the database (epoch ms). */
  loadedAtMs: number;
  /** Flags under an ACTIVE experiment, in key order. */
  experimentFlagKeys: readonly string[];
  /** The evaluation features the definitions use, sorted (EnvironmentSnapshot.features). */
  features: readonly string[];
}

export interface DefinitionChanges {
  flags: Flag[];
  segments: Segment[];
  removedFlagKeys: string[];
  removedSegmentKeys: string[];
  /** The set of flags under an ACTIVE experiment differs (payloads always carry the whole set). */
  experimentFlagKeysChanged: boolean;
  /** The features differ (they follow the flags, so a flag changed too; payloads carry the whole set). */
  featuresChanged: boolean;
}

const byKey = <T extends { key: string }>(a: T, b: T): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

function entries<T extends { key: string }>(documents: Iterable<T>): Map<string, Entry<T>> {
  const map = new Map<string, Entry<T>>();
  for (const document of [...documents].sort(byKey)) map.set(document.key, { document, fingerprint: JSON.stringify(document) });
  return map;
}

/** A snapshot (active flags only: an archived flag is gone for SDKs) as a comparable state. */
export function definitionState(snapshot: EnvironmentSnapshot): DefinitionState {
  return {
    flags: entries(snapshot.flags.values()),
    segments: entries(snapshot.segments.values()),
    loadedAtMs: snapshot.loadedAtMs,
    experimentFlagKeys: [...snapshot.experimentFlagKeys].sort(),
    features: snapshot.features,
  };
}

/**
 * What changed from `before` to `after`. Documents are compared by their whole JSON, not only by
 * version: a project-level edit (variants, description) changes what an environment serves
 * without touching that environment's version, and a list segment's member change must reach
 * SDKs so they can drop cached list-check answers.
 */
export function diffStates(before: DefinitionState, after: DefinitionState): DefinitionChanges {
  const changed = <T>(old: ReadonlyMap<string, Entry<T>>, now: ReadonlyMap<string, Entry<T>>): T[] => {
    const out: T[] = [];
    for (const [key, entry] of now) if (old.get(key)?.fingerprint !== entry.fingerprint) out.push(entry.document);
    return out;
  };
  const removed = <T>(old: ReadonlyMap<string, Entry<T>>, now: ReadonlyMap<string, Entry<T>>): string[] =>
    [...old.keys()].filter((key) => !now.has(key));
  return {
    flags: changed(before.flags, after.flags),
    segments: changed(before.segments, after.segments),
    removedFlagKeys: removed(before.flags, after.flags),
    removedSegmentKeys: removed(before.segments, after.segments),
    experimentFlagKeysChanged: before.experimentFlagKeys.join('\u0000') !== after.experimentFlagKeys.join('\u0000'),
    featuresChanged: before.features.join('\u0000') !== after.features.join('\u0000'),
  };
}

export const isEmptyChange = (changes: DefinitionChanges): boolean =>
  changes.flags.length === 0 && changes.segments.length === 0 && changes.removedFlagKeys.length === 0 && changes.removedSegmentKeys.length === 0 &&
  !changes.experimentFlagKeysChanged && !changes.featuresChanged;
