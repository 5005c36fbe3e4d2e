import {
  CONTEXT_SIGNING_MODES,
  MAX_ALLOWED_ORIGINS,
  SERVER_KEY_SETTINGS,
  invalidArgument,
  originPatternProblem,
  type ClientKeySettings,
  type ContextSigning,
  type SdkKeyKind,
} from '@switchyard/core';

/**
 * The body of `POST .../sdk-keys` and `PATCH .../sdk-keys/{id}` (docs/client-side.md "Keys").
 * No body (or `kind: "server"`) keeps today's server key; a client key names its origins.
 */
export interface SdkKeyBody {
  kind?: unknown;
  name?: unknown;
  allowed_origins?: unknown;
  allow_missing_origin?: unknown;
  context_signing?: unknown;
  include_disabled?: unknown;
  expires_at_ms?: unknown;
}

export const MAX_KEY_NAME = 200;
/** How far ahead an expiry may be set: ten years (a typo of a few zeros is refused). */
/** How far ahead a credential's expiry may be set (client keys, API tokens). */
export const MAX_EXPIRY_AHEAD_MS = 10 * 365 * 24 * 3_600_000;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function checkBoolean(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw invalidArgument(`${field} must be true or false`, field);
  return value;
}

function checkOrigins(value: unknown): string[] {
  if (!Array.isArray(value)) throw invalidArgument('allowed_origins must be an array of origins', 'allowed_origins');
  if (value.length > MAX_ALLOWED_ORIGINS) throw invalidArgument(`allowed_origins holds at most ${MAX_ALLOWED_ORIGINS} origins`, 'allowed_origins');
  const origins: string[] = [];
  for (const origin of value) {
    if (typeof origin !== 'string') throw invalidArgument('allowed_origins must be an array of strings', 'allowed_origins');
    const problem = originPatternProblem(origin);
    if (problem !== undefined) throw invalidArgument(`allowed_origins: ${problem}`, 'allowed_origins');
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}

function checkExpiry(value: unknown, nowMs: number): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidArgument('expires_at_ms must be an epoch time in milliseconds or null', 'expires_at_ms');
  if (value <= nowMs) throw invalidArgument('expires_at_ms must be in the future', 'expires_at_ms');
  if (value > nowMs + MAX_EXPIRY_AHEAD_MS) throw invalidArgument('expires_at_ms is at most ten years ahead', 'expires_at_ms');
  return value;
}

/** Applies the body's fields onto `base` (PATCH changes only what is given). */
function applySettings(body: Record<string, unknown>, base: ClientKeySettings, nowMs: number): ClientKeySettings {
  const settings = { ...base, allowedOrigins: [...base.allowedOrigins] };
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || body.name.length > MAX_KEY_NAME) throw invalidArgument(`name must be a string of at most ${MAX_KEY_NAME} characters`, 'name');
    settings.name = body.name;
  }
  if (body.allowed_origins !== undefined) settings.allowedOrigins = checkOrigins(body.allowed_origins);
  if (body.allow_missing_origin !== undefined) settings.allowMissingOrigin = checkBoolean(body.allow_missing_origin, 'allow_missing_origin');
  if (body.include_disabled !== undefined) settings.includeDisabled = checkBoolean(body.include_disabled, 'include_disabled');
  if (body.context_signing !== undefined) {
    if (!(CONTEXT_SIGNING_MODES as readonly unknown[]).includes(body.context_signing)) {
      throw invalidArgument(`context_signing must be one of ${CONTEXT_SIGNING_MODES.join(', ')}`, 'context_signing');
    }
    settings.contextSigning = body.context_signing as ContextSigning;
  }
  if (body.expires_at_ms !== undefined) settings.expiresAtMs = checkExpiry(body.expires_at_ms, nowMs);
  return settings;
}

const CLIENT_FIELDS = ['name', 'allowed_origins', 'allow_missing_origin', 'context_signing', 'include_disabled', 'expires_at_ms'] as const;

/** A create body → the key's kind and settings. @throws INVALID_ARGUMENT naming the field. */
export function parseCreateSdkKey(body: unknown, nowMs: number): { kind: SdkKeyKind; settings: ClientKeySettings } {
  if (body === undefined || body === null) return { kind: 'server', settings: { ...SERVER_KEY_SETTINGS } };
  if (!isObject(body)) throw invalidArgument('the body must be a JSON object');
  const kind = body.kind ?? 'server';
  if (kind === 'server') {
    const stray = CLIENT_FIELDS.find((field) => body[field] !== undefined && field !== 'name');
    if (stray !== undefined) throw invalidArgument(`${stray} applies to client keys only (kind: "client")`, stray);
    return { kind: 'server', settings: { ...SERVER_KEY_SETTINGS } };
  }
  if (kind !== 'client') throw invalidArgument('kind must be "server" or "client"', 'kind');
  const settings = applySettings(body, { ...SERVER_KEY_SETTINGS, allowedOrigins: [] }, nowMs);
  if (settings.allowedOrigins.length === 0 && !settings.allowMissingOrigin) {
    throw invalidArgument('a client key needs allowed_origins (browsers) or allow_missing_origin: true (native apps)', 'allowed_origins');
  }
  return { kind: 'client', settings };
}

/** A PATCH body applied to a client key's current settings. @throws INVALID_ARGUMENT naming the field. */
export function parseUpdateClientKey(body: unknown, current: ClientKeySettings, nowMs: number): ClientKeySettings {
  if (!isObject(body)) throw invalidArgument('the body must be a JSON object');
  if (body.kind !== undefined && body.kind !== 'client') throw invalidArgument('a key’s kind cannot change', 'kind');
  const settings = applySettings(body, current, nowMs);
  if (settings.allowedOrigins.length === 0 && !settings.allowMissingOrigin) {
    throw invalidArgument('a client key needs allowed_origins (browsers) or allow_missing_origin: true (native apps)', 'allowed_origins');
  }
  return settings;
}
