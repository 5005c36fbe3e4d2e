/**
 * Cost of the SDK-key check on a cached key (issue target: under 2 µs per check, no database
 * round trip), and of a bearer check with the session registry (ended sessions refused from
 * memory) against the JWT verification alone: a token seen before (kept verified, only its expiry
 * checked) and every check running jose, as a token's first check does.
 *
 *   npx tsx bench/auth/auth.bench.ts [--rounds 7] [--round-ms 300]
 *
 * The verifier runs over the in-memory repositories; the repository is wrapped to count calls, and
 * the benchmark fails if a cached check ever reached it. Baseline: a bare Map lookup of the same
 * 1,024 keys, the floor of any in-memory cache.
 */
import { createInMemoryRepositories, InMemoryChangeNotifier } from '../../packages/core/src/testing/index.ts';
import type { SdkKeyRepository } from '../../packages/core/src/ports/tenancy-ports.ts';
import { CredentialVerifier } from '../../packages/services/src/auth/credential-verifier.ts';
import { SessionRegistry } from '../../packages/services/src/auth/session-registry.ts';
import { generateSdkKey } from '../../packages/services/src/auth/secrets.ts';
import { TokenService } from '../../packages/services/src/auth/token-service.ts';
import { runBenchmark, type Workload } from '../support/measure.ts';

const repos = createInMemoryRepositories();
const org = await repos.orgs.create({ name: 'bench' });
const project = await repos.projects.create({ orgId: org.id }, { name: 'bench' });
const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'prod' });
const scope = { orgId: org.id, projectId: project.id, environmentId: environment.id };

const RAW_KEYS: string[] = [];
for (let i = 0; i < 1024; i++) {
  const key = generateSdkKey();
  await repos.sdkKeys.create(scope, { keyPrefix: key.keyPrefix, keyHash: key.keyHash });
  RAW_KEYS.push(key.rawKey);
}
const MASK = RAW_KEYS.length - 1;

let repositoryCalls = 0;
const countingKeys: SdkKeyRepository = {
  create: (s, input) => repos.sdkKeys.create(s, input),
  list: (s) => repos.sdkKeys.list(s),
  revoke: (s, id) => repos.sdkKeys.revoke(s, id),
  updateClientSettings: (s, id, settings) => repos.sdkKeys.updateClientSettings(s, id, settings),
  listActiveClientOrigins: () => repos.sdkKeys.listActiveClientOrigins(),
  recordUses: (uses, minIntervalMs) => repos.sdkKeys.recordUses(uses, minIntervalMs),
  findActiveByHash: (hash) => {
    repositoryCalls++;
    return repos.sdkKeys.findActiveByHash(hash);
  },
};
const tokens = new TokenService({ secret: 'bench-secret-bench-secret-bench-secret', ttlSeconds: 3600 });
// The same secret, keeping no verified token: what a token's first check costs (jose, WebCrypto HMAC).
const uncachedTokens = new TokenService({ secret: 'bench-secret-bench-secret-bench-secret', ttlSeconds: 3600, maxVerifiedTokens: 0 });
const notifier = new InMemoryChangeNotifier();
let sessionReads = 0;
const countingSessions = {
  ...repos.sessions,
  listLive: (userId: string, nowMs: number) => {
    sessionReads++;
    return repos.sessions.listLive(userId, nowMs);
  },
};
const registry = new SessionRegistry({ sessions: countingSessions, users: repos.users }, notifier);
await registry.start();
const verifier = new CredentialVerifier(tokens, countingKeys, notifier, registry);
await verifier.start();
for (const key of RAW_KEYS) await verifier.verifySdkKey(key);
const callsAfterWarm = repositoryCalls;

// 64 users, each with a live session and a bearer token, checked once so the registry holds them.
const BEARERS: string[] = [];
for (let i = 0; i < 64; i++) {
  const user = await repos.users.create({ email: `bench-${i}@example.com`, displayName: 'bench', passwordHash: 'x' });
  await repos.users.addMembership({ orgId: org.id, userId: user.id, role: 'org_member' });
  const session = await repos.sessions.create({ userId: user.id, orgId: org.id, expiresAtMs: Date.now() + 3_600_000 });
  const { token } = await tokens.issue({ userId: user.id, orgId: org.id, role: 'org_member', isSystem: false, sessionId: session.id });
  BEARERS.push(token);
  await verifier.verifyBearer(token);
}
const sessionReadsAfterWarm = sessionReads;

const baselineMap = new Map(RAW_KEYS.map((key, i) => [key, i]));

const workloads: Workload[] = [
  {
    name: 'baseline: Map.get(raw key)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= baselineMap.get(RAW_KEYS[i & MASK]!) ?? 0;
      return sink;
    },
  },
  {
    name: 'cachedSdkKey (sync cache hit)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= verifier.cachedSdkKey(RAW_KEYS[i & MASK]!) ? 1 : 2;
      return sink;
    },
  },
  {
    name: 'await verifySdkKey (cached key)',
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= (await verifier.verifySdkKey(RAW_KEYS[i & MASK]!)).kind === 'sdk_key' ? 1 : 2;
      return sink;
    },
  },
  {
    name: 'JWT verify, every check by jose (a first check)',
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= (await uncachedTokens.verify(BEARERS[i & 63]!)).role === 'org_member' ? 1 : 2;
      return sink;
    },
  },
  {
    name: 'bearer baseline: JWT verify alone (token seen before)',
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= (await tokens.verify(BEARERS[i & 63]!)).role === 'org_member' ? 1 : 2;
      return sink;
    },
  },
  {
    name: 'await verifyBearer (JWT + session registry)',
    run: async (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= (await verifier.verifyBearer(BEARERS[i & 63]!)).kind === 'user' ? 1 : 2;
      return sink;
    },
  },
];

await runBenchmark('auth', workloads);
if (repositoryCalls !== callsAfterWarm) throw new Error(`cached checks reached the repository ${repositoryCalls - callsAfterWarm} times`);
console.log(`repository calls during timed checks: ${repositoryCalls - callsAfterWarm} (the cache answered every check)`);
if (sessionReads !== sessionReadsAfterWarm) throw new Error(`bearer checks read sessions ${sessionReads - sessionReadsAfterWarm} times`);
console.log(`session reads during timed bearer checks: ${sessionReads - sessionReadsAfterWarm} (the registry answered every check)`);
await verifier.stop();
await registry.stop();
