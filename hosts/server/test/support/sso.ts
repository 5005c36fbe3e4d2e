import assert from 'node:assert/strict';
import { freePort } from '@switchyard/postgres/testing';
import type { ApiResponse } from './rest-client.ts';
import { startTestServer, type TestServer } from './test-server.ts';

export const TEST_SSO_SECRETS_KEY = 'integration-test-sso-secrets-key-0123456789';

/**
 * A test server set up for single sign-on: its PUBLIC_URL is its own REST address (picked up
 * front, so the services know it in the split topology too), identity providers on loopback are
 * allowed (the test IdPs run on 127.0.0.1), and client secrets are sealed with a known key.
 */
export async function startSsoTestServer(env: Record<string, string> = {}): Promise<TestServer & { publicUrl: string }> {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const ts = await startTestServer({
    HTTP_PORT: String(port),
    PUBLIC_URL: publicUrl,
    SSO_ALLOW_PRIVATE_NETWORKS: 'true',
    SSO_SECRETS_KEY: TEST_SSO_SECRETS_KEY,
    ...env,
  });
  return Object.assign(ts, { publicUrl });
}

/** A request the way a browser makes it: no redirect followed, so each hop can be inspected. */
export async function browserGet(url: string | URL): Promise<{ status: number; location: URL | null; text: string }> {
  const response = await fetch(url, { redirect: 'manual' });
  const location = response.headers.get('location');
  return { status: response.status, location: location === null ? null : new URL(location), text: await response.text() };
}

/**
 * Polls `probe` until it answers `status`, for at most 10 s: a gateway hears of an ended session
 * asynchronously (in one process, at once).
 */
export async function eventuallyStatus(probe: () => Promise<ApiResponse>, status: number, what: string): Promise<void> {
  const started = Date.now();
  let last: ApiResponse | undefined;
  while (Date.now() - started < 10_000) {
    last = await probe();
    if (last.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${what}: still ${last?.status} ${last?.text} after 10 s`);
}
