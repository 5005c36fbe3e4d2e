import fc from 'fast-check';
import { hostileUrlString, hostileValue, percentEncode, withBadCharacter } from './fuzz-values.ts';
import { valuesFor, type Schema, type SchemaValues } from './schema-arbitraries.ts';

/** One operation of the OpenAPI document, as the REST fuzzer drives it. */
export interface Operation {
  method: string;
  /** The OpenAPI path, `/v1/environments/{env_id}/flags`. */
  path: string;
  pathParams: Array<{ name: string; schema: Schema }>;
  queryParams: Array<{ name: string; schema: Schema; required: boolean }>;
  body: Schema | undefined;
  /** The credential the operation is meant for (from its path and `security`). */
  credential: 'system_admin' | 'org_admin' | 'sdk_key' | 'sdk_key_bearer' | 'none';
}

/** Every operation of an OpenAPI 3.1 document. */
export function operationsOf(doc: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      const parameters: any[] = [...(item.parameters ?? []), ...(operation.parameters ?? [])];
      const security: string[] = (operation.security ?? []).flatMap((entry: object) => Object.keys(entry));
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {}, required: p.required === true })),
        body: operation.requestBody?.content?.['application/json']?.schema,
        credential: credentialFor(path, security),
      });
    }
  }
  return operations;
}

function credentialFor(path: string, security: string[]): Operation['credential'] {
  if (path.startsWith('/v1/admin/')) return 'system_admin';
  if (security[0] === 'sdk_key') return path.startsWith('/ofrep/') ? 'sdk_key_bearer' : 'sdk_key';
  if (path.startsWith('/v1/') && !['/v1/auth/login', '/v1/openapi.json'].includes(path)) return 'org_admin';
  return 'none';
}

/** A request as sent: the URL path with its query, headers chosen later from `credential`, and the body text. */
export interface FuzzRequest {
  url: string;
  credential: 'right' | 'none' | 'garbage';
  /** JSON text, other text, or nothing. */
  body: string | undefined;
  contentType: string | undefined;
}

const garbageToken = fc.stringMatching(/^[\x21-\x7e]{0,80}$/);

/** Requests for `operation`: mostly well-formed with hostile parts (one in four fully clean). */
export function requestsFor(operation: Operation, values: SchemaValues): fc.Arbitrary<FuzzRequest & { garbage: string }> {
  return fc.oneof({ weight: 1, arbitrary: build(operation, values, false) }, { weight: 3, arbitrary: build(operation, values, true) });
}

function build(operation: Operation, values: SchemaValues, mutate: boolean): fc.Arbitrary<FuzzRequest & { garbage: string }> {
  const pathValues = operation.pathParams.map(({ name, schema }) => {
    const known = values.known[name] ?? [];
    const clean = known.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: valuesFor(schema, name, values, false) }) : valuesFor(schema, name, values, false);
    const cleanText = clean.map(String);
    return mutate
      ? fc.oneof({ weight: 4, arbitrary: cleanText }, { weight: 2, arbitrary: withBadCharacter(cleanText) }, { weight: 1, arbitrary: hostileUrlString }, { weight: 1, arbitrary: fc.uuid() })
      : cleanText;
  });
  const queryValues = operation.queryParams.map(({ name, schema, required }) => {
    const value = valuesFor(schema, name, values, mutate).map((v) => (typeof v === 'string' ? v.slice(0, 2000) : JSON.stringify(v)?.slice(0, 2000) ?? ''));
    return required ? value.map((v): string | undefined => v) : fc.option(value, { nil: undefined });
  });
  const extraQuery = mutate ? fc.array(fc.tuple(fc.oneof(hostileUrlString, fc.constantFrom('limit', 'cursor', 'version', 'list')), hostileUrlString), { maxLength: 2 }) : fc.constant([]);
  const bodyValue: fc.Arbitrary<unknown> = operation.body ? valuesFor(operation.body, '', values, mutate) : mutate ? fc.option(hostileValue, { nil: undefined, freq: 3 }) : fc.constant(undefined);
  const form = mutate ? fc.constantFrom('json', 'json', 'json', 'json', 'json', 'not-json', 'none', 'text/plain') : fc.constant('json');
  const credential = mutate ? fc.constantFrom<FuzzRequest['credential']>(...Array<FuzzRequest['credential']>(8).fill('right'), 'none', 'garbage') : fc.constant<FuzzRequest['credential']>('right');
  return fc.record({
    pathValues: fc.tuple(...pathValues),
    queryValues: fc.tuple(...queryValues),
    extraQuery,
    bodyValue,
    form,
    credential,
    garbage: garbageToken,
    junk: fc.string({ maxLength: 30 }),
  }).map(({ pathValues, queryValues, extraQuery, bodyValue, form, credential, garbage, junk }) => {
    let url = operation.path;
    operation.pathParams.forEach(({ name }, i) => {
      url = url.replace(`{${name}}`, percentEncode(pathValues[i] as string));
    });
    const query: string[] = [];
    operation.queryParams.forEach(({ name }, i) => {
      const value = queryValues[i];
      if (value !== undefined) query.push(`${percentEncode(name)}=${percentEncode(value)}`);
    });
    for (const [name, value] of extraQuery) query.push(`${percentEncode(name)}=${percentEncode(value)}`);
    if (query.length > 0) url += `?${query.join('&')}`;
    const json = bodyValue === undefined ? undefined : JSON.stringify(bodyValue);
    switch (form) {
      case 'none':
        return { url, credential, garbage, body: undefined, contentType: undefined };
      case 'not-json':
        return { url, credential, garbage, body: `{"unclosed": ${junk}`, contentType: 'application/json' };
      case 'text/plain':
        return { url, credential, garbage, body: json ?? junk, contentType: 'text/plain' };
      default:
        return { url, credential, garbage, body: json, contentType: json === undefined ? undefined : 'application/json' };
    }
  });
}
