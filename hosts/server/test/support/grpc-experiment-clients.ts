import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';

/**
 * Promisified grpc-js clients for svc.experiments.v1.ExperimentationService and
 * svc.stats.v1.StatsService, built from the .proto files the server loads (snake_case fields,
 * int64 as numbers, enums as names). A failed call rejects with the grpc.ServiceError.
 */

/** Messages are read freely in assertions, hence `any`. */
type Message = any;
type Unary = (request: Record<string, unknown>, metadata?: grpc.Metadata) => Promise<Message>;

export interface ExperimentClient {
  createExperiment: Unary;
  updateExperiment: Unary;
  getExperiment: Unary;
  deleteExperiment: Unary;
  listExperiments: Unary;
  transitionExperiment: Unary;
  listIterations: Unary;
  getResults: Unary;
  estimatePower: Unary;
  getExperimentPower: Unary;
  close(): void;
}

export interface StatsClient {
  triggerRecompute: Unary;
  getJobStatus: Unary;
  close(): void;
}

type Callback = (error: grpc.ServiceError | null, response?: unknown) => void;
type RawMethod = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback) => grpc.ClientUnaryCall;

function promisified<T>(Constructor: grpc.ServiceClientConstructor, port: number): T {
  const client = new Constructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const methods: Record<string, unknown> = { close: () => client.close() };
  for (const [name, definition] of Object.entries(Constructor.service)) {
    const camel = definition.originalName ?? name;
    const raw = (client as unknown as Record<string, RawMethod>)[camel];
    if (!raw) throw new Error(`client method ${camel} missing`);
    methods[camel] = (request: unknown, metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        raw.call(client, request, metadata, { deadline: Date.now() + 15_000 }, (error, response) => (error ? reject(error) : resolve(response)));
      });
  }
  return methods as T;
}

const ExperimentationService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/experiments/v1/experiments.proto'), 'svc.experiments.v1.ExperimentationService');
const StatsService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/stats/v1/stats.proto'), 'svc.stats.v1.StatsService');

export const experimentClient = (port: number): ExperimentClient => promisified<ExperimentClient>(ExperimentationService, port);
export const statsClient = (port: number): StatsClient => promisified<StatsClient>(StatsService, port);
