import { SignJWT } from 'jose';
import { expectStatus, type ApiClient, type Json, type Tenant } from './rest-client.ts';
import type { TestServer } from './test-server.ts';

/** A client key of the tenant's environment (no Origin needed: allow_missing_origin), with its settings. */
export async function createClientKey(client: ApiClient, tenant: Tenant, settings: Record<string, unknown> = {}): Promise<{ id: string; raw: string }> {
  const body = expectStatus(
    await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, {
      token: tenant.admin.token,
      body: { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'], allow_missing_origin: true, ...settings },
    }),
    201,
    'create client key',
  );
  return { id: body.sdk_key_id as string, raw: body.raw_key as string };
}

export const signingSecretsOf = (environmentId: string): string => `/v1/management/environments/${environmentId}/context-signing-secrets`;

/** A context signing secret of the tenant's environment: `{kid, secret}`. */
export async function createSigningSecret(client: ApiClient, tenant: Tenant): Promise<{ kid: string; secret: string }> {
  const body: Json = expectStatus(await client.post(signingSecretsOf(tenant.environmentId), { token: tenant.admin.token }), 201, 'create signing secret');
  return { kid: body.kid as string, secret: body.secret as string };
}

export interface TokenClaims {
  ck?: unknown;
  sub?: unknown;
  ctx?: unknown;
  iat?: number;
  exp?: number;
}

/**
 * A context token made independently of the code under test: jose's SignJWT, HS256 over the
 * UTF-8 bytes of the secret (docs/client-side.md "4. Signed contexts"). `iat` defaults to now,
 * `exp` to an hour later; `claims` may set or override anything.
 */
export async function signToken(secret: string, kid: string, claims: TokenClaims, alg = 'HS256'): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = { iat: nowS, exp: nowS + 3600, ...claims };
  return new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

/**
 * Marks flags client-visible in the database (the column of migration 0011; its REST field is
 * another part of the work). The services' snapshots reload on the next definitions change.
 */
export async function markClientVisible(ts: TestServer, tenant: Tenant, flagKeys: string[]): Promise<void> {
  await ts.server.database.sql`UPDATE flags SET client_visible = true WHERE org_id = ${tenant.orgId} AND project_id = ${tenant.projectId} AND key = ANY(${flagKeys})`;
}
