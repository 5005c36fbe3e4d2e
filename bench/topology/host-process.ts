/**
 * One host process of topology.bench.ts (the single server, the services or a gateway), spawned as
 * a real process: `node --import tsx <entry>`, so its pid is the server itself (no wrapper) and
 * its /proc figures are the host's own. Each is the leader of its own process group, so stopping
 * it reaches whatever it started; every one still running is killed with SIGKILL when this
 * process exits, whatever the reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TSX_LOADER = import.meta.resolve('tsx');
/** Kernel clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const CLOCK_TICKS_PER_S = 100;
const OUTPUT_TAIL_BYTES = 16_384;

const live = new Set<HostProcess>();
let exitHooked = false;

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  // Synchronous: the last chance, e.g. after an uncaught error or process.exit().
  process.on('exit', () => {
    for (const host of live) host.killNow();
  });
}

export interface ProcessMemory {
  /** VmRSS: resident set size now, KiB. */
  rssKiB: number;
  /** VmHWM: the highest resident set size so far, KiB. */
  peakRssKiB: number;
}

export class HostProcess {
  readonly child: ChildProcess;
  private tail = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
    options: { cwd: string; echo?: (line: string) => void; nodeArgs?: string[] },
  ) {
    hookExit();
    this.child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', TSX_LOADER, entry], {
      cwd: options.cwd,
      env,
      detached: true, // its own process group: stop() reaches its children too
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        resolve();
      });
      this.child.once('error', (error) => {
        this.append(`spawn error: ${error.message}\n`);
        this.exitInfo ??= { code: null, signal: null };
        live.delete(this);
        resolve();
      });
    });
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      this.append(text);
      if (options.echo) for (const line of text.split('\n')) if (line.trim() !== '') options.echo(`[${this.name}] ${line}`);
    };
    this.child.stdout?.on('data', onData);
    this.child.stderr?.on('data', onData);
  }

  private append(text: string): void {
    this.tail = (this.tail + text).slice(-OUTPUT_TAIL_BYTES);
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.name}: not started (${this.output()})`);
    return this.child.pid;
  }

  /** The last lines the process wrote (stdout and stderr), for error messages. */
  output(): string {
    return this.tail.trim().split('\n').slice(-30).join('\n');
  }

  get hasExited(): boolean {
    return this.exitInfo !== null;
  }

  /** `running`, or how it ended. */
  describeExit(): string {
    const info = this.exitInfo;
    return info ? (info.signal ? `killed by ${info.signal}` : `exited with code ${String(info.code)}`) : 'running';
  }

  /** Polls `url` until it answers 200; throws when the process exits first or after `timeoutMs`. */
  async waitReady(url: string, timeoutMs: number): Promise<number> {
    const started = performance.now();
    let last = 'no answer';
    while (performance.now() - started < timeoutMs) {
      if (this.hasExited) throw new Error(`${this.name} ${this.describeExit()} before ${url} answered 200; its last output:\n${this.output()}`);
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        const body = await response.text();
        if (response.status === 200) return performance.now() - started;
        last = `${response.status} ${body.slice(0, 200)}`;
      } catch (error) {
        last = (error as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`${this.name}: ${url} did not answer 200 within ${timeoutMs / 1000} s (last: ${last}); its last output:\n${this.output()}`);
  }

  /** Resident memory now and at its highest, from /proc/<pid>/status. */
  memory(): ProcessMemory {
    let status: string;
    try {
      status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    } catch {
      return { rssKiB: Number.NaN, peakRssKiB: Number.NaN }; // it has exited
    }
    const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssKiB: field('VmRSS'), peakRssKiB: field('VmHWM') };
  }

  /** CPU time (user + system) the process has used so far, in ms (10 ms resolution). */
  cpuMs(): number {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    } catch {
      return Number.NaN; // it has exited
    }
    // Fields after the command name (which may hold spaces, hence the last ')'): state is field 3,
    // utime field 14 and stime field 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.hasExited || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal); // the whole process group
    } catch {
      try {
        this.child.kill(signal);
      } catch {
        // already gone
      }
    }
  }

  /** SIGTERM (a clean shutdown: drain, close the database pool), then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.hasExited) return;
    this.signal('SIGTERM');
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
    if ((await Promise.race([this.exited.then(() => 'exited' as const), timer])) === 'timeout') {
      this.signal('SIGKILL');
      await this.exited;
    }
    // The group may outlive its leader (a grandchild that ignored SIGTERM).
    this.killNow();
  }

  /** SIGKILL now, synchronously (exit hooks and signal handlers). */
  killNow(): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Every host process still running, SIGTERM then SIGKILL, the last started first. */
export async function stopAll(hosts: HostProcess[]): Promise<void> {
  for (const host of [...hosts].reverse()) {
    await host.stop().catch(() => host.killNow());
  }
}
