import assert from 'node:assert/strict';
import { expectStatus, type ApiClient, type Json } from './rest-client.ts';

/** Query parameters of the audit routes. */
export type AuditQuery = Record<string, string | number>;

const withQuery = (path: string, query: AuditQuery): string => {
  const params = new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)]));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
};

export const auditLogPath = (orgId: string, query: AuditQuery = {}): string => withQuery(`/v1/management/orgs/${orgId}/audit-log`, query);
export const flagHistoryPath = (environmentId: string, key: string, query: AuditQuery = {}): string =>
  withQuery(`/v1/environments/${environmentId}/flags/${key}/history`, query);

/**
 * Every entry of a listing, page after page through next_cursor, checking on the way that each
 * page is newest first, holds at most `limit` entries, and that no entry comes twice.
 */
export async function readAll(client: ApiClient, token: string, pathOf: (query: AuditQuery) => string, query: AuditQuery = {}): Promise<Json[]> {
  const entries: Json[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const page: Json = expectStatus(await client.get(pathOf(cursor === null ? query : { ...query, cursor }), { token }), 200, 'audit page');
    if (query.limit !== undefined) assert.ok(page.entries.length <= Number(query.limit), 'a page holds at most limit entries');
    entries.push(...page.entries);
    cursor = page.next_cursor;
    if (cursor === null) break;
  }
  assert.equal(cursor, null, 'the listing ends');
  assert.equal(new Set(entries.map((entry) => entry.id)).size, entries.length, 'no entry twice');
  for (let i = 1; i < entries.length; i++) assert.ok(entries[i - 1].at_ms >= entries[i].at_ms, 'newest first');
  return entries;
}

/** The only entry of this action on this resource. */
export function only(entries: Json[], action: string, resourceId?: string): Json {
  const found = entries.filter((entry) => entry.action === action && (resourceId === undefined || entry.resource_id === resourceId));
  assert.equal(found.length, 1, `one ${action} entry${resourceId ? ` of ${resourceId}` : ''}, got ${found.length}: ${JSON.stringify(entries.map((e) => [e.action, e.resource_id]))}`);
  return found[0];
}
