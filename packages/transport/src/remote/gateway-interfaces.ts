import type { GatewayServices } from '../gateway-services.ts';

/**
 * How one method travels over the gateway hop (docs/architecture.md "The gateway hop"):
 * - `caller`: the first argument is the caller's principal, sent as its credential in metadata
 *   (false only for logins, refreshes and accepting an invitation as a new user: no caller yet);
 * - `scoped`: the next argument is the route's scope, sent as its route id and resolved again by
 *   the services for the authenticated caller (never trusted as sent);
 * - `changesDefinitions`: after it succeeds, the gateway's copy of the scope's definitions is stale.
 */
export interface MethodSpec {
  caller: boolean;
  scoped: boolean;
  changesDefinitions: boolean;
}

/** One services interface the REST routes call, and the `*GatewayService` that carries it. */
export interface GatewayInterface {
  /** The member of GatewayServices it implements. */
  member: RemotableMember;
  /** The .proto file (under proto/) and the fully qualified gRPC service. */
  proto: string;
  service: string;
  /** The method that resolves a route id into the scope argument of `scoped` methods. */
  scopeMethod?: 'target' | 'scope';
  /** Method name (as in TypeScript; the RPC is its PascalCase) → how it travels. */
  methods: Readonly<Record<string, MethodSpec>>;
}

/** The GatewayServices members that are gRPC clients in a gateway (the rest are local there). */
export type RemotableMember = Exclude<keyof GatewayServices, 'verifier' | 'evaluation' | 'snapshots' | 'sync' | 'clientAccess' | 'contextTokens' | 'keyUses' | 'consoleAddresses'>;

const withCaller: MethodSpec = { caller: true, scoped: false, changesDefinitions: false };
const anonymous: MethodSpec = { caller: false, scoped: false, changesDefinitions: false };
/** Acts in the route's scope; definitions (flags, segments, experiments) stay as they are. */
const scoped: MethodSpec = { caller: true, scoped: true, changesDefinitions: false };
/** Acts in the route's scope and may change what evaluation reads there. */
const scopedDefinitionsWrite: MethodSpec = { caller: true, scoped: true, changesDefinitions: true };

/** Every interface of the hop. Adding a REST route that calls a new method means adding it here and to its .proto. */
export const GATEWAY_INTERFACES: readonly GatewayInterface[] = [
  {
    member: 'auth',
    proto: 'svc/auth/v1/auth_gateway.proto',
    service: 'svc.auth.v1.AuthGatewayService',
    methods: {
      login: anonymous,
      refresh: anonymous,
      logout: withCaller,
      changePassword: withCaller,
      switchOrg: withCaller,
      listUserOrgs: withCaller,
      me: withCaller,
      listSessions: withCaller,
      endSession: withCaller,
      endOtherSessions: withCaller,
    },
  },
  {
    member: 'management',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.ManagementGatewayService',
    methods: {
      createOrg: withCaller,
      listOrgs: withCaller,
      seedUser: withCaller,
      createUser: withCaller,
      setMemberRole: withCaller,
      removeMember: withCaller,
      listUsers: withCaller,
      createProject: withCaller,
      listProjects: withCaller,
      createEnvironment: withCaller,
      listEnvironments: withCaller,
      updateEnvironment: withCaller,
      createSdkKey: withCaller,
      listSdkKeys: withCaller,
      deleteSdkKey: withCaller,
      updateSdkKey: withCaller,
      updateProject: withCaller,
      environmentScope: withCaller,
      activeSdkKeyIds: withCaller,
    },
  },
  {
    member: 'contextSigning',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.ContextSigningGatewayService',
    // environmentSecrets: the opened secrets for a gateway's own verification (asked as a client key).
    methods: { createSecret: withCaller, listSecrets: withCaller, deleteSecret: withCaller, environmentSecrets: withCaller },
  },
  {
    member: 'keyUsage',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.KeyUsageGatewayService',
    // No caller: one batch names many keys, each used on the gateway with its own credential. The
    // services write each use only in the scope it names, once a minute per key, and each context
    // attribute name only into an environment of the scope it names, bounded (KeyUsageService).
    methods: { recordUses: anonymous },
  },
  {
    member: 'contextAttributes',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.ContextAttributeGatewayService',
    scopeMethod: 'scope',
    methods: { list: scoped },
  },
  {
    member: 'insights',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.InsightsGatewayService',
    scopeMethod: 'scope',
    // recordCounts: no caller, as keyUsage.recordUses: one report counts many keys' evaluations; the
    // services write each count only into the environment and flag of the scope it names.
    methods: { flagInsights: scoped, lastEvaluated: scoped, activity: scoped, projectLifecycle: withCaller, recordCounts: anonymous, recordSummary: scoped },
  },
  {
    member: 'flagsAsCode',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.FlagsAsCodeGatewayService',
    scopeMethod: 'scope',
    methods: { export: scoped, import: scopedDefinitionsWrite },
  },
  {
    member: 'apiTokens',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.ApiTokenGatewayService',
    methods: { create: withCaller, list: withCaller, revoke: withCaller },
  },
  {
    member: 'invitations',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.InvitationGatewayService',
    methods: { create: withCaller, list: withCaller, delete: withCaller, acceptAsUser: withCaller, acceptAsNewUser: anonymous },
  },
  {
    member: 'roleBindings',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.RoleBindingGatewayService',
    methods: { get: withCaller, set: withCaller, reset: withCaller },
  },
  {
    member: 'passwordReset',
    proto: 'svc/accounts/v1/accounts_gateway.proto',
    service: 'svc.accounts.v1.PasswordResetGatewayService',
    // Whoever asks has no session: the emailed link is the credential.
    methods: { requestPasswordReset: anonymous, resetPassword: anonymous, confirmAddress: anonymous },
  },
  {
    member: 'mailOutbox',
    proto: 'svc/accounts/v1/accounts_gateway.proto',
    service: 'svc.accounts.v1.MailOutboxGatewayService',
    methods: { listLocalOutbox: withCaller },
  },
  {
    member: 'orgDomains',
    proto: 'svc/accounts/v1/accounts_gateway.proto',
    service: 'svc.accounts.v1.OrgDomainGatewayService',
    methods: { add: withCaller, list: withCaller, verify: withCaller, remove: withCaller },
  },
  {
    member: 'webhooks',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.WebhookGatewayService',
    methods: {
      create: withCaller,
      list: withCaller,
      get: withCaller,
      update: withCaller,
      remove: withCaller,
      rotateSecret: withCaller,
      listDeliveries: withCaller,
      redeliver: withCaller,
      testSend: withCaller,
    },
  },
  {
    member: 'auditLog',
    proto: 'svc/management/v1/management_gateway.proto',
    service: 'svc.management.v1.AuditLogGatewayService',
    scopeMethod: 'scope',
    methods: { list: withCaller, flagHistory: scoped },
  },
  {
    member: 'authProviders',
    proto: 'svc/auth/v1/auth_gateway.proto',
    service: 'svc.auth.v1.AuthProviderGatewayService',
    methods: { create: withCaller, list: withCaller, get: withCaller, update: withCaller, delete: withCaller, confirm: withCaller },
  },
  {
    member: 'sso',
    proto: 'svc/auth/v1/auth_gateway.proto',
    service: 'svc.auth.v1.SsoGatewayService',
    // The browser flow has no caller until its end; the provider's answer is its credential.
    methods: {
      startBrowserLogin: anonymous,
      finishOidcBrowserLogin: anonymous,
      finishSamlBrowserLogin: anonymous,
      exchangeCode: anonymous,
      samlMetadata: anonymous,
      signInOptions: anonymous,
      signInOption: anonymous,
    },
  },
  {
    // The client key is the caller: the services authorize it and evaluate client-visible flags only.
    member: 'clientAnswers',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.ClientAnswersGatewayService',
    methods: { bulk: withCaller, single: withCaller },
  },
  {
    member: 'flags',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.FlagGatewayService',
    scopeMethod: 'target',
    methods: {
      list: scoped,
      get: scoped,
      create: scopedDefinitionsWrite,
      update: scopedDefinitionsWrite,
      remove: scopedDefinitionsWrite,
      archive: scopedDefinitionsWrite,
      replaceRules: scopedDefinitionsWrite,
      upsertVariants: scopedDefinitionsWrite,
      updateHashing: scopedDefinitionsWrite,
    },
  },
  {
    member: 'segments',
    proto: 'svc/segments/v1/segments_gateway.proto',
    service: 'svc.segments.v1.SegmentGatewayService',
    scopeMethod: 'scope',
    methods: {
      list: scoped,
      get: scoped,
      create: scopedDefinitionsWrite,
      update: scopedDefinitionsWrite,
      remove: scopedDefinitionsWrite,
      changeMembers: scopedDefinitionsWrite,
      listMembers: scoped,
      checkMembership: scoped,
    },
  },
  {
    member: 'environmentCopy',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.EnvironmentCopyGatewayService',
    // The scope is the target environment; the source is an argument, resolved by the services for the caller.
    scopeMethod: 'scope',
    methods: { compare: scoped, copy: scopedDefinitionsWrite },
  },
  {
    member: 'changeRequests',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.ChangeRequestGatewayService',
    // The scope is the request's environment (the policy routes' too).
    scopeMethod: 'scope',
    methods: {
      getPolicy: scoped,
      putPolicy: scoped,
      list: scoped,
      get: scoped,
      preview: scoped,
      create: scoped,
      update: scoped,
      submit: scoped,
      cancel: scoped,
      review: scoped,
      apply: scopedDefinitionsWrite,
    },
  },
  {
    member: 'scheduledChanges',
    proto: 'svc/flags/v1/flags_gateway.proto',
    service: 'svc.flags.v1.ScheduledChangeGatewayService',
    // A schedule changes no definition until the scheduler applies it (and announces it then).
    scopeMethod: 'scope',
    methods: { list: scoped, calendar: scoped, get: scoped, create: scoped, update: scoped, cancel: scoped, revert: scopedDefinitionsWrite },
  },
  {
    member: 'eventDefinitions',
    proto: 'svc/events/v1/events_gateway.proto',
    service: 'svc.events.v1.EventDefinitionGatewayService',
    scopeMethod: 'scope',
    methods: { list: scoped, get: scoped, create: scoped, update: scoped, remove: scoped },
  },
  {
    member: 'ingest',
    proto: 'svc/events/v1/events_gateway.proto',
    service: 'svc.events.v1.IngestGatewayService',
    scopeMethod: 'scope',
    methods: { ingestEvents: scoped, ingestExposures: scoped, recordEvaluationExposures: scoped },
  },
  {
    member: 'experiments',
    proto: 'svc/experiments/v1/experiments_gateway.proto',
    service: 'svc.experiments.v1.ExperimentGatewayService',
    scopeMethod: 'scope',
    methods: {
      list: scoped,
      get: scoped,
      create: scopedDefinitionsWrite,
      update: scopedDefinitionsWrite,
      remove: scopedDefinitionsWrite,
      transition: scopedDefinitionsWrite,
      iterations: scoped,
      results: scoped,
      power: scoped,
      experimentPower: scoped,
    },
  },
  {
    member: 'stats',
    proto: 'svc/stats/v1/stats_gateway.proto',
    service: 'svc.stats.v1.StatsGatewayService',
    methods: { triggerRecompute: withCaller, getJob: withCaller },
  },
  {
    member: 'clientOrigins',
    proto: 'svc/client/v1/client_gateway.proto',
    service: 'svc.client.v1.ClientGatewayService',
    // No caller: a gateway reads the union for CORS preflights, which carry no credential. It holds
    // only origins, which every preflight answer reveals one at a time anyway.
    methods: { activeClientOrigins: anonymous },
  },
];

/** `changePassword` → `ChangePassword`: the RPC name of a method. */
export const rpcName = (method: string): string => method.charAt(0).toUpperCase() + method.slice(1);
