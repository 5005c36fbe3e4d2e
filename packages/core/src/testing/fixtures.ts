import type { Flag, Segment } from '../model/definitions.ts';

/** A minimal enabled boolean flag (one variant `on`, no rules) for tests; `fields` override. */
export const testFlag = (key: string, fields: Partial<Flag> = {}): Flag => ({
  key,
  description: '',
  value_type: 'bool',
  variants: [{ key: 'on', value: true }],
  enabled: true,
  off_variant_key: null,
  rules: [],
  hashing: [],
  version: 1,
  archived: false,
  client_visible: false,
  created_at_ms: 0,
  updated_at_ms: 0,
  ...fields,
});

/** A `user` segment of `kind` with no conditions and no members for tests; `fields` override. */
export const testSegment = (key: string, kind: 'rule' | 'list' = 'rule', fields: Partial<Segment> = {}): Segment => ({
  id: `id-${key}`,
  key,
  context_type: 'user',
  kind,
  description: '',
  conditions: [],
  included_count: 0,
  excluded_count: 0,
  version: 1,
  created_at_ms: 0,
  updated_at_ms: 0,
  ...fields,
});
