import postgres from 'postgres';
import {
  failedPrecondition,
  notFound,
  type AuthProvider,
  type AuthProviderInput,
  type AuthProviderRepository,
  type Author,
  type OidcSettings,
  type OrgRole,
  type OrgScope,
  type SamlSettings,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';
import { bindingFromStored, bindingToStored, type StoredBinding } from './role-bindings.pg.ts';

/** A group mapping entry as stored in auth_providers.group_bindings (the wire's snake_case). */
interface StoredGroupBinding {
  group: string;
  bindings: StoredBinding[];
}

interface ProviderRow {
  id: string;
  org_id: string;
  provider_type: AuthProvider['type'];
  display_name: string;
  enabled: boolean;
  default_role: OrgRole;
  redirect_uris: string[];
  settings: { oidc?: OidcSettings; saml?: SamlSettings };
  group_bindings: StoredGroupBinding[];
  client_secret_ciphertext: string | null;
  link_existing_accounts: boolean;
  enable_requested_by_user_id: string | null;
  enable_requested_by_email: string | null;
  created_by_user_id: string | null;
  created_by_email: string | null;
  updated_by_user_id: string | null;
  updated_by_email: string | null;
  written_by_user_ids: string[];
  last_used_at_ms: number | null;
  created_at_ms: number;
  updated_at_ms: number;
}

const author = (userId: string | null, email: string | null): Author | null => (userId === null ? null : { userId, email });

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
  groupBindings: row.group_bindings.map((entry) => ({ group: entry.group, bindings: entry.bindings.map(bindingFromStored) })),
  linkExistingAccounts: row.link_existing_accounts,
  enableRequestedBy: author(row.enable_requested_by_user_id, row.enable_requested_by_email),
  createdBy: author(row.created_by_user_id, row.created_by_email),
  updatedBy: author(row.updated_by_user_id, row.updated_by_email),
  writtenByUserIds: row.written_by_user_ids,
  lastUsedAtMs: row.last_used_at_ms,
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms,
});

const COLUMNS = [
  'id, org_id, provider_type, display_name, enabled, default_role, redirect_uris, settings, group_bindings, client_secret_ciphertext',
  'link_existing_accounts, enable_requested_by_user_id, enable_requested_by_email, created_by_user_id, created_by_email',
  'updated_by_user_id, updated_by_email, written_by_user_ids::text[] AS written_by_user_ids, last_used_at_ms, created_at_ms, updated_at_ms',
].join(', ');
const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::int8';

/** Identity providers in `auth_providers`; every statement but findById is scoped by org. */
export class PgAuthProviderRepository implements AuthProviderRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: OrgScope, input: AuthProviderInput, maxPerOrg: number): Promise<AuthProvider> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    const writer = writerOf(input);
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
          INSERT INTO auth_providers (id, org_id, provider_type, display_name, enabled, default_role, redirect_uris, settings, group_bindings,
                                      client_secret_ciphertext, link_existing_accounts, enable_requested_by_user_id,
                                      enable_requested_by_email, created_by_user_id, created_by_email, updated_by_user_id,
                                      updated_by_email, written_by_user_ids, created_at_ms, updated_at_ms)
          SELECT ${input.id}, ${scope.orgId}, ${input.type}, ${input.displayName}, ${input.enabled}, ${input.defaultRole},
                 ${this.json(input.redirectUris)}, ${this.json(settingsOf(input))}, ${this.json(groupBindingsOf(input))}, ${input.clientSecretCiphertext},
                 ${input.linkExistingAccounts}, ${input.enableRequestedBy?.userId ?? null}, ${input.enableRequestedBy?.email ?? null},
                 ${writer.userId}, ${writer.email}, ${writer.userId}, ${writer.email},
                 CASE WHEN ${writer.userId}::uuid IS NULL THEN '{}'::uuid[] ELSE ARRAY[${writer.userId}::uuid] END,
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
    const writer = writerOf(input);
    const [row] = await this.sql<ProviderRow[]>`
      UPDATE auth_providers SET
        provider_type = ${input.type}, display_name = ${input.displayName}, enabled = ${input.enabled},
        default_role = ${input.defaultRole}, redirect_uris = ${this.json(input.redirectUris)},
        settings = ${this.json(settingsOf(input))}, group_bindings = ${this.json(groupBindingsOf(input))}, client_secret_ciphertext = ${input.clientSecretCiphertext},
        link_existing_accounts = ${input.linkExistingAccounts},
        enable_requested_by_user_id = ${input.enableRequestedBy?.userId ?? null}, enable_requested_by_email = ${input.enableRequestedBy?.email ?? null},
        updated_by_user_id = ${writer.userId}, updated_by_email = ${writer.email},
        written_by_user_ids = CASE
          WHEN ${writer.userId}::uuid IS NULL OR ${writer.userId}::uuid = ANY (written_by_user_ids) THEN written_by_user_ids
          ELSE written_by_user_ids || ${writer.userId}::uuid END,
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

  async confirmEnable(scope: OrgScope, providerId: string, expected: { requestedByUserId: string; updatedAtMs: number }): Promise<AuthProvider | null> {
    if (!isUuid(scope.orgId) || !isUuid(providerId) || !isUuid(expected.requestedByUserId)) return null;
    // One statement: of a confirmation and a concurrent change, whichever comes second finds the
    // row changed (the change moves updated_at_ms, the confirmation clears the request).
    const [row] = await this.sql<ProviderRow[]>`
      UPDATE auth_providers SET enabled = true, enable_requested_by_user_id = NULL, enable_requested_by_email = NULL,
        updated_at_ms = greatest(${this.sql.unsafe(NOW_MS)}, updated_at_ms + 1)
      WHERE org_id = ${scope.orgId} AND id = ${providerId}
        AND enable_requested_by_user_id = ${expected.requestedByUserId} AND updated_at_ms = ${expected.updatedAtMs}::int8
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    return row ? toProvider(row) : null;
  }

  async disableWrittenBy(scope: OrgScope, userId: string): Promise<AuthProvider[]> {
    if (!isUuid(scope.orgId) || !isUuid(userId)) return [];
    // The rows as they were before the update (a self-join on the locked old version).
    const rows = await this.sql<ProviderRow[]>`
      WITH target AS (
        SELECT ${this.sql.unsafe(COLUMNS)} FROM auth_providers
        WHERE org_id = ${scope.orgId} AND ${userId}::uuid = ANY (written_by_user_ids)
          AND (enabled OR enable_requested_by_user_id IS NOT NULL)
        FOR UPDATE
      ), disabled AS (
        UPDATE auth_providers p SET enabled = false, enable_requested_by_user_id = NULL, enable_requested_by_email = NULL,
          updated_at_ms = greatest(${this.sql.unsafe(NOW_MS)}, p.updated_at_ms + 1)
        FROM target WHERE p.id = target.id
        RETURNING p.id
      )
      SELECT target.* FROM target JOIN disabled USING (id) ORDER BY target.created_at_ms, target.id`;
    return rows.map(toProvider);
  }

  private json(value: unknown): postgres.Parameter {
    return this.sql.json(value as postgres.JSONValue);
  }
}

/** The writer's id and email as parameters (null: written by no account, e.g. a test fixture). */
const writerOf = (input: AuthProviderInput): { userId: string | null; email: string | null } => ({
  userId: input.updatedBy?.userId ?? null,
  email: input.updatedBy?.email ?? null,
});

const settingsOf = (input: AuthProviderInput): { oidc?: OidcSettings; saml?: SamlSettings } => ({
  ...(input.oidc ? { oidc: input.oidc } : {}),
  ...(input.saml ? { saml: input.saml } : {}),
});

const groupBindingsOf = (input: AuthProviderInput): StoredGroupBinding[] =>
  (input.groupBindings ?? []).map((entry) => ({ group: entry.group, bindings: entry.bindings.map(bindingToStored) }));
