import { createHash } from 'node:crypto';
import { isDomainError, isKeyPrincipal, type EvaluationContext, type EvaluationResult, type Flag, type Principal } from '@switchyard/core';
import { clientFlags, isClientVisible, type EnvironmentSnapshot, type EvaluationService } from '@switchyard/services';
import { JsonItem, ResultJsonCache, etagOfItems, jsonArrayBytes } from '../flags/rest-result-json.ts';
import { needsTargetingKey } from '../flags/ofrep-rest-context.ts';

/**
 * What a client key is answered on OFREP (docs/client-side.md "What a client sees"): client-visible,
 * non-archived flags only; per flag `key`, `value`, `variant` and `reason`, nothing else (no
 * metadata, no rule ids, no error details beyond OFREP's error code); disabled flags left out of
 * bulk answers unless the key includes them. Client evaluation records no exposure, so the
 * remembered-ETag fast path serves every environment whose client-visible flags read nothing but
 * the snapshot (no list segment), ACTIVE experiments included.
 *
 * A member of GatewayServices: a gateway asks the services for these answers over the gateway hop
 * (rules and segments stay in the services process), so both topologies answer alike.
 */

/** One context as the route mapped it (rest-client-context.ts); `hasTargetingKey` false: the body had none. */
export interface ClientEvaluationRequest {
  context: EvaluationContext;
  hasTargetingKey: boolean;
  /** The request's If-None-Match (bulk only). */
  ifNoneMatch?: string | undefined;
}

/** An answer: its status, its JSON as text or bytes (neither on 304) and ETag (bulk). */
export interface ClientAnswer {
  status: number;
  json?: string;
  bytes?: Buffer;
  etag?: string;
}

/**
 * A bulk answer as bytes, sent as they are in one process; across the gateway hop (where results
 * travel as JSON) it turns into `{status, etag, json}`.
 */
class BytesAnswer implements ClientAnswer {
  constructor(
    readonly status: number,
    readonly etag: string,
    readonly bytes: Buffer,
  ) {}

  toJSON(): ClientAnswer {
    return { status: this.status, etag: this.etag, json: this.bytes.toString('utf8') };
  }
}

type ClientEntry = { key: string; value?: unknown; variant?: string; reason: string } | { key: string; errorCode: string };

function clientEntry(result: EvaluationResult): ClientEntry {
  if (result.error_code === 'GENERAL' || result.error_code === 'INVALID_CONTEXT') return { key: result.flag_key, errorCode: result.error_code };
  // In the order the docs show: key, value, variant, reason. No metadata, no error detail.
  const entry: { key: string; value?: unknown; variant?: string; reason: string } = { key: result.flag_key } as { key: string; reason: string };
  if (result.value !== null) entry.value = result.value;
  if (result.variant_key !== '') entry.variant = result.variant_key;
  entry.reason = result.reason;
  return entry;
}

/** An item whose JSON text is kept beside its bytes (the single route answers the text). */
class TextItem extends JsonItem {
  constructor(readonly text: string) {
    super(Buffer.from(text));
  }
}

/** Client bulk entries, kept per flag and outcome like the server answers' (rest-result-json.ts). */
const clientEntries = new ResultJsonCache((result) => JSON.stringify(clientEntry(result)));
const notFoundJson = (key: string): string => JSON.stringify({ key, errorCode: 'FLAG_NOT_FOUND' });

/** A flag's TARGETING_KEY_MISSING entry, kept per definition. */
const missingKeyItems = new WeakMap<Flag, TextItem>();
function missingKeyItem(flag: Flag): TextItem {
  let item = missingKeyItems.get(flag);
  if (item === undefined) {
    item = new TextItem(JSON.stringify({ key: flag.key, errorCode: 'TARGETING_KEY_MISSING' }));
    missingKeyItems.set(flag, item);
  }
  return item;
}

/**
 * ETags answered per snapshot and (key settings, context): kept with the snapshot object, so a
 * change of the definitions drops them with it. Bounded per snapshot (cleared when full).
 */
const answeredEtags = new WeakMap<EnvironmentSnapshot, Map<string, string>>();
const MAX_REMEMBERED_ANSWERS = 50_000;

/** The answer's identity: what of the key changes it (include_disabled), whether a targeting key came, the context. */
const answerKey = (includeDisabled: boolean, request: ClientEvaluationRequest): string =>
  createHash('sha256')
    .update(`${includeDisabled ? 1 : 0}${request.hasTargetingKey ? 1 : 0}`)
    .update(JSON.stringify(request.context))
    .digest('base64url');

function rememberEtag(snapshot: EnvironmentSnapshot, key: string, etag: string): void {
  // Evaluation that reads list-segment members from the database is not a function of the snapshot.
  if (clientFlags(snapshot).readsListSegments) return;
  let answers = answeredEtags.get(snapshot);
  if (answers === undefined) {
    answers = new Map();
    answeredEtags.set(snapshot, answers);
  } else if (answers.size >= MAX_REMEMBERED_ANSWERS) answers.clear();
  answers.set(key, etag);
}

/** If-None-Match: `*` or a comma-separated list of (possibly weak) tags. */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

export class ClientAnswers {
  constructor(private readonly evaluation: EvaluationService) {}

  /** `POST /ofrep/v1/evaluate/flags` for a client key: 200 with the answer, or 304. */
  async bulk(principal: Principal, request: ClientEvaluationRequest): Promise<ClientAnswer> {
    const scope = this.evaluation.clientScopeFor(principal, isKeyPrincipal(principal) ? principal.environmentId : '');
    const includeDisabled = principal.kind === 'client_key' && principal.client.includeDisabled;
    const key = answerKey(includeDisabled, request);
    if (request.ifNoneMatch !== undefined) {
      const loaded = this.evaluation.currentSnapshot(scope);
      const known = loaded === undefined ? undefined : answeredEtags.get(loaded)?.get(key);
      if (known !== undefined && matchesEtag(request.ifNoneMatch, known)) return { status: 304, etag: known };
    }
    const asked = { contexts: [request.context] };
    const { snapshot, flags, results, outcomes } = this.evaluation.evaluateForClientNow(scope, asked) ?? (await this.evaluation.evaluateForClient(scope, asked));
    const entries = clientEntries.items(results, outcomes);
    if (!request.hasTargetingKey) {
      for (let i = 0; i < entries.length; i++) if (needsTargetingKey(flags[i], snapshot.flags)) entries[i] = missingKeyItem(flags[i]!);
    }
    const etag = etagOfItems(entries);
    rememberEtag(snapshot, key, etag);
    if (matchesEtag(request.ifNoneMatch, etag)) return { status: 304, etag };
    return new BytesAnswer(200, etag, jsonArrayBytes('{"flags":[', entries, ']}'));
  }

  /** `POST /ofrep/v1/evaluate/flags/{key}` for a client key: a hidden flag answers exactly as a missing one. */
  async single(principal: Principal, flagKey: string, request: ClientEvaluationRequest): Promise<ClientAnswer> {
    const scope = this.evaluation.clientScopeFor(principal, isKeyPrincipal(principal) ? principal.environmentId : '');
    const snapshot = this.evaluation.currentSnapshot(scope) ?? (await this.evaluation.snapshot(scope));
    const flag = snapshot.flags.get(flagKey);
    if (!isClientVisible(flag)) return { status: 404, json: notFoundJson(flagKey) };
    if (!request.hasTargetingKey && needsTargetingKey(flag, snapshot.flags)) return { status: 400, json: missingKeyItem(flag).text };
    let results: EvaluationResult[];
    try {
      const asked = { contexts: [request.context], flagKey };
      results = (this.evaluation.evaluateForClientNow(scope, asked) ?? (await this.evaluation.evaluateForClient(scope, asked))).results;
    } catch (error) {
      // The flag vanished (or was hidden) between the snapshot read and the evaluation.
      if (isDomainError(error) && error.code === 'NOT_FOUND') return { status: 404, json: notFoundJson(flagKey) };
      throw error;
    }
    const entry = clientEntry(results[0]!);
    const status = 'errorCode' in entry ? (entry.errorCode === 'GENERAL' ? 500 : 400) : 200;
    return { status, json: JSON.stringify(entry) };
  }
}
