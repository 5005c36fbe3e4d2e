import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import type { ExperimentPower } from '../records.ts';
import { ErrorMessage, formatTime } from './common.tsx';
import { withErrorCode } from './power-panel.tsx';
import { formatCount, formatDays, formatPercent, formatPerArm, powerQuery } from './power-reading.ts';

const valueOf = (event: Event) => (event.target as HTMLInputElement).value;

/**
 * "Power and duration" on an experiment's page (docs/console.md): for the MDE typed, per metric
 * the sample it needs at the experiment's own settings and, while it runs, its current power and
 * projected end (`GET …/experiments/{id}/power`), on Calculate.
 */
export function ExperimentPowerSection({ api, path }: { api: Api; path: string }) {
  const [mdePercent, setMde] = useState('2');
  const [powerPercent, setPower] = useState('80');
  const [windowDays, setWindow] = useState('14');
  const [answer, setAnswer] = useState<ExperimentPower | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const sequential = answer?.metrics.some((m) => m.settings.sequential !== null) ?? false;
  return (
    <section aria-labelledby="experiment-power-heading" class="power">
      <h2 id="experiment-power-heading">Power and duration</h2>
      <p class="muted">For a relative effect of this size: the sample each metric needs at the experiment's settings and, while it runs, its power so far and when it reaches the sample at its own rate.</p>
      <form
        aria-label="Experiment power"
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            setAnswer(await api.get<ExperimentPower>(`${path}/power?${powerQuery(mdePercent, powerPercent, windowDays)}`));
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
            Minimum detectable effect (%)
            <input type="number" step="any" value={mdePercent} onInput={(e) => setMde(valueOf(e))} />
          </label>
          <label>
            Power (%)
            <input type="number" step="any" value={powerPercent} onInput={(e) => setPower(valueOf(e))} />
          </label>
          <label>
            Past window (days)
            <input type="number" step="1" value={windowDays} onInput={(e) => setWindow(valueOf(e))} />
          </label>
          <button type="submit">Calculate</button>
        </fieldset>
      </form>
      <ErrorMessage error={error} />
      {answer && (
        <table class="list" aria-label="Power per metric">
          <thead>
            <tr>
              <th scope="col">Metric</th>
              <th scope="col">Sample per arm</th>
              <th scope="col">Days</th>
              <th scope="col">Participants so far</th>
              <th scope="col">Current power</th>
              {sequential && <th scope="col">Sequential power</th>}
              <th scope="col">Projected end</th>
            </tr>
          </thead>
          <tbody>
            {answer.metrics.map((m) => {
              const plan = m.sequential ?? m.fixed;
              return (
                <tr>
                  <th scope="row">
                    {m.metric_key}
                    {m.inputs.truncated ? ' (truncated)' : ''}
                  </th>
                  <td>
                    {formatPerArm(plan, answer.arms)}
                    {m.sequential ? ` (fixed ${formatPerArm(m.fixed, answer.arms)})` : ''}
                  </td>
                  <td>{formatDays(plan.days)}</td>
                  <td>{m.current ? answer.arms.map((arm) => `${arm} ${formatCount(m.current?.participants_per_arm[arm])}`).join(' · ') : '—'}</td>
                  <td>{formatPercent(m.current?.power)}</td>
                  {sequential && <td>{formatPercent(m.current?.sequential_power)}</td>}
                  <td>{m.current?.projected_end_ms ? formatTime(m.current.projected_end_ms) : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {answer && answer.metrics.every((m) => m.current === null) && <p class="muted">Not running: the current power and projected end come while the experiment is active.</p>}
    </section>
  );
}
