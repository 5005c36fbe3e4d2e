import * as grpc from '@grpc/grpc-js';
import type { Access, Target } from './types.ts';
import type { RowContext } from './rest-descriptor.ts';

/** What a gRPC row sends: the request message, and metadata when not the principal's bearer. */
export interface GrpcRequest {
  message: Record<string, unknown>;
  /** Replaces `authorization: Bearer <principal's bearer>` (calls whose credential is in the message send none). */
  metadata?: grpc.Metadata;
}

/**
 * One public gRPC method (`package.Service/Method`), classified by hand like a REST operation;
 * `status` is the answer when allowed (OK, or for public calls every caller's answer).
 */
export interface GrpcDescriptor {
  method: string;
  access: Access;
  target: Target;
  status: keyof typeof grpc.status;
  request(context: RowContext): GrpcRequest | Promise<GrpcRequest>;
  /** Checks a password (see Cell.checksPassword). */
  checksPassword?: boolean;
}

export const rpc = (method: string, access: Access, target: Target, request: GrpcDescriptor['request'], status: keyof typeof grpc.status = 'OK', options: { checksPassword?: boolean } = {}): GrpcDescriptor => ({
  method,
  access,
  target,
  status,
  request,
  ...options,
});

/** No metadata at all: the credential (if any) travels in the message. */
export const NO_METADATA = (): grpc.Metadata => new grpc.Metadata();
