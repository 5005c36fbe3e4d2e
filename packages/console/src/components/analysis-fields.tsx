import type { AnalysisDraft, DraftUpdate } from './experiment-setup.ts';

const valueOf = (event: Event) => (event.target as HTMLInputElement | HTMLSelectElement).value;
const checkedOf = (event: Event) => (event.target as HTMLInputElement).checked;

/**
 * An experiment's analysis settings (docs/statistics.md): significance, sides, interval, correction,
 * SRM, then the engine the verdicts read, always-valid (sequential) testing with its planned sample
 * and the hybrid, and the Bayesian prior. A choice that needs another (the hybrid, the prior) is
 * shown only with it.
 */
export function AnalysisFields({ draft, onChange }: { draft: AnalysisDraft; onChange: DraftUpdate<AnalysisDraft> }) {
  const set = (patch: Partial<AnalysisDraft>) => onChange((current) => ({ ...current, ...patch }));
  return (
    <fieldset class="inline">
      <legend>Analysis settings</legend>
      <label>
        Significance level (alpha)
        <input type="number" required min="0.0001" max="0.5" step="any" value={draft.alpha} onInput={(e) => set({ alpha: valueOf(e) })} />
      </label>
      <label>
        Test
        <select value={draft.sides} onChange={(e) => set({ sides: valueOf(e) as AnalysisDraft['sides'] })}>
          <option value="two">Two-sided</option>
          <option value="one">One-sided (each metric's good direction)</option>
        </select>
      </label>
      <label>
        Relative interval
        <select value={draft.relativeInterval} onChange={(e) => set({ relativeInterval: valueOf(e) as AnalysisDraft['relativeInterval'] })}>
          <option value="delta">Delta method</option>
          <option value="fieller">Fieller</option>
        </select>
      </label>
      <label>
        Multiple-testing correction
        <select value={draft.correction} onChange={(e) => set({ correction: valueOf(e) as AnalysisDraft['correction'] })}>
          <option value="none">None</option>
          <option value="bonferroni">Bonferroni</option>
          <option value="holm">Holm</option>
          <option value="benjamini_hochberg">Benjamini–Hochberg (FDR)</option>
        </select>
      </label>
      <label>
        Corrected together
        <select value={draft.correctionFamily} disabled={draft.correction === 'none'} onChange={(e) => set({ correctionFamily: valueOf(e) as AnalysisDraft['correctionFamily'] })}>
          <option value="all">All metrics and variants</option>
          <option value="per_metric">Each metric's variants</option>
          <option value="per_variant">Each variant's metrics</option>
        </select>
      </label>
      <label>
        SRM warning below p
        <input type="number" required min="0" max="1" step="any" value={draft.srmThreshold} onInput={(e) => set({ srmThreshold: valueOf(e) })} />
      </label>
      <label>
        SRM needs expected participants per variant
        <input type="number" required min="0" step="1" value={draft.srmMinExpected} onInput={(e) => set({ srmMinExpected: valueOf(e) })} />
      </label>
      <label>
        Engine
        <select value={draft.engine} onChange={(e) => set({ engine: valueOf(e) as AnalysisDraft['engine'] })}>
          <option value="frequentist">Frequentist (p-values, confidence intervals)</option>
          <option value="bayesian">Bayesian (chance to win, credible intervals)</option>
        </select>
      </label>
      {draft.engine === 'bayesian' && (
        <>
          <label>
            Prior on the relative lift
            <select value={draft.prior} onChange={(e) => set({ prior: valueOf(e) as AnalysisDraft['prior'] })}>
              <option value="flat">Flat (none)</option>
              <option value="normal">Normal N(mean, sd²)</option>
            </select>
          </label>
          {draft.prior === 'normal' && (
            <>
              <label>
                Prior mean (0.02 = +2 %)
                <input type="number" step="any" value={draft.priorMean} onInput={(e) => set({ priorMean: valueOf(e) })} />
              </label>
              <label>
                Prior sd (0.05 = 5 %)
                <input type="number" required min="0" step="any" value={draft.priorSd} onInput={(e) => set({ priorSd: valueOf(e) })} />
              </label>
            </>
          )}
        </>
      )}
      <label>
        <input type="checkbox" checked={draft.sequential} onChange={(e) => set({ sequential: checkedOf(e) })} />
        Sequential testing (always-valid: results may be read at every look)
      </label>
      {draft.sequential && (
        <>
          <label>
            Planned sample N* (participants, both arms)
            <input type="number" required min="10" max="1000000000" step="1" value={draft.tuningN} onInput={(e) => set({ tuningN: valueOf(e) })} />
          </label>
          <label>
            <input type="checkbox" checked={draft.hybrid} onChange={(e) => set({ hybrid: checkedOf(e) })} />
            Hybrid (half of alpha sequential while running, half fixed-horizon at the end)
          </label>
        </>
      )}
    </fieldset>
  );
}
