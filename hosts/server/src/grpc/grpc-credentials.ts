import type * as grpc from '@grpc/grpc-js';
import { unauthenticated, type Principal } from '@switchyard/core';
import type { CallerVerifier } from '../http/routes/gateway-services.ts';

const single = (metadata: grpc.Metadata, name: string): string | undefined => {
  const values = metadata.get(name);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw unauthenticated(`more than one ${name} metadata value`);
  return String(values[0]).trim();
};

/** The bearer token of `authorization: Bearer <token>` metadata, if present. */
export function bearerFromMetadata(metadata: grpc.Metadata): string | undefined {
  const header = single(metadata, 'authorization');
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('authorization metadata must be "Bearer <token>"');
  return match[1];
}

/** The caller of a gRPC call, from `authorization: Bearer` or `x-sdk-key` metadata. */
export async function authenticateCall(
  verifier: CallerVerifier,
  metadata: grpc.Metadata,
  accept: 'bearer' | 'sdk' | 'bearer_or_sdk',
): Promise<Principal> {
  const token = accept === 'sdk' ? undefined : bearerFromMetadata(metadata);
  if (token !== undefined) return verifier.verifyBearer(token);
  const key = accept === 'bearer' ? undefined : single(metadata, 'x-sdk-key');
  if (key !== undefined && key !== '') return verifier.verifySdkKey(key);
  throw unauthenticated(accept === 'sdk' ? 'missing x-sdk-key metadata' : 'missing authorization metadata');
}
