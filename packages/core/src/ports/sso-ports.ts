import type { Membership, OrgRole, User } from '../model/entities.ts';
import type { OrgScope } from './scopes.ts';
import type { RoleBinding } from '../rbac/authorize.ts';

export type AuthProviderType = 'oidc' | 'saml';

/** OpenID Connect settings. The client secret is stored encrypted and never read back out. */
export interface OidcSettings {
  issuerUrl: string;
  clientId: string;
  scopes: string[];
  /** The ID token / UserInfo claim holding the person's groups (docs/sso.md "Group mapping"); absent: "groups". */
  groupsClaim?: string;
}

/** SAML 2.0 settings: the IdP's metadata by address or inline (exactly one). */
export interface SamlSettings {
  idpMetadataUrl: string | null;
  idpMetadataXml: string | null;
  nameIdFormat: string | null;
  spEntityId: string;
  /** The assertion attribute holding the person's groups (docs/sso.md "Group mapping"); absent: "groups". */
  groupsAttribute?: string;
}

/** One identity-provider group and the role bindings its members get (docs/access.md "Group mapping"). */
export interface GroupBinding {
  /** The group's name as the identity provider sends it; "*": anyone matching no other entry. */
  group: string;
  bindings: RoleBinding[];
}

/** The account that wrote something, with its email as it was then (as the audit log keeps it). */
export interface Author {
  userId: string;
  email: string | null;
}

/** An org's identity provider (docs/sso.md). */
export interface AuthProvider {
  id: string;
  orgId: string;
  type: AuthProviderType;
  displayName: string;
  enabled: boolean;
  /** The role of an account the provider creates at its first sign-in. */
  defaultRole: OrgRole;
  /** The only addresses a browser login may return to (exact match). */
  redirectUris: string[];
  oidc: OidcSettings | null;
  saml: SamlSettings | null;
  /** The OIDC client secret, encrypted by the services (null: none stored). */
  clientSecretCiphertext: string | null;
  /**
   * At each sign-in of an org_member, their bindings become the union of their groups' (docs/sso.md
   * "Group mapping"); empty: sign-in leaves their bindings alone.
   */
  groupBindings: GroupBinding[];
  /** Whether it may bind an existing member of its org by a matching email (docs/sso.md "Accounts"). */
  linkExistingAccounts: boolean;
  /** Set while it waits for a second org admin's confirmation (`enabled` is false then). */
  enableRequestedBy: Author | null;
  /** Null for providers from before authors were recorded. */
  createdBy: Author | null;
  updatedBy: Author | null;
  /** Every account that created or changed its settings: removing or demoting one disables it. */
  writtenByUserIds: string[];
  /** When it last opened a session. */
  lastUsedAtMs: number | null;
  createdAtMs: number;
  updatedAtMs: number;
}

/**
 * What a create or update stores; the id is chosen by the caller (the secret's ciphertext is bound
 * to it). `updatedBy` is the writer: it becomes `createdBy` too on create, and joins `writtenByUserIds`.
 */
export type AuthProviderInput = Omit<AuthProvider, 'orgId' | 'createdAtMs' | 'updatedAtMs' | 'createdBy' | 'writtenByUserIds' | 'lastUsedAtMs' | 'groupBindings'> & {
  /** Absent: none. */
  groupBindings?: GroupBinding[];
};

/** Providers, org-scoped except the lookup by id a login starts from (the id is in its URL). */
export interface AuthProviderRepository {
  /** @throws NOT_FOUND for an unknown org; FAILED_PRECONDITION when the org already has `maxPerOrg`. */
  create(scope: OrgScope, input: AuthProviderInput, maxPerOrg: number): Promise<AuthProvider>;
  list(scope: OrgScope): Promise<AuthProvider[]>;
  /** @throws NOT_FOUND when absent from the org. */
  get(scope: OrgScope, providerId: string): Promise<AuthProvider>;
  /** Unscoped: a sign-in names only the provider. Null when unknown. */
  findById(providerId: string): Promise<AuthProvider | null>;
  /** Replaces everything but id, org and created_at. @throws NOT_FOUND when absent from the org. */
  update(scope: OrgScope, input: AuthProviderInput): Promise<AuthProvider>;
  /** Deletes it with its identities, pending logins and codes. @throws NOT_FOUND. */
  delete(scope: OrgScope, providerId: string): Promise<void>;
  /**
   * Enables a provider waiting for confirmation, only if it still waits for the request of
   * `requestedByUserId` and was not changed since `updatedAtMs` (a compare-and-set: what the
   * confirming admin reviewed is what gets enabled). Null when it does not.
   */
  confirmEnable(scope: OrgScope, providerId: string, expected: { requestedByUserId: string; updatedAtMs: number }): Promise<AuthProvider | null>;
  /**
   * Disables every provider of the org `userId` created or changed that is enabled or waiting for
   * confirmation, and returns them as they were before (an admin removed or demoted).
   */
  disableWrittenBy(scope: OrgScope, userId: string): Promise<AuthProvider[]>;
}

/**
 * A login between its start and the provider's answer. `redirectUri` is the address the provider
 * returns to (our callback or ACS, or a gRPC caller's own); `returnUri` is where the browser flow
 * hands its one-time code (null for logins started over gRPC, which answer the session directly).
 */
export interface PendingSsoLogin {
  stateHash: string;
  providerId: string;
  orgId: string;
  redirectUri: string;
  returnUri: string | null;
  /** The browser app's own `state`, handed back with the code so the app can tie it to its session. */
  appState: string | null;
  nonce: string | null;
  codeVerifier: string | null;
  samlRequestId: string | null;
  createdAtMs: number;
  expiresAtMs: number;
}

/** A finished login waiting for its one-time code to be exchanged. */
export interface SsoCodeGrant {
  providerId: string;
  userId: string;
  orgId: string;
}

/** Logins in flight and one-time codes. Everything is found by a hash and spent once. */
export interface SsoLoginRepository {
  /**
   * Stores a pending login, keeping at most `maxLivePerProvider` unexpired ones per provider: when
   * full, its oldest are dropped to make room. Starts are unauthenticated, so a flood must neither
   * fill the table nor lock the provider's people out; it can only displace the oldest logins in
   * flight. False, storing nothing, for a cap below 1, an unknown provider (a malformed id or a
   * well-formed one naming nothing) or an `orgId` that is not its org.
   * @throws ALREADY_EXISTS when the state hash is stored already.
   */
  createPending(input: Omit<PendingSsoLogin, 'createdAtMs'>, nowMs: number, maxLivePerProvider: number): Promise<boolean>;
  /** Removes and returns the pending login when it exists and is unexpired at `nowMs` (single use). */
  consumePending(stateHash: string, nowMs: number): Promise<PendingSsoLogin | null>;
  /** @throws NOT_FOUND for an unknown provider, user or org; ALREADY_EXISTS when the code hash is stored already. */
  createCode(input: SsoCodeGrant & { codeHash: string; expiresAtMs: number }): Promise<void>;
  /** Removes and returns the grant when the code exists and is unexpired (single use). */
  consumeCode(codeHash: string, nowMs: number): Promise<SsoCodeGrant | null>;
  /**
   * Marks a browser login's state as spent, kept until `expiresAtMs` (when its sealed login stops
   * opening anyway). True the first time only, also under concurrent calls: the browser flow keeps
   * its pending login in the browser (docs/sso.md), and this is what makes it single use.
   */
  spendState(stateHash: string, expiresAtMs: number): Promise<boolean>;
  /** Whether the state was spent (and not pruned yet): a cheap early refusal of a replay. */
  isStateSpent(stateHash: string): Promise<boolean>;
  /** Deletes up to `limit` expired pending logins, spent states and codes; returns how many. */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/** Which account a provider's subject is. */
export interface SsoIdentityRepository {
  /** The account bound to (provider, subject), or null. */
  findUser(providerId: string, subject: string): Promise<string | null>;
  /** Binds an existing account. @throws ALREADY_EXISTS when the subject is bound already. */
  bind(input: { providerId: string; subject: string; userId: string }): Promise<void>;
  /**
   * Creates the account, its membership in the provider's org and the binding, in one
   * transaction. @throws ALREADY_EXISTS when the email has an account or the subject is bound.
   */
  provision(input: SsoProvisionInput): Promise<{ user: User; membership: Membership }>;
}

/** A new account made by a provider's first sign-in: who it is, where, and its binding. */
export interface SsoProvisionInput {
  providerId: string;
  subject: string;
  orgId: string;
  role: OrgRole;
  email: string;
  displayName: string;
  passwordHash: string;
}
