import type * as grpc from '@grpc/grpc-js';
import type { Principal } from '@switchyard/core';
import { authenticatePresented, bearerCredential, type CredentialKind, type PresentedCredentials } from '../auth/presented-credentials.ts';
import type { CallerVerifier } from '../gateway-services.ts';

/** A gRPC call's credential metadata (every value of each key, so duplicates are refused). */
export const presentedByMetadata = (metadata: grpc.Metadata): PresentedCredentials => ({
  authorization: metadata.get('authorization').map(String),
  sdkKey: metadata.get('x-sdk-key').map(String),
  where: 'metadata',
  intent: {
    confirmEnvironment: metadata.get('x-confirm-environment').map(String),
    changeComment: metadata.get('x-change-comment').map(String),
    approvalBypass: metadata.get('x-approval-bypass').map(String),
    changeCommentBytes: metadata.get('x-change-comment-bin').filter((value): value is Buffer => Buffer.isBuffer(value)),
  },
});

/** The bearer token of `authorization: Bearer <token>` metadata, if present. */
export const bearerFromMetadata = (metadata: grpc.Metadata): string | undefined => bearerCredential(presentedByMetadata(metadata));

/** The caller of a gRPC call, from `authorization: Bearer` or `x-sdk-key` metadata. */
export function authenticateCall(verifier: CallerVerifier, metadata: grpc.Metadata, accept: CredentialKind): Promise<Principal> {
  return authenticatePresented(verifier, presentedByMetadata(metadata), accept);
}
