import { globalStorage, randomId, type StorageLike } from './platform.ts';

export const DEFAULT_TARGETING_KEY_STORAGE_KEY = 'switchyard.anonymous-targeting-key';

export interface AnonymousTargetingKeyOptions {
  /** Where the key is kept; default `localStorage` (when the browser allows it). */
  storage?: StorageLike | null;
  /** The storage entry's name; default `switchyard.anonymous-targeting-key`. */
  storageKey?: string;
  /** Makes a new key; default a random UUID prefixed `anon-`. */
  generate?: () => string;
}

/** Keys made when storage was unavailable: one per storage key, for this page's life. */
const inMemory = new Map<string, string>();

/** A stored key is used only if it looks like one this package could have written (a string of 1-256 visible characters). */
const usable = (value: string | null): value is string => value !== null && /^[\x21-\x7e]{1,256}$/.test(value);

/**
 * A targeting key for a visitor who has not signed in: random, kept in `localStorage` so the
 * same browser gets the same variants on every visit (a rollout or an experiment arm does not
 * flip between page loads). Where storage is unavailable or refuses writes (private modes,
 * blocked cookies, sandboxed frames) the key lives in memory for the page's life instead, the
 * same one on every call. It identifies a browser, not a person, and holds no personal data.
 */
export function anonymousTargetingKey(options: AnonymousTargetingKeyOptions = {}): string {
  const storageKey = options.storageKey ?? DEFAULT_TARGETING_KEY_STORAGE_KEY;
  const storage = options.storage === undefined ? globalStorage() : (options.storage ?? undefined);
  const generate = options.generate ?? (() => `anon-${randomId()}`);
  if (storage !== undefined) {
    try {
      const stored = storage.getItem(storageKey);
      if (usable(stored)) return stored;
      const fresh = inMemory.get(storageKey) ?? generate();
      storage.setItem(storageKey, fresh);
      inMemory.set(storageKey, fresh);
      return fresh;
    } catch {
      // Storage that throws on use (quota, Safari private mode): fall through to memory.
    }
  }
  let key = inMemory.get(storageKey);
  if (key === undefined) {
    key = generate();
    inMemory.set(storageKey, key);
  }
  return key;
}
