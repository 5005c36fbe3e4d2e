/**
 * A real OpenID Provider for tests (oidc-provider), so the relying party is exercised against the
 * same discovery, JWKS, PKCE, code and ID-token rules a production provider applies, instead of a
 * hand-written fake that agrees with our own assumptions.
 *
 *   const idp = await startTestOidcProvider();
 *   idp.addClient({ clientId: 'switchyard', clientSecret: 's3cret', redirectUris: ['http://127.0.0.1:1234/callback'] });
 *   idp.addAccount('alice', { sub: 'alice-sub', email: 'alice@example.com', email_verified: true, name: 'Alice' });
 *   const callback = await signInThroughBrowser(authorizationUrl, 'alice', 'http://127.0.0.1:1234/callback');
 *   ...
 *   await idp.close();
 *
 * The provider listens on 127.0.0.1 over plain http (relying parties need allowInsecureHttp and a
 * fetch that allows private networks), requires PKCE from every client, puts the scope's claims
 * (email, email_verified, name) into the ID token, and skips consent: the only interaction is a
 * minimal login form (one `login` field) at /interaction/:uid. It needs `oidc-provider` (a dev
 * dependency), which prints a warning on Node 20 once at import.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT, decodeJwt, type JWK } from 'jose';
import Provider, { type OidcContext, type StoredModel } from 'oidc-provider';

export interface TestOidcClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface TestOidcAccountClaims {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  /** Asserted for the `groups` scope (a string array or a single string, as providers differ). */
  groups?: string[] | string;
  /** Another groups claim, also for the `groups` scope (a provider that names it otherwise). */
  teams?: string[] | string;
}

export type IdTokenTamperer = (claims: Record<string, unknown>) => Record<string, unknown>;

export interface TestOidcProvider {
  /** The issuer identifier, e.g. http://127.0.0.1:41234 (no trailing slash). */
  issuer: string;
  close(): Promise<void>;
  /** Registers a client (client_secret_basic, code flow); can be called any time before use. */
  addClient(client: TestOidcClient): void;
  /** Accounts the login form accepts: login name → claims. */
  addAccount(login: string, claims: TestOidcAccountClaims): void;
  /**
   * When set, rewrites the ID token of the following token responses: receives the decoded claims,
   * returns the claims to sign instead (with the provider's own key), e.g. to make aud wrong, exp
   * past or nonce wrong. `null` stops tampering.
   */
  tamperIdToken(fn: IdTokenTamperer | null): void;
  /** The provider's private signing JWK (RS256, with kid), so a test can forge tokens. */
  signingKey: JWK;
}

/** Interaction cookies are signed with this; anything works for a throwaway provider. */
const COOKIE_KEYS = ['test-oidc-provider-cookie-key'];

/**
 * An in-memory store for oidc-provider's models. `Client` reads the clients registered through
 * addClient (oidc-provider looks clients up through the adapter on every request, so clients
 * added after start are found); every other model is kept in a Map with its expiry.
 */
function memoryAdapterFactory(clients: Map<string, Record<string, unknown>>): (model: string) => StoredModel {
  const store = new Map<string, { payload: Record<string, unknown>; expiresAtMs: number }>();
  const live = (key: string): Record<string, unknown> | undefined => {
    const entry = store.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return entry.payload;
  };
  return (model) => {
    const key = (id: string): string => `${model}:${id}`;
    const findBy = (field: string, value: string): Record<string, unknown> | undefined => {
      for (const [k] of store) {
        if (!k.startsWith(`${model}:`)) continue;
        const payload = live(k);
        if (payload && payload[field] === value) return payload;
      }
      return undefined;
    };
    return {
      find: async (id) => (model === 'Client' ? clients.get(id) : live(key(id))),
      findByUid: async (uid) => findBy('uid', uid),
      findByUserCode: async (userCode) => findBy('userCode', userCode),
      upsert: async (id, payload, expiresIn) => {
        store.set(key(id), { payload, expiresAtMs: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity });
      },
      consume: async (id) => {
        const payload = live(key(id));
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      destroy: async (id) => {
        store.delete(key(id));
      },
      revokeByGrantId: async (grantId) => {
        for (const [k, entry] of store) if (entry.payload.grantId === grantId) store.delete(k);
      },
    };
  };
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

const loginPage = (uid: string, notice: string): string =>
  `<!doctype html><html><body><h1>Sign in</h1>${notice ? `<p class="error">${escapeHtml(notice)}</p>` : ''}` +
  `<form method="post" action="/interaction/${encodeURIComponent(uid)}/login">` +
  `<input type="text" name="login" autofocus><button type="submit">Sign in</button></form></body></html>`;

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export interface TestOidcProviderOptions {
  /**
   * Whether the scope's claims (email, name) go into the ID token (default true, like most
   * providers). false: the ID token carries only `sub` and the rest comes from UserInfo, as
   * OpenID Connect Core strictly requires when an access token is issued.
   */
  claimsInIdToken?: boolean;
}

export async function startTestOidcProvider(options: TestOidcProviderOptions = {}): Promise<TestOidcProvider> {
  const clients = new Map<string, Record<string, unknown>>();
  const accountsByLogin = new Map<string, TestOidcAccountClaims>();
  const accountsBySub = new Map<string, TestOidcAccountClaims>();
  let tamperer: IdTokenTamperer | null = null;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey: JWK = { ...(await exportJWK(privateKey)), kid: 'test-oidc-provider-key', alg: 'RS256', use: 'sig' };

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    adapter: memoryAdapterFactory(clients),
    jwks: { keys: [signingKey] },
    cookies: { keys: COOKIE_KEYS },
    pkce: { required: () => true },
    // Explicit lifetimes (seconds) keep oidc-provider from printing a notice for each default.
    ttl: { AuthorizationCode: 60, AccessToken: 600, IdToken: 600, Interaction: 600, Grant: 600, Session: 600 },
    conformIdTokenClaims: options.claimsInIdToken === false,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups', 'teams'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // First-party test clients: consent is granted for whatever they ask.
    loadExistingGrant: async (ctx: OidcContext) => {
      const clientId = ctx.oidc.client?.clientId;
      if (!clientId) return undefined;
      const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session?.grantIdFor(clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId, accountId: ctx.oidc.session?.accountId });
      grant.addOIDCScope('openid email profile groups');
      await grant.save();
      return grant;
    },
    findAccount: async (_ctx: unknown, sub: string) => {
      const claims = accountsBySub.get(sub);
      return claims ? { accountId: sub, claims: () => ({ ...claims }) } : undefined;
    },
    renderError: async (ctx: { type: string; body: string }, out: Record<string, unknown>) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><html><body><h1>oops</h1><pre>${escapeHtml(JSON.stringify(out))}</pre></body></html>`;
    },
  });

  provider.use(async (ctx, next) => {
    await next();
    if (!tamperer || ctx.path !== '/token' || ctx.method !== 'POST' || ctx.status !== 200) return;
    const body = ctx.body as Record<string, unknown> | undefined;
    if (!body || typeof body.id_token !== 'string') return;
    const claims = tamperer(decodeJwt(body.id_token) as Record<string, unknown>);
    const id_token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid, typ: 'JWT' })
      .sign(await importJWK(signingKey, 'RS256'));
    ctx.body = { ...body, id_token };
  });

  const providerCallback = provider.callback();
  const interaction = async (req: IncomingMessage, res: ServerResponse, uid: string, action: string | undefined): Promise<void> => {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    if (req.method === 'POST' && action === 'login') {
      const login = (await readForm(req)).get('login') ?? '';
      const account = accountsByLogin.get(login);
      if (!account) {
        res.writeHead(200, { 'content-type': 'text/html' }).end(loginPage(uid, `unknown login '${login}'`));
        return;
      }
      await provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(loginPage(uid, `prompt: ${details.prompt.name}`));
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const match = /^\/interaction\/([^/?]+)(?:\/([a-z]+))?/.exec(req.url ?? '');
    if (!match) return providerCallback(req, res);
    interaction(req, res, decodeURIComponent(match[1] ?? ''), match[2]).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`interaction failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  });

  return {
    issuer,
    signingKey,
    addClient: ({ clientId, clientSecret, redirectUris }) => {
      clients.set(clientId, {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      });
    },
    addAccount: (login, claims) => {
      accountsByLogin.set(login, claims);
      accountsBySub.set(claims.sub, claims);
    },
    tamperIdToken: (fn) => {
      tamperer = fn;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A cookie jar for one host: name → value (paths and expiry do not matter for these short flows). */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

const pageText = (html: string): string => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 500);

/**
 * Drives the browser part like a user agent: GETs the authorization URL, follows redirects with a
 * cookie jar, submits the login form with `login`, and stops at the first redirect whose Location
 * starts with `stopAt` (the relying party's callback), returning that URL. Throws with the page
 * text when it gets stuck (unknown login, provider error page, too many steps).
 */
export async function signInThroughBrowser(authorizationUrl: string, login: string, stopAt: string): Promise<URL> {
  const jar = new CookieJar();
  let next: { url: URL; method: 'GET' | 'POST'; body?: URLSearchParams } = { url: new URL(authorizationUrl), method: 'GET' };
  let submittedLogin = false;
  for (let step = 0; step < 20; step += 1) {
    const response = await fetch(next.url, {
      method: next.method,
      redirect: 'manual',
      headers: { cookie: jar.header(), ...(next.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: next.body,
    });
    jar.store(response);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      const target = new URL(location, next.url);
      if (target.href.startsWith(stopAt)) return target;
      next = { url: target, method: 'GET' };
      continue;
    }
    const html = await response.text();
    const form = /<form[^>]*method="post"[^>]*action="([^"]+)"[^>]*>[\s\S]*?name="login"/i.exec(html);
    if (response.status === 200 && form?.[1] && !submittedLogin) {
      submittedLogin = true;
      next = { url: new URL(form[1].replace(/&amp;/g, '&'), next.url), method: 'POST', body: new URLSearchParams({ login }) };
      continue;
    }
    throw new Error(`sign-in stuck at ${next.url.href} (HTTP ${response.status}): ${pageText(html)}`);
  }
  throw new Error(`sign-in did not reach ${stopAt} within 20 steps`);
}
