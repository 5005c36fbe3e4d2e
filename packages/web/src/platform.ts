/**
 * The few browser facilities this package uses, typed structurally so the package needs neither
 * the DOM nor Node's type declarations, and every one of them can be handed in (tests, workers,
 * server-side rendering). Absent facilities degrade: no `localStorage` keeps the anonymous key
 * for the page's life only; no `addEventListener` flushes on the timer only.
 */

/** What this package reads of a fetch answer. */
export interface FetchResponseLike {
  status: number;
  headers: { get(name: string): string | null };
}

/** The part of `fetch` this package calls (the global one, or yours). */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string; keepalive?: boolean },
) => Promise<FetchResponseLike>;

/** The part of `localStorage` this package uses. */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface TimersLike {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Where page-lifecycle events come from (`window` in a page). */
export interface EventTargetLike {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
}

interface Globals {
  fetch?: (url: string, init: unknown) => Promise<FetchResponseLike>;
  localStorage?: StorageLike;
  crypto?: { randomUUID?: () => string; getRandomValues?: (array: Uint8Array) => Uint8Array };
  addEventListener?: EventTargetLike['addEventListener'];
  removeEventListener?: EventTargetLike['removeEventListener'];
  document?: { visibilityState?: string };
  setTimeout?: TimersLike['setTimeout'];
  clearTimeout?: TimersLike['clearTimeout'];
}

const globals = globalThis as unknown as Globals;

/** The global fetch, bound to the global object (a detached `fetch` throws in browsers). */
export function globalFetch(): FetchLike | undefined {
  const fetch = globals.fetch;
  return typeof fetch === 'function' ? (url, init) => fetch.call(globalThis, url, init) : undefined;
}

/** `localStorage`, or undefined where it is missing or refused (private modes, blocked storage, sandboxed frames). */
export function globalStorage(): StorageLike | undefined {
  try {
    const storage = globals.localStorage;
    return storage !== undefined && storage !== null && typeof storage.getItem === 'function' ? storage : undefined;
  } catch {
    return undefined; // reading window.localStorage itself throws a SecurityError when storage is blocked
  }
}

export function globalTimers(): TimersLike {
  const { setTimeout: set, clearTimeout: clear } = globals;
  if (typeof set !== 'function' || typeof clear !== 'function') throw new Error('@switchyard/web needs setTimeout and clearTimeout');
  return { setTimeout: (callback, ms) => set.call(globalThis, callback, ms), clearTimeout: (handle) => clear.call(globalThis, handle) };
}

/** `window` when there is one (its pagehide and visibilitychange events end a page's batches). */
export function globalEventTarget(): EventTargetLike | undefined {
  const { addEventListener: add, removeEventListener: remove } = globals;
  if (typeof add !== 'function' || typeof remove !== 'function') return undefined;
  return { addEventListener: (type, listener) => add.call(globalThis, type, listener), removeEventListener: (type, listener) => remove.call(globalThis, type, listener) };
}

/** Whether the page is being hidden (the last moment a mobile browser reliably runs code). */
export function pageIsHidden(): boolean {
  return globals.document?.visibilityState === 'hidden';
}

/** A random identifier: a UUID from Web Crypto when there is one (every current browser). */
export function randomId(): string {
  const crypto = globals.crypto;
  if (crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  if (crypto && typeof crypto.getRandomValues === 'function') crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256); // no Web Crypto at all: still unique enough for an anonymous key
  bytes[6] = (bytes[6]! & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
