import { invalidArgument, type Principal } from '@switchyard/core';

/**
 * What a request says about the writes it makes (docs/access.md "Critical environments"): the
 * environment its sender confirmed (`X-Confirm-Environment`) and the comment for the change
 * history (`X-Change-Comment`). `recordChange` reads it; no service method passes it along.
 */
export interface ChangeIntent {
  confirmEnvironmentId?: string;
  comment?: string;
  /**
   * `X-Approval-Bypass: true`: write directly into an environment whose approval policy requires a
   * change request, for a caller allowed `change_request.bypass` (docs/workflow.md "Change requests and approvals");
   * the entry records that it was bypassed.
   */
  bypassApprovals?: true;
}

/**
 * The intent of each request's principal. A WeakMap, not a property: services copy and compare
 * principals, and the intent belongs to one request, never to the principal object itself.
 */
const intents = new WeakMap<object, ChangeIntent>();

/**
 * A copy of `principal` that carries `intent`. Always a copy: verifiers cache principals and share
 * one object between the requests of a key or token, so linking the intent to that object would
 * hand one request's confirmation to every concurrent request of the same caller.
 */
export function withChangeIntent<P extends Principal>(principal: P, intent: ChangeIntent): P {
  const copy = { ...principal };
  intents.set(copy, { ...intent });
  return copy;
}

/** The intent linked to a request's principal; an empty one when the request sent none. */
export const changeIntentOf = (acting: object): ChangeIntent => intents.get(acting) ?? {};

export const MAX_CHANGE_COMMENT_LENGTH = 1000;
const MAX_ENVIRONMENT_ID_LENGTH = 200;

/** C0 controls, DEL and C1 controls: a comment is one line of text for the history. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The prefix of an encoded comment (RFC 8187's ext-value): headers and gRPC metadata carry
 * ASCII only, so a comment with other characters travels as `utf-8''` + its percent-encoded UTF-8.
 */
const ENCODED_PREFIX = "utf-8''";

/**
 * The intent of a request's `X-Confirm-Environment` / `X-Change-Comment` values (gRPC metadata
 * `x-confirm-environment` / `x-change-comment`), as sent. Absent values: not part of the intent.
 * @throws INVALID_ARGUMENT naming the header for a repeated, empty, too long, undecodable value
 *   or one with control characters.
 */
export function parseChangeIntent(values: {
  confirmEnvironment?: string | readonly string[];
  changeComment?: string | readonly string[];
  /** gRPC `x-change-comment-bin`: the comment's UTF-8 bytes (how the gateway hop sends it). */
  changeCommentBytes?: readonly Uint8Array[];
  /** `X-Approval-Bypass` (gRPC metadata `x-approval-bypass`): only `true` is a value. */
  approvalBypass?: string | readonly string[];
}): ChangeIntent {
  const intent: ChangeIntent = {};
  const bypass = single(values.approvalBypass, 'x-approval-bypass');
  if (bypass !== undefined) {
    if (bypass.trim().toLowerCase() !== 'true') throw invalidArgument('x-approval-bypass must be true (or left out)', 'x-approval-bypass');
    intent.bypassApprovals = true;
  }
  const confirm = single(values.confirmEnvironment, 'x-confirm-environment');
  if (confirm !== undefined) {
    const id = confirm.trim();
    if (id === '' || id.length > MAX_ENVIRONMENT_ID_LENGTH || !/^[\u0021-\u007e]+$/.test(id)) {
      throw invalidArgument(`x-confirm-environment must be an environment id (1..${MAX_ENVIRONMENT_ID_LENGTH} visible ASCII characters)`, 'x-confirm-environment');
    }
    intent.confirmEnvironmentId = id;
  }
  const raw = single(values.changeComment, 'x-change-comment');
  const bytes = values.changeCommentBytes ?? [];
  if (raw !== undefined && bytes.length > 0) throw invalidArgument('send x-change-comment or x-change-comment-bin, not both', 'x-change-comment');
  if (raw !== undefined) intent.comment = decodeComment(raw);
  if (bytes.length > 1) throw invalidArgument('x-change-comment-bin must be sent once', 'x-change-comment');
  if (bytes.length === 1) intent.comment = checkComment(utf8(bytes[0]!));
  return intent;
}

function single(value: string | readonly string[] | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value.length === 0) return undefined;
  if (value.length > 1) throw invalidArgument(`${name} must be sent once`, name);
  return value[0];
}

function decodeComment(raw: string): string {
  const field = 'x-change-comment';
  // A header is decoded as Latin-1 bytes: anything beyond ASCII was sent unencoded.
  if (!/^[\u0020-\u007e\t]*$/.test(raw)) {
    throw invalidArgument(`x-change-comment must be printable ASCII; send other characters as utf-8'' followed by the percent-encoded UTF-8 (RFC 8187)`, field);
  }
  let comment = raw.trim();
  if (comment.toLowerCase().startsWith(ENCODED_PREFIX)) {
    try {
      comment = decodeURIComponent(comment.slice(ENCODED_PREFIX.length)).trim();
    } catch {
      throw invalidArgument(`x-change-comment: the text after utf-8'' must be percent-encoded UTF-8`, field);
    }
  }
  return checkComment(comment);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Uint8Array): string {
  // Bounded before decoding: 1000 characters are at most 4000 bytes.
  if (bytes.length > MAX_CHANGE_COMMENT_LENGTH * 4) throw invalidArgument(`x-change-comment must be 1..${MAX_CHANGE_COMMENT_LENGTH} characters`, 'x-change-comment');
  try {
    return strictUtf8.decode(bytes).trim();
  } catch {
    throw invalidArgument('x-change-comment-bin must be UTF-8', 'x-change-comment');
  }
}

function checkComment(comment: string): string {
  const field = 'x-change-comment';
  if (CONTROL.test(comment)) throw invalidArgument('x-change-comment must not contain control characters (line breaks included)', field);
  const length = [...comment].length;
  if (length < 1 || length > MAX_CHANGE_COMMENT_LENGTH) throw invalidArgument(`x-change-comment must be 1..${MAX_CHANGE_COMMENT_LENGTH} characters`, field);
  return comment;
}
