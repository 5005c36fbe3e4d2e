import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';

/**
 * Promisified grpc-js clients for svc.auth.v1.AuthService and svc.management.v1.ManagementService,
 * built from the same .proto files the server loads (snake_case fields, proto3 defaults filled in,
 * int64 as numbers). A failed call rejects with the grpc.ServiceError (`.code` = grpc.status.X).
 */

// --- svc.common.v1 / svc.auth.v1 shapes as a client sees them ---

export interface RbacContext {
  tenant_id: string;
  environment_id: string;
  roles: string[];
  permissions: string[];
  subject: string;
  is_system: boolean;
}
export type CredentialRequest = { bearer_token: string } | { sdk_key: string } | Record<string, never>;
export interface LoginResponse {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user_id: string;
  org_id: string;
}
export interface SwitchOrgResponse {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  org_id: string;
}
export interface UserOrg {
  org_id: string;
  org_name: string;
  role: string;
}

// --- svc.management.v1 shapes ---

export interface Org {
  org_id: string;
  org_name: string;
  created_at: string;
}
export interface Project {
  project_id: string;
  project_name: string;
  org_id: string;
  client_visible_default: boolean;
  lifecycle?: { status_window_days: number; code_removal_min_age_days: number; archive_after_days: number; unchanged_fallback_days: number };
}
export interface Environment {
  environment_id: string;
  environment_name: string;
  project_id: string;
  critical: boolean;
  require_comment: boolean;
}
export interface ClientKeyFields {
  name?: string;
  allowed_origins?: string[];
  set_allowed_origins?: boolean;
  allow_missing_origin?: boolean;
  context_signing?: string;
  include_disabled?: boolean;
  expires_at_ms?: number;
}
export interface SdkKey {
  sdk_key_id: string;
  environment_id: string;
  key_prefix: string;
  created_at: string;
  kind: string;
  settings: Required<ClientKeyFields>;
  /** Epoch ms of the last sync stream or evaluation; 0: never. */
  last_used_at_ms: number;
}
export interface CreatedSdkKey extends Omit<SdkKey, 'last_used_at_ms'> {
  raw_key: string;
}
export interface User {
  user_id: string;
  email: string;
  display_name: string;
  org_id: string;
  org_role: string;
  /** ListUsers only: the stored role bindings when bindings_set (false: the org role's default). */
  bindings?: RoleBindingMessage[];
  bindings_set?: boolean;
}
/** svc.common.v1.RoleBinding: empty ids are absent. */
export interface RoleBindingMessage {
  role: string;
  project_id?: string;
  environment_id?: string;
}
export interface RoleBindingsMessage {
  user_id: string;
  org_role: string;
  is_default: boolean;
  bindings: RoleBindingMessage[];
}
export interface NewUser {
  org_id?: string;
  email: string;
  display_name: string;
  password: string;
  org_role?: string;
}

export type Unary<Req, Res> = (request: Req, metadata?: grpc.Metadata) => Promise<Res>;

export interface AuthClient {
  validateCredential: Unary<CredentialRequest, RbacContext>;
  loginWithPassword: Unary<{ email: string; password: string; org_id?: string }, LoginResponse>;
  refreshSession: Unary<{ refresh_token: string }, LoginResponse>;
  switchOrg: Unary<{ current_token: string; target_org_id: string }, SwitchOrgResponse>;
  listUserOrgs: Unary<{ current_token: string }, { orgs: UserOrg[] }>;
  close(): void;
}

export interface ManagementClient {
  createOrg: Unary<{ name: string }, { org_id: string; org_name: string }>;
  listOrgs: Unary<Record<string, never>, { orgs: Org[] }>;
  createProject: Unary<{ org_id?: string; name: string }, { project_id: string; project_name: string }>;
  listProjects: Unary<{ org_id?: string }, { projects: Project[] }>;
  updateProject: Unary<{ project_id: string; client_visible_default?: boolean; lifecycle?: Record<string, number> }, Project>;
  createEnvironment: Unary<{ project_id: string; name: string }, { environment_id: string; environment_name: string }>;
  listEnvironments: Unary<{ project_id: string }, { environments: Environment[] }>;
  updateEnvironment: Unary<{ environment_id: string; critical?: boolean; require_comment?: boolean }, Environment>;
  createSdkKey: Unary<{ environment_id: string; kind?: string; settings?: ClientKeyFields }, CreatedSdkKey>;
  updateSdkKey: Unary<{ environment_id: string; sdk_key_id: string; settings: ClientKeyFields }, SdkKey>;
  listSdkKeys: Unary<{ environment_id: string }, { sdk_keys: SdkKey[] }>;
  deleteSdkKey: Unary<{ environment_id: string; sdk_key_id: string }, { sdk_key_id: string }>;
  createContextSigningSecret: Unary<{ environment_id: string }, { kid: string; environment_id: string; created_at_ms: string | number; secret: string }>;
  listContextSigningSecrets: Unary<{ environment_id: string }, { secrets: Array<{ kid: string; environment_id: string; created_at_ms: string | number }> }>;
  deleteContextSigningSecret: Unary<{ environment_id: string; kid: string }, { kid: string }>;
  createUser: Unary<NewUser, { user_id: string; email: string; display_name: string }>;
  listUsers: Unary<{ org_id?: string }, { users: User[] }>;
  createApiToken: Unary<
    { org_id?: string; name: string; role: string; scope?: { project_ids?: string[]; environment_ids?: string[] }; expires_at_ms?: number },
    { api_token: ApiTokenMessage; token: string }
  >;
  listApiTokens: Unary<{ org_id?: string }, { api_tokens: ApiTokenMessage[] }>;
  deleteApiToken: Unary<{ org_id?: string; api_token_id: string }, { api_token_id: string }>;
  getRoleBindings: Unary<{ org_id?: string; user_id: string }, RoleBindingsMessage>;
  setRoleBindings: Unary<{ org_id?: string; user_id: string; bindings: RoleBindingMessage[] }, RoleBindingsMessage>;
  resetRoleBindings: Unary<{ org_id?: string; user_id: string }, RoleBindingsMessage>;
  close(): void;
}

/** svc.management.v1.ApiToken as the client sees it (int64 fields as loaded). */
export interface ApiTokenMessage {
  id: string;
  name: string;
  role: string;
  scope: { project_ids: string[]; environment_ids: string[] };
  token_prefix: string;
  created_by_user_id: string;
  created_by_email: string;
  created_at_ms: string | number;
  expires_at_ms: string | number;
  last_used_at_ms: string | number;
}

type Callback = (error: grpc.ServiceError | null, response?: unknown) => void;
type RawMethod = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback) => grpc.ClientUnaryCall;

const AuthServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');
const ManagementServiceClient = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/management/v1/management.proto'),
  'svc.management.v1.ManagementService',
);

/**
 * Every unary method of the service as `(request, metadata?) => Promise<response>`, 10 s deadline
 * each; `client` is the raw grpc-js client, for streaming methods.
 */
export function promisified<T>(Constructor: grpc.ServiceClientConstructor, port: number): T & { client: grpc.Client } {
  const client = new Constructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const methods: Record<string, unknown> = { close: () => client.close(), client };
  for (const [name, definition] of Object.entries(Constructor.service)) {
    if (definition.requestStream || definition.responseStream) continue;
    const camel = definition.originalName ?? name;
    const raw = (client as unknown as Record<string, RawMethod>)[camel];
    assert.ok(raw, `client method ${camel}`);
    methods[camel] = (request: unknown, metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        raw.call(client, request, metadata, { deadline: Date.now() + 10_000 }, (error, response) =>
          error ? reject(error) : resolve(response),
        );
      });
  }
  return methods as T & { client: grpc.Client };
}

export const authClient = (port: number): AuthClient => promisified<AuthClient>(AuthServiceClient, port);

// --- svc.auth.v1 single sign-on (proto/svc/auth/v1/sso.proto) ---

const ssoProto = loadProto('svc/auth/v1/sso.proto');
const ssoService = (name: string) => lookup<grpc.ServiceClientConstructor>(ssoProto, `svc.auth.v1.${name}`);

/** Fields as the client sees them (proto3 defaults filled in); `Json`-typed where tests read freely. */
export interface SsoClients {
  providers: {
    createAuthProvider: Unary<{ org_id: string; provider: Record<string, unknown> }, Record<string, any>>;
    listAuthProviders: Unary<{ org_id: string }, { providers: Array<Record<string, any>> }>;
    getAuthProvider: Unary<{ org_id: string; provider_id: string }, Record<string, any>>;
    updateAuthProvider: Unary<{ org_id: string; provider_id: string; provider: Record<string, unknown> }, Record<string, any>>;
    deleteAuthProvider: Unary<{ org_id: string; provider_id: string }, { provider_id: string }>;
    confirmAuthProvider: Unary<{ org_id: string; provider_id: string; updated_at?: string }, Record<string, any>>;
  };
  oidc: {
    oidcAuthorize: Unary<{ provider_id: string; org_id: string; redirect_uri: string }, { redirect_url: string }>;
    oidcCallback: Unary<{ provider_id: string; code: string; state: string; redirect_uri: string; iss?: string }, LoginResponse>;
  };
  saml: {
    samlSsoInitiate: Unary<{ provider_id: string; org_id: string; acs_url: string }, { redirect_url: string; relay_state: string }>;
    samlAcsCallback: Unary<{ provider_id: string; saml_response_b64: string; relay_state: string }, LoginResponse>;
  };
  close(): void;
}

export function ssoClients(port: number): SsoClients {
  const providers = promisified<SsoClients['providers']>(ssoService('AuthProviderService'), port);
  const oidc = promisified<SsoClients['oidc']>(ssoService('OidcLoginService'), port);
  const saml = promisified<SsoClients['saml']>(ssoService('SamlLoginService'), port);
  return {
    providers,
    oidc,
    saml,
    close() {
      for (const { client } of [providers, oidc, saml]) client.close();
    },
  };
}
export const managementClient = (port: number): ManagementClient => promisified<ManagementClient>(ManagementServiceClient, port);

/** Metadata `authorization: Bearer <token>`, as the management calls expect. */
export function bearer(token: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

/** Metadata with one arbitrary entry (for malformed-credential cases). */
export function metadataWith(name: string, value: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(name, value);
  return metadata;
}

const statusName = (code: number): string => grpc.status[code] ?? String(code);

/** Awaits a call that must fail with `status`; returns the ServiceError for further checks. */
export async function rejectsWithStatus(call: Promise<unknown>, status: grpc.status): Promise<grpc.ServiceError> {
  let outcome: unknown;
  try {
    outcome = await call;
  } catch (error) {
    const serviceError = error as grpc.ServiceError;
    assert.equal(
      statusName(serviceError.code),
      statusName(status),
      `expected ${statusName(status)}, got ${statusName(serviceError.code)}: ${serviceError.details}`,
    );
    return serviceError;
  }
  assert.fail(`expected ${statusName(status)}, but the call succeeded with ${JSON.stringify(outcome)}`);
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
