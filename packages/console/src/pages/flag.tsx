import { useEffect, useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import type { EnvironmentPageProps } from '../app.tsx';
import { ErrorMessage, Loading, useLoad } from '../components/common.tsx';
import { hasDefaultRule, isUnconditional, needsDefaultRuleWarning, newDefaultRule } from '../components/default-rule.ts';
import { ClientVisibility, DeleteFlag, FlagMetadata, Hashing, SaveProblem, Settings } from '../components/flag-settings.tsx';
import { VariantsTab } from '../components/flag-variants.tsx';
import { Prerequisites } from '../components/flag-prerequisites.tsx';
import { HistoryList, useHistoryNames } from '../components/history-list.tsx';
import { FlagSchedules, RevertButton } from '../components/flag-schedules.tsx';
import { FlagInsightsTab } from '../components/flag-insights.tsx';
import { RuleEditor, totalPercent } from '../components/rule-editor.tsx';
import { atIndex } from '../components/draft-updates.ts';
import { Tabs } from '../components/tabs.tsx';
import type { ApprovalPolicy, AuditEntry, ConsoleFlag, ContextAttributeRecord, Flag, Rule, Segment } from '../records.ts';
import { hrefOf, navigate } from '../router.ts';

const TABS: Array<[string, string]> = [
  ['targeting', 'Targeting'],
  ['variants', 'Variants'],
  ['settings', 'Settings'],
  ['schedule', 'Schedule'],
  ['insights', 'Insights'],
  ['history', 'History'],
];

/** An attribute name and, when known, the context type it belongs to (undefined: any). */
type NamedAttribute = [contextType: string | undefined, name: string];

/** Suggestions for a condition's attribute: every name, and per context type its own (any name may still be typed). */
export interface AttributeSuggestions {
  all: string[];
  byType: Map<string, string[]>;
}

/**
 * The attribute names the environment's rules and segments use, those of the project's other
 * environments, and the names contexts recently evaluated in this environment used
 * (GET /v1/environments/{env_id}/context-attributes, one fetch per page; names only).
 */
async function attributeNames(api: EnvironmentPageProps['workspace']['api'], environmentId: string, environmentIds: string[]): Promise<AttributeSuggestions> {
  const named: NamedAttribute[] = [];
  await Promise.all([
    ...environmentIds.map(async (id) => {
      const [flags, segments] = await Promise.all([
        api.get<Flag[]>(apiPath`/v1/environments/${id}/flags`).catch(() => [] as Flag[]),
        api.get<Segment[]>(apiPath`/v1/environments/${id}/segments`).catch(() => [] as Segment[]),
      ]);
      for (const flag of flags) for (const rule of flag.rules) for (const condition of rule.conditions) named.push([condition.context_type, condition.attribute]);
      for (const segment of segments) for (const condition of segment.conditions ?? []) named.push([condition.context_type ?? segment.context_type, condition.attribute]);
    }),
    api
      .get<{ attributes: ContextAttributeRecord[] }>(apiPath`/v1/environments/${environmentId}/context-attributes`)
      .then(({ attributes }) => {
        for (const attribute of attributes) named.push([attribute.context_type, attribute.name]);
      })
      .catch(() => undefined),
  ]);
  const sorted = (names: Iterable<string>) => [...new Set(names)].filter((name) => name !== '').sort();
  const types = new Set(named.flatMap(([type]) => (type === undefined ? [] : [type])));
  // A type's list: its own names and those of no known type.
  const byType = new Map([...types].map((type) => [type, sorted(named.filter(([t]) => t === type || t === undefined).map(([, name]) => name))]));
  return { all: sorted(named.map(([, name]) => name)), byType };
}

/** Said on the page (and in the list) for a flag that is on with no default rule. */
export function DefaultRuleWarning({ flag, environmentName }: { flag: Flag; environmentName: string }) {
  if (!needsDefaultRuleWarning(flag)) return null;
  return (
    <p class="warning">
      <strong>Warning:</strong> on in {environmentName} without a default rule. Contexts that no rule matches get {flag.off_variant_key ? `the off variant, ${flag.off_variant_key}` : "the SDK's default value"} (reason DEFAULT), as if the flag were off. Add a default rule in Targeting to choose what they get.
    </p>
  );
}

export function FlagPage({ workspace, environment, project, flagKey, tab }: EnvironmentPageProps & { flagKey: string; tab?: string }) {
  const { api } = workspace;
  const path = apiPath`/v1/environments/${environment.environment_id}/flags/${flagKey}`;
  const selected = TABS.some(([id]) => id === tab) ? tab! : 'targeting';
  const projectEnvironments = workspace.environments.filter((e) => e.project_id === project.project_id);
  const flag = useLoad(() => api.get<Flag>(path), [path]);
  const history = useLoad(() => api.get<{ entries: AuditEntry[] }>(`${path}/history?limit=50`), [path, flag.data?.version]);
  const names = useHistoryNames(api, workspace.session.org_id, workspace.environments);
  const segments = useLoad(() => api.get<Segment[]>(apiPath`/v1/environments/${environment.environment_id}/segments`), [environment.environment_id]);
  const attributes = useLoad(() => attributeNames(api, environment.environment_id, [environment.environment_id, ...projectEnvironments.filter((e) => e.environment_id !== environment.environment_id).map((e) => e.environment_id)]), [environment.environment_id]);
  const [draft, setDraft] = useState<Rule[] | undefined>(undefined);
  // An environment whose policy requires approval takes changes as change requests (docs/workflow.md "Change requests and approvals").
  const policy = useLoad(() => api.get<ApprovalPolicy>(apiPath`/v1/management/environments/${environment.environment_id}/approval-policy`), [environment.environment_id]);
  const [requestError, setRequestError] = useState<unknown>(undefined);
  const [saveError, setSaveError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState('');
  const [switching, setSwitching] = useState<boolean | undefined>(undefined);
  const [switched, setSwitched] = useState('');
  // Which rule the draft shows as the default rule: the saved flag's (its last rule, when
  // unconditional) until "Add a default rule" or "Remove the default rule" says otherwise. It is
  // not recomputed from the draft, so a rule added with "Add rule", or one whose last condition is
  // removed, stays a rule with its editor instead of turning into the default rule mid-edit.
  const [draftDefaultId, setDraftDefaultId] = useState<string | null | undefined>(undefined);
  useEffect(() => setDraft(undefined), [path]);
  useEffect(() => {
    if (draft === undefined) setDraftDefaultId(undefined);
  }, [draft]);
  useEffect(() => setSwitching(undefined), [flag.data?.version, flag.data?.enabled]);

  if (flag.error && !flag.data) return <ErrorMessage error={flag.error} />;
  if (!flag.data) return <Loading what="the flag" />;
  const current = flag.data;
  const rules = draft ?? current.rules;
  const dirty = draft !== undefined;
  const invalidSplit = rules.some((r) => r.allocation && totalPercent(r) !== 100);
  // The default rule is the last rule when it is unconditional; the others are listed above it.
  const savedDefaultId = hasDefaultRule(current.rules) ? current.rules[current.rules.length - 1]!.id : null;
  const defaultId = draftDefaultId !== undefined ? draftDefaultId : savedDefaultId;
  const last = rules[rules.length - 1];
  const defaultRule = last !== undefined && defaultId !== null && last.id === defaultId && isUnconditional(last) ? last : undefined;
  const ordinary = defaultRule ? rules.slice(0, -1) : rules;
  const withDefault = (list: Rule[]): Rule[] => (defaultRule ? [...list, defaultRule] : list);

  const setRules = (next: Rule[]) => {
    setDraft(next);
    setSaved('');
  };
  /** An edit inside a rule: applied to the draft as it is then (see `DraftUpdate`). */
  const updateRules = (update: (current: Rule[]) => Rule[]) => {
    setDraft((pending) => update(pending ?? current.rules));
    setSaved('');
  };
  const saveRules = async () => {
    setSaveError(undefined);
    try {
      const updated = await api.put<Flag>(`${path}/rules`, { rules: rules.map((r, i) => ({ ...r, id: r.id || `rule-${i + 1}` })), version: current.version });
      // The saved flag, with its new version, at once: the next save (the switch pressed right
      // after, say) must not be sent with the version from before this one, which the API
      // refuses as "changed by someone else".
      setDraft(undefined);
      setSaved('Rules saved.');
      flag.set(updated);
    } catch (error) {
      setSaveError(error);
    }
  };
  const ruleId = (base: string) => (rules.some((r) => r.id === base) ? `${base}-${Date.now().toString(36)}` : base);
  const attributeListId = 'attribute-suggestions';
  // One datalist per context type (ids by position: a type is free text).
  const typeLists: Array<[string, string]> = [...(attributes.data?.byType.keys() ?? [])].map((type, i) => [type, `${attributeListId}-${i}`]);
  const attributeListIdFor = (contextType: string) => typeLists.find(([type]) => type === contextType)?.[1];

  return (
    <section>
      <p>
        <a href={hrefOf({ envId: environment.environment_id, page: 'flags' })}>← All flags</a>
      </p>
      <h1>{current.key}</h1>
      <p class="muted">
        {current.value_type} flag{current.description ? ` — ${current.description}` : ''} · version {current.version} in {environment.environment_name}
        {current.archived ? ' · archived' : ''}
      </p>
      {policy.data?.required && (
        <div class="card" data-testid="request-change">
          <p>
            Changes in {environment.environment_name} need {policy.data.min_approvals} approval{policy.data.min_approvals === 1 ? '' : 's'}: request them instead of saving.
            {policy.data.kill_switch_exempt ? ' Turning the flag off needs none.' : ''}
          </p>
          <button
            type="button"
            onClick={async () => {
              setRequestError(undefined);
              const operations: unknown[] = dirty
                ? [{ op: 'set_rules', rules: rules.map((r, i) => ({ ...r, id: r.id || `rule-${i + 1}` })), version: current.version }]
                : [{ op: 'set_enabled', enabled: !current.enabled }];
              const title = dirty ? `Change the rules of ${current.key}` : `Turn ${current.key} ${current.enabled ? 'off' : 'on'}`;
              try {
                const created = await api.post<{ id: string }>(apiPath`/v1/environments/${environment.environment_id}/change-requests`, {
                  title,
                  changes: [{ flag_key: current.key, operations, version: current.version }],
                  submit: true,
                });
                navigate({ envId: environment.environment_id, page: 'change-requests', id: created.id });
              } catch (error) {
                setRequestError(error);
              }
            }}
          >
            {dirty ? 'Request change: these rules' : `Request change: turn ${current.enabled ? 'off' : 'on'}`}
          </button>
          <ErrorMessage error={requestError} />
        </div>
      )}
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={switching ?? current.enabled}
          aria-busy={switching !== undefined}
          onChange={async () => {
            // Shown at once and held until the saved flag is back, so the switch never flickers;
            // a second press meanwhile is ignored (the control stays focusable for keyboards).
            // The flag the API answers with replaces the page's copy in the same render that
            // says "Turned on.", so what is on screen always carries the flag's current version.
            if (switching !== undefined) return;
            const target = !current.enabled;
            setSwitching(target);
            setSaveError(undefined);
            setSwitched('');
            try {
              const updated = await api.put<Flag>(path, { enabled: target, version: current.version });
              setSwitched(target ? 'Turned on.' : 'Turned off.');
              setSwitching(undefined);
              flag.set(updated);
            } catch (error) {
              setSaveError(error);
              setSwitching(undefined);
              flag.reload();
            }
          }}
        />
        <span>{(switching ?? current.enabled) ? `On in ${environment.environment_name}` : `Off in ${environment.environment_name} (serves ${current.off_variant_key ?? 'nothing'})`}</span>
        <span role="status">{switched}</span>
      </label>
      <DefaultRuleWarning flag={current} environmentName={environment.environment_name} />

      <Tabs label={`${current.key}`} tabs={TABS} selected={selected} onSelect={(id) => navigate({ envId: environment.environment_id, page: 'flags', id: flagKey, tab: id })}>
        {selected === 'targeting' && (
          <>
            <Prerequisites path={path} flag={current} api={api} environmentId={environment.environment_id} onSaved={flag.set} onReload={flag.reload} />
            <h2>Rules</h2>
            <p class="muted">Rules are tried in order; the first that matches decides. The default rule, at the bottom, serves every context that no rule above matches.</p>
            <datalist id={attributeListId}>
              {(attributes.data?.all ?? []).map((name) => (
                <option value={name} />
              ))}
            </datalist>
            {typeLists.map(([type, id]) => (
              <datalist id={id} data-context-type={type}>
                {(attributes.data?.byType.get(type) ?? []).map((name) => (
                  <option value={name} />
                ))}
              </datalist>
            ))}
            <form
              aria-label="Rules"
              onSubmit={(event) => {
                event.preventDefault();
                void saveRules();
              }}
            >
              {ordinary.map((rule, i) => (
                <RuleEditor
                  flag={current}
                  rule={rule}
                  index={i}
                  count={ordinary.length}
                  segments={segments.data}
                  attributeListId={attributeListId}
                  attributeListIdFor={attributeListIdFor}
                  onChange={(update) => updateRules(atIndex(i, update))}
                  onRemove={() => setRules(withDefault(ordinary.filter((_, j) => j !== i)))}
                  onMove={(delta) => {
                    const next = [...ordinary];
                    const [moved] = next.splice(i, 1);
                    next.splice(i + delta, 0, moved!);
                    setRules(withDefault(next));
                  }}
                />
              ))}
              {ordinary.length === 0 && <p class="muted">No targeting rules{defaultRule ? ': the default rule serves everyone.' : '.'}</p>}
              <div class="row">
                <button type="button" onClick={() => setRules(withDefault([...ordinary, { id: ruleId(`rule-${Date.now().toString(36)}`), conditions: [], variant_key: current.variants[0]?.key ?? '' }]))}>
                  Add rule
                </button>
              </div>
              <h3>Default rule</h3>
              {defaultRule ? (
                <RuleEditor
                  flag={current}
                  rule={defaultRule}
                  index={rules.length - 1}
                  count={rules.length}
                  segments={segments.data}
                  isDefault
                  onChange={(update) => updateRules((list) => list.map((r, j) => (j === list.length - 1 ? update(r) : r)))}
                  onRemove={() => {
                    setDraftDefaultId(null);
                    setRules(ordinary);
                  }}
                  onMove={() => undefined}
                />
              ) : (
                <div class="rule">
                  <p>
                    No default rule: a context that no rule matches gets {current.off_variant_key ? `the off variant, ${current.off_variant_key}` : "the SDK's default value"}, even when the flag is on.
                  </p>
                  <button
                    type="button"
                    onClick={() => {
                      const added = { ...newDefaultRule(current), id: ruleId('default') };
                      setRules([...rules, added]);
                      setDraftDefaultId(added.id);
                    }}
                  >
                    Add a default rule
                  </button>
                </div>
              )}
              <div class="row">
                <button type="submit" disabled={!dirty || invalidSplit}>
                  Save rules
                </button>
                {dirty && (
                  <button type="button" onClick={() => setDraft(undefined)}>
                    Discard changes
                  </button>
                )}
              </div>
              <SaveProblem
                error={saveError}
                onReload={() => {
                  setSaveError(undefined);
                  setDraft(undefined);
                  flag.reload();
                }}
              />
              <p role="status">{saved}</p>
            </form>
            <ErrorMessage error={segments.error} />
          </>
        )}

        {selected === 'variants' && (
          <>
            <h2>Variants</h2>
            <VariantsTab path={path} flag={current} api={api} environments={projectEnvironments} onSaved={flag.set} />
          </>
        )}

        {selected === 'settings' && (
          <>
            <Settings path={path} flag={current} api={api} onSaved={flag.set} onReload={flag.reload} environmentName={environment.environment_name} />
            <FlagMetadata path={path} flag={current} api={api} onSaved={flag.set} onReload={flag.reload} />
            <ClientVisibility path={path} flag={current as ConsoleFlag} api={api} onSaved={flag.set} onReload={flag.reload} />
            <Hashing path={path} flag={current} api={api} onSaved={flag.set} />
            <DeleteFlag path={path} flag={current} api={api} onDeleted={() => navigate({ envId: environment.environment_id, page: 'flags' })} />
          </>
        )}

        {selected === 'schedule' && <FlagSchedules path={path} flag={current} api={api} environmentName={environment.environment_name} />}

        {selected === 'insights' && <FlagInsightsTab api={api} path={path} flag={current} environment={environment} project={project} />}

        {selected === 'history' && (
          <>
            <h2>History</h2>
            <p class="muted">Changes to this flag in {environment.environment_name}, and to what every environment of the project shares (variants, description), newest first.</p>
            <ErrorMessage error={history.error} />
            {history.data && (
              <HistoryList
                entries={history.data.entries}
                names={names}
                action={(entry) => <RevertButton entry={entry} path={path} environmentId={environment.environment_id} api={api} onReverted={flag.set} />}
              />
            )}
          </>
        )}
      </Tabs>
    </section>
  );
}
