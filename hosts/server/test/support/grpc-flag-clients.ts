import * as grpc from '@grpc/grpc-js';
import type { FeatureFlagMessage, FlagHashingConfigMessage, FlagRuleMessage, VariantValueMessage } from '@switchyard/transport/domains/flags/messages.ts';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import type { ListSegmentMessage, ListSegmentMetaMessage, RuleSegmentMessage } from '@switchyard/transport/domains/segments/messages.ts';
import { promisified, type Unary } from './grpc-clients.ts';

/**
 * Promisified grpc-js clients for svc.flags.v1.FlagService and svc.segments.v1.SegmentationService,
 * from the same .proto files the server loads. Answers have every proto3 default filled in (the
 * message types of the server's conversions); requests may leave fields out.
 */

export type { FeatureFlagMessage, FlagHashingConfigMessage, ListSegmentMessage, ListSegmentMetaMessage, RuleSegmentMessage };

/** A variant value as a client writes it: one member of the oneof. */
export type VariantValueInput = Omit<VariantValueMessage, 'value'>;

export interface FlagRuleInput extends Partial<Omit<FlagRuleMessage, 'allocation'>> {
  allocation?: FlagRuleMessage['allocation'];
}

export interface FeatureFlagInput extends Partial<Omit<FeatureFlagMessage, 'variants' | 'rules'>> {
  variants?: Array<{ key: string; value?: VariantValueInput | null }>;
  rules?: FlagRuleInput[];
}

export interface MutateFlagInput {
  environment_id: string;
  kind: string;
  flag?: FeatureFlagInput | null;
  version?: number;
}

export interface FlagClient {
  getFlag: Unary<{ environment_id: string; flag_key: string }, FeatureFlagMessage>;
  getFlagInsights: Unary<
    { environment_id: string; flag_key: string; from_ms?: number; to_ms?: number; granularity?: string },
    { series: Array<{ at_ms: number; variants: Record<string, number> }>; last_evaluated_at_ms?: number; status: string }
  >;
  getFlagLifecycle: Unary<
    { project_id: string; stage?: string },
    {
      thresholds: Record<string, number>;
      environments: Array<{ id: string; name: string; critical: boolean; counted: boolean; reports_evaluations: boolean }>;
      flags: Array<{ key: string; lifetime: string; archived: boolean; stage: string; environments: Record<string, { status: string; last_evaluated_at_ms?: number | string }> }>;
      truncated: boolean;
    }
  >;
  listFlags: Unary<{ environment_id: string; tags?: string[]; lifetime?: string | number }, { flags: FeatureFlagMessage[] }>;
  mutateFlag: Unary<MutateFlagInput, { flag: FeatureFlagMessage | null; version: number }>;
  updateFlagHashing: Unary<
    { environment_id: string; flag_key: string; configs: FlagHashingConfigMessage[] },
    { flag: FeatureFlagMessage | null; configs: FlagHashingConfigMessage[] }
  >;
  /** Every message of the stream until it ends; rejects with the ServiceError if it fails. */
  getFlagDefinitions(request: { environment_id: string }, metadata?: grpc.Metadata): Promise<FeatureFlagMessage[]>;
  close(): void;
}

export interface SegmentBundle {
  list_segments: ListSegmentMessage[];
  rule_segments: RuleSegmentMessage[];
}

export interface MutateSegmentInput {
  environment_id: string;
  kind: string;
  rule_segment?: Partial<RuleSegmentMessage>;
  list_segment?: Partial<ListSegmentMessage>;
  version?: number;
}

export interface MutateSegmentAnswer {
  rule_segment: RuleSegmentMessage | null;
  list_segment: ListSegmentMessage | null;
  version: number;
}

export interface SegmentClient {
  getSegment: Unary<{ environment_id: string; segment_key: string }, SegmentBundle>;
  listSegments: Unary<{ environment_id: string }, { rule_segments: RuleSegmentMessage[]; list_segments: ListSegmentMetaMessage[] }>;
  evaluateMembership: Unary<
    { environment_id: string; segment_key: string; context_key: string; context_type: string },
    { is_member: boolean }
  >;
  mutateSegment: Unary<MutateSegmentInput, MutateSegmentAnswer>;
  close(): void;
}

const FlagServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagService');
const SegmentationServiceClient = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/segments/v1/segments.proto'),
  'svc.segments.v1.SegmentationService',
);

type RawStream = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions) => grpc.ClientReadableStream<FeatureFlagMessage>;

export function flagClient(port: number): FlagClient {
  const unaries = promisified<Omit<FlagClient, 'getFlagDefinitions'>>(FlagServiceClient, port);
  const raw = (unaries.client as unknown as Record<string, RawStream>).GetFlagDefinitions;
  if (!raw) throw new Error('client method GetFlagDefinitions missing');
  return {
    ...unaries,
    getFlagDefinitions: (request, metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        const received: FeatureFlagMessage[] = [];
        const stream = raw.call(unaries.client, request, metadata, { deadline: Date.now() + 10_000 });
        stream.on('data', (message: FeatureFlagMessage) => received.push(message));
        stream.on('error', reject);
        // 'end' also follows an error; the promise is settled by then.
        stream.on('end', () => resolve(received));
      }),
  };
}

export const segmentClient = (port: number): SegmentClient => promisified<SegmentClient>(SegmentationServiceClient, port);

/** A rule payload as a client sends it: the UTF-8 JSON bytes. */
export const payload = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

/** A rule payload as a client reads it. */
export const parsePayload = (bytes: Uint8Array): unknown => JSON.parse(Buffer.from(bytes).toString('utf8'));
