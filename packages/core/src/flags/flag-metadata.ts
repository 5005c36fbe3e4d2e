import { invalidArgument } from '../errors/domain-error.ts';
import { FLAG_BUCKET_BYS, FLAG_LIFETIMES, type Flag, type FlagBucketBy, type FlagLifetime } from '../model/definitions.ts';

/**
 * Write-time checks of a flag's project-level metadata (docs/contract.md "Flags and evaluation":
 * `tags`, `lifetime`, `maintainer`, `bucket_by`) and of the flag lists' filter. Each failure
 * names the offending field.
 */

/** A tag: a letter or digit, then up to 63 of letters, digits, `.`, `_`, `:`, `/`, `-`. */
export const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$/;
export const MAX_TAGS = 50;
export const MAX_MAINTAINER_LENGTH = 200;
/** A list filter names at most this many tags (each must be carried). */
export const MAX_FILTER_TAGS = MAX_TAGS;

/** Code-point order, whatever the locale (as the repositories sort keys). */
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function checkTag(value: unknown, field: string): string {
  if (typeof value !== 'string' || !TAG_PATTERN.test(value)) {
    throw invalidArgument(`${field} must be 1-64 characters of letters, digits, '.', '_', ':', '/' or '-', starting with a letter or digit`, field);
  }
  return value;
}

/**
 * A flag's tags, stored sorted (code-point order) and de-duplicated: the order given carries no
 * meaning, and one canonical form keeps exports and change-history diffs stable. At most 50
 * (counted after de-duplication).
 */
export function checkTags(value: unknown, field = 'tags'): string[] {
  if (!Array.isArray(value)) throw invalidArgument(`${field} must be an array of strings`, field);
  // Bounded before anything else is done per element: a body may carry any number of entries.
  if (value.length > MAX_TAGS * 4) throw invalidArgument(`${field} holds at most ${MAX_TAGS} tags`, field);
  const tags = new Set<string>();
  value.forEach((tag, i) => tags.add(checkTag(tag, `${field}[${i}]`)));
  if (tags.size > MAX_TAGS) throw invalidArgument(`${field} holds at most ${MAX_TAGS} tags`, field);
  return [...tags].sort(byCodePoint);
}

export function checkLifetime(value: unknown, field = 'lifetime'): FlagLifetime {
  if (typeof value !== 'string' || !(FLAG_LIFETIMES as readonly string[]).includes(value)) {
    throw invalidArgument(`${field} must be one of ${FLAG_LIFETIMES.join(', ')}`, field);
  }
  return value as FlagLifetime;
}

/** Free text (an email, a team), at most 200 characters; null or "" (after trimming): none. */
export function checkMaintainer(value: unknown, field = 'maintainer'): string | null {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length > MAX_MAINTAINER_LENGTH) {
    throw invalidArgument(`${field} must be null or a string of at most ${MAX_MAINTAINER_LENGTH} characters`, field);
  }
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

export function checkBucketBy(value: unknown, field = 'bucket_by'): FlagBucketBy {
  if (typeof value !== 'string' || !(FLAG_BUCKET_BYS as readonly string[]).includes(value)) {
    throw invalidArgument(`${field} must be one of ${FLAG_BUCKET_BYS.join(', ')}`, field);
  }
  return value as FlagBucketBy;
}

/** A flag list's filter: every tag in `tags` carried, and the lifetime when given. */
export interface FlagListFilter {
  tags: string[];
  lifetime?: FlagLifetime;
}

/**
 * The filter of `GET .../flags?tag=a&tag=b&lifetime=temporary` (one `tag` is a string, several
 * an array; absent: no condition). @throws INVALID_ARGUMENT naming `tag` or `lifetime`.
 */
export function checkFlagListFilter(query: { tag?: unknown; lifetime?: unknown }): FlagListFilter {
  const raw = query.tag === undefined || query.tag === null ? [] : Array.isArray(query.tag) ? query.tag : [query.tag];
  if (raw.length > MAX_FILTER_TAGS) throw invalidArgument(`tag may be given at most ${MAX_FILTER_TAGS} times`, 'tag');
  const tags = [...new Set(raw.map((tag) => checkTag(tag, 'tag')))];
  const filter: FlagListFilter = { tags };
  if (query.lifetime !== undefined && query.lifetime !== null && query.lifetime !== '') filter.lifetime = checkLifetime(query.lifetime);
  return filter;
}

/** Whether the flag passes the filter (a flag without tags or lifetime has [] and `permanent`). */
export function flagMatchesFilter(flag: Flag, filter: FlagListFilter): boolean {
  if (filter.lifetime !== undefined && (flag.lifetime ?? 'permanent') !== filter.lifetime) return false;
  if (filter.tags.length === 0) return true;
  const tags = flag.tags ?? [];
  return filter.tags.every((tag) => tags.includes(tag));
}

/** The metadata fields of a flag with their defaults filled in (what the API shows). */
export function withMetadataDefaults(flag: Flag): Flag {
  if (flag.tags !== undefined && flag.lifetime !== undefined && flag.maintainer !== undefined && flag.bucket_by !== undefined) return flag;
  return {
    ...flag,
    tags: flag.tags ?? [],
    lifetime: flag.lifetime ?? 'permanent',
    maintainer: flag.maintainer ?? null,
    bucket_by: flag.bucket_by ?? 'environment',
  };
}
