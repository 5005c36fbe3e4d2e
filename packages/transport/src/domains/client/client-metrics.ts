import { CLIENT_WORKS, KEY_KINDS, ORIGIN_REFUSALS, type ClientMetrics, type ClientWork, type KeyKind, type OriginRefusal } from '@switchyard/services';
import { Counter, Gauge, type Registry } from 'prom-client';

/** `kind|work` → count, and the same per kind: the hot-path counts, read when scraped. */
type Counts = Map<string, number>;
const bump = (counts: Counts, id: string): void => {
  counts.set(id, (counts.get(id) ?? 0) + 1);
};

/**
 * The per-key-kind metrics of the client routes (docs/client-side.md "6. Limits"), as Prometheus
 * series in an instance's registry (ServerMetrics creates one: `metrics.client`). Every series
 * exists at zero from the start, so rates and alerts see it before its first increment.
 *
 * Requests and 304s are counted on every OFREP call, so they are kept in plain maps and become
 * samples only when /metrics is scraped (as ServerMetrics does with evaluations): no label
 * hashing on the hot path.
 */
export class PrometheusClientMetrics implements ClientMetrics {
  private readonly requestCounts: Counts = new Map();
  private readonly notModifiedCounts: Counts = new Map();
  private readonly rateLimitedAnswers: Counter<'kind' | 'work'>;
  private readonly originRefusals: Counter<'kind' | 'reason'>;
  private readonly signatureFailures: Counter<'kind'>;
  private readonly streams: Gauge<'kind'>;
  private readonly serverKeysWithOrigin: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    const requestCounts = this.requestCounts;
    const notModifiedCounts = this.notModifiedCounts;
    new Counter({
      name: 'switchyard_sdk_key_requests_total',
      help: 'Authenticated requests on the routes client keys use (OFREP evaluation, exposures and events, browser stream opens), by key kind (server, client) and work (evaluation, ingest, stream).',
      labelNames: ['kind', 'work'] as const,
      registers,
      collect() {
        this.reset();
        for (const kind of KEY_KINDS) for (const work of CLIENT_WORKS) this.inc({ kind, work }, requestCounts.get(`${kind}|${work}`) ?? 0);
      },
    });
    new Counter({
      name: 'switchyard_sdk_key_not_modified_total',
      help: 'OFREP bulk answers 304 Not Modified (the caller\'s ETag was current), by key kind.',
      labelNames: ['kind'] as const,
      registers,
      collect() {
        this.reset();
        for (const kind of KEY_KINDS) this.inc({ kind }, notModifiedCounts.get(kind) ?? 0);
      },
    });
    this.rateLimitedAnswers = new Counter({
      name: 'switchyard_sdk_key_rate_limited_total',
      help: 'Requests answered 429 (a client-key limit of this instance, or the services\' ingest limits), by key kind and work.',
      labelNames: ['kind', 'work'] as const,
      registers,
    });
    this.originRefusals = new Counter({
      name: 'switchyard_sdk_key_origin_refusals_total',
      help: 'Requests refused for their Origin header, by key kind and reason: preflight (no active client key allows the origin), origin (not in its client key\'s list), missing_origin, server_key_in_browser.',
      labelNames: ['kind', 'reason'] as const,
      registers,
    });
    this.signatureFailures = new Counter({
      name: 'switchyard_sdk_key_signature_failures_total',
      help: 'Requests refused for their signed context token (missing, expired, forged, another environment\'s), by key kind.',
      labelNames: ['kind'] as const,
      registers,
    });
    this.streams = new Gauge({
      name: 'switchyard_sdk_key_streams',
      help: 'Browser event streams open on this instance, by key kind.',
      labelNames: ['kind'] as const,
      registers,
    });
    this.serverKeysWithOrigin = new Counter({
      name: 'switchyard_server_key_origin_requests_total',
      help: 'Requests that presented a server key together with an Origin header (a server key shipped to a browser, or the server\'s own pages).',
      registers,
    });
    for (const kind of KEY_KINDS) {
      for (const work of CLIENT_WORKS) this.rateLimitedAnswers.inc({ kind, work }, 0);
      for (const reason of ORIGIN_REFUSALS) this.originRefusals.inc({ kind, reason }, 0);
      this.signatureFailures.inc({ kind }, 0);
      this.streams.set({ kind }, 0);
    }
    this.serverKeysWithOrigin.inc(0);
  }

  request(kind: KeyKind, work: ClientWork): void {
    bump(this.requestCounts, `${kind}|${work}`);
  }

  notModified(kind: KeyKind): void {
    bump(this.notModifiedCounts, kind);
  }

  rateLimited(kind: KeyKind, work: ClientWork): void {
    this.rateLimitedAnswers.inc({ kind, work });
  }

  originRefused(kind: KeyKind, reason: OriginRefusal): void {
    this.originRefusals.inc({ kind, reason });
  }

  signatureFailed(kind: KeyKind): void {
    this.signatureFailures.inc({ kind });
  }

  streamOpened(kind: KeyKind): void {
    this.streams.inc({ kind });
  }

  streamClosed(kind: KeyKind): void {
    this.streams.dec({ kind });
  }

  serverKeyWithOrigin(): void {
    this.serverKeysWithOrigin.inc();
  }
}
