/**
 * A webhook receiver that verifies Switchyard's signatures (docs/workflow.md "Webhooks"), with
 * nothing but node:http and node:crypto: the Standard Webhooks scheme, so any Standard Webhooks
 * library (the `standardwebhooks` npm package, Svix's) verifies the same way.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=4000 npx tsx examples/webhook-receiver.ts
 *
 * Then point an endpoint at it (http://localhost:4000/ needs WEBHOOK_ALLOW_PRIVATE_NETWORKS=true on
 * the server; in production, an https address on the public internet), and use the console's
 * "Send test" or change a flag. Each verified event is printed; anything else answers 401.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.WEBHOOK_SECRET ?? '';
if (!secret.startsWith('whsec_')) throw new Error('set WEBHOOK_SECRET to the whsec_... secret the create (or rotate) answer showed');
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
/** How far the sender's clock may be from ours: older messages are replays. */
const TOLERANCE_SECONDS = 5 * 60;
/** Ids seen recently: a retry of a message already handled is acknowledged, not handled again. */
const seen = new Set<string>();

/**
 * Whether the body was signed with our secret: `webhook-signature` holds one or more
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, space-separated (two during a rotation).
 */
function verified(id: string, timestamp: string, signatures: string, body: string): boolean {
  const sentAt = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - sentAt) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((signature) => {
    const [version, mac] = signature.split(',');
    if (version !== 'v1' || mac === undefined) return false;
    const given = Buffer.from(mac, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > 1024 * 1024) request.destroy(); // entries are small; refuse anything huge
    else chunks.push(chunk);
  });
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const id = String(request.headers['webhook-id'] ?? '');
    const timestamp = String(request.headers['webhook-timestamp'] ?? '');
    const signatures = String(request.headers['webhook-signature'] ?? '');
    if (request.method !== 'POST' || !verified(id, timestamp, signatures, body)) {
      response.writeHead(401).end('bad signature');
      return;
    }
    if (!seen.has(id)) {
      seen.add(id);
      if (seen.size > 10_000) seen.delete(seen.values().next().value as string);
      const event = JSON.parse(body) as { type: string; timestamp: string; data: { actor?: { email?: string; id: string }; resource_type?: string; resource_id?: string } };
      console.log(`${event.timestamp} ${event.type} ${event.data.resource_type ?? ''} ${event.data.resource_id ?? ''} by ${event.data.actor?.email ?? event.data.actor?.id ?? '?'}`);
    }
    // Answer 2xx quickly (within 15 s); do slow work after answering.
    response.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 4000), () => console.log(`listening on http://localhost:${process.env.PORT ?? 4000}/`));
