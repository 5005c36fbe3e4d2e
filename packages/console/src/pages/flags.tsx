import { apiPath } from '../api.ts';
import { useEffect, useState } from 'preact/hooks';
import type { EnvironmentPageProps } from '../app.tsx';
import { ActionForm, ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { needsDefaultRuleWarning } from '../components/default-rule.ts';
import { allTags, withEveryTag } from '../components/draft-updates.ts';
import { GettingStarted } from '../components/getting-started.tsx';
import { LastEvaluated, StatusBadge } from '../components/flag-status.tsx';
import type { Flag, ListedFlag } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

const DEFAULT_VARIANTS: Record<string, Array<{ key: string; value: unknown }>> = {
  bool: [{ key: 'on', value: true }, { key: 'off', value: false }],
  string: [{ key: 'control', value: 'control' }, { key: 'treatment', value: 'treatment' }],
  int: [{ key: 'low', value: 0 }, { key: 'high', value: 1 }],
  double: [{ key: 'low', value: 0 }, { key: 'high', value: 1 }],
  json: [{ key: 'empty', value: {} }],
};

/** A flag's state in each environment of the project, by environment id (the same key in each). */
type StateByEnvironment = Map<string, Flag>;

export function FlagsPage({ workspace, environment, project }: EnvironmentPageProps) {
  const { api } = workspace;
  const base = apiPath`/v1/environments/${environment.environment_id}/flags`;
  // Every environment of the project, this one first: the list shows each flag on or off in each.
  const environments = [environment, ...workspace.environments.filter((e) => e.project_id === project.project_id && e.environment_id !== environment.environment_id)];
  const flags = useLoad(async () => {
    // This environment's list carries each flag's status and last evaluation here (docs/insights.md).
    const lists = await Promise.all(environments.map((e, i) => api.get<ListedFlag[]>(i === 0 ? apiPath`/v1/environments/${e.environment_id}/flags?include=insights` : apiPath`/v1/environments/${e.environment_id}/flags`)));
    const states = new Map<string, StateByEnvironment>();
    lists.forEach((list, i) => {
      for (const flag of list) {
        if (!states.has(flag.key)) states.set(flag.key, new Map());
        states.get(flag.key)!.set(environments[i]!.environment_id, flag);
      }
    });
    return { here: lists[0]!, states };
  }, [base, environments.length]);
  const [search, setSearch] = useState('');
  // The tag filter: the flags carrying this tag ('' = any).
  const [tag, setTag] = useState('');
  const [toggleError, setToggleError] = useState<unknown>(undefined);
  // Switches being saved ("env/flag"): shown in their new state until the list is back.
  const [switching, setSwitching] = useState<Record<string, boolean>>({});
  useEffect(() => setSwitching({}), [flags.data]);
  const [key, setKey] = useState('');
  const [valueType, setValueType] = useState('bool');
  const needle = search.trim().toLowerCase();
  const active = (flags.data?.here ?? []).filter((f) => !f.archived);
  const tagChoices = allTags(active);
  const shown = withEveryTag(active, tag === '' ? [] : [tag]).filter((f) => needle === '' || f.key.toLowerCase().includes(needle) || f.description.toLowerCase().includes(needle));
  const toggle = async (envId: string, flag: Flag) => {
    const id = `${envId}/${flag.key}`;
    if (switching[id] !== undefined) return;
    setToggleError(undefined);
    setSwitching({ ...switching, [id]: !flag.enabled });
    try {
      await api.put(apiPath`/v1/environments/${envId}/flags/${flag.key}`, { enabled: !flag.enabled, version: flag.version });
    } catch (error) {
      setToggleError(error);
    }
    flags.reload();
  };
  return (
    <section>
      <h1>Flags in {environment.environment_name}</h1>
      <GettingStarted workspace={workspace} environment={environment} project={project} />
      <label class="search">
        Search flags
        <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
      </label>
      {(tagChoices.length > 0 || tag !== '') && (
        <label class="search">
          Filter by tag
          <select value={tag} onChange={(e) => setTag((e.target as HTMLSelectElement).value)}>
            <option value="">any tag</option>
            {[...new Set([...tagChoices, ...(tag === '' ? [] : [tag])])].map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
      )}
      <ErrorMessage error={flags.error ?? toggleError} />
      {flags.loading && !flags.data && <Loading what="flags" />}
      {flags.data && (
        <table class="list">
          <caption class="visually-hidden">Flags, with their state in each environment of {project.project_name}</caption>
          <thead>
            <tr>
              <th scope="col">Flag</th>
              <th scope="col">Type</th>
              <th scope="col">Rules</th>
              <th scope="col">Status in {environment.environment_name}</th>
              <th scope="col">Last evaluated</th>
              {environments.map((e) => (
                <th scope="col">On in {e.environment_name}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((flag) => (
              <tr>
                <td>
                  <a href={hrefOf({ envId: environment.environment_id, page: 'flags', id: flag.key })}>{flag.key}</a>
                  {flag.lifetime === 'temporary' && (
                    <>
                      {' '}
                      <span class="badge" title="Temporary: to be removed once rolled out">
                        temporary
                      </span>
                    </>
                  )}
                  {flag.description && <div class="muted">{flag.description}</div>}
                  {(flag.tags ?? []).length > 0 && (
                    <ul class="tags" aria-label={`Tags of ${flag.key}`}>
                      {(flag.tags ?? []).map((t) => (
                        <li>
                          <button type="button" class="link" title={`Show the flags tagged ${t}`} onClick={() => setTag(t)}>
                            {t}
                          </button>
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>{flag.value_type}</td>
                <td>{flag.rules.length}</td>
                <td>
                  <StatusBadge status={flag.status} />
                </td>
                <td>
                  <LastEvaluated at={flag.last_evaluated_at_ms} />
                </td>
                {environments.map((e) => {
                  const state = flags.data!.states.get(flag.key)?.get(e.environment_id);
                  if (!state) return <td>—</td>;
                  const id = `${e.environment_id}/${flag.key}`;
                  const on = switching[id] ?? state.enabled;
                  return (
                    <td>
                      <label class="switch">
                        <input type="checkbox" role="switch" checked={on} aria-busy={switching[id] !== undefined} aria-label={`${flag.key} on in ${e.environment_name}`} onChange={() => toggle(e.environment_id, state)} />
                        <span>{on ? 'On' : 'Off'}</span>
                      </label>
                      {needsDefaultRuleWarning(state) && (
                        <div class="warning-inline" title={`Contexts no rule matches get ${state.off_variant_key ?? "the SDK's default value"}`}>
                          ⚠ No default rule in {e.environment_name}
                        </div>
                      )}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {flags.data && shown.length === 0 && <p>{needle || tag ? 'No flag matches your search.' : 'No flags yet: create the first one below.'}</p>}
      <h2>New flag</h2>
      <ActionForm
        label="New flag"
        class="inline"
        onSubmit={async () => {
          const variants = DEFAULT_VARIANTS[valueType]!;
          // No `rules`: the API gives the flag its default rule (serving the first variant that is
          // not the off variant) in every environment, so turning it on serves something chosen.
          await api.post(base, { key, enabled: false, flag: { value_type: valueType, variants, off_variant_key: valueType === 'bool' ? 'off' : variants[0]!.key } });
          navigate({ envId: environment.environment_id, page: 'flags', id: key });
        }}
      >
        <label>
          Key
          <input required pattern="[A-Za-z0-9._\-]+" title="Letters, digits, dot, dash and underscore" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Type
          <select value={valueType} onChange={(e) => setValueType((e.target as HTMLSelectElement).value)}>
            {Object.keys(DEFAULT_VARIANTS).map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <button type="submit">Create flag</button>
      </ActionForm>
    </section>
  );
}
