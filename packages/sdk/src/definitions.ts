/**
 * The SDK's reading of the definitions sync stream, for a host that follows the stream the way
 * the SDK does: the server's gateway evaluates from the services' FlagService.Sync stream
 * (packages/transport/src/remote/remote-definition-snapshots.ts) with the same decoding, so a flag means
 * the same thing to an SDK and to a gateway. Applications use the client (`@switchyard/sdk`).
 */
export {
  decodeSyncMessage,
  flagFromMessage,
  segmentFromMessage,
  type DefinitionUpdate,
  type FeatureFlagMessage,
  type SegmentMessage,
  type SyncResponseMessage,
} from './sync/decode-sync-message.ts';
export { DefinitionStore, type AppliedChange } from './store/definition-store.ts';
