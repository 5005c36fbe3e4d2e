import type { FastifyInstance, FastifyRequest } from 'fastify';

/** JSON deeper than this is refused before parsing (400 without crashing: docs/contract.md "Errors"). */
export const MAX_JSON_DEPTH = 64;

/** scanJsonText's findings, as bits. */
const TOO_DEEP = 1;
const HAS_ESCAPE = 2;
const HAS_NUL_OR_SURROGATE = 4;

/**
 * One linear pass over a JSON text (skipping string contents for nesting), no recursion: whether
 * it nests objects/arrays deeper than `max` (stops there), holds a backslash escape, or a NUL or
 * UTF-16 surrogate code unit. Hostile input costs O(n).
 */
function scanJsonText(text: string, max: number): number {
  let depth = 0;
  let inString = false;
  let found = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) found |= HAS_NUL_OR_SURROGATE;
    if (inString) {
      if (c === 92 /* \ */) {
        found |= HAS_ESCAPE;
        i++;
      } else if (c === 34 /* " */) {
        inString = false;
      }
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return found | TOO_DEEP;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
    }
  }
  return found;
}

/** A NUL or a UTF-16 surrogate code unit (no `u` flag: a pair's halves match one by one). */
const NUL_OR_SURROGATE = /[\u0000\ud800-\udfff]/;

/** How many times `char` occurs in `text`, counting no further than `limit + 1`. */
function countUpTo(text: string, char: string, limit: number): number {
  let count = 0;
  for (let at = text.indexOf(char); at !== -1 && count <= limit; at = text.indexOf(char, at + 1)) count++;
  return count;
}

/**
 * scanJsonText's findings for the same text, from the engine's native string searches where they
 * decide it (about 80 ns for an SDK's 200-byte evaluate body, where the character loop takes
 * 600-700 ns, as long as JSON.parse itself):
 * - nesting deeper than `max` needs more than `max` opening brackets somewhere in the text, inside
 *   strings or not; only a text with that many takes the loop, which knows where strings are;
 * - an escape is a backslash, which valid JSON has only inside strings (elsewhere the text fails
 *   to parse whatever this says);
 * - a text whose UTF-8 length is its length is ASCII, so it holds no surrogate and only NUL is
 *   left to look for; any other text takes the regular expression.
 */
function inspectJsonText(text: string, max: number): number {
  if (countUpTo(text, '{', max) + countUpTo(text, '[', max) > max) return scanJsonText(text, max);
  const nulOrSurrogate = Buffer.byteLength(text, 'utf8') === text.length ? text.includes('\u0000') : NUL_OR_SURROGATE.test(text);
  return (text.includes('\\') ? HAS_ESCAPE : 0) | (nulOrSurrogate ? HAS_NUL_OR_SURROGATE : 0);
}

/**
 * Set on a request whose JSON body was parsed from a text with no escape and no NUL or surrogate
 * code unit: every string in the body (keys and values) is then a plain piece of that text, so
 * none can hold what PostgreSQL cannot store, and the string-content check (string-content.ts)
 * need not walk the body.
 */
const BODY_STRINGS_STORABLE = Symbol('bodyStringsStorable');

/** Whether the request's JSON body is known to hold only storable strings (see BODY_STRINGS_STORABLE). */
export function bodyStringsKnownStorable(request: FastifyRequest): boolean {
  return (request as unknown as Record<symbol, boolean>)[BODY_STRINGS_STORABLE] === true;
}

const NOT_JSON = 'request body is not valid JSON';

export class JsonBodyError extends Error {
  readonly statusCode = 400;
  constructor(message: string) {
    super(message);
    this.name = 'JsonBodyError';
  }
}

/**
 * Replaces Fastify's JSON parser with one that first refuses over-deep nesting, then parses with
 * Fastify's own hardened parser (prototype-poisoning keys are rejected). An empty body is
 * `undefined`, left to each route's schema to accept or refuse.
 *
 * A text with no escape, no byte-order mark and neither `__proto__` nor `constructor` anywhere is
 * parsed with JSON.parse directly: the keys the hardened parser looks for could only appear
 * spelled out, and they do not, so its two scans of the text would find nothing. That is nearly
 * every SDK request, and saves them a third of the parsing.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.decorateRequest(BODY_STRINGS_STORABLE, false);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    const found = inspectJsonText(text, MAX_JSON_DEPTH);
    if ((found & TOO_DEEP) !== 0) {
      done(new JsonBodyError(`JSON body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    if ((found & HAS_ESCAPE) === 0 && text.charCodeAt(0) !== 0xfeff && !text.includes('__proto__') && !text.includes('constructor')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        done(new JsonBodyError(NOT_JSON), undefined);
        return;
      }
      if ((found & HAS_NUL_OR_SURROGATE) === 0) (request as unknown as Record<symbol, boolean>)[BODY_STRINGS_STORABLE] = true;
      done(null, parsed);
      return;
    }
    parseJson(request, text, (error, parsed) => {
      if (error) done(new JsonBodyError(NOT_JSON), undefined);
      else done(null, parsed);
    });
  });
}
