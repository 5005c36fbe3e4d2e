import postgres from 'postgres';
import {
  failedPrecondition,
  notFound,
  type AuthProvider,
  type AuthProviderInput,
  type AuthProviderRepository,
  type OidcSettings,
  type OrgRole,
  type OrgScope,
  type SamlSettings,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface ProviderRow {
  id: string;
  org_id: string;
  provider_type: AuthProvider['type'];
  display_name: string;
  enabled: boolean;
  default_role: OrgRole;
  redirect_uris: string[];
  settings: { oidc?: OidcSettings; saml?: SamlSettings };
  client_secret_ciphertext: string | null;
  created_at_ms: number;
  updated_at_ms: number;
}

const toProvider = (row: ProviderRow): AuthProvider => ({
  id: row.id,
  orgId: row.org_id,
  type: row.provider_type,
  displayName: row.display_name,
  enabled: row.enabled,
  defaultRole: row.default_role,
  redirectUris: row.redirect_uris,
  oidc: row.settings.oidc ?? null,
  saml: row.settings.saml ?? null,
  clientSecretCiphertext: row.client_secret_ciphertext,
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms,
});

const COLUMNS = 'id, org_id, provider_type, display_name, enabled, default_role, redirect_uris, settings, client_secret_ciphertext, created_at_ms, updated_at_ms';
const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::int8';

/** Identity providers in `auth_providers`; every statement but findById is scoped by org. */
export class PgAuthProviderRepository implements AuthProviderRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: OrgScope, input: AuthProviderInput, maxPerOrg: number): Promise<AuthProvider> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    return transaction(this.sql, async (tx) => {
      // Serialise creates per org so the count below cannot be raced past the limit.
      const [org] = await tx`SELECT id FROM orgs WHERE id = ${scope.orgId} FOR UPDATE`;
      if (!org) throw notFound('organisation', scope.orgId);
      const [existing] = await tx<{ count: number }[]>`SELECT count(*)::int AS count FROM auth_providers WHERE org_id = ${scope.orgId}`;
      if ((existing?.count ?? 0) >= maxPerOrg) throw failedPrecondition(`the organisation already has ${maxPerOrg} identity providers; delete one first`);
      // One clock reading for both timestamps (clock_timestamp() moves during a statement, so two
      // readings can straddle a millisecond): a new provider's updated time is its created time.
      const [row] = await translateErrors(
        () => tx<ProviderRow[]>`
          INSERT INTO auth_providers (id, org_id, provider_type, display_name, enabled, default_role, redirect_uris, settings,
                                      client_secret_ciphertext, created_at_ms, updated_at_ms)
          SELECT ${input.id}, ${scope.orgId}, ${input.type}, ${input.displayName}, ${input.enabled}, ${input.defaultRole},
                 ${this.json(input.redirectUris)}, ${this.json(settingsOf(input))}, ${input.clientSecretCiphertext},
                 t.now_ms, t.now_ms
          FROM (SELECT ${tx.unsafe(NOW_MS)} AS now_ms) t
          RETURNING ${tx.unsafe(COLUMNS)}`,
        { resource: 'auth provider', name: input.id, parent: 'organisation' },
      );
      if (!row) throw new Error('INSERT ... RETURNING gave no row');
      return toProvider(row);
    });
  }

  async list(scope: OrgScope): Promise<AuthProvider[]> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<ProviderRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM auth_providers WHERE org_id = ${scope.orgId} ORDER BY created_at_ms, id`;
    return rows.map(toProvider);
  }

  async get(scope: OrgScope, providerId: string): Promise<AuthProvider> {
    if (!isUuid(scope.orgId) || !isUuid(providerId)) throw notFound('auth provider', providerId);
    const [row] = await this.sql<ProviderRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM auth_providers WHERE org_id = ${scope.orgId} AND id = ${providerId}`;
    if (!row) throw notFound('auth provider', providerId);
    return toProvider(row);
  }

  async findById(providerId: string): Promise<AuthProvider | null> {
    if (!isUuid(providerId)) return null;
    const [row] = await this.sql<ProviderRow[]>`SELECT ${this.sql.unsafe(COLUMNS)} FROM auth_providers WHERE id = ${providerId}`;
    return row ? toProvider(row) : null;
  }

  async update(scope: OrgScope, input: AuthProviderInput): Promise<AuthProvider> {
    if (!isUuid(scope.orgId) || !isUuid(input.id)) throw notFound('auth provider', input.id);
    const [row] = await this.sql<ProviderRow[]>`
      UPDATE auth_providers SET
        provider_type = ${input.type}, display_name = ${input.displayName}, enabled = ${input.enabled},
        default_role = ${input.defaultRole}, redirect_uris = ${this.json(input.redirectUris)},
        settings = ${this.json(settingsOf(input))}, client_secret_ciphertext = ${input.clientSecretCiphertext},
        updated_at_ms = greatest(${this.sql.unsafe(NOW_MS)}, updated_at_ms + 1)
      WHERE org_id = ${scope.orgId} AND id = ${input.id}
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    if (!row) throw notFound('auth provider', input.id);
    return toProvider(row);
  }

  async delete(scope: OrgScope, providerId: string): Promise<void> {
    if (!isUuid(scope.orgId) || !isUuid(providerId)) throw notFound('auth provider', providerId);
    // Identities, pending logins and codes go with it (ON DELETE CASCADE).
    const result = await this.sql`DELETE FROM auth_providers WHERE org_id = ${scope.orgId} AND id = ${providerId}`;
    if (result.count === 0) throw notFound('auth provider', providerId);
  }

  private json(value: unknown): postgres.Parameter {
    return this.sql.json(value as postgres.JSONValue);
  }
}

const settingsOf = (input: AuthProviderInput): { oidc?: OidcSettings; saml?: SamlSettings } => ({
  ...(input.oidc ? { oidc: input.oidc } : {}),
  ...(input.saml ? { saml: input.saml } : {}),
});
