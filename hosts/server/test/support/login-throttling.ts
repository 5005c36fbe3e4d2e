import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type ApiResponse, type LoggedInUser, type Tenant } from './rest-client.ts';
import { startTestServer, type TestServer } from './test-server.ts';

// Failed logins are counted per (email, client) — 10 per 15 minutes — per client — 30 per 15
// minutes — and per IPv6 /48 — 100 per 15 minutes —, where a client is an IPv4 address or an IPv6
// /64; after 10 failures of one account from anywhere its attempts are spaced 1 s, 2 s, 4 s ... 60 s.
// Every request comes from 127.0.0.1 unless a test connects from 127.0.0.2 (another loopback
// address, hence another client) or names its client in X-Forwarded-For: the server trusts one
// proxy hop (TRUST_PROXY=true, the loopback peer being the proxy), the way a deployment behind a
// reverse proxy learns IPv6 client addresses. Each test starts from a clean count.

export const OTHER_ADDRESS = '127.0.0.2';
export const MAX_FAILURES = 10;
export const MAX_FAILURES_PER_ADDRESS = 30;
export const MAX_FAILURES_PER_SITE = 100;
export const WINDOW_S = 15 * 60;

/** A test file's server for login throttling, and the calls its tests make. */
export interface ThrottlingServer {
  readonly ts: TestServer;
  readonly client: ApiClient;
  readonly root: LoggedInUser;
  readonly tenant: Tenant;
  loginAs(email: string, password: string, localAddress?: string): Promise<ApiResponse>;
  /** A login from `clientAddress` as the trusted proxy reports it (the rightmost X-Forwarded-For entry). */
  loginFrom(clientAddress: string, email: string, password: string): Promise<ApiResponse>;
  /** A user of the tenant's org that has never failed a login. */
  freshUser(): Promise<{ email: string; password: string }>;
}

/**
 * Starts the file's server (before its tests; stopped after them) with bcrypt at
 * `passwordHashCost`, and forgets every recorded failure before each test, so that tests do not
 * depend on each other's counts. Counting needs no real cost (test servers hash at 4); timing and
 * races between parallel guesses do (10, production's). Named as a start…TestServer wrapper, so
 * that `npm test` runs the file in both topologies (scripts/run-tests.ts).
 */
export function startThrottlingTestServer(passwordHashCost: number): ThrottlingServer {
  let ts: TestServer | undefined;
  let client: ApiClient | undefined;
  let root: LoggedInUser | undefined;
  let tenant: Tenant | undefined;
  const ready = <T>(value: T | undefined): T => {
    assert.ok(value !== undefined, 'the throttling server has not started');
    return value;
  };
  before(async () => {
    ts = await startTestServer({ TRUST_PROXY: 'true', PASSWORD_HASH_COST: String(passwordHashCost) });
    client = api(ts.base);
    root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'throttle');
  });
  after(() => ts?.stop());
  beforeEach(async () => {
    await ready(ts).db.sql`DELETE FROM login_failures`;
  });
  const server: ThrottlingServer = {
    get ts() {
      return ready(ts);
    },
    get client() {
      return ready(client);
    },
    get root() {
      return ready(root);
    },
    get tenant() {
      return ready(tenant);
    },
    loginAs: (email, password, localAddress) => server.client.post('/v1/auth/login', { body: { email, password }, ...(localAddress === undefined ? {} : { localAddress }) }),
    loginFrom: (clientAddress, email, password) =>
      server.client.post('/v1/auth/login', { body: { email, password }, headers: { 'x-forwarded-for': `203.0.113.250, ${clientAddress}` } }),
    freshUser: async () => {
      const email = `fresh-${unique()}@example.com`;
      const password = `pw-fresh-${unique()}-secret`;
      expectStatus(
        await server.client.post(`/v1/admin/orgs/${server.tenant.orgId}/users`, {
          token: server.root.token,
          body: { email, display_name: 'Fresh', password, org_role: 'org_member' },
        }),
        201,
      );
      return { email, password };
    },
  };
  return server;
}

export function expectThrottled(response: ApiResponse): void {
  expectError(response, 429, 'RESOURCE_EXHAUSTED');
  const retryAfter = response.headers.get('retry-after');
  assert.ok(retryAfter !== null, 'a 429 carries Retry-After');
  assert.match(retryAfter, /^\d+$/, 'Retry-After is whole seconds');
  const seconds = Number(retryAfter);
  assert.ok(seconds > 0 && seconds <= 15 * 60, `Retry-After ${seconds}s is within the 15-minute window`);
}

/** The Retry-After of a 429, in seconds. */
export function retryAfterOf(response: ApiResponse): number {
  expectThrottled(response);
  return Number(response.headers.get('retry-after'));
}

/**
 * Checks the account slow-down's answer to an attempt with the right password, `delaySeconds`
 * after the account's newest failure, whose request was sent at `failureSentAt` (performance.now()).
 * The server measures the delay from when it recorded that failure to when it started this
 * attempt; both lie inside [failureSentAt, now], so on a loaded machine the delay may have passed
 * (200) or partly passed (a smaller Retry-After), but only as far as the time the client saw pass.
 */
export function expectSlowedDown(response: ApiResponse, failureSentAt: number, delaySeconds: number): void {
  const elapsedMs = performance.now() - failureSentAt;
  if (response.status === 200) {
    assert.ok(elapsedMs >= delaySeconds * 1000, `200 only ${elapsedMs.toFixed(0)} ms after the failure (delay ${delaySeconds} s)`);
    return;
  }
  const wait = retryAfterOf(response);
  const atLeast = Math.max(1, Math.ceil((delaySeconds * 1000 - elapsedMs) / 1000));
  assert.ok(wait >= atLeast && wait <= delaySeconds, `Retry-After ${wait} s, expected ${atLeast}..${delaySeconds} s (${elapsedMs.toFixed(0)} ms after the failure)`);
}

/**
 * How many of a burst of parallel guesses the slow-down may let through when the burst's
 * attempts reached the server over `spreadMs`: one, then one more each time the (doubling) delay
 * has passed since the previous one, from `firstDelayMs` on.
 */
export function checksAllowedWithin(spreadMs: number, firstDelayMs: number): number {
  let allowed = 1;
  for (let delay = firstDelayMs, next = firstDelayMs; next <= spreadMs; delay *= 2, next += delay) allowed++;
  return allowed;
}
