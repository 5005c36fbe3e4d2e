import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVER_KEY_SETTINGS, type ClientKeySettings, type EnvironmentScope } from '@switchyard/core';
import { createInMemoryRepositories } from '@switchyard/core/testing';
import { ClientOriginService, ClientOriginUnion } from '../src/index.ts';

const settings = (allowedOrigins: string[], extra: Partial<ClientKeySettings> = {}): ClientKeySettings => ({
  ...SERVER_KEY_SETTINGS,
  name: 'web',
  allowedOrigins,
  ...extra,
});

async function tenant() {
  const repos = createInMemoryRepositories();
  const org = await repos.orgs.create({ name: `org-${Math.random()}` });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'p' });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  const scope: EnvironmentScope = { orgId: org.id, projectId: project.id, environmentId: environment.id };
  let n = 0;
  const key = (kind: 'server' | 'client', origins: string[] = [], extra: Partial<ClientKeySettings> = {}) =>
    repos.sdkKeys.create(scope, { keyPrefix: `k${++n}`, keyHash: `hash-${n}-${Math.random()}`, kind, settings: settings(origins, extra) });
  return { repos, scope, key };
}

describe('ClientOriginService: the union of the active client keys’ origins', () => {
  test('every active client key’s origins, each once; server, revoked and expired keys add none', async () => {
    const { repos, scope, key } = await tenant();
    await key('server');
    await key('client', ['https://app.example.com', 'https://*.shop.example.com']);
    await key('client', ['https://app.example.com', 'http://localhost:3000']);
    const revoked = await key('client', ['https://gone.example.com']);
    await repos.sdkKeys.revoke(scope, revoked.id);
    await key('client', ['https://expired.example.com'], { expiresAtMs: Date.now() - 1_000 });
    await key('client', [], { allowMissingOrigin: true });
    const union = await new ClientOriginService(repos.sdkKeys).activeClientOrigins();
    assert.deepEqual([...union].sort(), ['http://localhost:3000', 'https://*.shop.example.com', 'https://app.example.com']);
  });
});

describe('ClientOriginUnion: the union in memory, kept current', () => {
  test('answers from what it last read, and a refresh reads again', async () => {
    let origins = ['https://a.example.com', 'https://*.b.example.com'];
    const union = new ClientOriginUnion(async () => origins);
    assert.equal(union.allows('https://a.example.com'), false, 'nothing before the first read');
    await union.start();
    assert.equal(union.allows('https://a.example.com'), true);
    assert.equal(union.allows('https://x.b.example.com'), true);
    assert.equal(union.allows('https://b.example.com'), false);
    origins = ['https://c.example.com'];
    await union.refresh();
    assert.equal(union.allows('https://a.example.com'), false, 'a removed origin is gone');
    assert.equal(union.allows('https://c.example.com'), true);
    union.stop();
  });

  test('notices during a read coalesce into exactly one more read, which sees the last change', async () => {
    let reads = 0;
    let release: (() => void) | null = null;
    let origins = ['https://one.example.com'];
    const union = new ClientOriginUnion(async () => {
      reads += 1;
      const seen = origins;
      if (reads === 1) await new Promise<void>((resolve) => (release = resolve));
      return seen;
    });
    const first = union.refresh();
    await sleep(5);
    origins = ['https://two.example.com'];
    const notices = Array.from({ length: 50 }, () => union.refresh());
    assert.equal(reads, 1, 'no read starts while one runs');
    release!();
    await Promise.all([first, ...notices]);
    assert.equal(reads, 2, 'fifty notices during the read cost one more read');
    assert.equal(union.allows('https://two.example.com'), true, 'the read after the notices sees the change');
    union.stop();
  });

  test('a failed read keeps the last union, is reported, and is retried soon', async () => {
    let fail = false;
    const errors: unknown[] = [];
    let origins = ['https://a.example.com'];
    const union = new ClientOriginUnion(
      async () => {
        if (fail) throw new Error('services unavailable');
        return origins;
      },
      { retryMs: 20, refreshIntervalMs: 60_000, onError: (error) => errors.push(error) },
    );
    await union.start();
    fail = true;
    origins = ['https://b.example.com'];
    await union.refresh();
    assert.equal(errors.length, 1);
    assert.equal(union.allows('https://a.example.com'), true, 'the last union stays');
    fail = false;
    for (let waited = 0; !union.allows('https://b.example.com') && waited < 2_000; waited += 10) await sleep(10);
    assert.equal(union.allows('https://b.example.com'), true, 'the retry read it');
    union.stop();
  });

  test('the periodic read picks up what no notice announced (e.g. an expiry)', async () => {
    let origins = ['https://a.example.com'];
    const union = new ClientOriginUnion(async () => origins, { refreshIntervalMs: 20 });
    await union.start();
    origins = [];
    for (let waited = 0; union.allows('https://a.example.com') && waited < 2_000; waited += 10) await sleep(10);
    assert.equal(union.allows('https://a.example.com'), false);
    union.stop();
  });
});
