import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { currentTestBatch } from './test-batch.ts';

/**
 * Chromium for the console's browser tests: Debian's `chromium-headless-shell` package (Chromium's
 * "old" headless shell, what Playwright itself runs headless), else Debian's `chromium`
 * (CHROMIUM_PATH overrides both). The shell is the same Blink and V8 without the full browser's
 * machinery: the same three browser files took 0.53x the machine's CPU with it (bench/README.md
 * "test suite", thirteenth session). A full `chromium` already installed is used when the shell is
 * not (with a hint). When neither is there, setup installs the shell with apt-get and says so; when
 * that is impossible (not root, no apt-get, no network), the browser tests are reported as skipped
 * with the reason, and every other test still runs.
 */
const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';
const FULL_BROWSERS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const HEADLESS_SHELL_PACKAGE = 'chromium-headless-shell';

function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, HEADLESS_SHELL, ...FULL_BROWSERS].filter((p): p is string => typeof p === 'string' && p !== '');
  return candidates.find((candidate) => existsSync(candidate));
}

let found: { path?: string; reason?: string } | undefined;

/** The Chromium executable, installing the headless shell when there is none; or why there is none. */
export function chromiumExecutable(): { path?: string; reason?: string } {
  if (found) return found;
  // npm test (scripts/run-tests.ts) already looked once for every file and found none.
  if (process.env.CHROMIUM_UNAVAILABLE) return (found = { reason: process.env.CHROMIUM_UNAVAILABLE });
  const present = findChromium();
  if (present) {
    // A machine with only the full browser keeps it (no apt-get run behind a developer's back).
    if (!process.env.CHROMIUM_PATH && present !== HEADLESS_SHELL) {
      console.error(`# browser tests: using ${present}; the Debian package "${HEADLESS_SHELL_PACKAGE}" would take about half its CPU`);
    }
    return (found = { path: present });
  }
  const installError = installHeadlessShell();
  const executable = findChromium();
  if (executable) return (found = { path: executable });
  return (found = { reason: installError ?? 'apt-get ran but no Chromium executable appeared' });
}

/** Installs the headless shell with apt-get; undefined when it ran, else why it could not. */
function installHeadlessShell(): string | undefined {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    return `Chromium is not installed (install the Debian package "${HEADLESS_SHELL_PACKAGE}" or "chromium", or set CHROMIUM_PATH); this setup cannot install it (needs root and apt-get)`;
  }
  console.error(`# browser tests: installing the Debian package "${HEADLESS_SHELL_PACKAGE}" with apt-get (a few minutes)`);
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', '-qq', HEADLESS_SHELL_PACKAGE], { stdio: 'ignore', timeout: 600_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return undefined;
  } catch (error) {
    return `Chromium is not installed and apt-get could not install it: ${(error as Error).message.split('\n')[0]}`;
  }
}

/**
 * A Chromium for the file. Alone, a Chromium of its own. In a process with other files (scripts/
 * test-batches.ts), one Chromium launched by the first file that asks and closed when the
 * process's last file ends: each file gets a view of it whose `close()` closes the browser contexts
 * (and so the pages) that file opened, and leaves the browser to the next file. Contexts share no
 * cookies, storage or pages, so files stay apart as with browsers of their own.
 */
export async function launchChromium(): Promise<Browser> {
  const batch = currentTestBatch();
  if (batch === undefined) return launchOwnChromium();
  if (batch.chromium === undefined) {
    const launching = launchOwnChromium();
    batch.chromium = launching;
    batch.cleanups.push(() => launching.then((browser) => browser.close(), () => {}));
  }
  return fileView(await batch.chromium);
}

function launchOwnChromium(): Promise<Browser> {
  const { path: executablePath, reason } = chromiumExecutable();
  if (!executablePath) return Promise.reject(new Error(reason));
  // --no-sandbox: these machines run the tests as root, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The shared browser as one file sees it: the contexts it opens are its own, closed by its `close()`. */
function fileView(shared: Browser): Browser {
  const contexts = new Set<BrowserContext>();
  const own = <T extends BrowserContext>(context: T): T => {
    contexts.add(context);
    context.once('close', () => contexts.delete(context));
    return context;
  };
  return new Proxy(shared, {
    get(target, property) {
      if (property === 'newContext') return async (...args: Parameters<Browser['newContext']>) => own(await target.newContext(...args));
      if (property === 'newPage') {
        return async (...args: Parameters<Browser['newPage']>) => {
          const page = await target.newPage(...args);
          own(page.context());
          return page;
        };
      }
      if (property === 'contexts') return () => [...contexts];
      if (property === 'close') return async () => void (await Promise.all([...contexts].map((context) => context.close())));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Where screenshots are kept after a run (test-artifacts/ at the repository root, not in git). */
export const ARTIFACTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../test-artifacts/console');

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return path.join(ARTIFACTS_DIR, name);
}

export interface ConsoleSignIn {
  /** A console address to open once signed in (`#/env/.../flags`). */
  hash?: string;
  viewport?: { width: number; height: number };
  timezoneId?: string;
  /**
   * Wait for the signed-in page's navigation (a normal org's console). False for a sign-in that
   * lands elsewhere (the system administrator's page, a refusal).
   */
  waitForPages?: boolean;
}

/** Where the console keeps its session (packages/console/src/api.ts). */
const CONSOLE_SESSION_KEY = 'switchyard.session';

/**
 * A new browser context signed in to the console at `base` as `user`, opened at `options.hash`
 * when given. The browser signs in as the console does (`POST /v1/auth/login` from the console's
 * origin, the session kept in that tab's sessionStorage) and then opens the console, as a person's
 * tab does when reloaded: one load of the console, not a load of the sign-in page and then the
 * landing page's render before the page asked for (each load of the console costs Chromium ~0.2
 * s of CPU, bench/README.md "test suite"). The sign-in form itself is driven by the tests about
 * signing in (console-browser, console-mail-browser) and here when `waitForPages` is false: a
 * sign-in that lands elsewhere (the system administrator's page) or is refused.
 */
export async function signInToConsole(browser: Browser, base: string, user: { email: string; password: string }, options: ConsoleSignIn = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 }, ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}) });
  const page = await context.newPage();
  if (!(options.waitForPages ?? true)) {
    await page.goto(base + '/');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    if (options.hash !== undefined) await page.goto(`${base}/${options.hash}`);
    return page;
  }
  // A same-origin document without the console's code, so that the sign-in runs in its origin.
  await page.goto(`${base}/healthz`);
  const signedIn = await page.evaluate(
    async ({ key, email, password }) => {
      const response = await fetch('/v1/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
      const text = await response.text();
      if (response.status === 200) sessionStorage.setItem(key, text);
      return { status: response.status, text };
    },
    { key: CONSOLE_SESSION_KEY, email: user.email, password: user.password },
  );
  assert.equal(signedIn.status, 200, `sign in as ${user.email}: ${signedIn.text}`);
  await page.goto(`${base}/${options.hash ?? ''}`);
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

/**
 * The inner texts of `locator` once they equal `expected` (sorted first when `sorted`), failing
 * with the last texts seen after `timeoutMs`. Lists the console fills after a fetch are empty or
 * partial for a moment after their container appears; reading them once races that fetch.
 */
export async function expectTexts(locator: Locator, expected: string[], options: { sorted?: boolean; timeoutMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let seen: string[] = [];
  for (;;) {
    seen = await locator.allInnerTexts();
    if (options.sorted) seen = [...seen].sort();
    if (JSON.stringify(seen) === JSON.stringify(expected)) return;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(seen, expected);
}
