import type * as grpc from '@grpc/grpc-js';
import type { Segment } from '@switchyard/core';
import type { SyncPayload } from '@switchyard/services';
import { featureFlagMessage, type FeatureFlagMessage } from '../flags/messages.ts';
import { listSegmentMeta, ruleSegmentMessage, type ListSegmentMetaMessage, type RuleSegmentMessage } from '../segments/messages.ts';

/**
 * svc.flags.v1.SyncResponse for both streams, encoded once per payload.
 *
 * Every stream of an environment receives the same payload and differs only in its sequence
 * number, so the payload is encoded to protobuf bytes once (per shape) and each stream's message
 * is its own sequence_number field followed by those shared bytes: protobuf lets fields come in
 * any order, and a field that is absent from the shared bytes is set by the prefix alone. With
 * 10,000 streams a change then costs one encoding instead of 10,000.
 */

/** Which response fields carry segments: FlagSyncService `segments`, FlagService.Sync the split lists. */
export type SyncShape = 'public' | 'internal';

export interface SegmentMessage {
  segment?: 'rule_segment' | 'list_segment';
  rule_segment?: RuleSegmentMessage | null;
  list_segment?: ListSegmentMetaMessage | null;
}

/** SyncResponse as a client decodes it (proto-loader defaults filled in). */
export interface SyncResponseMessage {
  flags: FeatureFlagMessage[];
  segments: SegmentMessage[];
  sequence_number: number;
  server_timestamp_ms: number;
  environment_id: string;
  removed_flag_keys: string[];
  removed_segment_keys: string[];
  full_snapshot: boolean;
  rule_segments: RuleSegmentMessage[];
  list_segments: ListSegmentMetaMessage[];
  project_id: string;
  experiment_flag_keys: string[];
  features: string[];
}

/** A message whose payload is already encoded: only the sequence number is per stream. */
export class EncodedSyncMessage {
  constructor(
    readonly sequenceNumber: number,
    readonly body: Buffer,
  ) {}
}

/** SyncResponse.sequence_number is field 3, wire type 0 (varint): tag byte 3 << 3 | 0. */
const SEQUENCE_TAG = 0x18;

function sequenceField(value: number): Buffer {
  const bytes = [SEQUENCE_TAG];
  // Arithmetic rather than bit operations: sequence numbers may exceed 2^31.
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

const segmentMessage = (segment: Segment): SegmentMessage =>
  segment.kind === 'rule' ? { rule_segment: ruleSegmentMessage(segment) } : { list_segment: listSegmentMeta(segment) };

/** The payload as a SyncResponse object without sequence_number. */
export function syncBody(payload: SyncPayload, shape: SyncShape): Record<string, unknown> {
  const body: Record<string, unknown> = {
    flags: payload.flags.map(featureFlagMessage),
    server_timestamp_ms: payload.serverTimestampMs,
    environment_id: payload.environmentId,
    removed_flag_keys: payload.removedFlagKeys,
    removed_segment_keys: payload.removedSegmentKeys,
    full_snapshot: payload.fullSnapshot,
    project_id: payload.projectId,
    experiment_flag_keys: payload.experimentFlagKeys,
    features: payload.features,
  };
  if (shape === 'public') {
    body.segments = payload.segments.map(segmentMessage);
  } else {
    body.rule_segments = payload.segments.filter((s) => s.kind === 'rule').map(ruleSegmentMessage);
    body.list_segments = payload.segments.filter((s) => s.kind === 'list').map(listSegmentMeta);
  }
  return body;
}

/**
 * Encodes payloads with the proto's own serializer, remembering the bytes per payload and shape
 * for as long as the payload is alive (streams hold it only while it is being sent).
 */
export class SyncEncoder {
  private readonly cache = { public: new WeakMap<SyncPayload, Buffer>(), internal: new WeakMap<SyncPayload, Buffer>() };

  constructor(private readonly serialize: (value: object) => Buffer) {}

  message(sequenceNumber: number, payload: SyncPayload, shape: SyncShape): EncodedSyncMessage {
    let body = this.cache[shape].get(payload);
    if (!body) {
      body = this.serialize(syncBody(payload, shape));
      this.cache[shape].set(payload, body);
    }
    return new EncodedSyncMessage(sequenceNumber, body);
  }
}

/** The response serializer of a streaming method, taught to write EncodedSyncMessage. */
export function acceptingEncoded(serialize: (value: unknown) => Buffer): (value: unknown) => Buffer {
  return (value) => (value instanceof EncodedSyncMessage ? Buffer.concat([sequenceField(value.sequenceNumber), value.body]) : serialize(value));
}

/**
 * A copy of a service definition whose named streaming methods also write EncodedSyncMessage.
 * grpc-js serializes with the definition given to addService, so this is where the bytes go in.
 */
export function withEncodedSync(definition: grpc.ServiceDefinition, methods: readonly string[]): grpc.ServiceDefinition {
  const copy: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...definition };
  for (const name of methods) {
    const method = definition[name];
    if (!method) throw new Error(`service has no method ${name}`);
    copy[name] = { ...method, responseSerialize: acceptingEncoded(method.responseSerialize) };
  }
  return copy;
}
