import * as grpc from '@grpc/grpc-js';
import { DomainError, type Principal } from '@switchyard/core';
import { changeIntentOf } from '@switchyard/services';

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

/** The principal each gateway scope was resolved for (see scopeActingFor). */
const actors = new WeakMap<object, Principal>();

/**
 * Marks `scope` as resolved for `principal`, which must carry a linked credential: the scope then
 * carries the same credential (a definitions stream is opened with it) and names its caller
 * (exposures and key checks are sent as that caller). Returns `scope`.
 */
export function scopeActingFor<T extends object>(scope: T, principal: Principal): T {
  const credential = credentials.get(principal);
  if (credential === undefined) throw new DomainError('INTERNAL', 'internal error');
  credentials.set(scope, credential);
  actors.set(scope, principal);
  return scope;
}

/** The kind of principal a scope was resolved for, if a gateway resolved it. */
export const actorKindOf = (scope: object): Principal['kind'] | undefined => actors.get(scope)?.kind;

/** The principal a scope was resolved for. @throws INTERNAL for a scope no gateway resolved. */
export function actorOf(scope: object): Principal {
  const principal = actors.get(scope);
  if (principal === undefined) throw new DomainError('INTERNAL', 'internal error');
  return principal;
}

/**
 * The request's change intent beside the credential (docs/access.md "Critical environments"): the
 * services re-attach it when they authenticate the call. The comment goes as UTF-8 bytes
 * (`-bin`), which carries any text the edge accepted.
 */
export function changeIntentMetadata(principal: object, metadata: grpc.Metadata): grpc.Metadata {
  const intent = changeIntentOf(principal);
  if (intent.confirmEnvironmentId !== undefined) metadata.set('x-confirm-environment', intent.confirmEnvironmentId);
  if (intent.comment !== undefined) metadata.set('x-change-comment-bin', Buffer.from(intent.comment, 'utf8'));
  if (intent.bypassApprovals === true) metadata.set('x-approval-bypass', 'true');
  return metadata;
}

/** gRPC metadata carrying a credential the way the internal services expect it. */
export function credentialMetadata(credential: ForwardedCredential, metadata = new grpc.Metadata()): grpc.Metadata {
  if ('bearerToken' in credential) metadata.set('authorization', `Bearer ${credential.bearerToken}`);
  else metadata.set('x-sdk-key', credential.sdkKey);
  return metadata;
}
