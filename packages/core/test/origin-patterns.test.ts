import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_ORIGIN_LENGTH, OriginPatternSet, originAllowed, originPatternProblem } from '../src/index.ts';

// Every expectation below is derived by hand from how browsers serialise an origin (scheme "://"
// lower-case host, the port only when it is not the scheme's default; no path, no trailing slash)
// and from the rule of docs/client-side.md "CORS and origins": an exact origin, or
// `https://*.example.com` for any subdomain at any depth (not the bare domain), same scheme and port.

describe('originPatternProblem: how an allowed origin must be written', () => {
  test('origins as browsers send them, and leading-wildcard subdomains, are valid', () => {
    for (const pattern of [
      'https://app.example.com',
      'http://localhost:3000',
      'http://127.0.0.1:8080',
      'https://example.com:8443',
      'https://[::1]:8443',
      'https://*.example.com',
      'https://*.eu.example.com:8443',
      'http://*.internal.test',
      'https://my-app.example.com',
    ]) {
      assert.equal(originPatternProblem(pattern), undefined, pattern);
    }
  });

  test('a path, a trailing slash, a default port, upper case, query, credentials or another scheme are refused', () => {
    for (const pattern of [
      'https://app.example.com/',
      'https://app.example.com/path',
      'https://app.example.com:443',
      'http://app.example.com:80',
      'https://*.example.com:443',
      'https://App.example.com',
      'HTTPS://app.example.com',
      'https://app.example.com?x=1',
      'https://app.example.com#top',
      'https://user@app.example.com',
      'ftp://app.example.com',
      'app.example.com',
      '//app.example.com',
      'https://app.example.com ',
      ' https://app.example.com',
      'null',
      '',
    ]) {
      assert.notEqual(originPatternProblem(pattern), undefined, pattern);
    }
  });

  test('ports must be 1..65535 written plainly', () => {
    for (const pattern of ['https://example.com:0', 'https://example.com:65536', 'https://example.com:0443', 'https://example.com:', 'https://example.com:123456']) {
      assert.notEqual(originPatternProblem(pattern), undefined, pattern);
    }
    assert.equal(originPatternProblem('https://example.com:65535'), undefined);
    assert.equal(originPatternProblem('https://example.com:1'), undefined);
  });

  test('only a leading wildcard over a domain of at least two labels is a pattern', () => {
    for (const pattern of [
      '*',
      'https://*',
      'https://*.com', // would allow every .com site
      '*.example.com',
      'https://*example.com', // would allow https://evilexample.com
      'https://a.*.example.com',
      'https://*.*.example.com',
      'https://**.example.com',
      'https://*.[::1]',
      'https://example.*',
    ]) {
      assert.notEqual(originPatternProblem(pattern), undefined, pattern);
    }
  });

  test('an entry is at most MAX_ORIGIN_LENGTH characters', () => {
    const host = `${'a'.repeat(60)}.`.repeat(5) + 'example.com'; // 316 characters of valid labels
    assert.ok(`https://${host}`.length > MAX_ORIGIN_LENGTH);
    assert.notEqual(originPatternProblem(`https://${host}`), undefined);
  });
});

/** [patterns, origin, allowed?] — each checked against originAllowed and OriginPatternSet alike. */
const CASES: Array<[readonly string[], string, boolean]> = [
  // a wildcard: any subdomain at any depth, never the bare domain
  [['https://*.example.com'], 'https://a.example.com', true],
  [['https://*.example.com'], 'https://a.b.example.com', true],
  [['https://*.example.com'], 'https://my-app.eu.example.com', true],
  [['https://*.example.com'], 'https://example.com', false],
  // the scheme and the port are part of the pattern
  [['https://*.example.com'], 'http://a.example.com', false],
  [['https://*.example.com'], 'https://a.example.com:8443', false],
  [['https://*.example.com:8443'], 'https://a.example.com:8443', true],
  [['https://*.example.com:8443'], 'https://a.example.com', false],
  [['https://*.example.com:8443'], 'https://a.example.com:9443', false],
  // look-alikes and tricks
  [['https://*.example.com'], 'https://aexample.com', false],
  [['https://*.example.com'], 'https://evilexample.com', false],
  [['https://*.example.com'], 'https://a.example.com.evil.com', false],
  [['https://*.example.com'], 'https://evil.com/https://a.example.com', false],
  [['https://*.example.com'], 'https://evil.com/.example.com', false],
  [['https://*.example.com'], 'https://evil.com?.example.com', false],
  [['https://*.example.com'], 'https://evil.com#.example.com', false],
  [['https://*.example.com'], 'https://user@a.example.com', false],
  [['https://*.example.com'], 'https://evil.com:443.example.com', false],
  [['https://*.example.com'], 'https://.example.com', false],
  [['https://*.example.com'], 'https://a..example.com', false],
  [['https://*.example.com'], 'https://a_b.example.com', false],
  [['https://*.example.com'], 'https://A.example.com', false],
  [['https://*.example.com'], 'https://a.example.com/', false],
  [['https://*.example.com'], 'https://a.example.com ', false],
  [['https://*.example.com'], 'https://*.example.com', false],
  [['https://*.example.com'], 'null', false],
  [['https://*.example.com'], '', false],
  // exact origins: exactly as browsers send them
  [['https://app.example.com'], 'https://app.example.com', true],
  [['https://app.example.com'], 'https://app.example.com:443', false],
  [['https://app.example.com'], 'https://app.example.com/', false],
  [['https://app.example.com'], 'http://app.example.com', false],
  [['https://app.example.com'], 'https://sub.app.example.com', false],
  [['https://app.example.com'], 'https://example.com', false],
  [['http://localhost:3000'], 'http://localhost:3000', true],
  [['http://localhost:3000'], 'http://localhost:3001', false],
  [['http://localhost:3000'], 'http://localhost', false],
  [['https://[::1]:8443'], 'https://[::1]:8443', true],
  [['https://[::1]:8443'], 'https://[::1]', false],
  // several patterns: any one suffices
  [['https://app.example.com', 'https://*.shop.example.com', 'http://localhost:3000'], 'https://eu.shop.example.com', true],
  [['https://app.example.com', 'https://*.shop.example.com', 'http://localhost:3000'], 'https://shop.example.com', false],
  [['https://app.example.com', 'https://*.shop.example.com', 'http://localhost:3000'], 'http://localhost:3000', true],
  [['https://app.example.com', 'https://*.shop.example.com', 'http://localhost:3000'], 'https://other.example.com', false],
  [['https://*.a.example.com', 'https://*.example.com:8443'], 'https://x.y.a.example.com', true],
  [['https://*.a.example.com', 'https://*.example.com:8443'], 'https://a.example.com', false],
  [['https://*.a.example.com', 'https://*.example.com:8443'], 'https://x.a.example.com:8443', true],
  // nothing allowed
  [[], 'https://app.example.com', false],
];

describe('originAllowed and OriginPatternSet: whether a request origin is allowed', () => {
  for (const [patterns, origin, expected] of CASES) {
    test(`${JSON.stringify(origin)} under ${JSON.stringify(patterns)}: ${expected ? 'allowed' : 'refused'}`, () => {
      for (const pattern of patterns) assert.equal(originPatternProblem(pattern), undefined, `the case's pattern ${pattern} is valid`);
      assert.equal(originAllowed(patterns, origin), expected, 'originAllowed');
      assert.equal(new OriginPatternSet(patterns).allows(origin), expected, 'OriginPatternSet');
    });
  }

  test('a set counts each distinct pattern once', () => {
    assert.equal(new OriginPatternSet(['https://a.example.com', 'https://a.example.com', 'https://*.example.com']).size, 2);
    assert.equal(OriginPatternSet.EMPTY.size, 0);
    assert.equal(OriginPatternSet.EMPTY.allows('https://a.example.com'), false);
  });
});
