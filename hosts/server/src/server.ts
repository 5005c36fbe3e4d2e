import type { FastifyInstance } from 'fastify';
import { PgAdvisoryLock, PgChangeNotifier, PgFlagLifecycleRepository, PgIngestStorage, PgInsightsRepository, createPostgresRepositories, isDatabaseUnavailable, isMigrated } from '@switchyard/postgres';
import type { Repositories } from '@switchyard/core';
import {
  AuthService,
  BcryptPasswordHasher,
  ClientOriginService,
  ClientOriginUnion,
  CredentialVerifier,
  SDK_KEY_REVOKED_CHANNEL,
  InvitationService,
  RoleBindingService,
  AuditLogService,
  SessionRegistry,
  announceSessionChange,
  DefinitionSnapshots,
  EvaluationService,
  EventDefinitionCache,
  EventDefinitionService,
  ExperimentService,
  FlagService,
  FlagsAsCodeService,
  LocalEchoNotifier,
  ClientRateLimiter,
  IngestRateLimiter,
  IngestRetention,
  IngestService,
  ContextAttributeService,
  KeyUsageRecorder,
  KeyUsageService,
  MailOutboxService,
  MailWorker,
  WebhookDeliveryWorker,
  WebhookService,
  createGuardedFetch,
  ALLOW_PRIVATE_HINT,
  DELIVERY_TIMEOUT_MS,
  ManagementService,
  OrgDomainService,
  DnsTxtResolver,
  PasswordResetService,
  Pruner,
  SmtpMailSender,
  ResultsComputer,
  RowQuota,
  ScopeResolver,
  SegmentService,
  EnvironmentCopyService,
  ChangeRequestService,
  ScheduledChangeService,
  RevertRequestOpener,
  ScheduledChangeWorker,
  StatsService,
  StatsWorker,
  SyncHub,
  SecretBox,
  TokenService,
  AdminGrantWithdrawal,
  ClientIngestGuard,
  ContextSigningKeys,
  ContextSigningService,
  ContextTokenVerifier,
  authProviderRecord,
  createSsoServices,
  flagVariantsFrom,
  type MailSettings,
  type SsoOptions,
  ApiTokenService,
  ApiTokenThrottle,
  DEFAULT_API_TOKEN_THROTTLE,
  ApiTokenUseRecorder,
  EvaluationCountFlusher,
  FlagLifecycleJob,
  InsightsRetention,
  InsightsService,
} from '@switchyard/services';
import { EvaluationCounter } from '@switchyard/core';
import { bootstrap, type BootstrapResult } from './bootstrap.ts';
import type { Config } from '@switchyard/transport/config.ts';
import { openDatabase, type Database } from './database.ts';
import { developmentJwtSecret, developmentSsoSecretsKey } from './dev-secrets.ts';
import { addAuthGrpcService } from '@switchyard/transport/domains/auth/grpc.ts';
import { startGrpcServer, type RunningGrpcServer } from '@switchyard/transport/grpc/grpc-server.ts';
import { addEventGrpcServices } from '@switchyard/transport/domains/events/grpc.ts';
import { addExperimentGrpcServices } from '@switchyard/transport/domains/experiments/grpc.ts';
import { addAuditGrpcService } from '@switchyard/transport/domains/audit/grpc.ts';
import { addWebhookGrpcService } from '@switchyard/transport/domains/webhooks/grpc.ts';
import { addFlagGrpcService } from '@switchyard/transport/domains/flags/grpc.ts';
import { addFlagsAsCodeGrpcService } from '@switchyard/transport/domains/flags-as-code/grpc.ts';
import { ClientAnswers } from '@switchyard/transport/domains/client/rest-client-answers.ts';
import { addManagementGrpcService } from '@switchyard/transport/domains/management/grpc.ts';
import { addSegmentGrpcService } from '@switchyard/transport/domains/segments/grpc.ts';
import { addEnvironmentCopyGrpcService } from '@switchyard/transport/domains/environment-copy/grpc.ts';
import { addChangeRequestGrpcService } from '@switchyard/transport/domains/change-requests/grpc.ts';
import { addScheduledChangeGrpcService } from '@switchyard/transport/domains/schedules/grpc.ts';
import { addSsoGrpcServices } from '@switchyard/transport/domains/sso/grpc.ts';
import { FLAG_SYNC_SERVICE_NAME } from '@switchyard/transport/domains/sync/grpc.ts';
import { addReflection } from '@switchyard/transport/grpc/reflection.ts';
import { startPublicSyncServer } from '@switchyard/transport/public-sync-server.ts';
import { SHUTDOWN_GRACE_MS, ShutdownSequence } from '@switchyard/transport/shutdown-sequence.ts';
import { ClientAccess } from '@switchyard/transport/domains/client/rest-client-access.ts';
import { createHttpApp } from '@switchyard/transport/http/app.ts';
import { registerHealthRoutes } from '@switchyard/transport/http/health-routes.ts';
import { registerMetricsRoute } from '@switchyard/transport/http/metrics-routes.ts';
import { registerBrowserRoutes } from '@switchyard/transport/http/browser-routes.ts';
import { registerOpenApi } from '@switchyard/transport/http/openapi.ts';
import { registerRestRoutes } from '@switchyard/transport/http/rest-routes.ts';
import { closeHttpApp } from '@switchyard/transport/http/close-app.ts';
import { addGatewayGrpcServices } from '@switchyard/transport/grpc/gateway-grpc.ts';
import type { GatewayServices } from '@switchyard/transport/gateway-services.ts';
import type { RootLogger } from '@switchyard/transport/logging.ts';
import { ServerMetrics } from '@switchyard/transport/metrics.ts';
import { BrowserStreams } from '@switchyard/transport/domains/client/rest-event-streams.ts';
import { ChannelTokens, deriveChannelTokenKey } from '@switchyard/transport/domains/client/rest-channel-tokens.ts';

/** The in-process services: what routes call, plus the concrete verifier and snapshots tests and benches drive. */
export interface InProcessServices extends GatewayServices {
  verifier: CredentialVerifier;
  snapshots: DefinitionSnapshots;
}

export interface RunningServer {
  httpPort: number;
  grpcPort: number;
  /** 0 for the `services` role (no public sync port). */
  syncGrpcPort: number;
  http: FastifyInstance;
  repos: Repositories;
  services: InProcessServices;
  database: Database;
  bootstrap: BootstrapResult;
  /** Runs recompute jobs and the schedule of ACTIVE experiments (tests drive it directly too). */
  statsWorker: StatsWorker;
  /** Applies due scheduled changes (tests drive it directly too). */
  scheduler: ScheduledChangeWorker;
  /** Deletes expired idempotency answers, refresh tokens and login failures (tests run it directly too). */
  pruner: Pruner;
  /** The per-environment row quota of events and exposures (tests refresh it after a pruner run). */
  rowQuota: RowQuota;
  /** This instance's Prometheus metrics (served at `/metrics`). */
  metrics: ServerMetrics;
  /** Writes this instance's evaluation counts every INSIGHTS_FLUSH_MS and at stop (tests flush it directly too). */
  insightsFlusher: EvaluationCountFlusher;
  /** Records flags entering a cleanup stage every INSIGHTS_LIFECYCLE_INTERVAL_MS (tests run it directly too). */
  lifecycleJob: FlagLifecycleJob;
  /** Drains the mail outbox (tests run it directly too). */
  mailWorker: MailWorker;
  /** Drains the webhook outbox (docs/workflow.md "Webhooks"; tests run it directly too). */
  webhookWorker: WebhookDeliveryWorker;
  /** Stop accepting, drain in-flight requests, close streams and the pool. Idempotent. */
  stop(): Promise<void>;
}

/**
 * How the server stops, first to last (the database pool closes after all of them):
 * - sync streams (and gateways' credential watches) first: they never end by themselves, so they
 *   are ended (UNAVAILABLE: clients reconnect elsewhere) before the gRPC servers wait for their
 *   calls to finish;
 * - then the servers stop accepting and drain their in-flight calls and requests;
 * - then the notification subscriptions end;
 * - then what writes in the background finishes before the pool closes: rows waiting for their
 *   group commit are written (no acknowledged request is lost), the stats job in progress ends,
 *   a pruning batch ends.
 */
const SHUTDOWN_ORDER = [
  'sync streams',
  'public sync gRPC server',
  'internal gRPC server',
  'REST server',
  'session registry',
  'credential verifier',
  'client origins',
  'definition snapshots',
  'event definition cache',
  'context signing keys',
  'row quota',
  'ingest writers',
  'key uses',
  'evaluation counts',
  'stats worker',
  'scheduler',
  'pruner',
  'flag lifecycle',
  'mail worker',
  'webhook worker',
] as const;

/**
 * What a server process serves:
 * - `all`: the single process — REST API, internal gRPC, public sync gRPC;
 * - `services`: the services process behind gateways — internal gRPC (with the gateway hop's
 *   services) and only the operational routes on HTTP_PORT (/healthz, /readyz, /metrics).
 */
export type ServerRole = 'all' | 'services';

/** What the caller decides beyond the configuration. */
export interface StartOptions {
  /**
   * Run the development first run (docs/first-run.md) when no BOOTSTRAP_ADMIN_* is set. Default:
   * only on the embedded database outside production. Tests and scripts pass true to get it on a
   * fresh database given by DATABASE_URL.
   */
  firstRun?: boolean;
}

/**
 * The composition root of the single-process server: database → repositories → bootstrap →
 * REST (HTTP_PORT) + internal gRPC (GRPC_PORT) + public sync gRPC (SYNC_GRPC_PORT).
 */
export async function startServer(config: Config, logging: RootLogger, role: ServerRole = 'all', options: StartOptions = {}): Promise<RunningServer> {
  const log = logging.forModule('server');
  const database = await openDatabase(config, logging.forModule('database'));
  const repos = createPostgresRepositories(database.sql);
  const shutdown = new ShutdownSequence(SHUTDOWN_ORDER);
  const metrics = new ServerMetrics();
  // postgres.js tells nothing about its pool: the gauge reads pg_stat_activity at scrape time,
  // i.e. the connections PostgreSQL has from application 'switchyard' to this database — every
  // instance sharing the database, and the scrape's own query as one active connection.
  metrics.watchPool(config.dbPoolSize, async () => {
    const rows = await database.sql<Array<{ state: string; count: number }>>`
      SELECT coalesce(state, 'unknown') AS state, count(*)::int AS count FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = current_setting('application_name') AND backend_type = 'client backend'
      GROUP BY 1`;
    return rows.map((row) => ({ state: row.state.replaceAll(' ', '_'), count: row.count }));
  });

  try {
    const hasher = new BcryptPasswordHasher(config.passwordHashCost);
    const jwtSecret = config.jwtSecret ?? developmentJwtSecret(config.dataDir);
    const tokens = new TokenService({ secret: jwtSecret, ttlSeconds: config.tokenTtlSeconds });
    const channelTokenKey = deriveChannelTokenKey(jwtSecret);
    // Own subscribers hear a change before the write answers; other instances through PostgreSQL.
    const notifier = new LocalEchoNotifier(new PgChangeNotifier(database.sql));
    const sessions = new SessionRegistry(repos, notifier);
    await sessions.start();
    shutdown.add('session registry', () => sessions.stop());
    // API tokens (docs/access.md "API tokens"): unknown ones counted per client address; last use once a minute.
    const tokenLog = logging.forModule('api-tokens');
    const verifier = new CredentialVerifier(tokens, repos.sdkKeys, notifier, sessions, {
      apiTokens: {
        repository: repos.apiTokens,
        throttle: new ApiTokenThrottle(repos.loginThrottle, { ...DEFAULT_API_TOKEN_THROTTLE, maxFailuresPerAddress: config.apiTokenFailuresPerAddress }),
        uses: new ApiTokenUseRecorder(repos.apiTokens, Date.now, (error) => tokenLog.warn({ err: { message: (error as Error).message } }, 'an API token\'s last use could not be written')),
      },
    });
    await verifier.start();
    shutdown.add('credential verifier', () => verifier.stop());
    const snapshots = new DefinitionSnapshots(repos, notifier);
    await snapshots.start();
    shutdown.add('definition snapshots', () => snapshots.stop());
    const scopes = new ScopeResolver(repos);
    const eventDefinitionCache = new EventDefinitionCache(repos.eventDefinitions, notifier);
    await eventDefinitionCache.start();
    shutdown.add('event definition cache', () => eventDefinitionCache.stop());
    // Rate limits and the row quota live here, in the services, so that every gateway's requests
    // (and the internal gRPC port's) meet the same buckets (docs/security.md).
    const limiter = new IngestRateLimiter(config.ingestLimits);
    const ingestStorage = new PgIngestStorage(database.sql);
    const quotaLog = logging.forModule('quota');
    const rowQuota = new RowQuota(ingestStorage, {
      maxRowsPerEnvironment: config.eventRowsQuotaPerEnvironment,
      log: (level, message, fields) => quotaLog[level](fields ?? {}, message),
    });
    await rowQuota.start();
    shutdown.add('row quota', async () => rowQuota.stop());
    // Context signing secrets are sealed like identity providers' client secrets (SSO_SECRETS_KEY).
    const secretsKey = config.sso.secretsKey ?? (config.appEnv === 'production' ? null : developmentSsoSecretsKey(config.dataDir));
    const secretBox = secretsKey === null ? null : new SecretBox(secretsKey);
    const contextSigning = new ContextSigningService(repos, secretBox, notifier);
    // Verification keys in memory per environment, dropped on every instance by the notifier.
    const contextSigningKeys = new ContextSigningKeys((scope) => contextSigning.openedSecrets(scope));
    await contextSigningKeys.listen(notifier);
    shutdown.add('context signing keys', () => contextSigningKeys.stop());
    const contextTokens = new ContextTokenVerifier(contextSigningKeys);
    const ingest = new IngestService({
      repos,
      scopes,
      definitions: eventDefinitionCache,
      flagVariants: flagVariantsFrom(snapshots),
      metrics,
      limiter,
      quota: rowQuota,
      client: new ClientIngestGuard({
        tokens: contextTokens,
        snapshots,
        // The server's own answer for a client's exposure: an evaluation that records nothing.
        recheck: new EvaluationService(repos, snapshots, undefined, Date.now, undefined, { budgetMs: config.evaluationBudgetMs }),
        definitions: eventDefinitionCache,
        repos,
      }),
    });
    // After REST and gRPC have drained (they are stopped first), before the pool closes: rows
    // still waiting for their group commit are written, so no acknowledged request is lost.
    shutdown.add('ingest writers', () => ingest.stop());
    const syncLog = logging.forModule('sync');
    const sync = new SyncHub(
      { snapshots, scopes, verifier, sessions, sdkKeys: repos.sdkKeys },
      {
        maxStreamsPerKey: config.syncMaxStreamsPerKey,
        onError: (error, scope) => syncLog.warn({ err: { message: (error as Error).message }, environment_id: scope.environmentId }, 'sync: definitions could not be loaded; streams closed'),
      },
    );
    sync.start();
    metrics.watchSync(sync);
    const clientStreams = new BrowserStreams(sync, verifier, new ChannelTokens(() => channelTokenKey, config.clientStreams.tokenWindowMs), config.clientStreams);
    metrics.watchClientStreams(clientStreams);
    const statsLog = logging.forModule('stats');
    const statsWorker = new StatsWorker(repos, new ResultsComputer(repos, { intervalMs: config.statsIntervalMs }), {
      pollMs: config.statsPollMs,
      intervalMs: config.statsIntervalMs,
      isTransient: isDatabaseUnavailable,
      log: (level, message, fields) => statsLog[level](fields ?? {}, message),
      metrics,
    });
    // After REST and gRPC have drained, before the pool closes: the job in progress finishes.
    shutdown.add('stats worker', () => statsWorker.stop());
    // Every services process runs one: a due change is claimed (FOR UPDATE SKIP LOCKED) by exactly one.
    const schedulesLog = logging.forModule('schedules');
    const scheduler = new ScheduledChangeWorker(repos, notifier, {
      pollMs: config.schedulesPollMs,
      log: (level, message, fields) => schedulesLog[level](fields ?? {}, message),
      metrics,
    });
    shutdown.add('scheduler', () => scheduler.stop());
    // Evaluation counts (docs/insights.md): counted in memory by every evaluation this instance
    // answers, written once per INSIGHTS_FLUSH_MS in one statement that adds to the hourly rows.
    const insightsRepository = new PgInsightsRepository(database.sql);
    const insightsLog = logging.forModule('insights');
    const evaluationCounter = new EvaluationCounter(config.insights.maxKeys);
    const lifecycleRepository = new PgFlagLifecycleRepository(database.sql);
    const insights = new InsightsService({ flags: repos.flags, projects: repos.projects, insights: insightsRepository, lifecycle: lifecycleRepository, idempotency: repos.idempotency }, scopes, Date.now, limiter);
    const insightsFlusher = new EvaluationCountFlusher(evaluationCounter, (drained) => insights.write(drained), {
      intervalMs: config.insights.flushMs,
      onError: (error) => insightsLog.warn({ err: { message: (error as Error).message } }, 'evaluation counts could not be written; the next flush writes them'),
      onDropped: (dropped) => insightsLog.warn({ dropped, max_keys: config.insights.maxKeys }, 'evaluation counts: evaluations not counted (INSIGHTS_MAX_KEYS distinct keys held)'),
    });
    // After REST and gRPC have drained, before the pool closes: the counts held are written.
    shutdown.add('evaluation counts', () => insightsFlusher.stop());
    // One instance at a time prunes (an advisory lock); stopped before the pool closes.
    const pruneLog = logging.forModule('prune');
    const pruner = new Pruner(repos, new PgAdvisoryLock(database.sql, 'switchyard:prune'), {
      intervalMs: config.pruneIntervalMs,
      batchSize: config.pruneBatchSize,
      auditRetentionMs: config.auditRetentionDays * 86_400_000,
      auditMaxEntriesPerOrg: config.auditMaxEntriesPerOrg,
      webhookLogRetentionMs: config.webhooks.logRetentionDays * 86_400_000,
      insightsRetention: new InsightsRetention(insightsRepository, {
        hourlyRetentionMs: config.insights.hourlyRetentionDays * 86_400_000,
        dailyRetentionMs: config.insights.dailyRetentionDays * 86_400_000,
        batchSize: config.pruneBatchSize,
        log: (level, message, fields) => pruneLog[level](fields ?? {}, message),
      }),
      ingestRetention: new IngestRetention(ingestStorage, {
        retentionMs: config.eventRetentionDays * 86_400_000,
        log: (level, message, fields) => pruneLog[level](fields ?? {}, message),
      }),
      log: (level, message, fields) => pruneLog[level](fields ?? {}, message),
    });
    shutdown.add('pruner', () => pruner.stop());
    // Flags entering a cleanup stage (docs/insights.md "The daily job"): one instance at a time.
    const lifecycleLog = logging.forModule('lifecycle');
    const lifecycleJob = new FlagLifecycleJob(lifecycleRepository, new PgAdvisoryLock(database.sql, 'switchyard:flag-lifecycle'), {
      intervalMs: config.insights.lifecycleIntervalMs,
      log: (level, message, fields) => lifecycleLog[level](fields ?? {}, message),
    });
    shutdown.add('flag lifecycle', () => lifecycleJob.stop());
    // Mail (docs/security.md "Email delivery"): SMTP when SMTP_URL is set; else a local outbox in
    // development, and nothing in production (what needs a mail is then unavailable).
    const mailLog = logging.forModule('mail');
    const delivery = config.mail.smtpUrl !== null ? 'smtp' : config.appEnv === 'production' ? 'off' : 'local-outbox';
    const mailSender = config.mail.smtpUrl === null ? null : new SmtpMailSender({ url: config.mail.smtpUrl, from: config.mail.from });
    const mailWorker = new MailWorker(repos, mailSender, { log: (level, message, fields) => mailLog[level](fields ?? {}, message) });
    // After REST and gRPC have drained, before the pool closes: the mail being sent is finished.
    shutdown.add('mail worker', async () => {
      await mailWorker.stop();
      mailSender?.close();
    });
    if (delivery === 'off') {
      mailLog.warn({}, 'mail: APP_ENV=production without SMTP_URL: no mail is sent, so password reset is unavailable (409), invitation links are handed to the inviter only (accepting one proves no address), and the holders of addresses admins make accounts for are not told');
    } else if (delivery === 'local-outbox') {
      mailLog.info({}, 'mail: no SMTP_URL: mails are kept in the local outbox, for system administrators at GET /v1/admin/mail-outbox');
    }
    const auth = new AuthService(repos, hasher, tokens, notifier);
    // PUBLIC_URL unset: the REST port's localhost address, filled in once it listens.
    const ssoOptions: SsoOptions = {
      publicUrl: config.sso.publicUrl ?? `http://localhost:${config.httpPort}`,
      allowPrivateNetworks: config.sso.allowPrivateNetworks,
      secrets: secretBox,
      onSessionsEnded: (userId) => announceSessionChange(notifier, userId),
    };
    const mailSettings: MailSettings = { delivery, publicUrl: () => ssoOptions.publicUrl, onQueued: () => mailWorker.wake() };
    // Webhooks (docs/workflow.md "Webhooks"): the deliveries the writes put in the outbox are sent
    // by this worker, through the SSO network guard (public addresses only, checked at connect
    // time; no redirects followed), 15 s per attempt.
    const webhookLog = logging.forModule('webhooks');
    const webhookFetch = createGuardedFetch({
      allowPrivateNetworks: config.webhooks.allowPrivateNetworks,
      allowHint: ALLOW_PRIVATE_HINT,
      timeoutMs: DELIVERY_TIMEOUT_MS,
      maxResponseBytes: 1024 * 1024,
    });
    const webhookWorker = new WebhookDeliveryWorker(repos, secretBox, webhookFetch, {
      publicUrl: () => ssoOptions.publicUrl,
      metrics,
      log: (level, message, fields) => webhookLog[level](fields ?? {}, message),
    });
    // After REST and gRPC have drained, before the pool closes: the attempts in progress are recorded.
    shutdown.add('webhook worker', () => webhookWorker.stop());
    // CORS preflights are answered from the union of the client keys' origins, re-read on every
    // key notice (docs/client-side.md "CORS and origins"); only where REST is served.
    const clientOrigins = new ClientOriginService(repos.sdkKeys);
    const clientLog = logging.forModule('client');
    const originUnion = new ClientOriginUnion(() => clientOrigins.activeClientOrigins(), {
      onError: (error) => clientLog.warn({ err: { message: (error as Error).message } }, 'client key origins could not be read; CORS preflights use the last ones read'),
    });
    if (role === 'all') {
      const refresh = () => void originUnion.refresh();
      // A notice names one key; the union is re-read whole (one query), and after a reconnect too.
      const originNotices = await notifier.subscribe(SDK_KEY_REVOKED_CHANNEL, refresh, refresh);
      await originUnion.start();
      shutdown.add('client origins', async () => {
        originUnion.stop();
        await originNotices.unsubscribe();
      });
    }
    const clientAccess = new ClientAccess({ origins: originUnion, publicUrl: () => ssoOptions.publicUrl, metrics: metrics.client, log: clientLog });
    // Keys' last uses: noted by sync streams and evaluations, written in batches once a minute per key.
    const keyUsage = new KeyUsageService(repos.sdkKeys, repos.contextAttributes);
    const keyUseLog = logging.forModule('keys');
    const keyUses = new KeyUsageRecorder((uses, attributes) => keyUsage.recordUses(uses, attributes), {
      onError: (error) => keyUseLog.warn({ err: { message: (error as Error).message } }, 'keys\' last uses could not be written; their next uses write them'),
    });
    // After REST and gRPC have drained, before the pool closes: the last uses noted are written.
    shutdown.add('key uses', () => keyUses.stop());
    let syncPort = config.syncGrpcPort;
    const evaluation = new EvaluationService(repos, snapshots, (scope, exposures) => ingest.exposureWriter.write(scope, exposures), Date.now, metrics, {
      budgetMs: config.evaluationBudgetMs,
      // INSIGHTS_COUNTING=false: nothing counted here (the flusher runs, with nothing to write).
      counter: config.insights.counting ? evaluationCounter : undefined,
    });
    const changeRequests = new ChangeRequestService(repos, scopes, notifier);
    const services: InProcessServices = {
      verifier,
      auth,
      management: new ManagementService(
        repos,
        hasher,
        notifier,
        (sdkKeyId) => verifier.evict(sdkKeyId),
        Date.now,
        // Read at each write: PUBLIC_URL may be filled in once the REST port is known.
        new AdminGrantWithdrawal((provider) => authProviderRecord(provider, ssoOptions.publicUrl)),
        mailSettings,
      ),
      apiTokens: new ApiTokenService(repos, notifier, (tokenId) => verifier.evict(tokenId)),
      invitations: new InvitationService(repos, hasher, auth, Date.now, { mail: mailSettings, notifier }),
      roleBindings: new RoleBindingService(repos, notifier),
      passwordReset: new PasswordResetService(repos, hasher, notifier, mailSettings),
      mailOutbox: new MailOutboxService(repos, delivery),
      orgDomains: new OrgDomainService(repos, new DnsTxtResolver({ servers: config.mail.dnsServers })),
      auditLog: new AuditLogService(repos, scopes),
      ...createSsoServices({ repos, auth, hasher, options: ssoOptions, notifier }),
      flags: new FlagService(repos, scopes, notifier),
      segments: new SegmentService(repos, scopes, notifier, Date.now, limiter),
      flagsAsCode: new FlagsAsCodeService(repos, scopes, notifier, eventDefinitionCache),
      environmentCopy: new EnvironmentCopyService(repos, scopes, notifier),
      changeRequests,
      // Where approval is required, a revert opens a change request (docs/workflow.md "Revert").
      scheduledChanges: new ScheduledChangeService(repos, scopes, notifier, Date.now, new RevertRequestOpener(repos, changeRequests)),
      contextAttributes: new ContextAttributeService(repos, scopes),
      evaluation,
      insights,
      clientAnswers: new ClientAnswers(evaluation),
      snapshots,
      eventDefinitions: new EventDefinitionService(repos, scopes, eventDefinitionCache),
      ingest,
      sync,
      clientStreams,
      experiments: new ExperimentService(repos, scopes, Date.now, notifier),
      stats: new StatsService(repos),
      clientOrigins,
      clientAccess,
      // Client keys' limits hold where the request is answered: here for the REST port of role
      // `all` (a gateway has its own, docs/client-side.md "6. Limits").
      clientLimits: new ClientRateLimiter(config.clientLimits),
      clientMetrics: metrics.client,
      contextSigning,
      contextTokens,
      webhooks: new WebhookService(repos, secretBox, {
        allowPrivateNetworks: config.webhooks.allowPrivateNetworks,
        fetch: webhookFetch,
        publicUrl: () => ssoOptions.publicUrl,
      }),
      keyUsage,
      keyUses,
      // The sync port is known once it listens (0 in the config: any free port).
      consoleAddresses: { publicUrl: () => config.sso.publicUrl, syncPort: () => syncPort, syncTls: config.syncGrpcTls !== null },
    };
    const bootstrapResult = await bootstrap(repos, hasher, {
      admin: config.bootstrapAdmin,
      firstRun: (options.firstRun ?? (database.embedded && config.appEnv !== 'production')) ? { dataDir: config.dataDir } : null,
    });

    const http = createHttpApp(logging.forModule('http'), { trustProxy: config.trustProxy, timeouts: config.httpTimeouts, metrics });
    if (role === 'all') {
      await registerOpenApi(http);
      await registerBrowserRoutes(http, { consoleDir: config.consoleDir });
    }
    registerHealthRoutes(http, { isReady: () => isMigrated(database.sql) });
    registerMetricsRoute(http, metrics.registry);
    if (role === 'all') registerRestRoutes(http, services);
    await http.listen({ host: config.httpHost, port: config.httpPort });
    shutdown.add('REST server', () => closeHttpApp(http));
    const httpPort = (http.server.address() as { port: number }).port;
    if (config.sso.publicUrl === null && role === 'all') ssoOptions.publicUrl = `http://localhost:${httpPort}`;
    log.info({ port: httpPort }, 'REST listening');

    // Aborted with the sync streams: gateways' credential watches never end by themselves either.
    const endCredentialWatches = new AbortController();
    const grpcServices: RunningGrpcServer = await startGrpcServer({
      name: 'internal',
      // Loopback unless GRPC_HOST says otherwise: these services trust their callers' metadata
      // more than the public port does, and serve reflection (docs/security.md).
      host: config.grpcHost,
      port: config.grpcPort,
      tls: config.grpcTls,
      limits: config.grpcLimits,
      logger: logging.forModule('grpc'),
      metrics,
      register: (server) => {
        const logger = logging.forModule('grpc');
        addAuthGrpcService(server, { auth: services.auth, verifier, sessions, logger, stopping: endCredentialWatches.signal, channelTokenKey, contextSecrets: contextSigningKeys });
        addManagementGrpcService(server, { management: services.management, apiTokens: services.apiTokens, roleBindings: services.roleBindings, contextSigning, verifier, logger });
        addAuditGrpcService(server, { services, logger });
        addWebhookGrpcService(server, { services, logger });
        addSsoGrpcServices(server, { authProviders: services.authProviders, sso: services.sso, verifier, logger });
        addFlagGrpcService(server, { services, logger, onSyncMessage: metrics.syncMessageSent });
        addFlagsAsCodeGrpcService(server, { services, logger });
        addSegmentGrpcService(server, { services, logger });
        addEnvironmentCopyGrpcService(server, { services, logger });
        addChangeRequestGrpcService(server, { services, logger });
        addScheduledChangeGrpcService(server, { services, logger });
        addEventGrpcServices(server, { services, logger });
        addExperimentGrpcServices(server, { services, logger });
        addGatewayGrpcServices(server, { services, verifier, logger });
        addReflection(server, (service) => service !== FLAG_SYNC_SERVICE_NAME);
      },
    });
    shutdown.add('internal gRPC server', () => grpcServices.stop(SHUTDOWN_GRACE_MS));
    // The public sync port belongs to the edge: in a split deployment the gateways serve it.
    const syncServer =
      role === 'all'
        ? await startPublicSyncServer({ config, sync, verifier, keyUses, metrics, logger: syncLog })
        : null;
    if (syncServer) {
      syncPort = syncServer.port;
      shutdown.add('public sync gRPC server', () => syncServer.stop(SHUTDOWN_GRACE_MS));
    }
    shutdown.add('sync streams', () => {
      endCredentialWatches.abort();
      clientStreams.stop();
      return sync.stop();
    });
    statsWorker.start();
    scheduler.start();
    pruner.start();
    lifecycleJob.start();
    insightsFlusher.start();
    mailWorker.start();
    webhookWorker.start();

    let stopping: Promise<void> | null = null;
    return {
      httpPort,
      grpcPort: grpcServices.port,
      syncGrpcPort: syncServer?.port ?? 0,
      http,
      repos,
      services,
      database,
      bootstrap: bootstrapResult,
      statsWorker,
      scheduler,
      pruner,
      lifecycleJob,
      insightsFlusher,
      rowQuota,
      metrics,
      mailWorker,
      webhookWorker,
      stop() {
        stopping ??= (async () => {
          // In SHUTDOWN_ORDER, then the pool. A failed step is logged and the rest still stop.
          await shutdown.run((step, error) => log.warn({ step, err: { message: (error as Error).message } }, 'shutdown step failed'));
          await database.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await shutdown.run(() => {});
    await database.close().catch(() => {});
    throw error;
  }
}
