import type { Browser } from 'playwright-core';
import type { TestServer } from './test-server.ts';

/**
 * What a batch process's entry module (scripts/test-batches.ts) sets up for its files, and what
 * the support modules share in it: the servers files share (test-server.ts) and one Chromium
 * (browser.ts). Undefined outside a batch (a file run alone).
 */
export interface TestBatch {
  /** Run when the process's last file has ended. */
  cleanups: Array<() => Promise<void>>;
  /** The shared servers, by topology and settings. */
  servers?: Map<string, Promise<TestServer>>;
  /** The Chromium the process's browser files share. */
  chromium?: Promise<Browser>;
}

export function currentTestBatch(): TestBatch | undefined {
  return (globalThis as { __switchyardTestBatch?: TestBatch }).__switchyardTestBatch;
}
