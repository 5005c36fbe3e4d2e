import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../src/http/app.ts';
import { MAX_JSON_DEPTH } from '../src/http/json-body.ts';
import { createLogger } from '../src/logging.ts';

/**
 * The JSON body pipeline of every REST route (createHttpApp): nesting limit, prototype-poisoning
 * keys, string content PostgreSQL cannot store. Plain texts (no escape, no BOM, neither
 * `__proto__` nor `constructor`) take JSON.parse directly and skip the body's string walk; these
 * tests hold both paths to the same answers, over real HTTP.
 */
describe('JSON request bodies', () => {
  let app: FastifyInstance;
  let url: string;

  before(async () => {
    const silent = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    app = createHttpApp(createLogger({ filter: 'warn', json: true, destination: silent }).forModule('http'));
    app.post('/v1/echo', async (request) => ({ body: request.body }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/echo`;
  });
  after(() => app.close());

  const post = async (text: string): Promise<{ status: number; body: { body?: unknown; code?: string; error?: string } }> => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    return { status: response.status, body: (await response.json()) as { body?: unknown; code?: string; error?: string } };
  };

  test('a plain text is parsed as JSON.parse parses it', async () => {
    const value = { context_key: 'user-1', attributes: { age: 42, pro: true, tags: ['a', 'b'], nothing: null }, emoji: 'ok' };
    assert.deepEqual(await post(JSON.stringify(value)), { status: 200, body: { body: value } });
  });

  test('escapes, surrogate pairs and a byte-order mark are parsed too', async () => {
    assert.deepEqual((await post('{"quote":"say \\"hi\\"","tab":"a\\tb","e":"\\u00e9"}')).body.body, { quote: 'say "hi"', tab: 'a\tb', e: 'é' });
    assert.deepEqual((await post('{"face":"😀 ok"}')).body.body, { face: '😀 ok' });
    assert.deepEqual((await post('\ufeff{"a":1}')).body.body, { a: 1 });
  });

  test('__proto__ and constructor as keys are refused, spelled out or escaped; as values they are data', async () => {
    for (const text of ['{"__proto__":{"admin":true}}', '{"a":{"constructor":{"prototype":{"x":1}}}}', '{"\\u005f_proto__":{"admin":true}}', '{"constructo\\u0072":{"prototype":{}}}']) {
      const answer = await post(text);
      assert.equal(answer.status, 400, text);
      assert.equal(answer.body.code, 'INVALID_ARGUMENT', text);
    }
    assert.deepEqual((await post('{"note":"__proto__ and constructor"}')).body.body, { note: '__proto__ and constructor' });
  });

  test('NUL and unpaired surrogates are refused whether the text escapes them or not', async () => {
    for (const [text, field] of [
      ['{"name":"a\\u0000b"}', 'body.name'],
      ['{"name":"a\\ud800"}', 'body.name'],
      ['{"list":["ok","\\udc00x"]}', 'body.list[1]'],
    ] as const) {
      const answer = await post(text);
      assert.equal(answer.status, 400, text);
      assert.match(answer.body.error ?? '', new RegExp(`^${field.replace(/[[\]]/g, '\\$&')} must not contain`), text);
    }
  });

  test('invalid JSON and over-deep nesting are 400 with their own messages', async () => {
    const invalid = await post('{"a":');
    assert.deepEqual([invalid.status, invalid.body.error], [400, 'request body is not valid JSON']);
    const deep = await post('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1));
    assert.equal(deep.status, 400);
    assert.match(deep.body.error ?? '', /nests deeper than/);
    const deepInString = await post(JSON.stringify({ s: '['.repeat(500) }));
    assert.equal(deepInString.status, 200, 'brackets inside a string do not nest');
  });

  test('the nesting limit counts objects and arrays together, and a text at the limit is parsed', async () => {
    // Depth d: d - 10 objects around 10 arrays around a number (hand-built, not by our code).
    const nested = (depth: number): string => '{"a":'.repeat(depth - 10) + '['.repeat(10) + '1' + ']'.repeat(10) + '}'.repeat(depth - 10);
    const atLimit = await post(nested(MAX_JSON_DEPTH));
    assert.equal(atLimit.status, 200);
    let value = atLimit.body.body;
    for (let i = 0; i < MAX_JSON_DEPTH - 10; i++) value = (value as { a: unknown }).a;
    assert.deepEqual(value, JSON.parse('['.repeat(10) + '1' + ']'.repeat(10)));
    const overLimit = await post(nested(MAX_JSON_DEPTH + 1));
    assert.equal(overLimit.status, 400);
    assert.match(overLimit.body.error ?? '', /nests deeper than/);
    // Many brackets in all, few nested: the text is parsed (the exact pass decides, not the count).
    const wide = await post(JSON.stringify({ list: Array.from({ length: 3 * MAX_JSON_DEPTH }, (_, i) => ({ i })) }));
    assert.equal(wide.status, 200);
    assert.equal((wide.body.body as { list: unknown[] }).list.length, 3 * MAX_JSON_DEPTH);
  });

  test('a non-ASCII text without surrogates, and a raw NUL, are judged as before', async () => {
    assert.deepEqual((await post('{"name":"Zoë café ✓"}')).body.body, { name: 'Zoë café ✓' });
    // A raw control character is not valid JSON (it must be escaped).
    const rawNul = await post('{"name":"a\u0000b"}');
    assert.deepEqual([rawNul.status, rawNul.body.code], [400, 'INVALID_ARGUMENT']);
  });
});
