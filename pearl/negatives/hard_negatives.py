"""Hard negatives: candidates that look alike (edit similarity ≥ min_edit_sim) but mean
something else (low cosine under the base encoder). Two rules, `negatives.rule`:

- `max_cos` (default): keep a candidate whose cosine is at most `negatives.max_cos` (0.8).
  With all-MiniLM-L6-v2 this keeps "New York Post" (cos 0.67) and "New York" (0.49) as hard
  negatives of "The New York Times" and drops "The New York Times Company" (0.89).
- `margin` (the authors' released script, tuned for E5 whose cosines crowd into a narrow high
  band): keep when edit_sim − minmax(cos) > `negatives.margin`, cosine min-max normalised over
  all candidate pairs. With MiniLM it drops "New York Post" (0.72 − 0.66 < 0.3).
"""

from __future__ import annotations

import numpy as np


def minmax(values: np.ndarray) -> np.ndarray:
    spread = values.max() - values.min() if len(values) else 0.0
    if spread == 0:
        return np.zeros_like(values)
    return (values - values.min()) / spread


def hard_negative_mask(edit_sim: np.ndarray, cos: np.ndarray, rule: str, max_cos: float, margin: float) -> np.ndarray:
    if rule == "max_cos":
        return cos <= max_cos
    return edit_sim - minmax(cos) > margin
