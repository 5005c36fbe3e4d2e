import { alreadyExists, failedPrecondition, notFound } from '../errors/domain-error.ts';
import type { SdkKey, SdkKeyKind, SdkKeyUse } from '../model/entities.ts';
import { SERVER_KEY_SETTINGS, type ClientKeySettings } from '../rbac/authorize.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { SdkKeyRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

const inScope = (key: SdkKey, scope: EnvironmentScope): boolean =>
  key.orgId === scope.orgId && key.projectId === scope.projectId && key.environmentId === scope.environmentId;

/** SdkKeyRepository over the shared in-memory tables. Only hashes are stored, as in PostgreSQL. */
export class InMemorySdkKeyRepository implements SdkKeyRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(
    scope: EnvironmentScope,
    input: { keyPrefix: string; keyHash: string; kind?: SdkKeyKind; settings?: ClientKeySettings },
  ): Promise<SdkKey> {
    this.state.requireEnvironment(scope);
    for (const key of this.state.sdkKeys.values()) {
      if (key.keyHash === input.keyHash) throw alreadyExists('sdk key', input.keyPrefix);
    }
    const key: SdkKey = {
      id: this.state.newId(),
      orgId: scope.orgId,
      projectId: scope.projectId,
      environmentId: scope.environmentId,
      keyPrefix: input.keyPrefix,
      keyHash: input.keyHash,
      createdAtMs: this.state.now(),
      revokedAtMs: null,
      kind: input.kind ?? 'server',
      settings: input.kind === 'client' && input.settings ? { ...input.settings } : { ...SERVER_KEY_SETTINGS },
      lastUsedAtMs: null,
    };
    this.state.sdkKeys.set(key.id, key);
    return { ...key };
  }

  async findActiveByHash(keyHash: string): Promise<SdkKey | null> {
    for (const key of this.state.sdkKeys.values()) {
      if (key.keyHash === keyHash && key.revokedAtMs === null) return { ...key };
    }
    return null;
  }

  async list(scope: EnvironmentScope): Promise<SdkKey[]> {
    return this.active(scope).map((k) => ({ ...k }));
  }

  async revoke(scope: EnvironmentScope, sdkKeyId: string): Promise<SdkKey> {
    // No await between the check and the write: under the event loop this is as atomic as the
    // PostgreSQL adapter's row locks, so two concurrent revokes can never both pass the check.
    const active = this.active(scope);
    const key = active.find((k) => k.id === sdkKeyId);
    if (!key) throw notFound('sdk key', sdkKeyId);
    if (key.kind === 'server' && active.filter((k) => k.kind === 'server').length < 2) {
      throw failedPrecondition('cannot revoke the last active server sdk key of the environment');
    }
    key.revokedAtMs = this.state.now();
    return { ...key };
  }

  async updateClientSettings(scope: EnvironmentScope, sdkKeyId: string, settings: ClientKeySettings): Promise<SdkKey> {
    const key = this.active(scope).find((k) => k.id === sdkKeyId && k.kind === 'client');
    if (!key) throw notFound('sdk key', sdkKeyId);
    key.settings = { ...settings };
    return { ...key };
  }

  async recordUses(uses: readonly SdkKeyUse[], minIntervalMs: number): Promise<number> {
    const now = this.state.now();
    let changed = 0;
    for (const use of uses) {
      const key = this.state.sdkKeys.get(use.sdkKeyId);
      if (!key || key.revokedAtMs !== null || !inScope(key, use)) continue;
      if (key.lastUsedAtMs !== null && now - key.lastUsedAtMs < minIntervalMs) continue;
      key.lastUsedAtMs = now;
      changed++;
    }
    return changed;
  }

  async listActiveClientOrigins(): Promise<Array<{ sdkKeyId: string; allowedOrigins: string[] }>> {
    const now = this.state.now();
    return [...this.state.sdkKeys.values()]
      .filter((k) => k.kind === 'client' && k.revokedAtMs === null && (k.settings.expiresAtMs === null || k.settings.expiresAtMs > now))
      .filter((k) => k.settings.allowedOrigins.length > 0)
      .map((k) => ({ sdkKeyId: k.id, allowedOrigins: [...k.settings.allowedOrigins] }));
  }

  private active(scope: EnvironmentScope): SdkKey[] {
    return [...this.state.sdkKeys.values()]
      .filter((k) => inScope(k, scope) && k.revokedAtMs === null)
      .sort((a, b) => a.createdAtMs - b.createdAtMs);
  }
}
