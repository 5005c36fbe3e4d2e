import { useState } from 'preact/hooks';
import { ApiError, type Api } from '../api.ts';
import type { PowerEstimate, PowerPlan } from '../records.ts';
import { ErrorMessage } from './common.tsx';
import { metricKeyOf, metricToWire } from './experiment-setup.ts';
import { BY_HAND, formatCount, formatDays, formatPerArm, inputWords, newPowerDraft, noSampleWords, powerBody, type PowerContext, type PowerDraft } from './power-reading.ts';

const valueOf = (event: Event) => (event.target as HTMLInputElement | HTMLSelectElement).value;

/** The API's refusal with its code ("mde must be > 0 … (INVALID_ARGUMENT)"). */
export function withErrorCode(error: unknown): unknown {
  return error instanceof ApiError && error.status >= 400 && error.code !== 'UNKNOWN' ? new ApiError(error.status, error.code, `${error.message} (${error.code})`) : error;
}

/**
 * "Power and duration" on the experiment form (docs/console.md): one of the form's metrics (or a
 * mean and variance typed in), the MDE, power and window; Calculate sends them with the form's
 * alpha, sides, sequential N*, arms, weights and traffic allocation to `POST …/experiments/power`
 * and shows the sample per arm, total and days, fixed-horizon and (sequential on) always-valid,
 * with where each input came from. Its own form beside the experiment's, so Enter here calculates
 * and never creates or saves the experiment; nothing is sent while typing.
 */
export function PowerPanel({ api, envPath, context }: { api: Api; envPath: string; context: PowerContext }) {
  const [draft, setDraft] = useState<PowerDraft>(newPowerDraft);
  const [answer, setAnswer] = useState<{ estimate: PowerEstimate; arms: string[] } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<PowerDraft>) => setDraft((current) => ({ ...current, ...patch }));
  const metrics = context.setup.metrics;
  // A metric removed from the form since it was picked: fall back to typing by hand.
  // A percentile metric is not planned (the API plans a difference of means, docs/statistics.md §14).
  const plannable = (i: number) => metrics[i] !== undefined && metrics[i]!.statistic !== 'percentile';
  const chosen = draft.metric === BY_HAND || !plannable(Number(draft.metric)) ? BY_HAND : draft.metric;
  const byHand = chosen === BY_HAND;
  return (
    <section aria-labelledby="power-heading" class="power">
      <h3 id="power-heading">Power and duration</h3>
      <p class="muted">
        How many participants, and how many days at the recent rate, it takes to detect a relative effect of the size below, with this form's alpha, test sides, sequential
        setting, arms and their weights.
      </p>
      <form
        aria-label="Power and duration"
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          const arms = context.arms;
          try {
            const estimate = await api.query<PowerEstimate>(`${envPath}/experiments/power`, powerBody({ ...draft, metric: chosen }, context));
            setAnswer({ estimate, arms });
          } catch (caught) {
            setAnswer(undefined);
            setError(withErrorCode(caught));
          } finally {
            setBusy(false);
          }
        }}
      >
        <fieldset class="inline" disabled={busy}>
          <label>
            Metric
            <select value={chosen} onChange={(e) => set({ metric: valueOf(e) })}>
              {metrics.map((metric, i) => (
                <option value={String(i)} disabled={!plannable(i)}>
                  {(metricKeyOf(metricToWire(metric)) || `Metric ${i + 1}`) + (plannable(i) ? '' : ' (a percentile: not planned)')}
                </option>
              ))}
              <option value={BY_HAND}>Mean and variance typed in</option>
            </select>
          </label>
          {byHand && (
            <>
              <label>
                Mean
                <input type="number" step="any" value={draft.mean} onInput={(e) => set({ mean: valueOf(e) })} />
              </label>
              <label>
                Variance per participant
                <input type="number" min="0" step="any" value={draft.variance} onInput={(e) => set({ variance: valueOf(e) })} />
              </label>
            </>
          )}
          <label>
            Minimum detectable effect (%)
            <input type="number" step="any" value={draft.mdePercent} onInput={(e) => set({ mdePercent: valueOf(e) })} />
          </label>
          <label>
            Power (%)
            <input type="number" step="any" value={draft.powerPercent} onInput={(e) => set({ powerPercent: valueOf(e) })} />
          </label>
          <label>
            Past window (days)
            <input type="number" step="1" value={draft.windowDays} onInput={(e) => set({ windowDays: valueOf(e) })} />
          </label>
          <label>
            New participants a day (empty: from the window)
            <input type="number" min="0" step="any" value={draft.exposuresPerDay} onInput={(e) => set({ exposuresPerDay: valueOf(e) })} />
          </label>
          <button type="submit">Calculate</button>
        </fieldset>
      </form>
      <ErrorMessage error={error} />
      {busy && <p aria-busy="true">Calculating…</p>}
      {answer && <PowerAnswer estimate={answer.estimate} arms={answer.arms} />}
    </section>
  );
}

/** One answer: a row per test (fixed, and always-valid when planned), then where the inputs came from. */
export function PowerAnswer({ estimate, arms }: { estimate: PowerEstimate; arms: string[] }) {
  const plans: Array<[string, PowerPlan]> = [['Fixed horizon', estimate.fixed]];
  if (estimate.sequential) plans.push([`Sequential (N* ${formatCount(estimate.settings.sequential?.tuning_n)})`, estimate.sequential]);
  return (
    <div class="power-answer">
      <table class="list" aria-label="Sample and duration">
        <thead>
          <tr>
            <th scope="col">Test</th>
            <th scope="col">Sample per arm</th>
            <th scope="col">Total</th>
            <th scope="col">Days</th>
          </tr>
        </thead>
        <tbody>
          {plans.map(([name, plan]) => (
            <tr>
              <th scope="row">{name}</th>
              <td>{formatPerArm(plan, arms)}</td>
              <td>{formatCount(plan.total)}</td>
              <td>{formatDays(plan.days)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {estimate.fixed.sample_per_arm === null && <p class="warning-inline">{noSampleWords(estimate.inputs)}</p>}
      <ul class="power-inputs" aria-label="Inputs">
        {inputWords(estimate.inputs).map((line) => (
          <li>{line}</li>
        ))}
      </ul>
    </div>
  );
}
