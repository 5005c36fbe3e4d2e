import { createSecretKey, type KeyObject } from 'node:crypto';
import type { ChangeNotifier, EnvironmentScope, Principal } from '@switchyard/core';
import { CONTEXT_SECRETS_CHANGED_CHANNEL, type OpenedSigningSecret } from './context-signing-service.ts';

/** An environment's verification keys by kid (HMAC keys: the UTF-8 bytes of each secret). */
export type SigningKeys = ReadonlyMap<string, KeyObject>;

/** Environments whose keys are held at once; one more clears the table (a reload is one query). */
const MAX_ENVIRONMENTS = 10_000;

interface Entry {
  loading: Promise<SigningKeys>;
  loaded?: SigningKeys;
}

/**
 * Each environment's context-token verification keys, in memory, so a token is verified with no
 * database or network round trip (docs/client-side.md "4. Signed contexts"). The keys come from
 * `load` (the services: the sealed rows, opened; a gateway: the services over the internal hop),
 * once per environment; `forget(environmentId)` — on every create and delete, heard through the
 * ChangeNotifier (services) or the credential watch (gateways) — drops them, and the next token
 * loads again. A load overtaken by a forget is answered but not kept.
 */
export class ContextSigningKeys {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(environmentId: string | null) => void>();
  private generation = 0;
  private subscription: { unsubscribe(): Promise<void> } | null = null;

  constructor(
    /** `caller`: the client key whose token is verified (a gateway asks the services as it). */
    private readonly load: (scope: EnvironmentScope, caller: Principal) => Promise<OpenedSigningSecret[]>,
    /** False while the keys cannot be kept (a gateway whose credential watch is down): every token loads. */
    private readonly mayKeep: () => boolean = () => true,
  ) {}

  /** Hears CONTEXT_SECRETS_CHANGED_CHANNEL (services): a lost connection drops everything. */
  async listen(notifier: ChangeNotifier): Promise<void> {
    this.subscription = await notifier.subscribe(
      CONTEXT_SECRETS_CHANGED_CHANNEL,
      (environmentId) => this.forget(environmentId),
      () => this.forget(null),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.unsubscribe();
    this.subscription = null;
    this.entries.clear();
  }

  /** The environment's keys, from memory when loaded (no await then). */
  keys(scope: EnvironmentScope, caller: Principal): SigningKeys | Promise<SigningKeys> {
    const entry = this.entries.get(scope.environmentId);
    if (entry?.loaded) return entry.loaded;
    if (entry) return entry.loading;
    const generation = this.generation;
    const loading = this.load(scope, caller).then((secrets) => new Map(secrets.map(({ kid, secret }) => [kid, createSecretKey(Buffer.from(secret, 'utf8'))])));
    if (!this.mayKeep()) return loading;
    if (this.entries.size >= MAX_ENVIRONMENTS) this.entries.clear();
    const fresh: Entry = { loading };
    this.entries.set(scope.environmentId, fresh);
    loading.then(
      (keys) => {
        if (this.generation === generation && this.entries.get(scope.environmentId) === fresh) fresh.loaded = keys;
        else if (this.entries.get(scope.environmentId) === fresh) this.entries.delete(scope.environmentId);
      },
      () => {
        if (this.entries.get(scope.environmentId) === fresh) this.entries.delete(scope.environmentId);
      },
    );
    return loading;
  }

  /** Drops one environment's keys (null: every environment's) and tells the listeners. */
  forget(environmentId: string | null): void {
    this.generation++;
    if (environmentId === null) this.entries.clear();
    else this.entries.delete(environmentId);
    for (const listener of this.listeners) listener(environmentId);
  }

  /** Calls `listener` on every forget (the services relay it to gateways' credential watches). */
  onChanged(listener: (environmentId: string | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
