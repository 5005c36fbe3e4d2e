import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import type { ConsoleSettings, Flag, SdkKey } from '../records.ts';
import { hrefOf } from '../router.ts';
import { ErrorMessage, useLoad } from './common.tsx';
import { CopyButton } from './copy-button.tsx';

/** How often the checklist asks whether a flag, a key or the first evaluation has appeared. */
const POLL_MS = 2_000;

/** What a snippet needs; `null` values are shown as placeholders the reader replaces. */
interface SnippetValues {
  serverKey: string | null;
  environmentId: string;
  restBase: string;
  syncAddress: string;
  syncTls: boolean;
  flagKey: string;
}

const SERVER_KEY_PLACEHOLDER = 'YOUR_SERVER_KEY';
const CLIENT_KEY_PLACEHOLDER = 'YOUR_CLIENT_KEY';

/** The four ways in (docs/sdk.md, docs/client-side.md), each filled in with this environment's values. */
const SNIPPETS: Array<{ id: string; label: string; render: (v: SnippetValues) => string }> = [
  {
    id: 'node',
    label: 'Node SDK',
    render: (v) => `// npm run pack (in Switchyard's clone) writes the tarballs; install them:
// npm install /path/to/switchyard-core-*.tgz /path/to/switchyard-sdk-*.tgz
import { SwitchyardClient } from '@switchyard/sdk';

const client = new SwitchyardClient({
  sdkKey: '${v.serverKey ?? SERVER_KEY_PLACEHOLDER}',
  environmentId: '${v.environmentId}',
  baseUrl: '${v.restBase}',
  syncUrl: '${v.syncTls ? `https://${v.syncAddress}` : v.syncAddress}',
});
await client.waitForReady({ timeoutMs: 5000 });
console.log(client.variation('${v.flagKey}', { key: 'user-1' }, false));
await client.close();`,
  },
  {
    id: 'openfeature',
    label: 'OpenFeature (server)',
    render: (v) => `// npm install @openfeature/server-sdk (and the two tarballs above)
import { OpenFeature } from '@openfeature/server-sdk';
import { SwitchyardProvider } from '@switchyard/sdk/openfeature';

await OpenFeature.setProviderAndWait(new SwitchyardProvider({
  sdkKey: '${v.serverKey ?? SERVER_KEY_PLACEHOLDER}',
  environmentId: '${v.environmentId}',
  baseUrl: '${v.restBase}',
  syncUrl: '${v.syncTls ? `https://${v.syncAddress}` : v.syncAddress}',
}));
const flags = OpenFeature.getClient();
console.log(await flags.getBooleanValue('${v.flagKey}', false, { targetingKey: 'user-1' }));`,
  },
  {
    id: 'ofrep',
    label: 'OFREP with curl',
    render: (v) => `curl -s -X POST '${v.restBase}/ofrep/v1/evaluate/flags/${v.flagKey}' \\
  -H 'Authorization: Bearer ${v.serverKey ?? SERVER_KEY_PLACEHOLDER}' \\
  -H 'Content-Type: application/json' \\
  -d '{"context":{"targetingKey":"user-1"}}'`,
  },
  {
    id: 'browser',
    label: 'Browser (@switchyard/web)',
    render: (v) => `// A client key (SDK keys page: "Create a client key", with your page's origin), and the
// flag marked "Visible to client keys". npm install @openfeature/web-sdk @openfeature/ofrep-web-provider
import { OpenFeature } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { anonymousTargetingKey, createSwitchyardWeb } from '@switchyard/web';

const web = createSwitchyardWeb({
  baseUrl: '${v.restBase}',
  environmentId: '${v.environmentId}',
  clientKey: '${CLIENT_KEY_PLACEHOLDER}',
});
OpenFeature.addHooks(web.exposureHook);
await OpenFeature.setContext({ targetingKey: anonymousTargetingKey() });
await OpenFeature.setProviderAndWait(new OFREPWebProvider(web.providerOptions()));
console.log(OpenFeature.getClient().getBooleanValue('${v.flagKey}', false));`,
  },
];

/** The REST base and the sync address: PUBLIC_URL or this page's origin, and its host on the sync port. */
export function addressesOf(settings: ConsoleSettings, origin: string): { restBase: string; syncAddress: string } {
  const restBase = (settings.public_url ?? origin).replace(/\/+$/, '');
  return { restBase, syncAddress: `${new URL(restBase).hostname}:${settings.sync_port}` };
}

function Step({ done, title, children }: { done: boolean; title: string; children?: ComponentChildren }) {
  return (
    <li class={done ? 'done' : undefined} data-done={done ? 'true' : 'false'}>
      <strong>
        <span aria-hidden="true">{done ? '✓ ' : '○ '}</span>
        {title}
        <span class="visually-hidden">{done ? ' (done)' : ' (to do)'}</span>
      </strong>
      {children}
    </li>
  );
}

/**
 * The getting-started checklist of an environment (docs/console.md "Getting started checklist"):
 * create a flag, create a key, install an SDK from a snippet with this environment's values filled
 * in, then wait for the first evaluation, which ticks when a key of the environment has a last use
 * (`last_used_at_ms`, polled). Shown until the environment's keys have been used; once they have,
 * it is shown only if that happened while the page was open (so the tick is seen), else not at all.
 */
export function GettingStarted({ workspace, environment }: EnvironmentPageProps) {
  const { api } = workspace;
  const envId = environment.environment_id;
  const [round, setRound] = useState(0);
  const state = useLoad(async () => {
    const [flags, keys] = await Promise.all([
      api.get<Flag[]>(apiPath`/v1/environments/${envId}/flags`),
      api.get<SdkKey[]>(apiPath`/v1/management/environments/${envId}/sdk-keys`),
    ]);
    return { flags: flags.filter((flag) => !flag.archived), keys };
  }, [envId, round]);
  const settings = useLoad(() => api.get<ConsoleSettings>('/v1/console/settings'), []);
  const [createdKey, setCreatedKey] = useState<string | null>(null);
  const [createError, setCreateError] = useState<unknown>(undefined);
  const [snippet, setSnippet] = useState('node');
  // Whether the first evaluation was still awaited when this page opened (then its tick is shown).
  const [waited, setWaited] = useState<boolean | undefined>(undefined);
  const evaluated = state.data?.keys.some((key) => key.last_used_at_ms !== null && key.last_used_at_ms !== undefined) ?? false;
  const needed = state.data !== undefined && (!evaluated || state.data.flags.length === 0);
  useEffect(() => {
    if (state.data && waited === undefined) setWaited(needed);
  }, [state.data]);
  useEffect(() => {
    setCreatedKey(null);
    setWaited(undefined);
  }, [envId]);
  // Polls until the first evaluation has arrived (a failed poll is shown and retried).
  useEffect(() => {
    if (evaluated && (state.data?.flags.length ?? 0) > 0) return undefined;
    const timer = setTimeout(() => setRound((n) => n + 1), POLL_MS);
    return () => clearTimeout(timer);
  }, [state.data, state.error]);

  if (!state.data || !(waited ?? needed)) return <ErrorMessage error={state.error} />;
  const { flags, keys } = state.data;
  const serverKeys = keys.filter((key) => key.kind !== 'client');
  const addresses = settings.data ? addressesOf(settings.data, location.origin) : { restBase: location.origin, syncAddress: `${location.hostname}:50050` };
  const values: SnippetValues = {
    serverKey: createdKey,
    environmentId: envId,
    restBase: addresses.restBase,
    syncAddress: addresses.syncAddress,
    syncTls: settings.data?.sync_tls ?? false,
    flagKey: flags[0]?.key ?? 'my-flag',
  };
  const chosen = SNIPPETS.find((candidate) => candidate.id === snippet) ?? SNIPPETS[0]!;
  const text = chosen.render(values);
  const allDone = flags.length > 0 && serverKeys.length > 0 && evaluated;
  return (
    <section class="checklist" aria-labelledby="getting-started-title">
      <h2 id="getting-started-title">Getting started</h2>
      <p>
        Environment <strong>{environment.environment_name}</strong>, id <code data-testid="environment-id">{envId}</code>{' '}
        <CopyButton value={envId} label="Copy environment id" />
      </p>
      <ErrorMessage error={state.error ?? settings.error} />
      <ol>
        <Step done={flags.length > 0} title="Create a flag">
          {flags.length === 0 ? <p>Use the "New flag" form below. A new flag serves its first variant once you turn it on.</p> : <p>Your first flag: <code>{flags[0]!.key}</code>.</p>}
        </Step>
        <Step done={serverKeys.length > 0} title="Create an SDK key">
          {createdKey !== null ? (
            <div class="notice" role="status">
              <p>New server key created. It is filled into the snippets below; copy it now: it will not be shown again.</p>
              <p>
                <code data-testid="checklist-sdk-key">{createdKey}</code> <CopyButton value={createdKey} label="Copy key" />
              </p>
            </div>
          ) : (
            <p>
              {serverKeys.length > 0
                ? `This environment has ${serverKeys.length === 1 ? 'a server key' : `${serverKeys.length} server keys`} (shown once, when created): the snippets say ${SERVER_KEY_PLACEHOLDER} where yours goes, or create a new one to have it filled in.`
                : 'A server key lets your backend read this environment\'s flags.'}{' '}
              <button
                type="button"
                onClick={async () => {
                  setCreateError(undefined);
                  try {
                    const key = await api.post<SdkKey>(apiPath`/v1/management/environments/${envId}/sdk-keys`);
                    setCreatedKey(key.raw_key ?? null);
                    setRound((n) => n + 1);
                  } catch (error) {
                    setCreateError(error);
                  }
                }}
              >
                Create a server key
              </button>{' '}
              <a href={hrefOf({ envId, page: 'sdk-keys' })}>All keys, and client keys for browsers</a>
            </p>
          )}
          <ErrorMessage error={createError} />
        </Step>
        <Step done={evaluated} title="Install the SDK">
          <p>
            REST <code data-testid="rest-base">{values.restBase}</code>, sync <code data-testid="sync-address">{values.syncAddress}</code>
            {values.syncTls ? ' (TLS)' : ''}.
          </p>
          <div role="group" aria-label="SDK">
            {SNIPPETS.map((candidate) => (
              <button type="button" aria-pressed={candidate.id === chosen.id} onClick={() => setSnippet(candidate.id)}>
                {candidate.label}
              </button>
            ))}
          </div>
          <pre class="snippet" data-testid="snippet" aria-label={`${chosen.label} snippet`}>
            <code>{text}</code>
          </pre>
          <CopyButton value={text} label="Copy snippet" />
        </Step>
        <Step done={evaluated} title={evaluated ? 'First evaluation received' : 'Waiting for your first evaluation…'}>
          <p role="status" data-testid="first-evaluation">
            {evaluated ? (allDone ? 'Your app is talking to Switchyard. You are set up.' : 'A key of this environment has been used.') : 'Run the snippet: this ticks when a key of this environment opens a sync stream or evaluates.'}
          </p>
        </Step>
      </ol>
    </section>
  );
}
