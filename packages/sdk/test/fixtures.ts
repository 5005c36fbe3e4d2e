import type { Flag, Segment } from '@switchyard/core';

/** Small core documents for the SDK's unit tests. */
export function boolFlag(key: string, value = true, extra: Partial<Flag> = {}): Flag {
  return {
    key,
    description: '',
    value_type: 'bool',
    variants: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    enabled: true,
    off_variant_key: value ? 'on' : 'off',
    rules: [],
    hashing: [],
    version: 1,
    archived: false,
    client_visible: false,
    created_at_ms: 0,
    updated_at_ms: 0,
    ...extra,
  };
}

export function segment(key: string, kind: 'list' | 'rule', extra: Partial<Segment> = {}): Segment {
  return { id: `id-${key}`, key, context_type: 'user', kind, description: '', conditions: [], included_count: 0, excluded_count: 0, version: 1, created_at_ms: 0, updated_at_ms: 0, ...extra };
}

/** A flag serving "on" to members of `segmentKey`, "off" to everyone else. */
export const segmentFlag = (key: string, segmentKey: string): Flag =>
  boolFlag(key, false, { rules: [{ id: 'r1', conditions: [], segment_keys: [segmentKey], variant_key: 'on' }] });

export const silent = { debug() {}, info() {}, warn() {}, error() {} };
