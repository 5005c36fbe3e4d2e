/**
 * The README's three screenshots, taken from a real first run: starts the single-process server on
 * a fresh data directory (embedded PostgreSQL, no BOOTSTRAP_ADMIN_*: the first-run path of
 * docs/first-run.md), signs in as admin@localhost with the password it kept, and writes
 *
 *   docs/images/first-run-checklist.png   the new project's flag list with its checklist
 *   docs/images/sdk-snippet.png           the checklist's SDK snippet (key, environment id, addresses)
 *   docs/images/flag-page.png             a flag's targeting: a rule above the default rule
 *
 * Usage: npx tsx scripts/screenshots.ts [--out <dir>] [--keep]
 *
 * Free ports are picked for every listener, so it runs beside a server on the default ports. It
 * finds things on the pages by role and structure rather than by their words where it can, so a
 * reworded page does not break it; when a part cannot be found it says which, takes the whole
 * page instead, and exits 1 at the end. `--keep` leaves the data directory in place (printed).
 * Needs Chromium (hosts/server/test/support/browser.ts finds or installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { launchChromium } from '../hosts/server/test/support/browser.ts';
import { stablePort } from '../packages/postgres/src/testing/free-port.ts';
import { buildConsole } from './build-console.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const OUT = path.resolve(outIndex >= 0 && args[outIndex + 1] ? args[outIndex + 1]! : path.join(ROOT, 'docs', 'images'));
const KEEP = args.includes('--keep');
const ADMIN_EMAIL = 'admin@localhost';
const FLAG_KEY = 'new-checkout';
const problems: string[] = [];

async function waitUntilReady(base: string, server: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode}:\n${output()}`);
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the server was not ready within 120 s:\n${output()}`);
}

async function api<T>(base: string, method: string, route: string, token: string | null, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Waits until the page has stopped loading: no request in flight and nothing marked busy. */
async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle').catch(() => undefined);
  await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
}

/** A screenshot of `part`, or of the window when it is not there (recorded as a problem). */
async function shoot(page: Page, file: string, part: Locator | null, what: string): Promise<void> {
  const target = path.join(OUT, file);
  if (part && (await part.count().catch(() => 0)) > 0) {
    try {
      // The element alone, scrolled into view by Playwright (its box, so no page-coordinate arithmetic).
      await part.first().screenshot({ path: target, timeout: 15_000 });
      console.log(`wrote ${path.relative(ROOT, target)} (${what})`);
      return;
    } catch (error) {
      problems.push(`${file}: could not take ${what} alone (${(error as Error).message.split('\n')[0]})`);
    }
  } else {
    problems.push(`${file}: ${what} not found on the page; took the window instead`);
  }
  await page.screenshot({ path: target });
  console.log(`wrote ${path.relative(ROOT, target)} (the window: ${what} not found)`);
}

/** A screenshot of what the window shows, from the top of the page. */
async function viewport(page: Page, file: string, what: string): Promise<void> {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(OUT, file) });
  console.log(`wrote ${path.relative(ROOT, path.join(OUT, file))} (${what})`);
}

/** The checklist: the region of the flags page that holds the snippets (code) and the steps (a list). */
function checklistOf(page: Page): Locator {
  return page
    .locator('main section, main aside, main article, main [role="region"]')
    .filter({ has: page.locator('pre, code') })
    .filter({ has: page.locator('ol, ul, [role="list"]') });
}

/** The SDK snippet: the first code block that configures the Node SDK with a key and addresses. */
function snippetOf(page: Page): Locator {
  const SDK = /SwitchyardClient|sdkKey|x-sdk-key/;
  const blocks = page.locator('pre').filter({ hasText: SDK });
  // A snippet shown as a code element outside <pre> still counts (the first <pre> wins when both exist).
  return blocks.or(page.locator('code').filter({ hasText: SDK }));
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  await buildConsole();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-screenshots-'));
  // Run as root, the embedded PostgreSQL runs as another user, which must reach its directory inside.
  chmodSync(dataDir, 0o755);
  const [httpPort, syncPort, grpcPort, pgPort] = [await stablePort(), await stablePort(), await stablePort(), await stablePort()];
  const base = `http://localhost:${httpPort}`;
  const env: NodeJS.ProcessEnv = { ...process.env, APP_ENV: 'development', DATA_DIR: dataDir, HTTP_PORT: String(httpPort), SYNC_GRPC_PORT: String(syncPort), GRPC_PORT: String(grpcPort), EMBEDDED_PG_PORT: String(pgPort), LOG_LEVEL: 'warn' };
  // The first-run path is the embedded database's with no administrator configured.
  for (const name of ['DATABASE_URL', 'BOOTSTRAP_ADMIN_EMAIL', 'BOOTSTRAP_ADMIN_PASSWORD', 'SMTP_URL', 'PUBLIC_URL']) delete env[name];
  let output = '';
  const server = spawn(process.execPath, ['--import', 'tsx', 'hosts/server/src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  server.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  server.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const stopped = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const browser = await launchChromium();
  try {
    await waitUntilReady(base, server, () => output);
    console.log(`server ready at ${base} (data in ${dataDir})`);
    const password = readFileSync(path.join(dataDir, 'admin-password'), 'utf8').trim();

    // What the first run made, read through the API as the admin: the org, its project and environments.
    const login = await api<{ token: string; org_id: string }>(base, 'POST', '/v1/auth/login', null, { email: ADMIN_EMAIL, password });
    const orgs = await api<{ orgs: Array<{ org_id: string; org_name: string }> }>(base, 'GET', '/v1/auth/orgs', login.token);
    if (!orgs.orgs.some((org) => org.org_id === login.org_id)) {
      throw new Error(`${ADMIN_EMAIL} signs in to no normal organisation: this server's first run does not create one (docs/first-run.md)`);
    }
    const projects = await api<Array<{ project_id: string; project_name: string }>>(base, 'GET', `/v1/management/orgs/${login.org_id}/projects`, login.token);
    const project = projects[0];
    if (!project) throw new Error('the first run created no project');
    const environments = await api<Array<{ environment_id: string; environment_name: string }>>(base, 'GET', `/v1/management/projects/${project.project_id}/environments`, login.token);
    const development = environments.find((e) => e.environment_name === 'development') ?? environments[0];
    if (!development) throw new Error('the first run created no environment');

    // 1. Signed in: the empty project's flags page, with its checklist.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await page.locator('input[type="email"], input[autocomplete="username"], input[name="email"]').first().fill(ADMIN_EMAIL);
    await page.locator('input[type="password"]').first().fill(password);
    await page.locator('form button[type="submit"]').first().click();
    await page.locator('input[type="password"]').first().waitFor({ state: 'detached', timeout: 30_000 });
    await page.goto(`${base}/#/env/${development.environment_id}/flags`);
    await settled(page);
    // The page as a newcomer sees it (header, environment, checklist): the viewport, not one part.
    if ((await checklistOf(page).count()) === 0) problems.push('first-run-checklist.png: no checklist (steps with code snippets) on the empty project\'s flags page');
    await viewport(page, 'first-run-checklist.png', 'the flags page with its checklist');

    // 2. The checklist's SDK snippet (with a key when the checklist can make one in place).
    const createKey = checklistOf(page).getByRole('button', { name: /key/i });
    if ((await createKey.count()) > 0) {
      await createKey.first().click().catch(() => undefined);
      await settled(page);
    }
    const snippet = snippetOf(page);
    // The step that holds the snippet (its list item, else a details, article, fieldset or tab
    // panel around it), else the code block alone.
    let part: Locator | null = (await snippet.count()) > 0 ? snippet : null;
    for (const container of ['li', 'details', 'article', 'fieldset', '*[@role="tabpanel"]']) {
      const step = snippet.first().locator(`xpath=ancestor::${container}[1]`);
      if (part !== null && (await step.count()) > 0) {
        part = step;
        break;
      }
    }
    await shoot(page, 'sdk-snippet.png', part, 'the SDK snippet');

    // 3. A flag created without rules (so it has the default rule), a testers' rule above it, turned on.
    const flagsRoute = `/v1/environments/${development.environment_id}/flags`;
    await api(base, 'POST', flagsRoute, login.token, {
      key: FLAG_KEY,
      flag: { description: 'The redesigned checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off' },
    });
    const created = await api<{ rules: Array<Record<string, unknown>> }>(base, 'PUT', `${flagsRoute}/${FLAG_KEY}`, login.token, { enabled: true });
    if (created.rules.length === 0) problems.push('the new flag has no default rule (is the default rule merged?)');
    const testers = { id: 'testers', conditions: [{ attribute: 'email', op: 'ends_with', values: ['@example.com'] }], variant_key: 'on' };
    await api(base, 'PUT', `${flagsRoute}/${FLAG_KEY}/rules`, login.token, { rules: [testers, ...created.rules] });
    await page.goto(`${base}/#/env/${development.environment_id}/flags/${FLAG_KEY}`);
    await page.getByRole('heading', { name: FLAG_KEY }).first().waitFor({ timeout: 30_000 }).catch(() => undefined);
    await settled(page);
    // When the flag page has tabs, the targeting one (rules and the default rule) is the picture.
    const targeting = page.getByRole('tab', { name: /targeting/i });
    if ((await targeting.count()) > 0) {
      await targeting.first().click().catch(() => undefined);
      await settled(page);
    }
    // The top of the page (header, menu, the flag's tabs and targeting), as for the first picture.
    await viewport(page, 'flag-page.png', 'the flag page');
    await context.close();
  } finally {
    await browser.close();
    if (server.exitCode === null && server.pid !== undefined) {
      process.kill(-server.pid, 'SIGTERM'); // the server's own group: it stops the embedded database itself
      await stopped;
    }
    if (KEEP) console.log(`kept the data directory ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
  if (problems.length > 0) {
    console.error(`\n${problems.length} problem(s):\n- ${problems.join('\n- ')}`);
    process.exitCode = 1;
  }
}

await main();
