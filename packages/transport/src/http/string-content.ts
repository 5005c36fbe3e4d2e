import type { FastifyInstance } from 'fastify';
import { unstorableStringError } from '../input/storable-strings.ts';
import { bodyStringsKnownStorable } from './json-body.ts';

/**
 * Refuses, on every route, a request whose path parameters, query or JSON body hold a string
 * PostgreSQL cannot store as sent (U+0000, an unpaired surrogate: packages/transport/src/input/
 * storable-strings.ts): 400 `INVALID_ARGUMENT` naming it, e.g. `params.flag_id must not contain
 * U+0000 (NUL)` (docs/security.md "Input rules"). A preValidation hook runs once the body is
 * parsed and before the route's schema and handler, so no route needs a check of its own. A JSON
 * body the parser already found free of escapes, NULs and surrogates is not walked again
 * (json-body.ts).
 */
export function installStringContentCheck(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const refusal =
      unstorableStringError(request.params, 'params') ??
      unstorableStringError(request.query, 'query') ??
      (bodyStringsKnownStorable(request) ? undefined : unstorableStringError(request.body, 'body'));
    if (refusal === undefined) done();
    else done(refusal);
  });
}
