import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import {
  assertRecentMs,
  createTenant,
  environmentScope,
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  UNKNOWN_ID,
  useRepositories,
  type MakeTenancyRepositories,
  type TenancyRepositories,
} from './tenancy-contract-support.ts';

/** A plaintext-like key's prefix and hash, as the service would store them. */
function keyMaterial(): { keyPrefix: string; keyHash: string } {
  const raw = `sdk-${randomBytes(24).toString('hex')}`;
  return { keyPrefix: raw.slice(0, 12), keyHash: createHash('sha256').update(raw).digest('hex') };
}

const addKey = (repos: TenancyRepositories, scope: EnvironmentScope) => repos.sdkKeys.create(scope, keyMaterial());

/** The behaviour every SdkKeyRepository must show: scoping, active-only reads, and the last-key rule. */
export function sdkKeyRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`SdkKeyRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create returns every field; findActiveByHash and list give it back', async () => {
      const tenant = await createTenant(repos());
      const scope = environmentScope(tenant);
      const material = keyMaterial();
      const key = await repos().sdkKeys.create(scope, material);
      const serverSettings = { name: '', allowedOrigins: [], allowMissingOrigin: false, contextSigning: 'off', includeDisabled: false, expiresAtMs: null };
      assert.deepEqual(
        { ...key, id: '', createdAtMs: 0 },
        { ...scope, ...material, id: '', createdAtMs: 0, revokedAtMs: null, kind: 'server', settings: serverSettings, lastUsedAtMs: null },
      );
      assertRecentMs(key.createdAtMs);
      assert.deepEqual(await repos().sdkKeys.findActiveByHash(material.keyHash), key);
      assert.deepEqual(await repos().sdkKeys.list(scope), [key]);
    });

    test('a client key keeps its settings; they change only through updateClientSettings, and never on a server key', async () => {
      const scope = environmentScope(await createTenant(repos()));
      const server = await repos().sdkKeys.create(scope, keyMaterial());
      const settings = {
        name: 'web',
        allowedOrigins: ['https://app.example.com', 'https://*.example.org'],
        allowMissingOrigin: false,
        contextSigning: 'context' as const,
        includeDisabled: true,
        expiresAtMs: 4_102_444_800_000,
      };
      const client = await repos().sdkKeys.create(scope, { ...keyMaterial(), kind: 'client', settings });
      assert.equal(client.kind, 'client');
      assert.deepEqual(client.settings, settings);
      assert.deepEqual(await repos().sdkKeys.findActiveByHash(client.keyHash), client);
      const changed = { ...settings, allowedOrigins: [], allowMissingOrigin: true, contextSigning: 'off' as const, expiresAtMs: null };
      assert.deepEqual((await repos().sdkKeys.updateClientSettings(scope, client.id, changed)).settings, changed);
      await rejectsWithCode(repos().sdkKeys.updateClientSettings(scope, server.id, changed), 'NOT_FOUND');
      // Client keys may all be revoked; the environment's last server key may not.
      await repos().sdkKeys.revoke(scope, client.id);
      await rejectsWithCode(repos().sdkKeys.revoke(scope, server.id), 'FAILED_PRECONDITION');
    });

    test('recordUses sets a key\'s last use once per interval, only in the key\'s own scope, never on a revoked key', async () => {
      const scope = environmentScope(await createTenant(repos()));
      const key = await repos().sdkKeys.create(scope, keyMaterial());
      const spare = await repos().sdkKeys.create(scope, keyMaterial());
      const use = { ...scope, sdkKeyId: key.id };
      assert.equal(await repos().sdkKeys.recordUses([use], 60_000), 1);
      const first = (await repos().sdkKeys.list(scope)).find((k) => k.id === key.id)!.lastUsedAtMs;
      assert.notEqual(first, null);
      assertRecentMs(first!);
      // Within the interval: nothing written, the first use stays.
      assert.equal(await repos().sdkKeys.recordUses([use, use], 60_000), 0);
      assert.equal((await repos().sdkKeys.findActiveByHash(key.keyHash))!.lastUsedAtMs, first);
      // Another tenant's scope with this key's id, unknown and malformed ids: nothing, no error.
      const other = environmentScope(await createTenant(repos()));
      const fresh = await repos().sdkKeys.create(scope, keyMaterial());
      const strays = [
        { ...other, sdkKeyId: fresh.id },
        { ...scope, environmentId: other.environmentId, sdkKeyId: fresh.id },
        { ...scope, sdkKeyId: UNKNOWN_ID },
        { ...scope, sdkKeyId: MALFORMED_ID },
        { ...scope, orgId: MALFORMED_ID, sdkKeyId: fresh.id },
      ];
      assert.equal(await repos().sdkKeys.recordUses(strays, 60_000), 0);
      assert.equal((await repos().sdkKeys.findActiveByHash(fresh.keyHash))!.lastUsedAtMs, null);
      // A revoked key's use is not recorded.
      await repos().sdkKeys.revoke(scope, spare.id);
      assert.equal(await repos().sdkKeys.recordUses([{ ...scope, sdkKeyId: spare.id }], 0), 0);
      assert.equal(await repos().sdkKeys.recordUses([], 0), 0);
    });

    test('an unknown hash finds nothing', async () => {
      assert.equal(await repos().sdkKeys.findActiveByHash(keyMaterial().keyHash), null);
    });

    test('a hash already stored is ALREADY_EXISTS', async () => {
      const scope = environmentScope(await createTenant(repos()));
      const material = keyMaterial();
      await repos().sdkKeys.create(scope, material);
      await rejectsWithCode(repos().sdkKeys.create(scope, material), 'ALREADY_EXISTS');
      assert.equal((await repos().sdkKeys.list(scope)).length, 1);
    });

    test('a key for an environment outside the scope is NOT_FOUND', async () => {
      const victim = await createTenant(repos());
      const attacker = await createTenant(repos());
      const sibling = await repos().projects.create({ orgId: victim.org.id }, { name: unique('sibling') });
      const attempts: EnvironmentScope[] = [
        // another org claiming the victim's project and environment
        { orgId: attacker.org.id, projectId: victim.project.id, environmentId: victim.environment.id },
        // the attacker's own org and project, the victim's environment
        { orgId: attacker.org.id, projectId: attacker.project.id, environmentId: victim.environment.id },
        // the right org, another project of it
        { orgId: victim.org.id, projectId: sibling.id, environmentId: victim.environment.id },
        { orgId: victim.org.id, projectId: victim.project.id, environmentId: UNKNOWN_ID },
        { orgId: victim.org.id, projectId: victim.project.id, environmentId: MALFORMED_ID },
        { orgId: MALFORMED_ID, projectId: victim.project.id, environmentId: victim.environment.id },
      ];
      for (const scope of attempts) await rejectsWithCode(addKey(repos(), scope), 'NOT_FOUND');
      assert.deepEqual(await repos().sdkKeys.list(environmentScope(victim)), []);
    });

    test('list shows only active keys of that environment, oldest first, and nothing under a foreign scope', async () => {
      const tenant = await createTenant(repos());
      const scope = environmentScope(tenant);
      const other = await repos().environments.create({ orgId: tenant.org.id, projectId: tenant.project.id }, { name: unique('other') });
      const first = await addKey(repos(), scope);
      await addKey(repos(), { ...scope, environmentId: other.id });
      const second = await addKey(repos(), scope);
      const third = await addKey(repos(), scope);
      await repos().sdkKeys.revoke(scope, second.id);
      assert.deepEqual(await repos().sdkKeys.list(scope), [first, third]);
      const intruder = await createTenant(repos());
      assert.deepEqual(await repos().sdkKeys.list({ ...scope, orgId: intruder.org.id }), []);
      assert.deepEqual(await repos().sdkKeys.list({ ...scope, projectId: intruder.project.id }), []);
      assert.deepEqual(await repos().sdkKeys.list({ ...scope, environmentId: MALFORMED_ID }), []);
    });

    test('revoking the last active key is FAILED_PRECONDITION and the key stays active', async () => {
      const scope = environmentScope(await createTenant(repos()));
      const only = await addKey(repos(), scope);
      await rejectsWithCode(repos().sdkKeys.revoke(scope, only.id), 'FAILED_PRECONDITION');
      assert.deepEqual(await repos().sdkKeys.findActiveByHash(only.keyHash), only);
      assert.deepEqual(await repos().sdkKeys.list(scope), [only]);
    });

    test('revoking one of two keys takes effect at once; revoking it again is NOT_FOUND', async () => {
      const scope = environmentScope(await createTenant(repos()));
      const old = await addKey(repos(), scope);
      const fresh = await addKey(repos(), scope);
      const revoked = await repos().sdkKeys.revoke(scope, old.id);
      assert.deepEqual({ ...revoked, revokedAtMs: 0 }, { ...old, revokedAtMs: 0 });
      assertRecentMs(revoked.revokedAtMs);
      assert.ok((revoked.revokedAtMs ?? 0) >= old.createdAtMs);
      assert.equal(await repos().sdkKeys.findActiveByHash(old.keyHash), null);
      assert.deepEqual(await repos().sdkKeys.findActiveByHash(fresh.keyHash), fresh);
      assert.deepEqual(await repos().sdkKeys.list(scope), [fresh]);
      await rejectsWithCode(repos().sdkKeys.revoke(scope, old.id), 'NOT_FOUND');
    });

    test('revoking an unknown, malformed or foreign key is NOT_FOUND and changes nothing', async () => {
      const victim = await createTenant(repos());
      const scope = environmentScope(victim);
      const keys = [await addKey(repos(), scope), await addKey(repos(), scope)];
      const attacker = await createTenant(repos());
      await addKey(repos(), environmentScope(attacker));
      await rejectsWithCode(repos().sdkKeys.revoke(scope, UNKNOWN_ID), 'NOT_FOUND');
      await rejectsWithCode(repos().sdkKeys.revoke(scope, MALFORMED_ID), 'NOT_FOUND');
      const victimKey = keys[0]!;
      await rejectsWithCode(repos().sdkKeys.revoke(environmentScope(attacker), victimKey.id), 'NOT_FOUND');
      await rejectsWithCode(repos().sdkKeys.revoke({ ...scope, orgId: attacker.org.id }, victimKey.id), 'NOT_FOUND');
      assert.deepEqual(await repos().sdkKeys.list(scope), keys);
    });

    test('two concurrent revokes of the only two keys: exactly one succeeds', async () => {
      // Several rounds, so that an implementation racing between its check and its write is caught.
      for (let round = 0; round < 5; round += 1) {
        const scope = environmentScope(await createTenant(repos()));
        const a = await addKey(repos(), scope);
        const b = await addKey(repos(), scope);
        const outcomes = await Promise.allSettled([repos().sdkKeys.revoke(scope, a.id), repos().sdkKeys.revoke(scope, b.id)]);
        const fulfilled = outcomes.filter((o) => o.status === 'fulfilled');
        const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        assert.equal(fulfilled.length, 1, `round ${round}: exactly one revoke succeeds`);
        assert.equal(rejected.length, 1);
        await rejectsWithCode(Promise.reject(rejected[0]?.reason), 'FAILED_PRECONDITION');
        const remaining = await repos().sdkKeys.list(scope);
        assert.equal(remaining.length, 1, `round ${round}: one key stays active`);
        assert.notEqual(await repos().sdkKeys.findActiveByHash(remaining[0]!.keyHash), null);
      }
    });
  });
}
