/**
 * The default token estimator: about four characters a token, scaled by what
 * the provider actually counted on earlier calls. Calibration is a running
 * ratio of counted input tokens (cached ones included) to estimated ones, so a
 * model whose tokenizer runs denser than four characters a token is fitted to
 * its window within a call or two.
 */
import type { ContextEstimator, EstimatorSample } from './types.js';

const CHARS_PER_TOKEN = 4;
/** How much one sample moves the ratio: the newest call counts for a third. */
const WEIGHT = 1 / 3;

export interface CalibratedEstimator extends ContextEstimator {
  calibrate(sample: EstimatorSample): void;
  /** Counted tokens per estimated token, 1 before any call. */
  ratio: number;
}

export function createDefaultEstimator(ratio = 1): CalibratedEstimator {
  const estimator: CalibratedEstimator = {
    ratio,
    estimate: (text) => Math.ceil((text.length / CHARS_PER_TOKEN) * estimator.ratio),
    calibrate(sample) {
      if (!(sample.estimatedTokens > 0) || !(sample.inputTokens > 0)) return;
      // The estimate was made at the current ratio: divide it out to compare raw counts.
      const raw = sample.estimatedTokens / estimator.ratio;
      const observed = sample.inputTokens / raw;
      if (!Number.isFinite(observed) || observed <= 0) return;
      estimator.ratio = estimator.ratio * (1 - WEIGHT) + observed * WEIGHT;
    },
  };
  return estimator;
}
