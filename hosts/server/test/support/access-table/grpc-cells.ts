import { readdirSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { PROTO_ROOT, loadProto } from '@switchyard/transport/grpc/proto.ts';
import type { Shared } from './fixtures.ts';
import type { GrpcDescriptor } from './grpc-descriptor.ts';
import { authRpcs } from './grpc/auth.ts';
import { changeRequestRpcs, contentRpcs } from './grpc/content.ts';
import { managementRpcs } from './grpc/management.ts';
import { expected } from './rule.ts';
import type { Cell } from './run-rows.ts';
import type { World } from './world.ts';

/** Every hand-written gRPC descriptor; the table fails for a public method missing here. */
export const GRPC_DESCRIPTORS: GrpcDescriptor[] = [...authRpcs, ...managementRpcs, ...contentRpcs, ...changeRequestRpcs];

/** The public protos: proto/svc/*\/v1/*.proto but the gateway's, common and service_call. */
function publicProtoFiles(): string[] {
  const files: string[] = [];
  for (const service of readdirSync(path.join(PROTO_ROOT, 'svc'))) {
    const dir = path.join(PROTO_ROOT, 'svc', service, 'v1');
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      continue;
    }
    for (const file of entries) {
      if (!file.endsWith('.proto') || file.endsWith('_gateway.proto') || service === 'common' || file === 'service_call.proto') continue;
      files.push(`svc/${service}/v1/${file}`);
    }
  }
  return files.sort();
}

type ServiceConstructor = grpc.ServiceClientConstructor;

/** Every service of the public protos, by full name (`svc.flags.v1.FlagService`). */
export function publicServices(): Map<string, ServiceConstructor> {
  const services = new Map<string, ServiceConstructor>();
  const walk = (node: unknown, prefix: string) => {
    for (const [name, value] of Object.entries(node as Record<string, unknown>)) {
      const full = prefix === '' ? name : `${prefix}.${name}`;
      if (typeof value === 'function' && 'service' in value) services.set(full, value as ServiceConstructor);
      else if (typeof value === 'object' && value !== null && !('format' in value)) walk(value, full);
    }
  };
  for (const file of publicProtoFiles()) {
    const root = loadProto(file);
    const before = new Set(services.keys());
    walk(root, '');
    // Only the file's own package: imported ones (svc.common.v1) declare messages, not services here.
    const pkg = file.split('/').slice(0, 3).join('.');
    for (const name of services.keys()) if (!before.has(name) && !name.startsWith(`${pkg}.`)) services.delete(name);
  }
  return services;
}

/** Every public method as `package.Service/Method`. */
export function publicMethods(services: Map<string, ServiceConstructor>): string[] {
  return [...services.values()].flatMap((constructor) => Object.values(constructor.service).map((definition) => definition.path.slice(1)));
}

const STREAM_WAIT_MS = 5000;

/** The status name a call ends with: OK on an answer (a stream's first message), else its error's. */
function callOnce(client: grpc.Client, definition: grpc.MethodDefinition<unknown, unknown>, message: unknown, metadata: grpc.Metadata): Promise<{ got: string; detail: string }> {
  const deadline = Date.now() + 10_000;
  const statusName = (code: number) => grpc.status[code] ?? String(code);
  if (!definition.responseStream) {
    return new Promise((resolve) => {
      client.makeUnaryRequest(definition.path, definition.requestSerialize, definition.responseDeserialize, message, metadata, { deadline }, (error, response) => {
        resolve(error ? { got: statusName(error.code), detail: error.details } : { got: 'OK', detail: JSON.stringify(response).slice(0, 300) });
      });
    });
  }
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest(definition.path, definition.requestSerialize, definition.responseDeserialize, message, metadata, { deadline });
    let settled = false;
    const settle = (answer: { got: string; detail: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      call.cancel();
      resolve(answer);
    };
    const timer = setTimeout(() => settle({ got: 'no message', detail: `nothing within ${STREAM_WAIT_MS} ms` }), STREAM_WAIT_MS);
    call.on('data', (data) => settle({ got: 'OK', detail: JSON.stringify(data).slice(0, 300) }));
    call.on('error', (error: grpc.ServiceError) => settle({ got: statusName(error.code), detail: error.details }));
    call.on('end', () => settle({ got: 'OK', detail: 'ended without a message' }));
  });
}

const STATUS_OF = { 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND' } as const;

/** A descriptor as a table cell, called on the services' gRPC port (the same in both topologies). */
export function grpcCell(descriptor: GrpcDescriptor, world: World, shared: Shared, clients: Map<string, grpc.Client>, services: Map<string, ServiceConstructor>): Cell {
  const [serviceName, methodName] = descriptor.method.split('/') as [string, string];
  const constructor = services.get(serviceName);
  const definition = constructor && Object.values(constructor.service).find((candidate) => candidate.path === `/${serviceName}/${methodName}`);
  return {
    operation: `gRPC ${descriptor.method}`,
    access: descriptor.access,
    target: descriptor.target,
    checksPassword: descriptor.checksPassword,
    want: (verdict) => (verdict.allowed ? descriptor.status : STATUS_OF[verdict.status]),
    async call(principal) {
      if (!definition) throw new Error(`${descriptor.method} is not in the protos`);
      const allowed = expected(descriptor.access, principal.caller, descriptor.target).allowed;
      const request = await descriptor.request({ world, shared, principal, allowed });
      let metadata = request.metadata;
      if (metadata === undefined) {
        metadata = new grpc.Metadata();
        if (principal.bearer !== undefined) metadata.set('authorization', `Bearer ${principal.bearer}`);
      }
      return callOnce(clients.get(serviceName)!, definition as grpc.MethodDefinition<unknown, unknown>, request.message, metadata);
    },
  };
}

/** The services of the public sync port (the gateway's in the split topology); the rest are on the internal port. */
const ON_SYNC_PORT = new Set(['svc.flags.v1.FlagSyncService']);

/** One client per public service; close them with the returned function. */
export function grpcClients(services: Map<string, ServiceConstructor>, ports: { grpc: number; sync: number }): { clients: Map<string, grpc.Client>; close(): void } {
  const clients = new Map<string, grpc.Client>();
  for (const [name, Constructor] of services) {
    const port = ON_SYNC_PORT.has(name) ? ports.sync : ports.grpc;
    clients.set(name, new Constructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()));
  }
  return { clients, close: () => clients.forEach((client) => client.close()) };
}
