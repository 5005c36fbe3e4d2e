import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compileRouteSchemas } from '@switchyard/transport/http/lazy-schemas.ts';
import { api, type ApiClient, type Json } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let doc: Json;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

before(async () => {
  // Compares the document with the Fastify app's own route table, which is in this process only
  // when the server is one process (a gateway's REST app runs in the gateway process).
  ts = await startTestServer({}, { topology: 'single' });
  client = api(ts.base);
  const response = await client.get('/v1/openapi.json');
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  doc = response.body;
});
after(() => ts.stop());

/**
 * Every route Fastify knows, as OpenAPI paths (`:id` → `{id}`), from the router's own tree
 * (`printRoutes`: one node per line, 4 columns of tree drawing per level, a child continuing
 * its parent's path).
 */
function registeredPaths(): Set<string> {
  const paths = new Set<string>();
  const stack: string[] = [];
  for (const line of ts.server.http.printRoutes({ commonPrefix: false }).split('\n')) {
    // A segment may lack its leading slash when it hangs under the root route `/` (the console).
    const match = /^([\s│├└─]*)([^\s│├└─]\S*)\s+\(([A-Z, ]+)\)$/.exec(line);
    if (!match?.[2]) continue;
    const depth = (match[1] ?? '').length / 4 - 1;
    stack.length = depth;
    const full = stack.join('') + match[2];
    stack.push(match[2]);
    paths.add(full.replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
  }
  return paths;
}

describe('GET /v1/openapi.json', () => {
  test('is OpenAPI 3.1 with the product info and security schemes, and needs no credentials', () => {
    assert.ok(String(doc.openapi).startsWith('3.1'), doc.openapi);
    assert.equal(doc.info.title, 'Switchyard');
    assert.equal(doc.info.version, '0.1.0');
    assert.deepEqual(doc.components.securitySchemes.bearer_jwt, { ...doc.components.securitySchemes.bearer_jwt, type: 'http', scheme: 'bearer' });
    assert.deepEqual(doc.components.securitySchemes.sdk_key, { ...doc.components.securitySchemes.sdk_key, type: 'apiKey', in: 'header', name: 'x-sdk-key' });
  });

  test('documents the management, auth, admin, OFREP and (when present) flag routes', () => {
    for (const path of ['/v1/auth/login', '/v1/admin/orgs', '/v1/management/projects/{project_id}/environments', '/ofrep/v1/evaluate/flags/{key}', '/ofrep/v1/evaluate/flags']) {
      assert.ok(doc.paths[path], `missing ${path}`);
    }
    assert.ok(doc.paths['/v1/auth/login'].post);
    assert.ok(doc.paths['/v1/management/projects/{project_id}/environments'].get);
    assert.ok(doc.paths['/v1/management/projects/{project_id}/environments'].post);
    const flagRoutes = [...registeredPaths()].filter((path) => /^\/v1\/(environments|projects)\/\{[^}]+\}\/flags/.test(path));
    for (const path of flagRoutes) assert.ok(doc.paths[path], `flag route ${path} is not documented`);
  });

  test('every registered route is documented, except the document itself', () => {
    const registered = registeredPaths();
    // The router tree was read correctly: nested routes come out as full paths.
    for (const path of ['/v1/management/projects/{project_id}/environments', '/ofrep/v1/evaluate/flags/{key}', '/v1/auth/login']) {
      assert.ok(registered.has(path), `router tree parse missed ${path}`);
    }
    const documented = new Set(Object.keys(doc.paths));
    // What browsers load (the console at / and /console/*, swagger-ui at /docs/*) is not API.
    const forBrowsers = (path: string) => path === '/' || path.startsWith('/console/') || path === '/docs' || path.startsWith('/docs/');
    assert.ok(registered.has('/') && registered.has('/docs'), 'the console and the docs are served');
    const missing = [...registered].filter((path) => path !== '/v1/openapi.json' && !forBrowsers(path) && !documented.has(path));
    assert.deepEqual(missing, []);
    assert.equal(doc.paths['/v1/openapi.json'], undefined);
  });

  test('every path item has at least one operation, and every operation has responses', () => {
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      const operations = METHODS.filter((method) => item[method] !== undefined);
      assert.ok(operations.length > 0, `${path} has no operation`);
      for (const method of operations) {
        const responses = item[method].responses;
        assert.ok(responses && Object.keys(responses).length > 0, `${method} ${path} has no responses`);
        for (const [status, response] of Object.entries<Json>(responses)) assert.equal(typeof response.description, 'string', `${method} ${path} ${status}`);
      }
    }
  });

  test('path parameters are declared for every templated segment', () => {
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const method of METHODS.filter((m) => item[m] !== undefined)) {
        const declared = (item[method].parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name);
        for (const name of names) assert.ok(declared.includes(name), `${method} ${path}: path parameter ${name} is not declared`);
      }
    }
  });

  test('the {error, code} body is documented for the REST routes’ errors', () => {
    assert.deepEqual(doc.components.schemas.ErrorBody.required, ['error', 'code']);
    const login = doc.paths['/v1/auth/login'].post;
    assert.equal(login.responses.default.content['application/json'].schema.$ref, '#/components/schemas/ErrorBody');
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      if (path.startsWith('/ofrep/')) continue;
      for (const method of METHODS.filter((m) => item[m] !== undefined)) {
        const statuses = Object.keys(item[method].responses);
        assert.ok(statuses.some((s) => s === 'default' || /^[45]/.test(s)), `${method} ${path} documents no error answer`);
      }
    }
  });

  test('the request body schema is the one Fastify validates with', () => {
    const body = doc.paths['/v1/auth/login'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['email', 'password']);
    const ofrep = doc.paths['/ofrep/v1/evaluate/flags/{key}'].post;
    assert.equal(ofrep.requestBody.content['application/json'].schema.properties.context.type, 'object');
  });

  test('OFREP operations carry the protocol’s answers and SDK-key security', () => {
    const single = doc.paths['/ofrep/v1/evaluate/flags/{key}'].post;
    for (const status of ['200', '400', '401', '403', '404']) assert.ok(single.responses[status], `single ${status}`);
    assert.deepEqual(single.responses['404'].content['application/json'].schema.properties.errorCode.enum, ['FLAG_NOT_FOUND']);
    assert.equal(single.responses['401'].content, undefined, '401 has no body');
    const bulk = doc.paths['/ofrep/v1/evaluate/flags'].post;
    for (const status of ['200', '304', '400', '401', '403']) assert.ok(bulk.responses[status], `bulk ${status}`);
    assert.ok(bulk.responses['200'].headers.ETag);
    assert.ok(bulk.parameters.some((p: Json) => p.in === 'header' && p.name.toLowerCase() === 'if-none-match'));
    // OFREP's own X-API-Key, the x-sdk-key header, or the key as a Bearer (docs/client-side.md).
    assert.deepEqual(bulk.security, [{ api_key: [] }, { sdk_key: [] }, { sdk_key_bearer: [] }]);
    assert.deepEqual(doc.components.securitySchemes.api_key, { ...doc.components.securitySchemes.api_key, type: 'apiKey', in: 'header', name: 'X-API-Key' });
  });

  test('answers the same document to any caller, with or without credentials', async () => {
    const again = await client.get('/v1/openapi.json', { token: 'not-a-token' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, doc);
  });

  test('every route schema compiles (they compile on first use: a broken one would fail only its route)', () => {
    // Each operation with a request body has a body validator; most have more (params, responses).
    const withBody = Object.values(doc.paths as Record<string, Record<string, Json>>).flatMap((item) => Object.values(item)).filter((operation) => operation?.requestBody).length;
    assert.ok(withBody > 50, `${withBody} operations with a body`);
    const compiled = compileRouteSchemas(ts.server.http);
    assert.ok(compiled >= withBody, `${compiled} compiled`);
    assert.equal(compileRouteSchemas(ts.server.http), 0);
  });
});
