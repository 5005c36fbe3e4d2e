import type { FetchLike, FetchResponseLike, StorageLike, TimersLike } from '../src/index.ts';

/** One request the fake fetch saw, with its body parsed. */
export interface SeenRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: any;
  keepalive: boolean;
}

/** A fetch that records requests and answers from a queue of statuses (202 when the queue is empty). */
export function fakeFetch(answers: Array<number | { status: number; retryAfter?: string } | Error> = []): { fetch: FetchLike; requests: SeenRequest[] } {
  const requests: SeenRequest[] = [];
  const fetch: FetchLike = async (url, init) => {
    requests.push({ url, method: init.method, headers: init.headers, body: JSON.parse(init.body), keepalive: init.keepalive === true });
    const next = answers.shift() ?? 202;
    if (next instanceof Error) throw next;
    const { status, retryAfter } = typeof next === 'number' ? { status: next, retryAfter: undefined } : next;
    const response: FetchResponseLike = { status, headers: { get: (name) => (name.toLowerCase() === 'retry-after' ? (retryAfter ?? null) : null) } };
    return response;
  };
  return { fetch, requests };
}

/** Timers driven by hand: `advance(ms)` runs what falls due, in order. */
export function fakeTimers(): TimersLike & { now(): number; advance(ms: number): Promise<void>; pending(): number } {
  let clock = 1_000_000;
  let nextId = 1;
  const timers = new Map<number, { at: number; callback: () => void }>();
  return {
    setTimeout(callback, ms) {
      const id = nextId++;
      timers.set(id, { at: clock + ms, callback });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    now: () => clock,
    pending: () => timers.size,
    async advance(ms) {
      const until = clock + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        clock = due[1].at;
        due[1].callback();
        await settle();
      }
      clock = until;
      await settle();
    },
  };
}

/** Lets queued promise callbacks run (a flush awaits a few of them). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((resolve) => setImmediate(resolve));
}

export function memoryStorage(): StorageLike & { entries: Map<string, string> } {
  const entries = new Map<string, string>();
  return { entries, getItem: (key) => entries.get(key) ?? null, setItem: (key, value) => void entries.set(key, value) };
}

/** A stand-in for `window`: listeners by event type, and `fire`. */
export function fakeWindow(): { addEventListener(type: string, listener: () => void): void; removeEventListener(type: string, listener: () => void): void; fire(type: string): void; count(): number } {
  const listeners = new Map<string, Set<() => void>>();
  return {
    addEventListener: (type, listener) => void (listeners.get(type) ?? listeners.set(type, new Set()).get(type)!).add(listener),
    removeEventListener: (type, listener) => void listeners.get(type)?.delete(listener),
    fire: (type) => listeners.get(type)?.forEach((listener) => listener()),
    count: () => [...listeners.values()].reduce((sum, set) => sum + set.size, 0),
  };
}
