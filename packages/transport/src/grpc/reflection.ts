import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { PROTO_ROOT } from './proto.ts';

/** The FileDescriptorProto codec of the protobufjs that @grpc/reflection itself decodes with. */
interface FileDescriptor {
  name?: string;
  package?: string;
  dependency?: string[];
  messageType?: MessageDescriptor[];
  enumType?: Array<{ name?: string }>;
  service?: Array<{ name?: string; method?: Array<{ inputType?: string; outputType?: string }> }>;
}
interface MessageDescriptor {
  name?: string;
  field?: Array<{ typeName?: string }>;
  nestedType?: MessageDescriptor[];
  enumType?: Array<{ name?: string }>;
}
const descriptorCodec = createRequire(createRequire(import.meta.url).resolve('@grpc/reflection'))('protobufjs/ext/descriptor') as {
  FileDescriptorProto: { decode(bytes: Uint8Array): FileDescriptor; encode(file: FileDescriptor): { finish(): Uint8Array } };
};

/** Every .proto under proto/ (relative paths), so reflection describes whatever the repo defines. */
function protoFiles(): string[] {
  return (readdirSync(PROTO_ROOT, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.proto'))
    .map((file) => file.split(path.sep).join('/'))
    .sort();
}

/**
 * proto-loader's file descriptors (one per package) name no dependencies, and @grpc/reflection
 * 1.0.4 serves them as they are (grpc-node issues 2595, 3018): grpcurl and similar tools then fail
 * on any type from another package ("unresolvable reference"). This fills each file's
 * `dependency` list with the files defining the types it references.
 */
function withDependencies(pkg: protoLoader.PackageDefinition): protoLoader.PackageDefinition {
  const files = new Map<string, FileDescriptor>();
  const nameOf = new Map<Buffer, string>();
  for (const value of Object.values(pkg)) {
    for (const bytes of (value as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos ?? []) {
      const file = descriptorCodec.FileDescriptorProto.decode(bytes);
      if (!file.name) continue;
      nameOf.set(bytes, file.name);
      if (!files.has(file.name)) files.set(file.name, file);
    }
  }
  // 1. Which file defines each fully qualified message, enum and service name.
  const definedIn = new Map<string, string>();
  const indexMessage = (prefix: string, message: MessageDescriptor, file: string): void => {
    const name = `${prefix}.${message.name}`;
    definedIn.set(name, file);
    for (const nested of message.nestedType ?? []) indexMessage(name, nested, file);
    for (const type of message.enumType ?? []) definedIn.set(`${name}.${type.name}`, file);
  };
  for (const [name, file] of files) {
    const prefix = file.package ? `.${file.package}` : '';
    for (const message of file.messageType ?? []) indexMessage(prefix, message, name);
    for (const type of file.enumType ?? []) definedIn.set(`${prefix}.${type.name}`, name);
  }
  // 2. Each file depends on the files of the types its fields and methods name.
  const resolve = (reference: string | undefined, scope: string): string | undefined => {
    if (!reference) return undefined;
    if (reference.startsWith('.')) return definedIn.get(reference);
    for (let at = scope; ; at = at.slice(0, Math.max(0, at.lastIndexOf('.')))) {
      const found = definedIn.get(`${at}.${reference}`);
      if (found || at === '') return found;
    }
  };
  const patched = new Map<string, Buffer>();
  for (const [name, file] of files) {
    const prefix = file.package ? `.${file.package}` : '';
    const needs = new Set<string>();
    const add = (reference: string | undefined, scope: string): void => {
      const target = resolve(reference, scope);
      if (target && target !== name) needs.add(target);
    };
    const visit = (scope: string, message: MessageDescriptor): void => {
      const inner = `${scope}.${message.name}`;
      for (const field of message.field ?? []) add(field.typeName, inner);
      for (const nested of message.nestedType ?? []) visit(inner, nested);
    };
    for (const message of file.messageType ?? []) visit(prefix, message);
    for (const service of file.service ?? []) {
      for (const method of service.method ?? []) {
        add(method.inputType, prefix);
        add(method.outputType, prefix);
      }
    }
    file.dependency = [...needs].sort();
    patched.set(name, Buffer.from(descriptorCodec.FileDescriptorProto.encode(file).finish()));
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(pkg)) {
    const protos = (value as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos;
    out[key] = protos
      ? { ...value, fileDescriptorProtos: protos.map((bytes) => patched.get(nameOf.get(bytes) ?? '') ?? bytes) }
      : value;
  }
  return out as protoLoader.PackageDefinition;
}

let definition: protoLoader.PackageDefinition | undefined;

/** The fully qualified names of the services defined under proto/. */
function allServices(pkg: protoLoader.PackageDefinition): string[] {
  // A package definition maps names to message/enum types (which carry `format`) or services.
  return Object.entries(pkg)
    .filter(([, value]) => !('format' in value))
    .map(([name]) => name);
}

/** A service a ReflectionService registers: its definition and its handlers by method name. */
interface Registration {
  definition: grpc.ServiceDefinition;
  handlers: Record<string, grpc.UntypedHandleCall>;
}

/** What `reflection.addToServer` registers, recorded instead of added to a server. */
function registrationsOf(reflection: ReflectionService): Registration[] {
  const registrations: Registration[] = [];
  const recorder = {
    addService: (definition: grpc.ServiceDefinition, handlers: Record<string, grpc.UntypedHandleCall>) => {
      registrations.push({ definition, handlers });
    },
  };
  reflection.addToServer(recorder as unknown as grpc.Server);
  return registrations;
}

/** The reflection services' definitions (v1 and v1alpha), from a ReflectionService of nothing. */
let shape: Registration[] | undefined;

/**
 * Adds gRPC server reflection (grpc.reflection.v1 and v1alpha), so tools such as grpcurl and
 * Postman can list the services of this port and fetch their descriptors without the .proto
 * files. `include` decides which of the services defined under proto/ this port announces.
 *
 * The index behind it is built on the first reflection request, not here: parsing every .proto
 * and decoding every descriptor (twice, once per reflection version) took about 0.6 s of CPU, a
 * third of a server's start, for a service most deployments never call.
 */
export function addReflection(server: grpc.Server, include: (service: string) => boolean): void {
  shape ??= registrationsOf(new ReflectionService({}, { services: [] }));
  let built: Registration[] | undefined;
  const handlersFor = (index: number): Record<string, grpc.UntypedHandleCall> => {
    built ??= registrationsOf(reflectionFor(include));
    return built[index]!.handlers;
  };
  shape.forEach(({ definition, handlers }, index) => {
    const lazy = Object.fromEntries(
      Object.keys(handlers).map((method) => [method, (call: unknown) => (handlersFor(index)[method] as (call: unknown) => void)(call)]),
    );
    server.addService(definition, lazy as grpc.UntypedServiceImplementation);
  });
}

/** The ReflectionService announcing the services `include` picks (built once per such list). */
function reflectionFor(include: (service: string) => boolean): ReflectionService {
  definition ??= withDependencies(protoLoader.loadSync(protoFiles(), { includeDirs: [PROTO_ROOT], keepCase: true }));
  const services = allServices(definition).filter(include);
  // A ReflectionService indexes every descriptor when it is made; its handlers keep no
  // per-server state, so servers announcing the same services share one.
  const key = services.join(',');
  let reflection = reflectionServices.get(key);
  if (!reflection) {
    reflection = new ReflectionService(definition, { services });
    reflectionServices.set(key, reflection);
  }
  return reflection;
}

const reflectionServices = new Map<string, ReflectionService>();
