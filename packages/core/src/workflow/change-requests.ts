import { invalidArgument } from '../errors/domain-error.ts';
import type { Condition } from '../model/definitions.ts';
import { parseFlagOperations, type FlagOperation } from '../flags/flag-operations.ts';

/**
 * Change requests and approvals (docs/workflow.md "Change requests and approvals"): an environment's approval policy,
 * the changes a request holds (flag operations, segment operations) with the versions they were
 * made against, and the rules that decide whether it may be applied. Pure: the services store,
 * hash and apply.
 */

/** Per environment; absent: `required` false (every write direct, as before). */
export interface ApprovalPolicy {
  required: boolean;
  /** Approvals of the current content needed to apply (1..5). */
  min_approvals: number;
  /** Whether the author's own approval counts. */
  allow_self_approval: boolean;
  /** Whether an edit of the changes voids the reviews of the earlier content (true: reviews count for the exact content reviewed). */
  reset_on_change: boolean;
  /** Whether turning a flag off (only `enabled` true → false) may be written directly. */
  kill_switch_exempt: boolean;
}

export const DEFAULT_APPROVAL_POLICY: Readonly<ApprovalPolicy> = Object.freeze({
  required: false,
  min_approvals: 1,
  allow_self_approval: false,
  reset_on_change: true,
  kill_switch_exempt: false,
});

export const MAX_MIN_APPROVALS = 5;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A PUT body: every field optional, the stored (or default) value kept for the ones left out.
 * @throws INVALID_ARGUMENT naming the field.
 */
export function parseApprovalPolicy(input: unknown, current: ApprovalPolicy = DEFAULT_APPROVAL_POLICY): ApprovalPolicy {
  if (!isObject(input)) throw invalidArgument('the body must be an approval policy object', 'body');
  const allowed = ['required', 'min_approvals', 'allow_self_approval', 'reset_on_change', 'kill_switch_exempt'];
  for (const name of Object.keys(input)) if (!allowed.includes(name)) throw invalidArgument(`${name} is not a field of an approval policy`, name);
  const policy = { ...current };
  for (const name of ['required', 'allow_self_approval', 'reset_on_change', 'kill_switch_exempt'] as const) {
    const value = input[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'boolean') throw invalidArgument(`${name} must be a boolean`, name);
    policy[name] = value;
  }
  const min = input.min_approvals;
  if (min !== undefined && min !== null) {
    if (typeof min !== 'number' || !Number.isInteger(min) || min < 1 || min > MAX_MIN_APPROVALS) throw invalidArgument(`min_approvals must be an integer from 1 to ${MAX_MIN_APPROVALS}`, 'min_approvals');
    policy.min_approvals = min;
  }
  return policy;
}

/** Operations on one segment of the environment. */
export type SegmentOperation =
  | { op: 'add_members'; list: 'included' | 'excluded'; keys: string[] }
  | { op: 'remove_members'; list: 'included' | 'excluded'; keys: string[] }
  | { op: 'set_conditions'; conditions: Condition[] };

export const SEGMENT_OPERATION_NAMES = ['add_members', 'remove_members', 'set_conditions'] as const;

/** One change of a request: a flag's operations or a segment's, and the version it was made against. */
export type ChangeRequestChange =
  | { flag_key: string; operations: FlagOperation[]; version: number }
  | { segment_key: string; operations: SegmentOperation[]; version: number };

/** Changes per request, and keys per member operation: a request is something people review. */
export const MAX_REQUEST_CHANGES = 20;
export const MAX_SEGMENT_OPERATIONS = 20;
export const MAX_REQUEST_MEMBER_KEYS = 1000;
export const MAX_TITLE_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 5000;
export const MAX_REVIEW_COMMENT_LENGTH = 2000;
/**
 * Requests not yet finished (draft, open, conflicted, scheduled) one environment holds at most:
 * each is read by every list and reviewed by people, so an outsider with write rights (or a
 * leaked token) cannot pile them up. Applied and cancelled requests do not count.
 */
export const MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT = 200;
/** The statuses MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT counts. */
export const ACTIVE_CHANGE_REQUEST_STATUSES = ['draft', 'open', 'conflicted', 'scheduled'] as const;
/** Reviews (approvals, rejections and comments) one request holds at most: each is stored and shown with it. */
export const MAX_REVIEWS_PER_REQUEST = 100;

function key(value: unknown, path: string): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(value)) throw invalidArgument(`${path} must be a key`, path);
  return value;
}

function parseSegmentOperations(input: unknown, field: string): SegmentOperation[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_SEGMENT_OPERATIONS) throw invalidArgument(`${field} must be a list of 1 to ${MAX_SEGMENT_OPERATIONS} segment operations`, field);
  return input.map((raw, i): SegmentOperation => {
    const path = `${field}[${i}]`;
    if (!isObject(raw)) throw invalidArgument(`${path} must be an object with an op`, path);
    const only = (names: string[]) => {
      for (const name of Object.keys(raw)) if (!names.includes(name)) throw invalidArgument(`${path}.${name} is not a field of ${String(raw.op)}`, `${path}.${name}`);
    };
    switch (raw.op) {
      case 'add_members':
      case 'remove_members': {
        only(['op', 'list', 'keys']);
        if (raw.list !== 'included' && raw.list !== 'excluded') throw invalidArgument(`${path}.list must be included or excluded`, `${path}.list`);
        const keys = raw.keys;
        if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_REQUEST_MEMBER_KEYS || keys.some((k) => typeof k !== 'string' || k === '' || k.length > 512)) {
          throw invalidArgument(`${path}.keys must be 1 to ${MAX_REQUEST_MEMBER_KEYS} non-empty strings (at most 512 characters)`, `${path}.keys`);
        }
        return { op: raw.op, list: raw.list, keys: [...(keys as string[])] };
      }
      case 'set_conditions':
        only(['op', 'conditions']);
        if (!Array.isArray(raw.conditions)) throw invalidArgument(`${path}.conditions must be a list of conditions`, `${path}.conditions`);
        return { op: 'set_conditions', conditions: raw.conditions as Condition[] };
      default:
        throw invalidArgument(`${path}.op must be one of ${SEGMENT_OPERATION_NAMES.join(', ')}`, `${path}.op`);
    }
  });
}

/**
 * A request's changes as sent: each `{flag_key, operations, version?}` or `{segment_key,
 * operations, version?}`; a missing version is filled by the service with the current one (the
 * version the change is made against). One change per flag and per segment.
 * @throws INVALID_ARGUMENT naming the change (`changes[i]`).
 */
export type SentChange = { flag_key: string; operations: FlagOperation[]; version?: number } | { segment_key: string; operations: SegmentOperation[]; version?: number };

export function parseChangeRequestChanges(input: unknown, field = 'changes'): SentChange[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_REQUEST_CHANGES) throw invalidArgument(`${field} must be a list of 1 to ${MAX_REQUEST_CHANGES} changes`, field);
  const seen = new Set<string>();
  return input.map((raw, i): SentChange => {
    const path = `${field}[${i}]`;
    if (!isObject(raw)) throw invalidArgument(`${path} must be an object with flag_key or segment_key`, path);
    const isFlag = raw.flag_key !== undefined;
    if (isFlag === (raw.segment_key !== undefined)) throw invalidArgument(`${path} must have exactly one of flag_key or segment_key`, path);
    for (const name of Object.keys(raw)) if (![isFlag ? 'flag_key' : 'segment_key', 'operations', 'version'].includes(name)) throw invalidArgument(`${path}.${name} is not a field of a change`, `${path}.${name}`);
    let version: number | undefined;
    if (raw.version !== undefined && raw.version !== null) {
      if (typeof raw.version !== 'number' || !Number.isSafeInteger(raw.version) || raw.version < 0) throw invalidArgument(`${path}.version must be an integer >= 0`, `${path}.version`);
      version = raw.version;
    }
    const name = key(isFlag ? raw.flag_key : raw.segment_key, `${path}.${isFlag ? 'flag_key' : 'segment_key'}`);
    const id = `${isFlag ? 'flag' : 'segment'}:${name}`;
    if (seen.has(id)) throw invalidArgument(`${path}: ${isFlag ? 'flag' : 'segment'} '${name}' appears twice (put its operations in one change)`, path);
    seen.add(id);
    const withVersion = version === undefined ? {} : { version };
    return isFlag
      ? { flag_key: name, operations: parseFlagOperations(raw.operations, `${path}.operations`), ...withVersion }
      : { segment_key: name, operations: parseSegmentOperations(raw.operations, `${path}.operations`), ...withVersion };
  });
}

/** JSON with object keys sorted at every level: the text a request's content hash is taken over. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .filter((name) => value[name] !== undefined)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export const CHANGE_REQUEST_STATUSES = ['draft', 'open', 'applied', 'rejected', 'cancelled', 'conflicted', 'scheduled'] as const;
export type ChangeRequestStatus = (typeof CHANGE_REQUEST_STATUSES)[number];

export type ReviewVerdict = 'approve' | 'reject' | 'comment';

/** One review as stored: for the content hash it was given on. */
export interface ChangeRequestReview {
  id: string;
  reviewer_id: string;
  reviewer_email: string | null;
  verdict: ReviewVerdict;
  comment: string | null;
  content_hash: string;
  at_ms: number;
}

/**
 * The reviews that count for the content with `contentHash` under `policy`: with reset_on_change,
 * only those given on that exact content; the author's own approval only when self-approval is
 * allowed; one per reviewer (their latest). Rejections count the same way.
 */
export function countingReviews(reviews: readonly ChangeRequestReview[], contentHash: string, authorId: string, policy: ApprovalPolicy): { approvals: ChangeRequestReview[]; rejections: ChangeRequestReview[] } {
  const latest = new Map<string, ChangeRequestReview>();
  for (const review of [...reviews].sort((x, y) => x.at_ms - y.at_ms)) {
    if (review.verdict === 'comment') continue;
    if (policy.reset_on_change && review.content_hash !== contentHash) continue;
    latest.set(review.reviewer_id, review);
  }
  const counted = [...latest.values()].filter((review) => policy.allow_self_approval || review.reviewer_id !== authorId);
  return { approvals: counted.filter((review) => review.verdict === 'approve'), rejections: counted.filter((review) => review.verdict === 'reject') };
}
