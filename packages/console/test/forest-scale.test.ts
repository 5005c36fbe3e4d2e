import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forestScale, niceTicks, placeInterval } from '../src/components/forest-scale.ts';

// The forest plot's placement (components/forest-scale.ts); every expected value worked out by hand.

const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);

describe('forest plot scale', () => {
  test('the domain covers 0, every estimate and every finite bound, widened by a tenth of the span on each side', () => {
    // Values 0, 0.1, 0.02, 0.18, -0.05, 0.03: from -0.05 to 0.18, span 0.23, padding 0.023.
    const scale = forestScale(
      [
        { estimate: 0.1, low: 0.02, high: 0.18 },
        { estimate: -0.05, low: null, high: 0.03 },
      ],
      100,
      500,
    );
    near(scale.min, -0.073, 'min');
    near(scale.max, 0.203, 'max');
    // x(0) = 100 + 0.073 / 0.276 * 400.
    near(scale.x(0), 100 + (0.073 / 0.276) * 400, 'x(0)');
    near(scale.x(scale.min), 100, 'left edge');
    near(scale.x(scale.max), 500, 'right edge');
    // Span 0.276 / 5 = 0.0552: the round step at or above it is 0.1.
    assert.deepEqual(scale.ticks, [0, 0.1, 0.2]);
  });

  test('an interval all above zero still shows the zero line: 0 is in the domain', () => {
    const scale = forestScale([{ estimate: 0.5, low: 0.4, high: 0.6 }], 0, 100);
    // From 0 to 0.6, padding 0.06.
    near(scale.min, -0.06, 'min');
    near(scale.max, 0.66, 'max');
    assert.ok(scale.ticks.includes(0));
  });

  test('no estimates (or all zero): ±5 % around zero', () => {
    for (const rows of [[], [{ estimate: 0, low: 0, high: 0 }]]) {
      const scale = forestScale(rows, 10, 110);
      near(scale.min, -0.05, 'min');
      near(scale.max, 0.05, 'max');
      near(scale.x(0), 60, 'zero in the middle');
    }
  });

  test('an unbounded side runs to the edge of the plot, the other ends at its bound', () => {
    const scale = forestScale(
      [
        { estimate: 0.1, low: null, high: 0.2 },
        { estimate: -0.1, low: -0.3, high: null },
      ],
      0,
      100,
    );
    // Values -0.3 .. 0.2, span 0.5, padding 0.05: domain -0.35 .. 0.25 over 100 units.
    const first = placeInterval(scale, { estimate: 0.1, low: null, high: 0.2 });
    assert.deepEqual([first.openLow, first.openHigh], [true, false]);
    near(first.from, 0, 'unbounded below: the left edge');
    near(first.to, (0.55 / 0.6) * 100, 'upper bound 0.2');
    near(first.at, (0.45 / 0.6) * 100, 'estimate 0.1');
    const second = placeInterval(scale, { estimate: -0.1, low: -0.3, high: null });
    assert.deepEqual([second.openLow, second.openHigh], [false, true]);
    near(second.from, (0.05 / 0.6) * 100, 'lower bound -0.3');
    near(second.to, 100, 'unbounded above: the right edge');
  });

  test('ticks: multiples of 1, 2 or 5 times a power of ten, 0 exact, no float noise', () => {
    // Span 1 / 5 = 0.2: step 0.2.
    assert.deepEqual(niceTicks(-0.5, 0.5), [-0.4, -0.2, 0, 0.2, 0.4]);
    // Span 0.3 / 5 = 0.06: step 0.1 (0.1 * 3 would print 0.30000000000000004).
    assert.deepEqual(niceTicks(0.05, 0.35), [0.1, 0.2, 0.3]);
    // Span 30 / 5 = 6: step 10.
    assert.deepEqual(niceTicks(-12, 18), [-10, 0, 10]);
    assert.ok(!Object.is(niceTicks(-0.5, 0.5)[2], -0), 'zero is +0, printed as 0');
    assert.deepEqual(niceTicks(1, 1), []);
  });
});
