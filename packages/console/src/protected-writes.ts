/**
 * Writes in protected environments (docs/access.md "Critical environments"): a write by a person
 * in a critical environment carries `X-Confirm-Environment: <environment_id>`, and with
 * `require_comment` every write carries `X-Change-Comment`. The console asks for both once, in
 * Api (every page's write goes through it), instead of in each page.
 */
import type { Environment } from './records.ts';

/** What a write in a protected environment needs from the person. */
export interface ProtectedWrite {
  environment: Environment;
  /** Type the environment's name (critical). */
  confirm: boolean;
  /** Give a comment (require_comment). */
  comment: boolean;
}

/** The person's answer: the comment when one was asked for (null: they cancelled). */
export type WriteAnswer = { comment?: string } | null;

/** Shows the question (the console's dialog) and resolves with the answer. */
export type WriteGuard = (write: ProtectedWrite) => Promise<WriteAnswer>;

/** What a write sends: the headers of the intent. */
export interface WriteIntent {
  confirmEnvironmentId?: string;
  comment?: string;
}

/**
 * The environment a write's path is in: `/v1/environments/{id}/…` and
 * `/v1/management/environments/{id}[/…]` (the environment's own settings and its SDK keys).
 */
export function environmentIdOfPath(path: string): string | undefined {
  const match = /^\/v1\/(?:management\/)?environments\/([^/?#]+)/.exec(path);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return undefined;
  }
}

/** What a protected environment asks of every write made there; undefined: nothing. */
export function protectionOf(environment: Environment | undefined): ProtectedWrite | undefined {
  if (!environment || (!environment.critical && !environment.require_comment)) return undefined;
  return { environment, confirm: environment.critical === true, comment: environment.require_comment === true };
}

/**
 * A refusal naming the header it wanted (409 FAILED_PRECONDITION "... send X-Confirm-Environment
 * ..."): the environment became protected after the console read it. What the refusal asks for,
 * or undefined when it is some other precondition.
 */
export function protectionAskedBy(message: string): { confirm: boolean; comment: boolean } | undefined {
  const confirm = /x-confirm-environment/i.test(message);
  const comment = /x-change-comment/i.test(message);
  return confirm || comment ? { confirm, comment } : undefined;
}

export function intentHeaders(intent: WriteIntent | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (intent?.confirmEnvironmentId !== undefined) headers['x-confirm-environment'] = intent.confirmEnvironmentId;
  if (intent?.comment !== undefined) headers['x-change-comment'] = commentHeaderValue(intent.comment);
  return headers;
}

/** The longest comment the API keeps, in characters. */
export const MAX_COMMENT_LENGTH = 1000;

/** How a header value with other than printable ASCII is sent (RFC 8187's ext-value). */
const ENCODED_PREFIX = "utf-8''";

/**
 * A comment as `X-Change-Comment` carries it: header values are ASCII, so a comment with any other
 * character (or one that itself starts with the prefix) travels as `utf-8''` + its
 * percent-encoded UTF-8, which the API decodes.
 */
export function commentHeaderValue(comment: string): string {
  const plain = /^[\u0020-\u007e]*$/.test(comment) && !comment.toLowerCase().startsWith(ENCODED_PREFIX);
  return plain ? comment : ENCODED_PREFIX + encodeURIComponent(comment);
}

/**
 * A typed comment as the history keeps it: one line (line breaks and other control characters
 * become spaces), trimmed, 1..1000 characters; or why it cannot be sent.
 */
export function headerComment(text: string): { value: string } | { error: string } {
  const value = text
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
    .trim();
  if (value === '') return { error: 'Write a comment: this environment keeps one with every change.' };
  const length = [...value].length;
  if (length > MAX_COMMENT_LENGTH) return { error: `The comment is ${length} characters; at most ${MAX_COMMENT_LENGTH}.` };
  return { value };
}
