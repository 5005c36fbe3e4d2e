import type { EventDefinition, MetricAggregation } from '../records.ts';
import { DEFAULT_PERCENTILE, defaultAggregation, newMetricDraft, percentileName, type DraftUpdate, type MetricDraft, type QuantileUnit, type SourceDraft } from './experiment-setup.ts';

const AGGREGATIONS: Array<[MetricAggregation, string]> = [
  ['conversion', 'Conversion (any event)'],
  ['sum', 'Sum of values'],
  ['count', 'Count of events'],
  ['mean', 'Mean of values'],
];

const valueOf = (event: Event) => (event.target as HTMLInputElement | HTMLSelectElement).value;
const checkedOf = (event: Event) => (event.target as HTMLInputElement).checked;

/** The event keys to choose from: the environment's definitions, plus one a metric names that is gone. */
function EventSelect({ label, value, definitions, onChange }: { label: string; value: string; definitions: EventDefinition[]; onChange: (key: string) => void }) {
  const keys = definitions.map((d) => d.key);
  if (value !== '' && !keys.includes(value)) keys.push(value);
  return (
    <label>
      {label}
      <select required value={value} onChange={(e) => onChange(valueOf(e))}>
        {value === '' && <option value="">Choose an event</option>}
        {keys.map((key) => (
          <option value={key}>{key}</option>
        ))}
      </select>
    </label>
  );
}

/**
 * An aggregated event: which event, how it is aggregated, and its window; `side` names a ratio's
 * side. `aggregated` false: the event's values are read one by one (a per-event percentile), no
 * aggregation is asked.
 */
function SourceFields({ side, source, definitions, aggregated = true, onChange }: { side?: 'Numerator' | 'Denominator'; source: SourceDraft; definitions: EventDefinition[]; aggregated?: boolean; onChange: DraftUpdate<SourceDraft> }) {
  const name = (words: string) => (side ? `${side} ${words}` : words.replace(/^./, (c) => c.toUpperCase()));
  return (
    <>
      <EventSelect
        label={name('event')}
        value={source.eventKey}
        definitions={definitions}
        // A new event takes its type's usual aggregation; it can be changed after.
        onChange={(eventKey) => onChange((current) => ({ ...current, eventKey, aggregation: defaultAggregation(definitions.find((d) => d.key === eventKey)) }))}
      />
      {aggregated && (
        <label>
          {name('aggregation')}
          <select value={source.aggregation} onChange={(e) => {
              const aggregation = valueOf(e) as MetricAggregation;
              onChange((current) => ({ ...current, aggregation }));
            }}>
            {AGGREGATIONS.map(([value, words]) => (
              <option value={value}>{words}</option>
            ))}
          </select>
        </label>
      )}
      <label>
        {name('window (days after exposure)')}
        <input type="number" min="0" step="any" placeholder="to the end" value={source.windowDays} onInput={(e) => {
          const windowDays = valueOf(e);
          onChange((current) => ({ ...current, windowDays }));
        }} />
      </label>
    </>
  );
}

/**
 * An event metric's statistic: the mean, or a percentile (docs/statistics.md §15) with its p in
 * percent and its unit, each participant's aggregated value or every event's own value.
 */
function StatisticFields({ draft, set }: { draft: MetricDraft; set: (patch: Partial<MetricDraft>) => void }) {
  return (
    <>
      <label>
        Statistic
        <select value={draft.statistic} onChange={(e) => {
            const statistic = valueOf(e) as MetricDraft['statistic'];
            // A row that had its percentile emptied is offered p90 again.
            set(statistic === 'percentile' && draft.percentile.trim() === '' ? { statistic, percentile: DEFAULT_PERCENTILE } : { statistic });
          }}>
          <option value="mean">Mean</option>
          <option value="percentile">Percentile (e.g. p90)</option>
        </select>
      </label>
      {draft.statistic === 'percentile' && (
        <>
          <label>
            Percentile (90 = p90)
            <input type="number" min="0.1" max="99.9" step="any" required value={draft.percentile} onInput={(e) => set({ percentile: valueOf(e) })} />
          </label>
          <label>
            Percentile of
            <select value={draft.percentileUnit} onChange={(e) => set({ percentileUnit: valueOf(e) as QuantileUnit })}>
              <option value="participant">Each participant's value (per participant)</option>
              <option value="event">Each event's value (per event)</option>
            </select>
          </label>
        </>
      )}
    </>
  );
}

/** One metric's row: its kind, events, statistic, direction, capping, CUPED and guardrail; `n` from 1. */
function MetricRow({ n, draft, definitions, onChange, onRemove }: { n: number; draft: MetricDraft; definitions: EventDefinition[]; onChange: DraftUpdate<MetricDraft>; onRemove: () => void }) {
  const set = (patch: Partial<MetricDraft>) => onChange((current) => ({ ...current, ...patch }));
  // A percentile is neither capped nor CUPED-adjusted (the API refuses both, docs/contract.md "Experiments").
  const percentile = draft.kind === 'event' && draft.statistic === 'percentile';
  return (
    <fieldset class="rule metric-row">
      <legend>Metric {n}</legend>
      <div class="condition">
        <label>
          Type
          <select value={draft.kind} onChange={(e) => set({ kind: valueOf(e) as MetricDraft['kind'] })}>
            <option value="event">Event metric</option>
            <option value="ratio">Ratio metric</option>
          </select>
        </label>
        <label>
          Key
          <input
            value={draft.key}
            required={draft.kind === 'ratio'}
            placeholder={draft.kind === 'event' ? draft.event.eventKey || 'the event key' : 'e.g. revenue-per-session'}
            onInput={(e) => set({ key: valueOf(e) })}
          />
        </label>
        <label>
          Good direction
          <select value={draft.direction} onChange={(e) => set({ direction: valueOf(e) as MetricDraft['direction'] })}>
            <option value="increase">Higher is better</option>
            <option value="decrease">Lower is better</option>
          </select>
        </label>
      </div>
      {draft.kind === 'event' ? (
        <>
          <div class="condition">
            <SourceFields
              source={draft.event}
              definitions={definitions}
              aggregated={!(percentile && draft.percentileUnit === 'event')}
              onChange={(update) => onChange((current) => ({ ...current, event: update(current.event) }))}
            />
          </div>
          <div class="condition">
            <StatisticFields draft={draft} set={set} />
          </div>
        </>
      ) : (
        <>
          <div class="condition">
            <SourceFields side="Numerator" source={draft.numerator} definitions={definitions} onChange={(update) => onChange((current) => ({ ...current, numerator: update(current.numerator) }))} />
          </div>
          <div class="condition">
            <SourceFields side="Denominator" source={draft.denominator} definitions={definitions} onChange={(update) => onChange((current) => ({ ...current, denominator: update(current.denominator) }))} />
          </div>
        </>
      )}
      <div class="condition">
        {percentile && <p class="muted">A percentile is not capped (it is already robust to outliers) nor adjusted by CUPED (which adjusts means).</p>}
        {draft.kind === 'event' && !percentile && (
          <>
            <label>
              Capping
              <select value={draft.capping} onChange={(e) => set({ capping: valueOf(e) as MetricDraft['capping'] })}>
                <option value="none">None</option>
                <option value="absolute">Absolute values</option>
                <option value="percentile">Percentiles (0 to 1)</option>
              </select>
            </label>
            {draft.capping !== 'none' && (
              <>
                <label>
                  Lower cap
                  <input type="number" step="any" value={draft.capLower} onInput={(e) => set({ capLower: valueOf(e) })} />
                </label>
                <label>
                  Upper cap
                  <input type="number" step="any" value={draft.capUpper} onInput={(e) => set({ capUpper: valueOf(e) })} />
                </label>
              </>
            )}
            {draft.capping === 'percentile' && (
              <label>
                <input type="checkbox" checked={draft.ignoreZeros} onChange={(e) => set({ ignoreZeros: checkedOf(e) })} />
                Ignore zeros in the percentiles
              </label>
            )}
          </>
        )}
        {!percentile && (
          <label>
            <input type="checkbox" checked={draft.cuped} onChange={(e) => set({ cuped: checkedOf(e) })} />
            CUPED (adjust by pre-exposure values)
          </label>
        )}
        {draft.cuped && !percentile && (
          <label>
            Lookback (days)
            <input type="number" min="0" step="any" required value={draft.lookbackDays} onInput={(e) => set({ lookbackDays: valueOf(e) })} />
          </label>
        )}
        <label>
          <input type="checkbox" checked={draft.guardrail} onChange={(e) => set({ guardrail: checkedOf(e) })} />
          Guardrail (watched for harm)
        </label>
        {draft.guardrail && (
          <>
            <label>
              Margin kind
              <select value={draft.guardrailMarginKind} onChange={(e) => set({ guardrailMarginKind: valueOf(e) as MetricDraft['guardrailMarginKind'] })}>
                <option value="relative">{percentile ? `Relative (of the control's ${percentileName(draft.percentile)})` : "Relative (of the control's mean)"}</option>
                <option value="absolute">Absolute (the metric's units)</option>
              </select>
            </label>
            <label>
              {draft.guardrailMarginKind === 'relative' ? 'Tolerated harm (0.02 = 2 %)' : 'Tolerated harm (metric units)'}
              <input type="number" min="0" step="any" placeholder="0" value={draft.guardrailMargin} onInput={(e) => set({ guardrailMargin: valueOf(e) })} />
            </label>
          </>
        )}
        <button type="button" class="danger" onClick={onRemove}>
          Remove metric {n}
        </button>
      </div>
    </fieldset>
  );
}

/** The metric definitions of an experiment: rows to add, change and remove; the first is the primary metric. */
export function MetricRows({ metrics, definitions, onChange }: { metrics: MetricDraft[]; definitions: EventDefinition[]; onChange: DraftUpdate<MetricDraft[]> }) {
  return (
    <fieldset>
      <legend>Metrics (the first is the primary one)</legend>
      {metrics.map((draft, i) => (
        <MetricRow
          n={i + 1}
          draft={draft}
          definitions={definitions}
          onChange={(update) => onChange((current) => current.map((m, j) => (j === i ? update(m) : m)))}
          onRemove={() => onChange((current) => current.filter((_, j) => j !== i))}
        />
      ))}
      {definitions.length === 0 && <p class="muted">No event definitions yet: create one under Event definitions first.</p>}
      <button type="button" disabled={definitions.length === 0} onClick={() => onChange((current) => [...current, newMetricDraft(definitions)])}>
        Add a metric
      </button>
    </fieldset>
  );
}
