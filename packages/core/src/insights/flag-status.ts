import type { Flag } from '../model/definitions.ts';

/**
 * A flag's status in one environment over a window (docs/insights.md "Statuses"), LaunchDarkly's
 * four: `new` (made within the window, never evaluated), `active` (evaluated in the window),
 * `launched` (evaluated in the window, serving one variant to everyone, unchanged in the window),
 * `inactive` (not evaluated in the window).
 */
export type FlagStatus = 'new' | 'active' | 'launched' | 'inactive';

export const DEFAULT_STATUS_WINDOW_DAYS = 7;
const DAY_MS = 86_400_000;

/** What serves nothing but its default: the off variant, or the caller's default when there is none. */
export const SERVES_DEFAULT = '';

/**
 * The one variant key the flag's configuration serves to every context, or null when it can serve
 * more than one ('' = the off/default outcome when no off variant is set). Read from the
 * configuration, not from counts: a 1 % rollout with little traffic may show one variant only.
 * - off: the off variant;
 * - on: every rule's variant, every bucket with a weight of an allocation, and the off variant
 *   when no rule matches everyone (no conditions, no segments) or a prerequisite may fail.
 */
export function oneVariantServed(flag: Pick<Flag, 'enabled' | 'off_variant_key' | 'rules' | 'prerequisites'>): string | null {
  const off = flag.off_variant_key ?? SERVES_DEFAULT;
  if (!flag.enabled) return off;
  const served = new Set<string>();
  let catchAll = false;
  for (const rule of flag.rules) {
    if (rule.variant_key !== undefined) served.add(rule.variant_key);
    for (const bucket of rule.allocation?.buckets ?? []) if (bucket.weight_milli > 0) served.add(bucket.variant_key);
    if (rule.conditions.length === 0 && (rule.segment_keys ?? []).length === 0) {
      catchAll = true;
      // Later rules are never reached.
      break;
    }
  }
  if (!catchAll || (flag.prerequisites ?? []).length > 0) served.add(off);
  return served.size === 1 ? [...served][0]! : null;
}

/** One flag in one environment, as the status needs it. */
export interface FlagEnvironmentActivity {
  /** When the flag was made. */
  createdAtMs: number;
  /** The last change of its configuration in this environment (or of its definition). */
  changedAtMs: number;
  /** The last evaluation counted in this environment; null: never. */
  lastEvaluatedAtMs: number | null;
  /** oneVariantServed of its configuration now. */
  oneVariant: string | null;
}

/** The status at `nowMs` over the last `windowDays` days (see FlagStatus). */
export function flagStatus(activity: FlagEnvironmentActivity, nowMs: number, windowDays = DEFAULT_STATUS_WINDOW_DAYS): FlagStatus {
  const windowStart = nowMs - windowDays * DAY_MS;
  const evaluatedInWindow = activity.lastEvaluatedAtMs !== null && activity.lastEvaluatedAtMs >= windowStart;
  if (!evaluatedInWindow) return activity.lastEvaluatedAtMs === null && activity.createdAtMs >= windowStart ? 'new' : 'inactive';
  return activity.oneVariant !== null && activity.changedAtMs < windowStart ? 'launched' : 'active';
}
