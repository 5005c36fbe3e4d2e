import { randomUUID } from 'node:crypto';
import { notFound } from '../errors/domain-error.ts';
import type { ContextSigningSecret } from '../client/context-signing-ports.ts';
import type { ContextAttribute } from '../flags/context-attribute-ports.ts';
import type { ScheduledChange } from '../flags/scheduled-change-ports.ts';
import type {
  ApiToken,
  AuditEntry,
  Environment,
  EventDefinition,
  Experiment,
  ExperimentIteration,
  ExperimentResults,
  Exposure,
  Membership,
  MetricEvent,
  Org,
  Project,
  SdkKey,
  StatsJob,
  User,
} from '../model/entities.ts';
import type { Flag, HashingConfig, Prerequisite, Rule, Segment } from '../model/definitions.ts';
import type { EnvironmentScope, OrgScope, ProjectScope } from '../ports/scopes.ts';
import type { Invitation, RefreshTokenRecord, SessionRecord } from '../ports/session-ports.ts';
import type { AccountToken, OutboxMail } from '../ports/mail-ports.ts';
import type { OrgDomain } from '../ports/org-domain-ports.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../ports/webhook-ports.ts';
import type { AuthProvider, PendingSsoLogin, SsoCodeGrant } from '../ports/sso-ports.ts';

/** A stored flag definition (project-level) in the fake. */
export interface StoredFlagDefinition {
  id: string;
  orgId: string;
  projectId: string;
  flag: Omit<Flag, 'enabled' | 'off_variant_key' | 'rules' | 'hashing'>;
}

/** A stored per-environment flag state in the fake. */
export interface StoredFlagState {
  enabled: boolean;
  off_variant_key: string | null;
  rules: Rule[];
  prerequisites: Prerequisite[];
  hashing: HashingConfig[];
  version: number;
  updated_at_ms: number;
}

/**
 * The tables of the in-memory fakes, shared by every fake of one createInMemoryRepositories()
 * bundle so that cross-resource rules (a project must belong to the org, an environment to the
 * project, ...) behave as the PostgreSQL foreign keys do.
 */
export class InMemoryState {
  readonly orgs = new Map<string, Org>();
  readonly users = new Map<string, User>();
  readonly memberships: Membership[] = [];
  readonly projects = new Map<string, Project>();
  readonly environments = new Map<string, Environment>();
  readonly sdkKeys = new Map<string, SdkKey>();
  /** API tokens by id, with the hash of their plaintext */
  readonly apiTokens = new Map<string, { token: ApiToken; hash: string }>();
  readonly contextSigningSecrets = new Map<string, ContextSigningSecret>();
  /** environment id → `${contextType}\0${name}` → attribute (names contexts used, never values) */
  readonly contextAttributes = new Map<string, Map<string, ContextAttribute>>();
  /** flag definitions by id */
  readonly flags = new Map<string, StoredFlagDefinition>();
  /** `${environmentId}/${flagId}` → state */
  readonly flagStates = new Map<string, StoredFlagState>();
  /** segments by id, with their scope */
  readonly segments = new Map<string, { scope: EnvironmentScope; segment: Segment }>();
  /** segment id → list → keys */
  readonly segmentMembers = new Map<string, { included: Set<string>; excluded: Set<string> }>();
  /** `${environmentId}/${key}` → definition */
  readonly eventDefinitions = new Map<string, EventDefinition>();
  readonly events: Array<MetricEvent & { orgId: string; receivedAtMs: number }> = [];
  readonly exposures: Array<Exposure & { orgId: string; receivedAtMs: number }> = [];
  /** `${environmentId}/${key}` → answer */
  readonly idempotency = new Map<string, { answer: unknown; expiresAtMs: number }>();
  readonly experiments = new Map<string, { scope: EnvironmentScope; experiment: Experiment }>();
  readonly iterations: ExperimentIteration[] = [];
  readonly results = new Map<string, { scope: EnvironmentScope; results: ExperimentResults }>();
  readonly statsJobs = new Map<string, StatsJob>();
  /** Each org's last claim turn (the fair order of claimNext); the counter gives the next one. */
  readonly statsJobTurns = new Map<string, number>();
  statsJobTurnCounter = 0;
  /** Audit entries in append order. */
  readonly audit: AuditEntry[] = [];
  /**
   * Each audit entry's place in the append order (PostgreSQL's `seq`) by entry id: a number of its
   * own, so pruning older entries never moves a position a cursor was made from.
   */
  readonly auditSeq = new Map<string, number>();
  auditSeqCounter = 0;
  /** login sessions by id */
  readonly sessions = new Map<string, SessionRecord>();
  /** invitations by id, with their token hash */
  readonly invitations = new Map<string, Invitation & { tokenHash: string }>();
  /** refresh tokens by id; revokedAtMs is set when consumed or revoked */
  readonly refreshTokens = new Map<string, RefreshTokenRecord & { revokedAtMs: number | null }>();
  readonly loginFailures: Array<{ subject: string; atMs: number }> = [];
  /** The mail outbox, by id. */
  readonly mailOutbox = new Map<string, OutboxMail & { leaseExpiresAtMs: number }>();
  /** Webhook endpoints and deliveries, by id. */
  readonly webhookEndpoints = new Map<string, WebhookEndpoint>();
  readonly webhookDeliveries = new Map<string, WebhookDelivery & { leaseExpiresAtMs: number }>();
  /** Org domains, by `${orgId}/${domain}`. */
  readonly orgDomains = new Map<string, OrgDomain>();
  /** Emailed single-use secrets, by hash. */
  readonly accountTokens = new Map<string, AccountToken & { usedAtMs: number | null }>();
  /** identity providers by id */
  readonly authProviders = new Map<string, AuthProvider>();
  /** pending SSO logins by state hash */
  readonly ssoPending = new Map<string, PendingSsoLogin>();
  /** spent browser-login states by hash → expiresAtMs */
  readonly ssoSpentStates = new Map<string, { expiresAtMs: number }>();
  /** one-time SSO codes by hash */
  readonly ssoCodes = new Map<string, SsoCodeGrant & { expiresAtMs: number }>();
  /** `${providerId}\n${subject}` → user id */
  readonly ssoIdentities = new Map<string, string>();
  /** Scheduled flag changes by id. */
  readonly scheduledChanges = new Map<string, ScheduledChange>();

  /** A clock the fakes stamp records with; strictly increasing so orderings are stable. */
  private lastNowMs = 0;
  now(): number {
    this.lastNowMs = Math.max(Date.now(), this.lastNowMs + 1);
    return this.lastNowMs;
  }

  /**
   * A copy of every table, and the function that puts it back (the fake's rollback, see
   * InMemoryUnitOfWork). Tables are restored in place: the fakes hold references to them.
   */
  snapshot(): () => void {
    const saved = new Map<string, unknown>();
    // The clock is not a table: it only moves forward.
    for (const [name, table] of Object.entries(this)) if (name !== 'lastNowMs') saved.set(name, structuredClone(table));
    return () => {
      const self = this as unknown as Record<string, unknown>;
      for (const [name, copy] of saved) {
        const table = self[name];
        if (table instanceof Map) {
          table.clear();
          for (const [key, value] of copy as Map<unknown, unknown>) table.set(key, value);
        } else if (Array.isArray(table)) {
          table.length = 0;
          for (const row of copy as unknown[]) table.push(row);
        } else {
          self[name] = copy;
        }
      }
    };
  }

  newId(): string {
    return randomUUID();
  }

  /** The org, or NOT_FOUND. */
  requireOrg(scope: OrgScope): Org {
    const org = this.orgs.get(scope.orgId);
    if (!org) throw notFound('organisation', scope.orgId);
    return org;
  }

  /** The project if it belongs to the scope's org, or NOT_FOUND (as a foreign key would). */
  requireProject(scope: ProjectScope): Project {
    const project = this.projects.get(scope.projectId);
    if (!project || project.orgId !== scope.orgId) throw notFound('project', scope.projectId);
    return project;
  }

  /** The environment if it belongs to the scope's project and org, or NOT_FOUND. */
  requireEnvironment(scope: EnvironmentScope): Environment {
    const environment = this.environments.get(scope.environmentId);
    if (!environment || environment.orgId !== scope.orgId || environment.projectId !== scope.projectId) {
      throw notFound('environment', scope.environmentId);
    }
    return environment;
  }

  /** True when the environment exists within the scope (reads answer empty instead of throwing). */
  hasEnvironment(scope: EnvironmentScope): boolean {
    const environment = this.environments.get(scope.environmentId);
    return !!environment && environment.orgId === scope.orgId && environment.projectId === scope.projectId;
  }
}
