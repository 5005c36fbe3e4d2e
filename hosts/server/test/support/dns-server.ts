import { createSocket } from 'node:dgram';

/** A DNS server on 127.0.0.1 (UDP) answering TXT queries from a table the test fills. */
export interface TestDnsServer {
  /** `127.0.0.1:PORT` for DNS_SERVERS. */
  address: string;
  /** name (lower case, no trailing dot) → TXT strings; absent: NXDOMAIN. */
  txt: Map<string, string[]>;
  /** Names asked, in order. */
  queries: string[];
  close(): Promise<void>;
}

/** Reads the question name (uncompressed labels, as resolvers send it) at `offset`. */
function readName(message: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  for (let length = message[at]!; length !== 0; length = message[at]!) {
    labels.push(message.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  return { name: labels.join('.').toLowerCase(), end: at + 1 };
}

/** One TXT record's RDATA: each string as a length byte and at most 255 bytes. */
function txtData(text: string): Buffer {
  const parts: Buffer[] = [];
  const bytes = Buffer.from(text, 'utf8');
  for (let at = 0; at < bytes.length || at === 0; at += 255) {
    const chunk = bytes.subarray(at, at + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
    if (bytes.length === 0) break;
  }
  return Buffer.concat(parts);
}

/**
 * The minimal DNS answer (RFC 1035 section 4): the query's id and question echoed, then one TXT
 * answer per string at the asked name (a pointer to the question), or NXDOMAIN when the table has
 * no entry. Enough for node's dns.Resolver (c-ares) with setServers pointed here.
 */
export async function startTestDnsServer(): Promise<TestDnsServer> {
  const txt = new Map<string, string[]>();
  const queries: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    const { name, end } = readName(query, 12);
    queries.push(name);
    const qtype = query.readUInt16BE(end);
    const question = query.subarray(12, end + 4);
    const records = qtype === 16 ? txt.get(name) : undefined;
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    // QR, opcode 0, AA, RD copied, RA; RCODE 3 (NXDOMAIN) when the name is unknown.
    header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | (txt.has(name) ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records?.length ?? 0, 6);
    const answers = (records ?? []).map((text) => {
      const data = txtData(text);
      const fixed = Buffer.alloc(12);
      fixed.writeUInt16BE(0xc00c, 0);
      fixed.writeUInt16BE(16, 2);
      fixed.writeUInt16BE(1, 4);
      fixed.writeUInt32BE(60, 6);
      fixed.writeUInt16BE(data.length, 10);
      return Buffer.concat([fixed, data]);
    });
    socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    txt,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
