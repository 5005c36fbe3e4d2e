import { freePort } from '@switchyard/postgres/testing';
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
