import assert from 'node:assert/strict';
import { stablePort } from '@switchyard/postgres/testing';
import type { ApiResponse } from './rest-client.ts';
import { startTestServer, type TestServer } from './test-server.ts';

export const TEST_SSO_SECRETS_KEY = 'integration-test-sso-secrets-key-0123456789';

/**
 * A test server set up for single sign-on: its PUBLIC_URL is its own REST address (picked up
 * front, so the services know it in the split topology too), identity providers on loopback are
 * allowed (the test IdPs run on 127.0.0.1), and client secrets are sealed with a known key.
 */
export async function startSsoTestServer(env: Record<string, string> = {}): Promise<TestServer & { publicUrl: string }> {
  const port = await stablePort();
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

/**
 * One browser's cookies for the server under test: what its `Set-Cookie` answers store (a
 * `Max-Age=0` one removes) and its next requests send. Ports and paths are not told apart: every
 * request it makes goes to the one server.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();
  /** Every `Set-Cookie` line received, in order, to check the attributes. */
  readonly received: string[] = [];

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      this.received.push(line);
      const [pair = ''] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      if (/;\s*max-age=0(;|$)/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(separator + 1).trim());
    }
  }

  /** The Cookie header to send, or undefined when empty. */
  header(): string | undefined {
    return this.cookies.size === 0 ? undefined : [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  names(): string[] {
    return [...this.cookies.keys()];
  }

  /** Another browser holding the same cookies (an attacker who copied them). */
  copy(): CookieJar {
    const copied = new CookieJar();
    for (const [name, value] of this.cookies) copied.cookies.set(name, value);
    return copied;
  }
}

/**
 * A request the way a browser makes it: no redirect followed, so each hop can be inspected, and
 * the cookies of `jar` (a new, empty browser unless given) sent and updated.
 */
export async function browserGet(url: string | URL, jar = new CookieJar()): Promise<{ status: number; location: URL | null; text: string }> {
  const cookie = jar.header();
  const response = await fetch(url, { redirect: 'manual', headers: cookie === undefined ? {} : { cookie } });
  jar.store(response);
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
