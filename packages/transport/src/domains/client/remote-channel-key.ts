import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '../../grpc/proto.ts';
import { SERVICES_CHANNEL_OPTIONS } from '../../remote/services-channel.ts';

const AuthServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');

interface KeyStub {
  channelTokenKey(request: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response?: { key: Buffer }) => void): void;
}

/**
 * A gateway's channel-token key (docs/client-side.md "7. Streaming"), asked of the services
 * (AuthService.ChannelTokenKey) until they answer, with backoff. Until then `current()` is null:
 * bulk answers name no event stream and the stream route answers 503.
 */
export class RemoteChannelKey {
  private key: Buffer | null = null;
  private readonly client: grpc.Client;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(address: string, credentials: grpc.ChannelCredentials, private readonly callTimeoutMs = 5_000) {
    this.client = new AuthServiceClient(address, credentials, SERVICES_CHANNEL_OPTIONS);
  }

  readonly current = (): Buffer | null => this.key;

  /** Asks once now (resolves either way) and keeps asking in the background until answered. */
  start(): Promise<void> {
    return this.ask(100);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.client.close();
  }

  private ask(backoffMs: number): Promise<void> {
    return new Promise((resolve) => {
      const stub = this.client as unknown as KeyStub;
      stub.channelTokenKey({}, new grpc.Metadata(), { deadline: Date.now() + this.callTimeoutMs }, (error, response) => {
        if (!error && response && response.key.length >= 32) this.key = Buffer.from(response.key);
        else if (!this.stopped) {
          this.timer = setTimeout(() => void this.ask(Math.min(backoffMs * 2, 5_000)), backoffMs);
          this.timer.unref();
        }
        resolve();
      });
    });
  }
}
