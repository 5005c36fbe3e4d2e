import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { browserLoginCookieName, openBrowserLogin, sealBrowserLogin, type BrowserLogin } from '../../src/sso/browser-login-cookie.ts';
import { SecretBox } from '../../src/sso/secret-box.ts';

// The browser's login in flight, sealed into its cookie (docs/security.md "Single sign-on: logins
// in flight, bound to the browser"): it opens only under the key and for the state it was sealed
// with, and any change to it is refused.

const box = new SecretBox('unit-test-sso-secrets-key-0123456789abcdef');
const STATE = 'state-one-0123456789';
const login: BrowserLogin = {
  type: 'oidc',
  providerId: '00000000-0000-4000-8000-000000000001',
  orgId: '00000000-0000-4000-8000-000000000002',
  returnUriHash: createHash('sha256').update('https://app.example.com/done').digest('hex'),
  appState: 'tab \u0001 "quoted" €',
  nonce: 'nonce-1',
  codeVerifier: 'verifier-1',
  samlRequestId: null,
  expiresAtMs: 1_800_000_000_000,
};

describe('browser login cookie', () => {
  test('opens for its own state with every field as sealed', () => {
    assert.deepEqual(openBrowserLogin(box, STATE, sealBrowserLogin(box, STATE, login)), login);
    const saml = { ...login, type: 'saml' as const, nonce: null, codeVerifier: null, samlRequestId: '_request-1', appState: null };
    assert.deepEqual(openBrowserLogin(box, STATE, sealBrowserLogin(box, STATE, saml)), saml);
  });

  test('does not open for another state, under another key, or changed in any character', () => {
    const sealed = sealBrowserLogin(box, STATE, login);
    assert.equal(openBrowserLogin(box, 'state-two-0123456789', sealed), null, 'sealed for another login');
    assert.equal(openBrowserLogin(new SecretBox('another-sso-secrets-key-0123456789abcdef'), STATE, sealed), null, 'another key');
    // Not the last character: base64url's final character may carry unused bits.
    for (const at of [0, 3, 10, Math.floor(sealed.length / 2), sealed.length - 2]) {
      const flipped = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
      assert.equal(openBrowserLogin(box, STATE, flipped), null, `changed at ${at}`);
    }
    assert.equal(openBrowserLogin(box, STATE, ''), null);
    assert.equal(openBrowserLogin(box, STATE, 'v1.'), null);
    // A client secret sealed for a provider (the same key) is not a login.
    assert.equal(openBrowserLogin(box, STATE, box.seal('{"t":"oidc"}', login.providerId)), null);
  });

  test('one name per login, a __Host- cookie', () => {
    assert.match(browserLoginCookieName(STATE), /^__Host-switchyard-sso-[0-9a-f]{16}$/);
    assert.notEqual(browserLoginCookieName(STATE), browserLoginCookieName('state-two-0123456789'));
    assert.equal(browserLoginCookieName(STATE), browserLoginCookieName(STATE));
  });
});
