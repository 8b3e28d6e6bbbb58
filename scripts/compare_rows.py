#!/usr/bin/env python3
"""Compares two rows of a reproduction table seed by seed: a paired t-test.

    compare_rows.py --model resnet20_fashion --base IWP --other "IWP, one global threshold"
                    [--rows results/iwp_full/rows.csv] [--n 4]

Both rows are read from rows.csv (written by scripts/repro_report.py, which keeps each
seed's top-1). Seeds that both rows ran are paired: runs with one seed share the data
order and the initial weights, so the difference of a pair is free of the seed's own
luck, and the pairs say more than the two means and spreads do. Prints each pair, the
mean difference (other - base) in percentage points, its sample standard deviation,
t = mean / (sd / sqrt(k)) over k pairs and the two-sided p of Student's t with k - 1
degrees of freedom. A p above 0.05 means the rows are not told apart by these seeds.
Then what the seeds can resolve: the smallest mean difference these pairs would put
at p < 0.05 with the measured sd, and about how many pairs the measured difference
would need at its mean and sd (a planning figure, not a promise: new seeds move both).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro_report import read_rows, top1_by_seed  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _beta_continued_fraction(a, b, x):
    """The continued fraction of the regularized incomplete beta function (modified
    Lentz), which converges fast for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return result


def regularized_beta(a, b, x):
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def critical_t(df, alpha=0.05):
    """The t at which the two-sided p of Student's t with df degrees of freedom is alpha
    (bisection: the p falls as t grows)."""
    low, high = 0.0, 1.0
    while two_sided_p(high, df) > alpha:
        high *= 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if two_sided_p(middle, df) > alpha:
            low = middle
        else:
            high = middle
    return high


def resolvable_difference(sd, k, alpha=0.05):
    """The smallest mean difference that k pairs with this sd put at p < alpha."""
    return critical_t(k - 1, alpha) * sd / math.sqrt(k)


def pairs_needed(mean, sd, alpha=0.05, most=200):
    """How many pairs would put this mean difference at p < alpha if the mean and sd
    held as measured (a planning figure: the next seeds will move both); None for no
    difference or beyond `most`."""
    if not mean:
        return None
    if not sd:
        return 2
    for k in range(2, most + 1):
        if abs(mean) >= resolvable_difference(sd, k, alpha):
            return k
    return None


def paired(base, other):
    """{seed: top-1} twice -> (pairs [(seed, base, other)], mean, sd, t, p); the
    differences in percentage points, sd, t and p None where too few pairs."""
    seeds = sorted(set(base) & set(other))
    pairs = [(seed, base[seed], other[seed]) for seed in seeds]
    diffs = [100.0 * (b - a) for _, a, b in pairs]
    k = len(diffs)
    mean = sum(diffs) / k if k else None
    if k < 2:
        return pairs, mean, None, None, None
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (k - 1))
    t = mean / (sd / math.sqrt(k)) if sd > 0 else math.copysign(math.inf, mean) if mean else 0.0
    return pairs, mean, sd, t, two_sided_p(t, k - 1)


def find_row(rows, model, label, n, path):
    matches = [r for r in rows if r["model"] == model and r["label"] == label and r["N"] == n]
    if not matches:
        labels = sorted({r["label"] for r in rows if r["model"] == model and r["N"] == n})
        raise SystemExit("error: %s: no row %r for model %s at N=%d; its rows there: %s"
                         % (path, label, model, n, "; ".join(labels) or "none"))
    top1s = top1_by_seed(matches[0])
    if top1s is None:
        raise SystemExit("error: %s: row %r of %s keeps no per-seed top-1 (made before the "
                         "top1_by_seed column); run its seeds again" % (path, label, model))
    return top1s


def main(argv):
    parser = argparse.ArgumentParser(description="paired comparison of two table rows")
    parser.add_argument("--rows", default=os.path.join(REPO, "results", "iwp_full", "rows.csv"))
    parser.add_argument("--model", required=True)
    parser.add_argument("--base", required=True, help="label of the reference row")
    parser.add_argument("--other", required=True, help="label of the row compared with it")
    parser.add_argument("--n", type=int, default=4, help="ranks of both rows")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.rows):
        raise SystemExit("error: %s: no such file (written by scripts/repro_report.py)"
                         % args.rows)
    rows = read_rows(args.rows)
    base = find_row(rows, args.model, args.base, args.n, args.rows)
    other = find_row(rows, args.model, args.other, args.n, args.rows)
    pairs, mean, sd, t, p = paired(base, other)
    if not pairs:
        raise SystemExit("error: %s: rows %r (seeds %s) and %r (seeds %s) share no seed"
                         % (args.rows, args.base, sorted(base), args.other, sorted(other)))
    print("%s, N=%d: %r against %r" % (args.model, args.n, args.other, args.base))
    for seed, a, b in pairs:
        print("  seed %d: %.2f -> %.2f (%+.2f pp)" % (seed, 100 * a, 100 * b, 100 * (b - a)))
    if sd is None:
        print("mean difference %+.2f pp over 1 pair (no spread: run more seeds)" % mean)
    else:
        print("mean difference %+.2f pp, sd %.2f, t = %.2f over %d pairs, two-sided p = %.3f"
              % (mean, sd, t, len(pairs), p))
        # What the seeds can resolve: rows closer than this are not told apart by them.
        needed = pairs_needed(mean, sd)
        print("these %d pairs tell apart a mean difference of %.2f pp or more; %s"
              % (len(pairs), resolvable_difference(sd, len(pairs)),
                 "this one would need about %d pairs at its mean and sd" % needed if needed
                 else "this one would not reach p < 0.05 within 200 pairs at its mean and sd"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
