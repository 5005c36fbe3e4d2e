import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { main } from '@switchyard/cli';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The `switchyard` command (issue 37, docs/flags-as-code.md "The command") against a real server:
// export, import (dry run and applied), diff and its exit codes, an API token as the credential,
// examples/flags.yaml into a fresh project, and a LaunchDarkly export converted offline. Expected
// exit codes and lines are the documented ones, written by hand.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = path.join(ROOT, 'packages/cli/bin/switchyard.js');
const LD = path.join(ROOT, 'packages/services/test/fixtures/launchdarkly');

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;
let apiToken: string;
let dir: string;

/** Runs the command in this process, as a CI job would run it, and keeps what it printed. */
async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    env: { SWITCHYARD_URL: ts.base, SWITCHYARD_TOKEN: apiToken, ...env },
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    cwd: dir,
  });
  return { code, out, err };
}

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'cli');
  const created = expectStatus(
    await client.post(`/v1/management/orgs/${tenant.orgId}/api-tokens`, { token: tenant.admin.token, body: { name: 'ci', role: 'editor', scope: { project_ids: [tenant.projectId] } } }),
    201,
    'API token',
  );
  apiToken = created.token;
  dir = await mkdtemp(path.join(tmpdir(), 'switchyard-cli-'));
  // examples/flags.yaml names a development environment too.
  expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'development' } }), 201, 'development');
});
after(() => ts.stop());

describe('switchyard import / diff / export', () => {
  test('examples/flags.yaml: diff finds differences (exit 1), import applies them (0), diff then finds none (0)', async () => {
    const example = path.join(ROOT, 'examples/flags.yaml');
    const first = await run(['diff', example, '--project', tenant.projectId]);
    assert.equal(first.code, 1, first.out + first.err);
    assert.match(first.out, /^\+ flag new-checkout$/m);
    assert.match(first.out, /\(dry run: nothing was written\)\n$/);
    const applied = await run(['import', example, '--project', tenant.projectId]);
    assert.equal(applied.code, 0, applied.out + applied.err);
    assert.match(applied.out, /\(applied\)\n$/);
    const again = await run(['diff', example, '--project', tenant.projectId]);
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /^0 created, 0 changed, 0 deleted, 0 refused/m);
  });

  test('export writes YAML (or JSON by the file name) that reads back as the server shows it', async () => {
    const exported = await run(['export', '--project', tenant.projectId, '--output', 'out.yaml']);
    assert.equal(exported.code, 0, exported.err);
    const fromYaml = parse(await readFile(path.join(dir, 'out.yaml'), 'utf8')) as Json;
    const fromApi = expectStatus(await client.get(`/v1/projects/${tenant.projectId}/export`, { token: tenant.admin.token }), 200);
    assert.deepEqual(fromYaml, fromApi);
    assert.equal((await run(['export', '--project', tenant.projectId, '--output', 'out.json'])).code, 0);
    assert.deepEqual(JSON.parse(await readFile(path.join(dir, 'out.json'), 'utf8')), fromApi);
  });

  test('a refused import exits 2 with the reasons, and writes nothing', async () => {
    await writeFile(path.join(dir, 'bad.yaml'), 'format: switchyard.flags/v1\nflags:\n  - key: broken\n    value_type: bool\n    variants: [{key: x, value: "not a bool"}]\n');
    const refused = await run(['import', 'bad.yaml', '--project', tenant.projectId]);
    assert.equal(refused.code, 2, refused.out + refused.err);
    assert.match(refused.out, /^! flag broken: .+ \(INVALID_ARGUMENT\)$/m);
    const flags = expectStatus(await client.get(`/v1/projects/${tenant.projectId}/flags`, { token: tenant.admin.token }), 200) as Json[];
    assert.ok(!flags.some((flag) => flag.key === 'broken'));
  });

  test('usage and server errors: 64 for a wrong command line or file, 69 for a refused credential or no server', async () => {
    assert.equal((await run(['import'])).code, 64);
    assert.equal((await run(['import', 'missing.yaml', '--project', tenant.projectId])).code, 64);
    assert.equal((await run(['frobnicate'])).code, 64);
    assert.equal((await run(['export', '--project', tenant.projectId], { SWITCHYARD_TOKEN: '' })).code, 64, 'no credential');
    const badToken = await run(['export', '--project', tenant.projectId], { SWITCHYARD_TOKEN: 'swy_not-a-token' });
    assert.equal(badToken.code, 69);
    assert.match(badToken.err, /401 .*UNAUTHENTICATED/);
    assert.equal((await run(['export', '--project', tenant.projectId], { SWITCHYARD_URL: 'http://127.0.0.1:9' })).code, 69);
  });

  test('a LaunchDarkly export converts offline and imports through the same dry run', async () => {
    const converted = await run(['convert-launchdarkly', path.join(LD, 'flags.json'), '--ld-segments', `production=${path.join(LD, 'segments-production.json')}`, '--ld-environment', 'production=production', '--format', 'json']);
    assert.equal(converted.code, 0, converted.err);
    const document = JSON.parse(converted.out) as Json;
    assert.equal(document.format, 'switchyard.flags/v1');
    assert.ok(Object.keys(document.environments).every((name) => name === 'production'));
    assert.match(converted.err, /^launchdarkly (info|changed|dropped) /m, 'the report goes to stderr');
    // Into a project of its own (its flag keys overlap the example's), with a person's bearer token this time.
    const project = expectStatus(await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token: tenant.admin.token, body: { name: 'from-launchdarkly' } }), 201, 'project');
    expectStatus(await client.post(`/v1/management/projects/${project.project_id}/environments`, { token: tenant.admin.token, body: { name: 'production' } }), 201, 'environment');
    const args = ['import', path.join(LD, 'flags.json'), '--from', 'launchdarkly', '--ld-segments', `production=${path.join(LD, 'segments-production.json')}`, '--ld-environment', 'production=production', '--project', project.project_id];
    const dry = await run([...args, '--dry-run', '--json'], { SWITCHYARD_TOKEN: tenant.admin.token });
    const outcome = JSON.parse(dry.out) as Json;
    assert.equal(outcome.dry_run, true);
    assert.ok([...outcome.created, ...outcome.changed].some((entry: Json) => entry.kind === 'flag' && entry.key === 'operator-matrix'), dry.out);
    assert.deepEqual(outcome.refused, [], 'every converted entry is accepted');
    const applied = await run(args, { SWITCHYARD_TOKEN: tenant.admin.token });
    assert.equal(applied.code, 0, applied.out);
    const flag = expectStatus(await client.get(`/v1/projects/${project.project_id}/flags/operator-matrix`, { token: tenant.admin.token }), 200);
    assert.equal(flag.key, 'operator-matrix');
  });

  test('copy-env copies the differing flags (all of them when none is named) from one environment to another', async () => {
    const environments = expectStatus(await client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token }), 200) as Json[];
    const development = environments.find((e) => e.environment_name === 'development').environment_id;
    // examples/flags.yaml (imported above) serves new-checkout to everyone in development, to 10 % in production.
    const copied = await run(['copy-env', '--from', development, '--to', tenant.environmentId, '--flag', 'new-checkout', '--include', 'rules']);
    assert.equal(copied.code, 0, copied.out + copied.err);
    assert.match(copied.out, /^copied 1 flag\(s\) \(rules\): new-checkout$/m);
    const production = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/new-checkout`, { token: tenant.admin.token }), 200);
    assert.deepEqual(production.rules.map((rule: Json) => rule.id), ['everyone']);
    // No --flag: the server's comparison names what differs (checkout-button-colour's rules, search-results-per-page only in production).
    const all = await run(['copy-env', '--from', development, '--to', tenant.environmentId, '--include', 'rules,enabled,prerequisites', '--json']);
    assert.equal(all.code, 0, all.err);
    const again = await run(['copy-env', '--from', development, '--to', tenant.environmentId]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /do not differ: nothing to copy/);
    assert.equal((await run(['copy-env', '--from', development, '--to', tenant.environmentId, '--include', 'colours'])).code, 64);
    const refused = await run(['copy-env', '--from', development, '--to', tenant.environmentId, '--flag', 'no-such-flag']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.err, /no-such-flag/);
  });

  test('the installed bin runs (npx switchyard)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'export', '--project', tenant.projectId, '--format', 'json'], {
      env: { ...process.env, SWITCHYARD_URL: ts.base, SWITCHYARD_TOKEN: apiToken },
    });
    assert.equal(JSON.parse(stdout).format, 'switchyard.flags/v1');
  });
});
