# SPDX-License-Identifier: MIT
"""Statistics across configurations: medians compared, speedups."""
import statistics


def median_ratio(by_key, a, b):
    """Median of configuration a over the median of configuration b."""
    a, b = by_key.get(a), by_key.get(b)
    ma, mb = (a.median() if a else None), (b.median() if b else None)
    return ma / mb if ma is not None and mb else None


def relative_value(by_key, key, field):
    """A configuration's median of `field` over its paired POSIX-threads median."""
    i = by_key.get(key)
    p = by_key.get(i.pair) if i else None
    if not i or not p:
        return None
    a, b = i.field_stats(field)[0], p.field_stats(field)[0]
    return a / b if a is not None and b else None


def pair_ratio(by_key, cfg):
    """The paired configuration's median over this one's (pthread/ito), or None."""
    p = by_key.get(cfg.pair) if cfg.pair else None
    pm, m = (p.median() if p else None), cfg.median()
    return pm / m if pm and m else None


def speedup(seq, par):
    """(median, lowest, highest) speedup of a parallel configuration over a
    sequential one: the sequential median over the parallel median, min, max."""
    if not seq or not par:
        return None, None, None
    s = seq.median()
    m, lo, hi = par.stats()
    if s is None or m is None:
        return None, None, None
    return s / m, s / hi, s / lo


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
