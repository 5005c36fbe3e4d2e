/** waitForReady and the 'error' event: the server refused the SDK key (or its environment). */
export class SdkKeyRefusedError extends Error {
  override readonly name = 'SdkKeyRefusedError';
  constructor(
    message: string,
    /** The gRPC status name: UNAUTHENTICATED, PERMISSION_DENIED or NOT_FOUND. */
    readonly status: string,
  ) {
    super(message);
  }
}

/** waitForReady: no definitions arrived within its timeout. */
export class ReadyTimeoutError extends Error {
  override readonly name = 'ReadyTimeoutError';
}

/** waitForReady on a closed client. */
export class ClientClosedError extends Error {
  override readonly name = 'ClientClosedError';
}
