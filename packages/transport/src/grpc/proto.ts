import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

/** True only in the built server (scripts/build-server.ts defines it), which has proto/ copied beside it. */
declare const SWITCHYARD_BUNDLE: boolean | undefined;

/** proto/ at the repository root (or beside the built server): the source of truth for every gRPC shape. */
export const PROTO_ROOT = fileURLToPath(
  new URL(typeof SWITCHYARD_BUNDLE !== 'undefined' && SWITCHYARD_BUNDLE ? './proto/' : '../../../../proto/', import.meta.url),
);

/**
 * Loads a .proto file (path relative to proto/). Field names stay snake_case as in the .proto and
 * in our JSON; int64 values are JS numbers (all are counts, versions or epoch ms, below 2^53).
 */
export function loadProto(relativePath: string): grpc.GrpcObject {
  // Several modules load the same file (and every file loads its imports): parse each once.
  let loaded = loadedProtos.get(relativePath);
  if (!loaded) {
    loaded = parseProto(relativePath);
    loadedProtos.set(relativePath, loaded);
  }
  return loaded;
}

const loadedProtos = new Map<string, grpc.GrpcObject>();

function parseProto(relativePath: string): grpc.GrpcObject {
  const definition = protoLoader.loadSync(relativePath, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition);
}

/** Looks up `a.b.C` in a loaded package, failing loudly if the proto and the code disagree. */
export function lookup<T>(root: grpc.GrpcObject, path: string): T {
  let node: unknown = root;
  for (const part of path.split('.')) {
    node = (node as Record<string, unknown> | undefined)?.[part];
  }
  if (node === undefined) throw new Error(`proto symbol ${path} not found`);
  return node as T;
}
