import type * as grpc from '@grpc/grpc-js';
import type { ApiTokenRecord, ApiTokenService, ContextSigningService, CredentialVerifier, ManagementService, RoleBindingRecord, RoleBindingService, RoleBindingsRecord, SdkKeyRecord } from '@switchyard/services';
import { authenticateCall } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const ManagementServiceDefinition = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/management/v1/management.proto'),
  'svc.management.v1.ManagementService',
);

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

/** svc.management.v1.ClientKeyFields as loaded (unset optional fields are absent). */
interface ClientKeyFieldsMessage {
  name?: string;
  allowed_origins: string[];
  set_allowed_origins: boolean;
  allow_missing_origin?: boolean;
  context_signing?: string;
  include_disabled?: boolean;
  expires_at_ms?: number;
}

/** The REST body the message stands for: the services validate both alike. */
function clientKeyBody(fields: ClientKeyFieldsMessage | null | undefined): Record<string, unknown> {
  if (!fields) return {};
  const body: Record<string, unknown> = {};
  if (fields.name !== undefined) body.name = fields.name;
  if (fields.set_allowed_origins || fields.allowed_origins.length > 0) body.allowed_origins = fields.allowed_origins;
  if (fields.allow_missing_origin !== undefined) body.allow_missing_origin = fields.allow_missing_origin;
  if (fields.context_signing !== undefined) body.context_signing = fields.context_signing;
  if (fields.include_disabled !== undefined) body.include_disabled = fields.include_disabled;
  if (fields.expires_at_ms !== undefined) body.expires_at_ms = fields.expires_at_ms === 0 ? null : fields.expires_at_ms;
  return body;
}

const sdkKeyMessage = (key: SdkKeyRecord) => ({
  sdk_key_id: key.sdk_key_id,
  environment_id: key.environment_id,
  key_prefix: key.key_prefix,
  created_at: key.created_at,
  kind: key.kind,
  settings: {
    name: key.name,
    allowed_origins: key.allowed_origins,
    set_allowed_origins: true,
    allow_missing_origin: key.allow_missing_origin,
    context_signing: key.context_signing,
    include_disabled: key.include_disabled,
    expires_at_ms: key.expires_at_ms ?? 0,
  },
  last_used_at_ms: key.last_used_at_ms ?? 0,
});

interface ApiTokenScopeMessage {
  project_ids: string[];
  environment_ids: string[];
}

/** The REST body the create message stands for (proto defaults: empty lists and 0 mean absent). */
function apiTokenBody(request: { name: string; role: string; scope?: ApiTokenScopeMessage | null; expires_at_ms: number | string }): Record<string, unknown> {
  const scope: Record<string, string[]> = {};
  if (request.scope?.project_ids.length) scope.project_ids = request.scope.project_ids;
  if (request.scope?.environment_ids.length) scope.environment_ids = request.scope.environment_ids;
  const expiresAtMs = Number(request.expires_at_ms);
  return { name: request.name, role: request.role, scope, expires_at_ms: expiresAtMs === 0 ? null : expiresAtMs };
}

const apiTokenMessage = (token: ApiTokenRecord) => ({
  id: token.id,
  name: token.name,
  role: token.role,
  scope: { project_ids: token.scope.project_ids ?? [], environment_ids: token.scope.environment_ids ?? [] },
  token_prefix: token.token_prefix,
  created_by_user_id: token.created_by?.user_id ?? '',
  created_by_email: token.created_by?.email ?? '',
  created_at_ms: token.created_at_ms,
  expires_at_ms: token.expires_at_ms ?? 0,
  last_used_at_ms: token.last_used_at_ms ?? 0,
});

/** svc.common.v1.RoleBinding: empty ids are absent. */
interface RoleBindingMessage {
  role: string;
  project_id: string;
  environment_id: string;
}

const roleBindingMessage = (binding: RoleBindingRecord): RoleBindingMessage => ({
  role: binding.role,
  project_id: binding.project_id ?? '',
  environment_id: binding.environment_id ?? '',
});

/** The REST body the messages stand for: the services validate both alike. */
const roleBindingsBody = (bindings: RoleBindingMessage[]) => ({
  bindings: bindings.map((binding) => ({
    role: binding.role,
    ...(binding.project_id === '' ? {} : { project_id: binding.project_id }),
    ...(binding.environment_id === '' ? {} : { environment_id: binding.environment_id }),
  })),
});

const roleBindingsMessage = (record: RoleBindingsRecord) => ({
  user_id: record.user_id,
  org_role: record.org_role,
  is_default: record.default,
  bindings: record.bindings.map(roleBindingMessage),
});

/**
 * svc.management.v1.ManagementService on the internal gRPC port: the caller's bearer token comes
 * as `authorization` metadata; authorization and tenancy are the ManagementService's, as on REST.
 */
export function addManagementGrpcService(
  server: grpc.Server,
  deps: { management: ManagementService; apiTokens: ApiTokenService; roleBindings: RoleBindingService; contextSigning: ContextSigningService; verifier: CredentialVerifier; logger: Logger },
): void {
  const { management, apiTokens, roleBindings, contextSigning, verifier, logger } = deps;
  const caller = (call: Call<unknown>) => authenticateCall(verifier, call.metadata, 'bearer');

  server.addService(ManagementServiceDefinition.service, {
    createOrg: unary(logger, async (call: Call<{ name: string }>) => {
      const org = await management.createOrg(await caller(call), { name: call.request.name });
      return { org_id: org.org_id, org_name: org.org_name };
    }),
    listOrgs: unary(logger, async (call: Call<object>) => ({ orgs: await management.listOrgs(await caller(call)) })),
    createProject: unary(logger, async (call: Call<{ org_id: string; name: string }>) => {
      const project = await management.createProject(await caller(call), call.request.org_id || undefined, { name: call.request.name });
      return { project_id: project.project_id, project_name: project.project_name };
    }),
    listProjects: unary(logger, async (call: Call<{ org_id: string }>) => {
      const principal = await caller(call);
      return { projects: await management.listProjects(principal, call.request.org_id || principal.orgId) };
    }),
    updateProject: unary(logger, async (call: Call<{ project_id: string; client_visible_default?: boolean; lifecycle?: Record<string, number | undefined> | null }>) => {
      // Unset optional fields are left out of the REST body: unchanged.
      const { client_visible_default, lifecycle } = call.request;
      const body: Record<string, unknown> = {};
      if (client_visible_default !== undefined) body.client_visible_default = client_visible_default;
      if (lifecycle !== undefined && lifecycle !== null) body.lifecycle = Object.fromEntries(Object.entries(lifecycle).filter(([name, value]) => value !== undefined && !name.startsWith('_')));
      return management.updateProject(await caller(call), call.request.project_id, body);
    }),
    createEnvironment: unary(logger, async (call: Call<{ project_id: string; name: string }>) => {
      const environment = await management.createEnvironment(await caller(call), call.request.project_id, { name: call.request.name });
      return { environment_id: environment.environment_id, environment_name: environment.environment_name };
    }),
    listEnvironments: unary(logger, async (call: Call<{ project_id: string }>) => ({
      environments: await management.listEnvironments(await caller(call), call.request.project_id),
    })),
    updateEnvironment: unary(logger, async (call: Call<{ environment_id: string; critical?: boolean; require_comment?: boolean }>) => {
      const { environment_id, critical, require_comment } = call.request;
      // Unset optional fields are absent: they stay as they are.
      const body: Record<string, boolean> = {};
      if (critical !== undefined) body.critical = critical;
      if (require_comment !== undefined) body.require_comment = require_comment;
      return management.updateEnvironment(await caller(call), environment_id, body);
    }),
    createSdkKey: unary(logger, async (call: Call<{ environment_id: string; kind: string; settings: ClientKeyFieldsMessage | null }>) => {
      const { environment_id, kind, settings } = call.request;
      const body = kind === '' || kind === 'server' ? (settings ? { kind: 'server', ...clientKeyBody(settings) } : undefined) : { kind, ...clientKeyBody(settings) };
      const key = await management.createSdkKey(await caller(call), environment_id, body);
      return { ...sdkKeyMessage(key), raw_key: key.raw_key };
    }),
    listSdkKeys: unary(logger, async (call: Call<{ environment_id: string }>) => ({
      sdk_keys: (await management.listSdkKeys(await caller(call), call.request.environment_id)).map(sdkKeyMessage),
    })),
    updateSdkKey: unary(logger, async (call: Call<{ environment_id: string; sdk_key_id: string; settings: ClientKeyFieldsMessage | null }>) => {
      const { environment_id, sdk_key_id, settings } = call.request;
      return sdkKeyMessage(await management.updateSdkKey(await caller(call), environment_id, sdk_key_id, clientKeyBody(settings)));
    }),
    deleteSdkKey: unary(logger, async (call: Call<{ environment_id: string; sdk_key_id: string }>) => {
      await management.deleteSdkKey(await caller(call), call.request.environment_id, call.request.sdk_key_id);
      return { sdk_key_id: call.request.sdk_key_id };
    }),
    createContextSigningSecret: unary(logger, async (call: Call<{ environment_id: string }>) =>
      contextSigning.createSecret(await caller(call), call.request.environment_id),
    ),
    listContextSigningSecrets: unary(logger, async (call: Call<{ environment_id: string }>) => ({
      secrets: await contextSigning.listSecrets(await caller(call), call.request.environment_id),
    })),
    deleteContextSigningSecret: unary(logger, async (call: Call<{ environment_id: string; kid: string }>) => {
      await contextSigning.deleteSecret(await caller(call), call.request.environment_id, call.request.kid);
      return { kid: call.request.kid };
    }),
    createUser: unary(
      logger,
      async (call: Call<{ org_id: string; email: string; display_name: string; password: string; org_role: string }>) => {
        const principal = await caller(call);
        const { org_id, email, display_name, password, org_role } = call.request;
        // proto: an empty org_role means org_member, whoever calls (REST seed-user defaults to org_admin).
        const input = { email, displayName: display_name, password, orgRole: org_role || 'org_member' };
        // A system-org caller seeds users in any org (the admin routes of REST); others add to their own.
        const user = principal.kind === 'user' && principal.isSystem
          ? await management.seedUser(principal, org_id || undefined, input)
          : await management.createUser(principal, org_id || undefined, input);
        return { user_id: user.user_id, email: user.email, display_name: user.display_name };
      },
    ),
    createApiToken: unary(
      logger,
      async (call: Call<{ org_id: string; name: string; role: string; scope?: ApiTokenScopeMessage | null; expires_at_ms: number | string }>) => {
        const principal = await caller(call);
        const created = await apiTokens.create(principal, call.request.org_id || principal.orgId, apiTokenBody(call.request));
        return { api_token: apiTokenMessage(created), token: created.token ?? '' };
      },
    ),
    listApiTokens: unary(logger, async (call: Call<{ org_id: string }>) => {
      const principal = await caller(call);
      return { api_tokens: (await apiTokens.list(principal, call.request.org_id || principal.orgId)).map(apiTokenMessage) };
    }),
    deleteApiToken: unary(logger, async (call: Call<{ org_id: string; api_token_id: string }>) => {
      const principal = await caller(call);
      await apiTokens.revoke(principal, call.request.org_id || principal.orgId, call.request.api_token_id);
      return { api_token_id: call.request.api_token_id };
    }),
    listUsers: unary(logger, async (call: Call<{ org_id: string }>) => {
      const principal = await caller(call);
      const users = await management.listUsers(principal, call.request.org_id || principal.orgId);
      return { users: users.map(({ bindings, ...user }) => ({ ...user, bindings: (bindings ?? []).map(roleBindingMessage), bindings_set: bindings !== null })) };
    }),
    getRoleBindings: unary(logger, async (call: Call<{ org_id: string; user_id: string }>) => {
      const principal = await caller(call);
      return roleBindingsMessage(await roleBindings.get(principal, call.request.org_id || principal.orgId, call.request.user_id));
    }),
    setRoleBindings: unary(logger, async (call: Call<{ org_id: string; user_id: string; bindings: RoleBindingMessage[] }>) => {
      const principal = await caller(call);
      const { org_id, user_id, bindings } = call.request;
      return roleBindingsMessage(await roleBindings.set(principal, org_id || principal.orgId, user_id, roleBindingsBody(bindings)));
    }),
    resetRoleBindings: unary(logger, async (call: Call<{ org_id: string; user_id: string }>) => {
      const principal = await caller(call);
      return roleBindingsMessage(await roleBindings.reset(principal, call.request.org_id || principal.orgId, call.request.user_id));
    }),
  });
}
