/**
 * Seeded normal samples for the statistics tests: mulberry32 (Tommy Ettinger's 32-bit generator)
 * for uniforms and the Box–Muller transform (Box & Muller, Ann. Math. Statist. 29, 1958) for
 * normals, so a Monte Carlo test sees the same data on every run and machine.
 */
export function seededNormals(seed: number): (mean: number, sd: number) => number {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  return (mean, sd) => mean + sd * Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}
