"""pass@k with the unbiased estimator (Chen et al. 2021) and its error counterpart.

With n candidates of which c succeed, pass@k = 1 - C(n-c, k) / C(n, k): the chance that k drawn
without replacement include a success (Oracle@k). With e erroring, error@k = C(e, k) / C(n, k):
the chance that all k fail to compile or run (Oracle@k for errors).
"""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return 1.0 - comb(n - c, k) / comb(n, k)


def all_fail_at_k(n: int, e: int, k: int) -> float:
    if not 0 <= e <= n or not 1 <= k <= n:
        raise ValueError(f"error@k needs 0 <= e <= n and 1 <= k <= n (n={n}, e={e}, k={k})")
    return comb(e, k) / comb(n, k)
