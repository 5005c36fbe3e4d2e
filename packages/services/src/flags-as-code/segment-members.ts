import type { EnvironmentScope, MemberList, Principal } from '@switchyard/core';
import type { SegmentService } from '../segments/segment-service.ts';

/** Keys read per page: the segment routes' largest page. */
const PAGE = 10_000;

/**
 * A list segment's keys of one list, in key order, or null when it holds more than `max` (the
 * caller then leaves the list out rather than read a segment of millions into memory).
 */
export async function readMembers(segments: SegmentService, principal: Principal, scope: EnvironmentScope, key: string, list: MemberList, max: number): Promise<string[] | null> {
  const keys: string[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = await segments.listMembers(principal, scope, key, list, cursor, Math.min(PAGE, max + 1 - keys.length));
    keys.push(...page.items);
    if (keys.length > max) return null;
    if (!page.nextCursor || page.items.length === 0) return keys;
    cursor = page.nextCursor;
  }
}

/** How a list changes into `wanted`: counts of keys added and removed. */
export function listChange(current: readonly string[], wanted: readonly string[]): { added: number; removed: number } {
  const before = new Set(current);
  const after = new Set(wanted);
  let added = 0;
  let removed = 0;
  for (const key of after) if (!before.has(key)) added++;
  for (const key of before) if (!after.has(key)) removed++;
  return { added, removed };
}
