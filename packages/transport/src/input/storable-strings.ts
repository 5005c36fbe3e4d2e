/**
 * The one rule for string content that every transport applies at its edge (docs/security.md
 * "Input rules"): no U+0000 and no unpaired UTF-16 surrogate, anywhere in a request.
 *
 * Why: PostgreSQL's text and jsonb cannot hold U+0000 (it fails the statement with SQLSTATE 22021
 * or 22P05, which used to surface as a 500), and a lone surrogate has no UTF-8 form, so the
 * driver would silently store U+FFFD instead of what was sent. Refusing both before any handler
 * runs gives the caller a 400 naming the field, on every route and RPC alike.
 */
import { invalidArgument, type DomainError } from '@switchyard/core';

/** A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one (code units, no `u` flag). */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Any NUL or surrogate at all: a cheaper test that clears nearly every string before UNSTORABLE runs. */
const SUSPECT = /[\u0000\ud800-\udfff]/;

const isUnstorable = (text: string): boolean => SUSPECT.test(text) && UNSTORABLE.test(text);

/** What is wrong with one string, or undefined when PostgreSQL stores it exactly as sent. */
export function stringContentProblem(value: string): string | undefined {
  const found = UNSTORABLE.exec(value);
  if (found === null) return undefined;
  return found[0] === '\u0000' ? 'must not contain U+0000 (NUL)' : 'must not contain an unpaired UTF-16 surrogate';
}

/** The first refused string in a request part: where it is (`body.rules[0].key`) and why. */
export interface StringContentFinding {
  field: string;
  problem: string;
}

/** `a` + `b` → `a.b`; names that are not plain identifiers are quoted so the path stays readable. */
const member = (path: string, name: string): string => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`);

/** Paths into very deep values are cut in the middle, so an answer stays short whatever was sent. */
const MAX_PATH_LENGTH = 200;
const shortened = (path: string): string => (path.length <= MAX_PATH_LENGTH ? path : `${path.slice(0, 100)}…${path.slice(-99)}`);

/**
 * Walks a decoded request part (JSON value, query object, gRPC message) and reports the first
 * string — value or object key — that `stringContentProblem` refuses. Iterative, so no input can
 * exhaust the stack; binary fields (Buffer, typed arrays) are bytes, not text, and are skipped.
 * A key with a bad character is named by its position, since its own text cannot be shown.
 */
export function findUnstorableString(value: unknown, root: string): StringContentFinding | undefined {
  // Nearly every request is clean: that is decided without building a name for each field (a
  // batch of 10,000 events has 60,000), and names are built only to report a refusal.
  if (!holdsUnstorableString(value)) return undefined;
  const stack: Array<{ value: unknown; path: string }> = [{ value, path: root }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = stringContentProblem(current);
      if (problem !== undefined) return { field: shortened(path), problem };
      continue;
    }
    if (typeof current !== 'object' || current === null || ArrayBuffer.isView(current)) continue;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: `${path}[${i}]` });
      continue;
    }
    const keys = Object.keys(current);
    for (let i = 0; i < keys.length; i++) {
      const keyProblem = stringContentProblem(keys[i]!);
      if (keyProblem !== undefined) return { field: `${shortened(path)} (key #${i + 1})`, problem: keyProblem };
    }
    // Reversed, so the stack hands them back in order and the first bad field is the one reported.
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      stack.push({ value: (current as Record<string, unknown>)[key], path: member(path, key) });
    }
  }
  return undefined;
}

/** The refusal of a decoded request part (400 / INVALID_ARGUMENT naming the field), or undefined when it can be stored. */
export function unstorableStringError(value: unknown, root: string): DomainError | undefined {
  const finding = findUnstorableString(value, root);
  return finding === undefined ? undefined : invalidArgument(`${finding.field} ${finding.problem}`, finding.field);
}

/** Whether anything in the value (strings, object keys, at any depth) is refused; no names built. */
function holdsUnstorableString(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (isUnstorable(current)) return true;
      continue;
    }
    if (typeof current !== 'object' || current === null || ArrayBuffer.isView(current)) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) stack.push(current[i]);
      continue;
    }
    for (const key in current) {
      if (!Object.hasOwn(current, key)) continue;
      if (isUnstorable(key)) return true;
      stack.push((current as Record<string, unknown>)[key]);
    }
  }
  return false;
}
