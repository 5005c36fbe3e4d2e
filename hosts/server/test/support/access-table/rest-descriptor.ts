import type { Shared } from './fixtures.ts';
import type { Access, Target } from './types.ts';
import type { Principal, World } from './world.ts';

/** What a row sends: the path with its ids, a body, and the bearer when not the principal's own. */
export interface RestRequest {
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Overrides the principal's bearer (a fresh session for operations that end the session). */
  bearer?: string;
}

export interface RowContext {
  world: World;
  shared: Shared;
  principal: Principal;
  /** Whether the rule allows this row: refused rows need no fresh fixture (nothing is consumed). */
  allowed: boolean;
}

/**
 * The resource a destructive row acts on: a fresh one when the row is expected to succeed, else
 * the shared one (a refusal consumes nothing; a wrongly allowed row fails the table anyway).
 */
export const freshIfAllowed = async (context: RowContext, fresh: (world: World) => Promise<string>, shared: string): Promise<string> =>
  context.allowed ? fresh(context.world) : shared;

/**
 * One REST operation of /v1/openapi.json, classified by hand: who may call it (access), where its
 * resource lives (target), what it answers when allowed (status), and how to call it for one
 * principal (request; fresh fixtures for destructive operations).
 */
export interface RestDescriptor {
  /** `METHOD /path/{template}` exactly as the OpenAPI document has it. */
  operation: string;
  access: Access;
  target: Target;
  /** The answer when allowed (for public operations: every caller's answer). */
  status: number;
  request(context: RowContext): RestRequest | Promise<RestRequest>;
  /** Runs after every other row (it changes what other rows rely on, e.g. a password). */
  last?: boolean;
  /** Checks a password (see Cell.checksPassword). */
  checksPassword?: boolean;
}

export const rest = (operation: string, access: Access, target: Target, status: number, request: RestDescriptor['request'], options: { last?: boolean; checksPassword?: boolean } = {}): RestDescriptor => ({
  operation,
  access,
  target,
  status,
  request,
  ...options,
});

// Access classes and targets used across the descriptor files.
export const PUBLIC: Access = { kind: 'public' };
export const SESSION: Access = { kind: 'session' };
export const SYSTEM: Access = { kind: 'system' };
/** Keys only; a bearer is answered 401 (it is no key at all)... */
export const KEY_ONLY: Access = { kind: 'key_only', bearer: 401 };
/** ...or authenticated first and refused as not a key: 403 (client-key streams). */
export const KEY_ONLY_AUTHENTICATED: Access = { kind: 'key_only', bearer: 403 };
/** OFREP: a person's bearer is refused as not a key (403); an API token is taken for an unknown key (401). */
export const OFREP: Access = { kind: 'key_only', bearer: 403, tokens: 401 };
export const viewer = (level: 'org' | 'anywhere' | 'project' | 'environment'): Access => ({ kind: 'role', role: 'viewer', level });
export const editor = (level: 'org' | 'anywhere' | 'project' | 'environment'): Access => ({ kind: 'role', role: 'editor', level });
export const admin = (level: 'org' | 'anywhere' | 'project' | 'environment'): Access => ({ kind: 'role', role: 'admin', level });
/** What a token may never do, whatever its role (docs/access.md "API tokens"). */
export const noTokens = (access: Access): Access => ({ ...(access as Extract<Access, { kind: 'role' }>), tokens: 'never' });

export const ORG: Target = { org: 'tested' };
export const OWN_ORG: Target = { org: 'own_org' };
export const PROJECT_P: Target = { org: 'tested', project: 'P' };
export const STAGING: Target = { org: 'tested', project: 'P', environment: 'staging' };
export const PRODUCTION: Target = { org: 'tested', project: 'P', environment: 'production' };
export const NOWHERE: Target = { org: 'tested' };
