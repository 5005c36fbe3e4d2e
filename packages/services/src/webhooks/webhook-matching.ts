import { invalidArgument } from '@switchyard/core';

/** What an endpoint's globs and filters may hold (bounded: they are tried on every write of the org). */
export const MAX_EVENT_TYPES = 20;
export const MAX_FILTER_IDS = 50;
const GLOB = /^[a-z0-9_.*-]{1,100}$/;

/** Validates `event_types`: 1..20 globs of `[a-z0-9_.-]` and `*` (any run of characters, dots included). */
export function checkEventTypes(globs: unknown, field = 'event_types'): string[] {
  if (!Array.isArray(globs) || globs.length === 0 || globs.length > MAX_EVENT_TYPES) {
    throw invalidArgument(`${field} must hold 1 to ${MAX_EVENT_TYPES} patterns`, field);
  }
  for (const glob of globs) {
    if (typeof glob !== 'string' || !GLOB.test(glob)) throw invalidArgument(`${field} patterns are 1 to 100 characters of a-z, 0-9, '_', '.', '-' and '*'`, field);
  }
  return [...new Set(globs as string[])];
}

/**
 * Whether `action` matches `glob`, where `*` stands for any run of characters (`flag.*` matches
 * `flag.update` and `flag.rules.replace`; `*` matches everything). Iterative, with one backtrack
 * point: linear in practice and at most |glob|×|action| steps, whatever the pattern.
 */
export function globMatches(glob: string, action: string): boolean {
  let g = 0;
  let a = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (a < action.length) {
    if (g < glob.length && glob[g] !== '*' && glob[g] === action[a]) {
      g += 1;
      a += 1;
    } else if (g < glob.length && glob[g] === '*') {
      starAt = g;
      resumeAt = a;
      g += 1;
    } else if (starAt !== -1) {
      g = starAt + 1;
      resumeAt += 1;
      a = resumeAt;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === '*') g += 1;
  return g === glob.length;
}

/** What of an entry the matching reads. */
export interface MatchedEntry {
  action: string;
  projectId: string | null;
  environmentId: string | null;
}

/** What of an endpoint the matching reads. */
export interface EndpointFilter {
  eventTypes: readonly string[];
  projectIds: readonly string[];
  environmentIds: readonly string[];
}

/**
 * Whether an endpoint wants an entry: one of its globs matches the action, and each non-empty
 * filter names the entry's project / environment (an entry without one does not pass that filter).
 */
export function endpointWants(endpoint: EndpointFilter, entry: MatchedEntry): boolean {
  if (!endpoint.eventTypes.some((glob) => globMatches(glob, entry.action))) return false;
  if (endpoint.projectIds.length > 0 && (entry.projectId === null || !endpoint.projectIds.includes(entry.projectId))) return false;
  if (endpoint.environmentIds.length > 0 && (entry.environmentId === null || !endpoint.environmentIds.includes(entry.environmentId))) return false;
  return true;
}
