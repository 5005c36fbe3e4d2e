/**
 * The browser side of bench/client/streams.bench.ts, in its own process: N event streams over
 * plain HTTP/1.1 connections (one per stream, as browsers' EventSource across many pages), each
 * reading `data:` lines. Commands over IPC:
 *   {type: 'open', url, count}  → {type: 'opened', ms}
 *   {type: 'expect'}            → when every stream has received one more notice: {type: 'delivered', times}
 *   {type: 'close'}             → exits
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const notices: number[] = [];
const requests: http.ClientRequest[] = [];
let expecting: { counts: number[]; times: number[]; left: number } | null = null;

const nowMs = (): number => performance.timeOrigin + performance.now();

function openOne(url: string, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent, headers: { accept: 'text/event-stream' } }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`stream ${index}: ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      let pending = '';
      response.on('data', (chunk: string) => {
        pending += chunk;
        let end: number;
        while ((end = pending.indexOf('\n\n')) >= 0) {
          const event = pending.slice(0, end);
          pending = pending.slice(end + 2);
          if (!event.startsWith('data: ')) continue;
          notices[index] = (notices[index] ?? 0) + 1;
          if (expecting && notices[index] === expecting.counts[index]! + 1) {
            expecting.times[index] = nowMs();
            if (--expecting.left === 0) {
              process.send!({ type: 'delivered', times: expecting.times });
              expecting = null;
            }
          }
        }
      });
      resolve();
    });
    request.on('error', reject);
    requests.push(request);
  });
}

process.on('message', async (message: { type: string; url?: string; count?: number }) => {
  try {
    if (message.type === 'open') {
      const started = nowMs();
      const base = requests.length;
      for (let i = 0; i < message.count!; i += 200) {
        await Promise.all(Array.from({ length: Math.min(200, message.count! - i) }, (_, j) => openOne(message.url!, base + i + j)));
      }
      process.send!({ type: 'opened', ms: nowMs() - started });
    } else if (message.type === 'expect') {
      const counts = requests.map((_, i) => notices[i] ?? 0);
      expecting = { counts, times: new Array(requests.length).fill(0), left: requests.length };
      process.send!({ type: 'expecting' });
    } else if (message.type === 'close') {
      for (const request of requests) request.destroy();
      process.exit(0);
    }
  } catch (error) {
    process.send!({ type: 'error', message: (error as Error).message });
  }
});
