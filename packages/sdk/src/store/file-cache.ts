import { mkdir, readFile, rename, writeFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { SdkLogger } from '../logger.ts';
import type { StoreSnapshot } from './definition-store.ts';

/** The format version of the cache file; a file of another version is ignored. */
const FORMAT = 1;

interface CacheFileBody extends StoreSnapshot {
  format: number;
  written_at_ms: number;
}

/**
 * The last definitions on disk, for a start while the server cannot be reached (docs/sdk.md
 * "File cache"). Written atomically (a temporary file renamed over the old one, so a reader never
 * sees half a file) and at most once per `intervalMs`: the last snapshot asked for is the one
 * written. The SDK key is never written.
 */
export class FileCache {
  private timer: NodeJS.Timeout | undefined;
  private latest: (() => StoreSnapshot) | undefined;
  private lastWriteAt = -Infinity;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    readonly file: string,
    private readonly intervalMs: number,
    private readonly logger: SdkLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The cached snapshot, or undefined when there is none (or it is unreadable, or of another environment). */
  async read(environmentId?: string): Promise<StoreSnapshot | undefined> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn('cache file unreadable', { file: this.file, error: String(error) });
      return undefined;
    }
    try {
      const body = JSON.parse(text) as CacheFileBody;
      if (body.format !== FORMAT || !Array.isArray(body.flags) || !Array.isArray(body.segments)) throw new Error('unknown format');
      if (environmentId && body.environmentId && body.environmentId !== environmentId) {
        this.logger.warn('cache file is of another environment; ignored', { file: this.file });
        return undefined;
      }
      const snapshot: StoreSnapshot = {
        environmentId: String(body.environmentId ?? ''),
        projectId: String(body.projectId ?? ''),
        flags: body.flags,
        segments: body.segments,
        experimentFlagKeys: Array.isArray(body.experimentFlagKeys) ? body.experimentFlagKeys : [],
        serverTimestampMs: Number(body.serverTimestampMs ?? 0),
      };
      // Kept with the definitions: a feature this SDK does not know is refused from the file too.
      if (Array.isArray(body.features)) snapshot.features = body.features.map(String);
      return snapshot;
    } catch (error) {
      this.logger.warn('cache file is not a definitions cache; ignored', { file: this.file, error: String(error) });
      return undefined;
    }
  }

  /** Asks for a write of the snapshot `take()` gives at write time (throttled). */
  schedule(take: () => StoreSnapshot): void {
    if (this.closed) return;
    this.latest = take;
    if (this.timer) return;
    const wait = Math.max(0, this.lastWriteAt + this.intervalMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
    this.timer.unref();
  }

  /** Writes the pending snapshot now, if any. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const take = this.latest;
    this.latest = undefined;
    if (take) {
      this.lastWriteAt = this.now();
      const snapshot = take();
      this.writing = this.writing.then(() => this.write(snapshot));
    }
    await this.writing;
  }

  /** Writes what is pending and stops. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  async write(snapshot: StoreSnapshot): Promise<void> {
    const body: CacheFileBody = { format: FORMAT, written_at_ms: this.now(), ...snapshot };
    const temp = `${this.file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await mkdir(path.dirname(this.file), { recursive: true });
      await writeFile(temp, JSON.stringify(body), { mode: 0o600 });
      await rename(temp, this.file);
    } catch (error) {
      this.logger.warn('cache file could not be written', { file: this.file, error: String(error) });
      await unlink(temp).catch(() => {});
    }
  }
}
