import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * A V8 CPU profile of this process, sampled every 100 µs, from start() to stop(file), which writes
 * it as a .cpuprofile (Chrome DevTools reads it). One profile at a time.
 */
export class CpuProfiler {
  private session: Session | undefined;

  async start(): Promise<void> {
    if (this.session) throw new Error('a profile is already running');
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    this.session = session;
  }

  async stop(file: string): Promise<void> {
    const session = this.session;
    if (!session) throw new Error('no profile was started');
    this.session = undefined;
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
  }
}
