import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { TEST_ADMIN } from './test-server.ts';

/** A parsed JSON body. Tests read fields freely and assert on them, hence `any`. */
export type Json = any;

/** What a secret is, which decides the one kind of answer allowed to carry it. */
export type SecretKind = 'password' | 'token' | 'refresh_token' | 'raw_key' | 'invitation_token';
const SECRET_FIELDS: ReadonlySet<string> = new Set<SecretKind>(['password', 'token', 'refresh_token', 'raw_key']);

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or `undefined` for an empty body (e.g. 204). */
  body: Json;
  /** The body exactly as received. */
  text: string;
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as `x-sdk-key`. */
  sdkKey?: string;
  /** Serialised as JSON. */
  body?: unknown;
  /** Extra or overriding headers (e.g. a hand-made `authorization`). */
  headers?: Record<string, string>;
  /** Source address of the connection (e.g. `127.0.0.2`), to act as another client address. */
  localAddress?: string;
}

/** One request and its answer, kept so a test can scan every response body for secrets. */
export interface Exchange {
  method: string;
  path: string;
  status: number;
  text: string;
}

export interface ApiClient {
  base: string;
  /** Every exchange made through this client, in order. */
  exchanges: Exchange[];
  /**
   * Every secret seen so far, by kind: passwords sent in bodies, and tokens, refresh tokens and
   * raw SDK keys received. None of them may appear in a log line.
   */
  secrets: Map<string, SecretKind>;
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>;
  get(path: string, options?: RequestOptions): Promise<ApiResponse>;
  post(path: string, options?: RequestOptions): Promise<ApiResponse>;
  delete(path: string, options?: RequestOptions): Promise<ApiResponse>;
}

/** A unique suffix so names and emails never collide between tests of one file. */
export const unique = (): string => randomBytes(4).toString('hex');

/** Uses node:http (not fetch) only to pick the source address of the connection. */
function requestFrom(url: string, method: string, headers: Record<string, string>, body: string | undefined, localAddress: string): Promise<{ status: number; headers: Headers; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const out = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string') out.set(name, value);
          else if (Array.isArray(value)) for (const item of value) out.append(name, item);
        }
        resolve({ status: res.statusCode ?? 0, headers: out, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function collectSecrets(secrets: Map<string, SecretKind>, value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [name, field] of Object.entries(value)) {
    // An invitation's `token` is its own kind: shown once to the inviter, never anywhere else.
    if (typeof field === 'string' && name === 'token' && field.startsWith('inv_')) secrets.set(field, 'invitation_token');
    else if (typeof field === 'string' && SECRET_FIELDS.has(name) && field !== '') secrets.set(field, name as SecretKind);
    else collectSecrets(secrets, field);
  }
}

/** A small REST client over global fetch for `base` (`http://127.0.0.1:PORT`). Paths are sent as written. */
export function api(base: string): ApiClient {
  const exchanges: Exchange[] = [];
  const secrets = new Map<string, SecretKind>([[TEST_ADMIN.password, 'password']]);

  async function request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.sdkKey !== undefined) headers['x-sdk-key'] = options.sdkKey;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(options.body);
      collectSecrets(secrets, options.body);
    }
    Object.assign(headers, options.headers);
    // String concatenation, not new URL(path, base): `//v1/...` must stay a path.
    const url = base + path;
    let answer: { status: number; headers: Headers; text: string };
    if (options.localAddress === undefined) {
      const response = await fetch(url, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
      answer = { status: response.status, headers: response.headers, text: await response.text() };
    } else {
      answer = await requestFrom(url, method, headers, payload, options.localAddress);
    }
    let body: Json;
    try {
      body = answer.text === '' ? undefined : JSON.parse(answer.text);
    } catch {
      body = answer.text;
    }
    collectSecrets(secrets, body);
    exchanges.push({ method, path, status: answer.status, text: answer.text });
    return { status: answer.status, headers: answer.headers, body, text: answer.text };
  }

  return {
    base,
    exchanges,
    secrets,
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, options) => request('POST', path, options),
    delete: (path, options) => request('DELETE', path, options),
  };
}

/** Asserts the status, showing the body when it differs (setup steps fail with a readable message). */
export function expectStatus(response: ApiResponse, status: number, what = 'request'): Json {
  assert.equal(response.status, status, `${what}: expected ${status}, got ${response.status} ${response.text}`);
  return response.body;
}

/** Asserts an error answer: the status and the `{error, code}` body of docs/contract.md "Errors". */
export function expectError(response: ApiResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status} ${response.text}`);
  assert.equal(response.body?.code, code, response.text);
  assert.equal(typeof response.body?.error, 'string', response.text);
  assert.notEqual(response.body.error, '');
  assert.deepEqual(Object.keys(response.body as object).sort(), ['code', 'error']);
  if (message) assert.match(response.body.error as string, message);
}

/** Asserts a refusal that is not a success and carries an error code (for "never 2xx" checks). */
export function expectRefused(response: ApiResponse, allowed: number[], what: string): void {
  assert.ok(response.status < 200 || response.status >= 300, `${what}: got ${response.status} ${response.text}`);
  assert.ok(allowed.includes(response.status), `${what}: expected one of ${allowed.join('/')}, got ${response.status} ${response.text}`);
  assert.equal(typeof response.body?.code, 'string', `${what}: ${response.text}`);
}

export interface LoggedInUser {
  userId: string;
  email: string;
  password: string;
  token: string;
  refreshToken: string;
}

/** Logs in and returns the session; fails the test on anything but 200. */
export async function login(client: ApiClient, email: string, password: string, orgId?: string): Promise<LoggedInUser> {
  const body = expectStatus(
    await client.post('/v1/auth/login', { body: orgId === undefined ? { email, password } : { email, password, org_id: orgId } }),
    200,
    `login ${email}`,
  );
  return { userId: body.user_id as string, email, password, token: body.token as string, refreshToken: body.refresh_token as string };
}

/** The bootstrap system admin (TEST_ADMIN), logged in. */
export const loginAdmin = (client: ApiClient): Promise<LoggedInUser> => login(client, TEST_ADMIN.email, TEST_ADMIN.password);

/** Creates a user in `orgId` through the admin route and logs it in to that org. */
export async function seedUser(client: ApiClient, adminToken: string, orgId: string, role: 'org_admin' | 'org_member', label: string): Promise<LoggedInUser> {
  const email = `${label}-${unique()}@example.com`;
  const password = `pw-${label}-${unique()}-secret`;
  expectStatus(
    await client.post(`/v1/admin/orgs/${orgId}/users`, { token: adminToken, body: { email, display_name: label, password, org_role: role } }),
    201,
    `create ${role} ${email}`,
  );
  return login(client, email, password, orgId);
}

/**
 * Adds an existing account to another org the only way there is: an invitation from someone who
 * may invite there (`inviterToken`), accepted by the account holder with its own bearer.
 */
export async function joinOrgByInvitation(
  client: ApiClient,
  inviterToken: string,
  orgId: string,
  role: 'org_admin' | 'org_member',
  invitee: { email: string; token: string },
): Promise<void> {
  const invitation = expectStatus(
    await client.post(`/v1/management/orgs/${orgId}/invitations`, { token: inviterToken, body: { email: invitee.email, org_role: role } }),
    201,
    `invite ${invitee.email}`,
  );
  expectStatus(
    await client.post('/v1/auth/invitations/accept', { token: invitee.token, body: { token: invitation.token } }),
    200,
    `accept the invitation of ${invitee.email}`,
  );
}

export interface Tenant {
  orgId: string;
  orgName: string;
  admin: LoggedInUser;
  member: LoggedInUser;
  projectId: string;
  environmentId: string;
  sdkKeyId: string;
  rawKey: string;
}

/**
 * An org (via the admin route) with an org_admin and an org_member (both logged in), a project,
 * an environment and one SDK key (made by the org_admin through the management routes).
 */
export async function seedTenant(client: ApiClient, adminToken: string, label = 'tenant'): Promise<Tenant> {
  const orgName = `${label}-${unique()}`;
  const org = expectStatus(await client.post('/v1/admin/orgs', { token: adminToken, body: { name: orgName } }), 201, 'create org');
  const orgId = org.org_id as string;
  const admin = await seedUser(client, adminToken, orgId, 'org_admin', `${label}-admin`);
  const member = await seedUser(client, adminToken, orgId, 'org_member', `${label}-member`);
  const project = expectStatus(
    await client.post(`/v1/management/orgs/${orgId}/projects`, { token: admin.token, body: { name: `${label}-project` } }),
    201,
    'create project',
  );
  const environment = expectStatus(
    await client.post(`/v1/management/projects/${project.project_id}/environments`, { token: admin.token, body: { name: 'production' } }),
    201,
    'create environment',
  );
  const key = expectStatus(
    await client.post(`/v1/management/environments/${environment.environment_id}/sdk-keys`, { token: admin.token }),
    201,
    'create sdk key',
  );
  return {
    orgId,
    orgName,
    admin,
    member,
    projectId: project.project_id as string,
    environmentId: environment.environment_id as string,
    sdkKeyId: key.sdk_key_id as string,
    rawKey: key.raw_key as string,
  };
}

const JWT_PATTERN = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\./;
const BCRYPT_PATTERN = /\$2[aby]\$/;
/** A JSON field that would carry a password or its hash (error messages may name the field). */
const PASSWORD_FIELD = /"[a-z_]*(password|hash)[a-z_]*"\s*:/i;

/** The secret kinds an answer may carry: sessions hand out tokens, SDK key creation the raw key. */
function allowedKinds(exchange: Exchange): ReadonlySet<SecretKind> {
  if (exchange.status === 200 && ['/v1/auth/login', '/v1/auth/refresh', '/v1/auth/switch-org'].includes(exchange.path)) {
    return new Set<SecretKind>(['token', 'refresh_token']);
  }
  // Accepting an invitation without an account creates one and signs it in.
  if (exchange.status === 201 && exchange.path === '/v1/auth/invitations/accept') return new Set<SecretKind>(['token', 'refresh_token']);
  if (exchange.status === 201 && exchange.method === 'POST' && /\/sdk-keys$/.test(exchange.path)) return new Set<SecretKind>(['raw_key']);
  if (exchange.status === 201 && exchange.method === 'POST' && /\/invitations$/.test(exchange.path)) return new Set<SecretKind>(['invitation_token']);
  return new Set();
}

/**
 * No log line and no response body holds a secret: passwords, raw SDK keys, refresh tokens, JWTs
 * or bcrypt hashes. The only exceptions are the answers whose purpose is to hand one out.
 */
export function assertNoSecrets(logs: string[], client: ApiClient, mustCover: SecretKind[] = ['password', 'token', 'refresh_token', 'raw_key']): void {
  assert.ok(logs.length > 0, 'no log line was captured');
  const kinds = new Set(client.secrets.values());
  for (const kind of mustCover) assert.ok(kinds.has(kind), `the scan should cover at least one ${kind}`);
  const allLogs = logs.join('\n');
  for (const [secret, kind] of client.secrets) {
    assert.ok(!allLogs.includes(secret), `a ${kind} (${secret.slice(0, 6)}…) appears in the logs`);
  }
  assert.doesNotMatch(allLogs, JWT_PATTERN, 'a JWT appears in the logs');
  assert.doesNotMatch(allLogs, BCRYPT_PATTERN, 'a bcrypt hash appears in the logs');

  for (const exchange of client.exchanges) {
    const where = `${exchange.method} ${exchange.path} → ${exchange.status}`;
    const allowed = allowedKinds(exchange);
    assert.doesNotMatch(exchange.text, BCRYPT_PATTERN, `${where}: a bcrypt hash in the response`);
    assert.doesNotMatch(exchange.text, PASSWORD_FIELD, `${where}: a password or hash field in the response`);
    if (!allowed.has('token')) assert.doesNotMatch(exchange.text, JWT_PATTERN, `${where}: a JWT in the response`);
    for (const [secret, kind] of client.secrets) {
      if (!allowed.has(kind)) assert.ok(!exchange.text.includes(secret), `${where}: a ${kind} (${secret.slice(0, 6)}…) in the response`);
    }
  }
}
