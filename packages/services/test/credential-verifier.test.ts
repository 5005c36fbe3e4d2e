import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, unauthenticated, type ClientKeySettings, type EnvironmentScope, type SdkKey, type SdkKeyRepository } from '@switchyard/core';
import { createInMemoryRepositories, InMemoryChangeNotifier } from '@switchyard/core/testing';
import { CredentialVerifier, SDK_KEY_REVOKED_CHANNEL, TokenService, generateSdkKey } from '../src/index.ts';

/** The in-memory SDK key repository, counting the lookups the verifier makes. */
class CountingSdkKeys implements SdkKeyRepository {
  lookups = 0;
  /** When set, lookups wait for this promise before answering (to interleave with revocations). */
  gate: Promise<void> | null = null;

  constructor(private readonly inner: SdkKeyRepository) {}

  create(scope: EnvironmentScope, input: { keyPrefix: string; keyHash: string }): Promise<SdkKey> {
    return this.inner.create(scope, input);
  }
  async findActiveByHash(keyHash: string): Promise<SdkKey | null> {
    this.lookups += 1;
    const answer = await this.inner.findActiveByHash(keyHash);
    if (this.gate) await this.gate;
    return answer;
  }
  list(scope: EnvironmentScope): Promise<SdkKey[]> {
    return this.inner.list(scope);
  }
  revoke(scope: EnvironmentScope, sdkKeyId: string): Promise<SdkKey> {
    return this.inner.revoke(scope, sdkKeyId);
  }
  updateClientSettings(scope: EnvironmentScope, sdkKeyId: string, settings: ClientKeySettings): Promise<SdkKey> {
    return this.inner.updateClientSettings(scope, sdkKeyId, settings);
  }
  listActiveClientOrigins() {
    return this.inner.listActiveClientOrigins();
  }
  recordUses(uses: Parameters<SdkKeyRepository['recordUses']>[0], minIntervalMs: number): Promise<number> {
    return this.inner.recordUses(uses, minIntervalMs);
  }
}

const rejectsUnauthenticated = (verification: Promise<unknown>) =>
  assert.rejects(verification, (error: unknown) => isDomainError(error) && error.code === 'UNAUTHENTICATED');

const tokens = new TokenService({ secret: 'unit-test-secret-of-at-least-32-bytes!!', ttlSeconds: 600 });

let sdkKeys: CountingSdkKeys;
let notifier: InMemoryChangeNotifier;
let scope: EnvironmentScope;
let clock: { nowMs: number };
let verifier: CredentialVerifier;

async function newKey(): Promise<{ rawKey: string; id: string }> {
  const material = generateSdkKey();
  const key = await sdkKeys.create(scope, { keyPrefix: material.keyPrefix, keyHash: material.keyHash });
  return { rawKey: material.rawKey, id: key.id };
}

/** A promise resolved by the next `revoked` event, with what the cache held at that moment. */
function nextRevocation(rawKey: string): Promise<{ sdkKeyId: string; cachedDuringDelivery: unknown }> {
  return new Promise((resolve) => {
    const stop = verifier.onRevoked((sdkKeyId) => {
      stop();
      resolve({ sdkKeyId, cachedDuringDelivery: verifier.cachedSdkKey(rawKey) });
    });
  });
}

/** A session registry stand-in: one live session whose user is now an org_member. */
const sessions = {
  currentAccess: async (claims: { sessionId: string }) => {
    if (claims.sessionId !== 'live-session') throw unauthenticated('the session has ended');
    return { role: 'org_member' as const, bindings: null };
  },
};

beforeEach(async () => {
  const repos = createInMemoryRepositories();
  const org = await repos.orgs.create({ name: 'Acme' });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'Web' });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  scope = { orgId: org.id, projectId: project.id, environmentId: environment.id };
  sdkKeys = new CountingSdkKeys(repos.sdkKeys);
  notifier = new InMemoryChangeNotifier();
  clock = { nowMs: 1_000_000 };
  verifier = new CredentialVerifier(tokens, sdkKeys, notifier, sessions, { cacheTtlMs: 60_000, negativeCacheTtlMs: 2_000, now: () => clock.nowMs });
  await verifier.start();
});

describe('CredentialVerifier: SDK keys', () => {
  test('a key is looked up once, then answered from the cache', async () => {
    const key = await newKey();
    const expected = { kind: 'sdk_key', sdkKeyId: key.id, ...scope };
    assert.deepEqual(await verifier.verifySdkKey(key.rawKey), expected);
    assert.equal(sdkKeys.lookups, 1);
    for (let i = 0; i < 5; i += 1) assert.deepEqual(await verifier.verify({ sdkKey: key.rawKey }), expected);
    assert.equal(sdkKeys.lookups, 1, 'no further repository calls');
    assert.deepEqual(verifier.cachedSdkKey(key.rawKey), expected);
  });

  test('the cache expires after its TTL, and a key revoked without notice is then refused', async () => {
    const key = await newKey();
    await newKey();
    await verifier.verifySdkKey(key.rawKey);
    await sdkKeys.revoke(scope, key.id); // no notification: the safety net is the TTL
    clock.nowMs += 59_000;
    await verifier.verifySdkKey(key.rawKey);
    assert.equal(sdkKeys.lookups, 1);
    clock.nowMs += 2_000;
    await rejectsUnauthenticated(verifier.verifySdkKey(key.rawKey));
    assert.equal(sdkKeys.lookups, 2);
  });

  test('a revocation delivered by the notifier evicts in the same tick and tells onRevoked listeners', async () => {
    const key = await newKey();
    const other = await newKey();
    await verifier.verifySdkKey(key.rawKey);
    await verifier.verifySdkKey(other.rawKey);
    const heard: string[] = [];
    const unsubscribe = verifier.onRevoked((id) => heard.push(id));

    const revocation = nextRevocation(key.rawKey);
    await sdkKeys.revoke(scope, key.id);
    await notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
    const { sdkKeyId, cachedDuringDelivery } = await revocation;
    assert.equal(sdkKeyId, key.id);
    assert.equal(cachedDuringDelivery, undefined, 'evicted before the listeners run');
    assert.deepEqual(heard, [key.id]);

    await rejectsUnauthenticated(verifier.verifySdkKey(key.rawKey));
    assert.equal(sdkKeys.lookups, 3, 'the revoked key was looked up again');
    assert.equal((await verifier.verifySdkKey(other.rawKey)).kind, 'sdk_key', 'the other key is unaffected');
    assert.equal(sdkKeys.lookups, 3, 'and still cached');

    unsubscribe();
    const second = nextRevocation(other.rawKey);
    await notifier.publish(SDK_KEY_REVOKED_CHANNEL, other.id);
    await second;
    assert.deepEqual(heard, [key.id], 'an unsubscribed listener hears nothing more');
  });

  test('evict() (this instance\'s own revocation) takes effect synchronously', async () => {
    const key = await newKey();
    await verifier.verifySdkKey(key.rawKey);
    const heard: string[] = [];
    verifier.onRevoked((id) => heard.push(id));
    verifier.evict(key.id);
    assert.equal(verifier.cachedSdkKey(key.rawKey), undefined);
    assert.deepEqual(heard, [key.id]);
  });

  test('a reconnect of the notifier clears the cache (notifications may have been missed)', async () => {
    const key = await newKey();
    await verifier.verifySdkKey(key.rawKey);
    await rejectsUnauthenticated(verifier.verifySdkKey('sdk_unknown'));
    assert.equal(sdkKeys.lookups, 2);
    notifier.simulateReconnect();
    assert.equal(verifier.cachedSdkKey(key.rawKey), undefined);
    assert.equal(verifier.cachedSdkKey('sdk_unknown'), undefined);
    await verifier.verifySdkKey(key.rawKey);
    await rejectsUnauthenticated(verifier.verifySdkKey('sdk_unknown'));
    assert.equal(sdkKeys.lookups, 4);
  });

  test('an unknown key is negatively cached for a while; keys created afterwards still work', async () => {
    await rejectsUnauthenticated(verifier.verifySdkKey('sdk_guessed-key'));
    await rejectsUnauthenticated(verifier.verifySdkKey('sdk_guessed-key'));
    await rejectsUnauthenticated(verifier.verify({ sdkKey: 'sdk_guessed-key' }));
    assert.equal(sdkKeys.lookups, 1, 'the second and third attempts did not reach the repository');
    assert.equal(verifier.cachedSdkKey('sdk_guessed-key'), null);

    const created = await newKey();
    assert.equal((await verifier.verifySdkKey(created.rawKey)).kind, 'sdk_key');
    assert.equal(sdkKeys.lookups, 2);

    clock.nowMs += 2_001;
    await rejectsUnauthenticated(verifier.verifySdkKey('sdk_guessed-key'));
    assert.equal(sdkKeys.lookups, 3, 'asked again once the negative entry expired');
  });

  test('empty and oversized keys are refused without a lookup', async () => {
    await rejectsUnauthenticated(verifier.verifySdkKey(''));
    await rejectsUnauthenticated(verifier.verifySdkKey(`sdk_${'x'.repeat(300)}`));
    assert.equal(sdkKeys.lookups, 0);
  });

  test('after stop(), notifications are no longer heard', async () => {
    const key = await newKey();
    await verifier.verifySdkKey(key.rawKey);
    await verifier.stop();
    await notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(verifier.cachedSdkKey(key.rawKey), 'still cached: nothing was delivered');
  });

  // Bug: a lookup that read the key before its revocation caches it after the eviction ran, so the
  // revoked key keeps working from this instance's cache for up to cacheTtlMs (60 s by default).
  test('a revocation delivered while a lookup is in flight is not undone by that lookup', async () => {
    const key = await newKey();
    await newKey();
    let release = (): void => {};
    sdkKeys.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inFlight = verifier.verifySdkKey(key.rawKey); // reads the still-active row, then waits
    await new Promise((resolve) => setImmediate(resolve));

    const revocation = nextRevocation(key.rawKey);
    await sdkKeys.revoke(scope, key.id);
    await notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
    await revocation;
    sdkKeys.gate = null;
    release();
    await inFlight.catch(() => undefined); // either answer is acceptable for the concurrent call

    assert.equal(verifier.cachedSdkKey(key.rawKey), undefined, 'the revoked key must not be cached after its revocation was delivered');
    await rejectsUnauthenticated(verifier.verifySdkKey(key.rawKey));
  });
});

describe('CredentialVerifier: many streams of one key at once', () => {
  test('1,000 concurrent checks of an uncached key make one lookup; an unknown key likewise', async () => {
    const key = await newKey();
    const expected = { kind: 'sdk_key', sdkKeyId: key.id, ...scope };
    const answers = await Promise.all(Array.from({ length: 1_000 }, () => verifier.verifySdkKey(key.rawKey)));
    assert.ok(answers.every((answer) => JSON.stringify(answer) === JSON.stringify(expected)));
    assert.equal(sdkKeys.lookups, 1, 'one repository call for all of them');

    const refused = await Promise.allSettled(Array.from({ length: 100 }, () => verifier.verifySdkKey('sdk_guessed-key')));
    assert.ok(refused.every((r) => r.status === 'rejected' && isDomainError(r.reason) && r.reason.code === 'UNAUTHENTICATED'));
    assert.equal(sdkKeys.lookups, 2);
  });

  test('a check that starts after a revocation does not join a lookup started before it', async () => {
    const key = await newKey();
    await newKey();
    let release = (): void => {};
    sdkKeys.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = verifier.verifySdkKey(key.rawKey); // reads the still-active row, then waits
    await new Promise((resolve) => setImmediate(resolve));
    await sdkKeys.revoke(scope, key.id);
    verifier.evict(key.id);
    sdkKeys.gate = null;
    const after = verifier.verifySdkKey(key.rawKey);
    release();
    await before.catch(() => undefined); // either answer is acceptable for the concurrent call
    await rejectsUnauthenticated(after);
    assert.equal(sdkKeys.lookups, 2);
  });
});

describe('CredentialVerifier: credentials', () => {
  test('a bearer token becomes its user principal, with the role the session registry says it has now', async () => {
    const { token } = await tokens.issue({ userId: 'u1', orgId: 'o1', role: 'org_admin', isSystem: false, sessionId: 'live-session' });
    // The token says org_admin; the registry (the current membership) says org_member, and wins.
    const expected = { kind: 'user', userId: 'u1', orgId: 'o1', role: 'org_member', isSystem: false, sessionId: 'live-session' };
    assert.deepEqual(await verifier.verify({ bearerToken: token }), expected);
    assert.deepEqual(await verifier.verifyBearer(token), expected);
    await rejectsUnauthenticated(verifier.verifyBearer(`${token}x`));
  });

  test('a bearer token of an ended session is UNAUTHENTICATED', async () => {
    const { token } = await tokens.issue({ userId: 'u1', orgId: 'o1', role: 'org_admin', isSystem: false, sessionId: 'ended-session' });
    await rejectsUnauthenticated(verifier.verifyBearer(token));
  });

  test('both credentials at once, or none, are UNAUTHENTICATED', async () => {
    const key = await newKey();
    const { token } = await tokens.issue({ userId: 'u1', orgId: 'o1', role: 'org_admin', isSystem: false, sessionId: 'live-session' });
    await rejectsUnauthenticated(verifier.verify({ bearerToken: token, sdkKey: key.rawKey }));
    await rejectsUnauthenticated(verifier.verify({}));
    await rejectsUnauthenticated(verifier.verify({ bearerToken: undefined, sdkKey: undefined }));
    assert.equal(sdkKeys.lookups, 0);
  });
});
