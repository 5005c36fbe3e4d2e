import * as grpc from '@grpc/grpc-js';

/**
 * The credential a gateway received from its caller, forwarded unchanged to the services, which
 * authenticate and authorize it again (docs/architecture.md "Credentials through the gateway").
 */
export type ForwardedCredential = { bearerToken: string } | { sdkKey: string };

/**
 * Which credential produced a principal (or a scope derived from one). A WeakMap, not a property:
 * principals are plain objects that services copy, log and compare, and the raw credential must
 * never travel with them into a log line or a JSON answer.
 */
const credentials = new WeakMap<object, ForwardedCredential>();

/** Remembers that `holder` (a principal or a scope) acts with `credential`; returns `holder`. */
export function linkCredential<T extends object>(holder: T, credential: ForwardedCredential): T {
  credentials.set(holder, credential);
  return holder;
}

/** The credential linked to `holder`, if any. */
export function credentialOf(holder: object): ForwardedCredential | undefined {
  return credentials.get(holder);
}

/** gRPC metadata carrying a credential the way the internal services expect it. */
export function credentialMetadata(credential: ForwardedCredential, metadata = new grpc.Metadata()): grpc.Metadata {
  if ('bearerToken' in credential) metadata.set('authorization', `Bearer ${credential.bearerToken}`);
  else metadata.set('x-sdk-key', credential.sdkKey);
  return metadata;
}
