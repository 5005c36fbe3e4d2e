import type { FastifyInstance } from 'fastify';

/** JSON deeper than this is refused before parsing (400 without crashing: docs/contract.md "Errors"). */
export const MAX_JSON_DEPTH = 64;

/**
 * True when the JSON text nests objects/arrays deeper than `max`. A linear scan of the raw text
 * (skipping string contents), so hostile input costs O(n) and no recursion happens anywhere.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
    }
  }
  return false;
}

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
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      done(new JsonBodyError(`JSON body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    parseJson(request, text, (error, parsed) => {
      if (error) done(new JsonBodyError('request body is not valid JSON'), undefined);
      else done(null, parsed);
    });
  });
}
