import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Development only (production requires JWT_SECRET): a random secret kept in the data directory,
 * so tokens survive restarts without anyone choosing a weak shared one.
 */
export function developmentJwtSecret(dataDir: string): string {
  return developmentSecret(dataDir, 'jwt-secret');
}

/** Development only: the key that encrypts SSO client secrets, kept like the JWT secret. */
export function developmentSsoSecretsKey(dataDir: string): string {
  return developmentSecret(dataDir, 'sso-secrets-key');
}

function developmentSecret(dataDir: string, name: string): string {
  const file = path.resolve(dataDir, name);
  try {
    const existing = readFileSync(file, 'utf8').trim();
    if (existing.length >= 32) return existing;
  } catch {
    // first start: create it below
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
