import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json } from './support/rest-client.ts';
import { CookieJar, browserGet, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// Issue 31, item 4: anonymous clients must not lock an org out of single sign-on. Starts are
// unauthenticated; when each stored a login in flight under a per-provider cap of 10,000 that
// dropped the oldest, 10,500 starts displaced every login still at the identity provider, and
// concurrent starts deadlocked in the cap's DELETE (500s). A browser login now lives in the
// browser's own cookie (docs/sso.md "The browser flow"), so a flood has nothing to displace.
// The flood no longer needs to pass a cap, since there is none: what it proves (every start
// answered 302, nothing stored, the person's login completing while anonymous starts run 32 at a
// time) holds at any size. 1,000 starts do it at a tenth of the 10,500 once needed to overflow the
// old cap (bench/README.md "test suite"); one stored row per start would show as 1,000.

const APP = 'http://127.0.0.1:9/app/signed-in';
const CLIENT_SECRET = `op-client-secret-${unique()}`;
/** Anonymous starts in the flood (see above for why not more). */
const FLOOD_STARTS = 1_000;
/** Starts in flight at once: enough to overlap in the database as a flood does. */
const FLOOD_CONCURRENCY = 32;

let ts: TestServer & { publicUrl: string };
let client: ApiClient;
let op: TestOidcProvider;
let provider: Json;

const callbackUrl = () => `${ts.publicUrl}/v1/auth/oidc/callback`;

before(async () => {
  [ts, op] = await Promise.all([startSsoTestServer(), startTestOidcProvider()]);
  client = api(ts.base);
  const root = await loginAdmin(client);
  const tenant = await seedTenant(client, root.token, 'sso-flood');
  op.addClient({ clientId: 'switchyard-flood', clientSecret: CLIENT_SECRET, redirectUris: [callbackUrl()] });
  provider = expectStatus(
    await client.post(`/v1/management/orgs/${tenant.orgId}/auth-providers`, {
      token: tenant.admin.token,
      body: {
        provider_type: 'oidc',
        display_name: 'Flooded IdP',
        redirect_uris: [APP],
        oidc: { issuer_url: op.issuer, client_id: 'switchyard-flood', client_secret: CLIENT_SECRET },
      },
    }),
    201,
    'create provider',
  );
});
after(async () => {
  await op?.close();
  await ts?.stop();
});

describe('a flood of anonymous starts', () => {
  test('does not stop a login in flight from completing, answers every start 302 (no 500), and stores nothing', async () => {
    const startUrl = `${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}`;
    const person = new CookieJar();
    const started = await browserGet(`${startUrl}&state=person`, person);
    assert.equal(started.status, 302, started.text);
    op.addAccount('slow-person', { sub: `sub-${unique()}`, email: `slow-${unique()}@corp.example`, email_verified: true, name: 'Slow Person' });

    // While the person types a password at the identity provider, anonymous clients start logins.
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: FLOOD_CONCURRENCY }, async () => {
        while (next < FLOOD_STARTS) {
          next += 1;
          const response = await fetch(startUrl, { redirect: 'manual' });
          await response.arrayBuffer();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        }
      }),
    );

    const callback = await signInThroughBrowser(started.location!.href, 'slow-person', callbackUrl());
    const back = await browserGet(callback, person);
    assert.equal(back.status, 302, back.text);
    assert.equal(back.location!.searchParams.get('state'), 'person');
    const code = back.location!.searchParams.get('code');
    assert.ok(code, `the person's login completed: ${back.location!.href}`);
    const session = expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
    assert.ok(session.token);

    assert.deepEqual(Object.fromEntries(statuses), { 302: FLOOD_STARTS }, 'every start is redirected to the provider');
    const [stored] = await ts.db.sql<Array<{ count: number }>>`
      SELECT count(*)::int AS count FROM sso_pending_logins WHERE provider_id = ${provider.id as string}`;
    assert.equal(stored?.count, 0, 'browser starts store nothing on the server');
  });
});
