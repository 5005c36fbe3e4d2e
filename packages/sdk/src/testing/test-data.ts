import type { Flag, FlagValue, FlagValueType, Segment } from '@switchyard/core';
import type { StoreSnapshot } from '../store/definition-store.ts';

/**
 * Definitions for unit tests of code that uses the SDK, with no server (docs/sdk.md "TestData"):
 *
 *   const td = new TestData();
 *   td.setFlag('new-checkout', true);
 *   const client = new SwitchyardClient({ testData: td });   // ready at once
 *   td.setFlag('new-checkout', false);                        // fires 'change'
 *
 * `setFlag(key, value)` makes an enabled flag serving `value` to everyone (variant key "value",
 * reason DEFAULT); `setFlag(flag)` takes a whole core Flag document (rules, splits, segments).
 * List-segment membership comes from `setListMembers`. No event or exposure is sent anywhere.
 */
export class TestData {
  static readonly PROJECT_ID = 'test-project';
  static readonly ENVIRONMENT_ID = 'test-environment';

  private readonly flags = new Map<string, Flag>();
  private readonly segments = new Map<string, Segment>();
  private readonly members = new Map<string, Set<string>>();
  private readonly listeners = new Set<() => void>();
  private version = 0;

  /** A flag serving `value` to everyone, or a whole Flag document. Replaces a flag of the same key. */
  setFlag(key: string, value: FlagValue): this;
  setFlag(flag: Flag): this;
  setFlag(keyOrFlag: string | Flag, value?: FlagValue): this {
    const flag = typeof keyOrFlag === 'string' ? TestData.valueFlag(keyOrFlag, value ?? null, ++this.version) : keyOrFlag;
    this.flags.set(flag.key, flag);
    return this.changed();
  }

  removeFlag(key: string): this {
    this.flags.delete(key);
    return this.changed();
  }

  /** A rule segment (conditions) or list segment (members via setListMembers). */
  setSegment(segment: Partial<Segment> & Pick<Segment, 'key' | 'kind'>): this {
    this.segments.set(segment.key, {
      id: segment.key,
      context_type: 'user',
      description: '',
      conditions: [],
      included_count: 0,
      excluded_count: 0,
      version: 1,
      created_at_ms: 0,
      updated_at_ms: 0,
      ...segment,
    });
    return this.changed();
  }

  /** The members of a list segment (adds the segment, of context type "user", if missing). */
  setListMembers(segmentKey: string, contextKeys: Iterable<string>): this {
    this.members.set(segmentKey, new Set(contextKeys));
    if (!this.segments.has(segmentKey)) return this.setSegment({ key: segmentKey, kind: 'list' });
    return this.changed();
  }

  isListMember(segmentKey: string, contextKey: string): boolean {
    return this.members.get(segmentKey)?.has(contextKey) === true;
  }

  /** @internal The client's view. */
  snapshot(): StoreSnapshot {
    return {
      environmentId: TestData.ENVIRONMENT_ID,
      projectId: TestData.PROJECT_ID,
      flags: [...this.flags.values()],
      segments: [...this.segments.values()],
      experimentFlagKeys: [],
      serverTimestampMs: 0,
    };
  }

  /** @internal Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): this {
    for (const listener of [...this.listeners]) listener();
    return this;
  }

  private static valueFlag(key: string, value: FlagValue, version: number): Flag {
    const valueType: FlagValueType =
      typeof value === 'boolean' ? 'bool' : typeof value === 'string' ? 'string' : typeof value === 'number' ? (Number.isInteger(value) ? 'int' : 'double') : 'json';
    return {
      key,
      description: '',
      value_type: valueType,
      variants: [{ key: 'value', value }],
      enabled: true,
      off_variant_key: 'value',
      rules: [],
      hashing: [],
      version,
      archived: false,
      client_visible: false,
      created_at_ms: 0,
      updated_at_ms: 0,
    };
  }
}
