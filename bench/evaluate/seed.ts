/**
 * Seeds the benchmark's environment through the services (no HTTP): an org with its own admin, a
 * project, an environment, an SDK key and FLAG_COUNT string flags of five rules each. Also builds
 * the rotating user contexts and evaluate requests the load generator sends.
 */
import type { RunningServer } from '../../hosts/server/src/server.ts';
import type { LoadRequest } from './load-generator.ts';

export const FLAG_COUNT = 1000;
export const CONTEXT_COUNT = 1024;

export interface SeededEnvironment {
  environmentId: string;
  sdkKey: string;
  flagKeys: string[];
}

export interface BenchContext {
  key: string;
  attributes: Record<string, string | number>;
}

const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'NL', 'JP', 'BR', 'IN', 'CA', 'ES'];
const PLANS = ['free', 'pro', 'enterprise'];

export const flagKey = (i: number): string => `bench-flag-${String(i).padStart(4, '0')}`;

/**
 * Five rules in evaluation order, varied per flag so that no two flags are identical:
 * 1. `in` + `eq` (country and plan) → blue; 2. `gte` on age → green; 3. `semver_gt` on the app
 * version → treatment; 4. `matches` on the email → blue; 5. no condition, a 50/50 split of
 * control/treatment. Most contexts (see benchContexts) fall through to the split, so a typical
 * request tests every condition before hashing.
 */
export function benchFlagBody(i: number): { key: string; enabled: boolean; flag: Record<string, unknown> } {
  return {
    key: flagKey(i),
    enabled: true,
    flag: {
      description: `benchmark flag ${i}: four targeting rules and a 50/50 split`,
      value_type: 'string',
      variants: [
        { key: 'control', value: 'control' },
        { key: 'treatment', value: 'treatment' },
        { key: 'blue', value: 'blue-checkout' },
        { key: 'green', value: 'green-checkout' },
        { key: 'off', value: 'off' },
      ],
      off_variant_key: 'off',
      rules: [
        {
          id: 'enterprise-in-region',
          conditions: [
            { attribute: 'country', op: 'in', values: [COUNTRIES[i % COUNTRIES.length]!, COUNTRIES[(i + 3) % COUNTRIES.length]!] },
            { attribute: 'plan', op: 'eq', values: ['enterprise'] },
          ],
          variant_key: 'blue',
        },
        { id: 'seniors', conditions: [{ attribute: 'age', op: 'gte', values: [70 + (i % 5)] }], variant_key: 'green' },
        { id: 'new-app', conditions: [{ attribute: 'app_version', op: 'semver_gt', values: [`4.${i % 10}.0`] }], variant_key: 'treatment' },
        { id: 'staff', conditions: [{ attribute: 'email', op: 'matches', values: ['^[a-z0-9.-]+@(corp|staff)\\.example\\.com$'] }], variant_key: 'blue' },
        {
          id: 'rollout',
          conditions: [],
          allocation: {
            context_hash_specs: { user: { parameter_names: [] } },
            buckets: [
              { variant_key: 'control', weight_milli: 500 },
              { variant_key: 'treatment', weight_milli: 500 },
            ],
          },
        },
      ],
    },
  };
}

/**
 * CONTEXT_COUNT users: about 1 in 8 is on a 5.x app (rule 3 matches), 1 in 16 has a staff email
 * (rule 4), ages 18..77 (rule 2 for a few), a third are enterprise (rule 1 for some flags).
 */
export function benchContexts(): BenchContext[] {
  return Array.from({ length: CONTEXT_COUNT }, (_, i) => ({
    key: `user-${100_000 + i}`,
    attributes: {
      country: COUNTRIES[(i * 7) % COUNTRIES.length]!,
      plan: PLANS[i % PLANS.length]!,
      age: 18 + ((i * 13) % 60),
      app_version: i % 8 === 0 ? `5.${i % 4}.1` : `3.${i % 10}.${i % 7}`,
      email: i % 16 === 5 ? `u${i}@corp.example.com` : `user${i}@mail.example.org`,
    },
  }));
}

/** Request rows: flag i*37 mod 1000 with user i, so flags and users rotate out of step. */
const ROTATION = 4096;

/** `flags`: 'rotate' over every flag, one 'fixed' flag for every request, or 'none' (all flags per request). */
export function evaluateRequests(seeded: SeededEnvironment, flags: 'rotate' | 'fixed' | 'none'): LoadRequest[] {
  const contexts = benchContexts();
  const route = `/v1/environments/${seeded.environmentId}/evaluate`;
  const count = flags === 'none' ? CONTEXT_COUNT : ROTATION;
  return Array.from({ length: count }, (_, i) => {
    const context = contexts[i % contexts.length]!;
    const body: Record<string, unknown> = { context_key: context.key, context_type: 'user', attributes: context.attributes };
    if (flags !== 'none') body.flag_key = seeded.flagKeys[flags === 'fixed' ? 7 : (i * 37) % seeded.flagKeys.length]!;
    return { path: route, body: JSON.stringify(body) };
  });
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await task(items[next++]!);
  });
  await Promise.all(lanes);
}

export async function seedEnvironment(server: RunningServer, bootstrapAdmin: { email: string; password: string }): Promise<SeededEnvironment> {
  const { auth, management, flags, verifier } = server.services;
  const root = await verifier.verifyBearer((await auth.login(bootstrapAdmin)).accessToken);
  const org = await management.createOrg(root, { name: 'bench' });
  const orgAdmin = { email: 'bench-admin@example.com', password: 'bench-admin-password-1' };
  await management.seedUser(root, org.org_id, { email: orgAdmin.email, displayName: 'Bench admin', password: orgAdmin.password, orgRole: 'org_admin' });
  const admin = await verifier.verifyBearer((await auth.login({ ...orgAdmin, orgId: org.org_id })).accessToken);

  const project = await management.createProject(admin, org.org_id, { name: 'bench' });
  const environment = await management.createEnvironment(admin, project.project_id, { name: 'production' });
  const sdkKey = await management.createSdkKey(admin, environment.environment_id);
  if (!sdkKey.raw_key) throw new Error('createSdkKey returned no raw_key');

  const target = await flags.target(admin, environment.environment_id, 'environment');
  const indexes = Array.from({ length: FLAG_COUNT }, (_, i) => i);
  await inParallel(indexes, 8, async (i) => {
    await flags.create(admin, target, benchFlagBody(i));
  });
  return { environmentId: environment.environment_id, sdkKey: sdkKey.raw_key, flagKeys: indexes.map(flagKey) };
}
