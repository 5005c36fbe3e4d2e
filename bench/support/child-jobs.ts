import { fork, type ChildProcess } from 'node:child_process';

/**
 * Runs jobs in a child process (a load generator must not share the event loop or CPU accounting
 * of the server it measures). The child answers each `{id, ...job}` message with `{id, ...result}`
 * or `{id, error}`.
 */
export class ChildJobs<Job extends object, Result extends { id: number }> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (result: Result) => void; reject: (error: Error) => void }>();
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  constructor(moduleUrl: URL) {
    this.child = fork(moduleUrl, { execArgv: ['--import', import.meta.resolve('tsx')] });
    this.child.on('message', (message: Result | { id: number; error: string }) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if ('error' in message) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code) => {
        for (const waiter of this.pending.values()) waiter.reject(new Error(`child process exited (${code})`));
        this.pending.clear();
        resolve();
      });
    });
  }

  run(job: Job): Promise<Result> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ ...job, id });
    });
  }

  /** The child's process id (to pin it to a CPU, say). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Disconnects from the child, which then ends; resolves once it has exited. */
  close(): Promise<void> {
    if (this.child.connected) this.child.disconnect();
    // Settled by the 'exit' event, which has already come if the child ended by itself.
    return this.exited;
  }
}
