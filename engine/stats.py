"""Statistics shared by analyses of several stages and by the report (no stage's own code).

`williams_test` compares two correlations with one common variable measured on the same items:
"metric X agrees with the experts better than metric Y", "a judge without the reference agrees
better than with it", "setting A beats the setting ranked next".
"""
from __future__ import annotations

import math

from scipy import stats


def williams_test(r_xz: float, r_yz: float, r_xy: float, n: int) -> tuple[float, float]:
    """Williams' t for corr(x, z) > corr(y, z) when x and y are measured on the same n items.

    t = (r_xz - r_yz) sqrt((n - 1)(1 + r_xy)) / sqrt(2 (n - 1)/(n - 3) |R| + rbar^2 (1 - r_xy)^3),
    |R| = 1 - r_xz^2 - r_yz^2 - r_xy^2 + 2 r_xz r_yz r_xy, rbar = (r_xz + r_yz) / 2;
    p = P(T > t) for Student's T with n - 3 degrees of freedom (one-sided). Needs n > 3.
    """
    if n <= 3:
        raise ValueError(f"williams_test needs n > 3 items, got {n}")
    det = 1.0 - r_xz ** 2 - r_yz ** 2 - r_xy ** 2 + 2.0 * r_xz * r_yz * r_xy
    rbar = (r_xz + r_yz) / 2.0
    denominator = 2.0 * (n - 1) / (n - 3) * det + rbar ** 2 * (1.0 - r_xy) ** 3
    if denominator <= 0.0:
        raise ValueError("williams_test: the correlations are degenerate (|R| and 1 - r_xy are 0)")
    t = (r_xz - r_yz) * math.sqrt((n - 1) * (1.0 + r_xy)) / math.sqrt(denominator)
    return float(t), float(stats.t.sf(t, n - 3))
