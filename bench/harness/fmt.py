# SPDX-License-Identifier: MIT
"""Formatting: figures with their units, labels, and tables for the terminal
(fitted to WIDTH columns) and for Markdown. A table's notes go below it,
never in a column."""
import math
import textwrap

WIDTH = 100   # the terminal width tables, captions and notes are fitted to


def fmt_ns(v):
    """A duration given in ns, with a readable unit."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a < 1e3:
        return "%.1f ns" % v
    if a < 1e6:
        return "%.2f us" % (v / 1e3) if a < 1e4 else "%.1f us" % (v / 1e3)
    if a < 1e9:
        return "%.2f ms" % (v / 1e6) if a < 1e7 else "%.1f ms" % (v / 1e6)
    return "%.3f s" % (v / 1e9)


def fmt_us(v):
    """A duration given in us."""
    return fmt_ns(v * 1e3) if v is not None else "-"


def fmt_val(v, unit):
    if v is None:
        return "-"
    if unit == "ns":
        return fmt_ns(v)
    if unit == "us":
        return fmt_ns(v * 1e3)
    if unit == "KiB":
        return "%.2f KiB" % v
    if unit == "x":
        return "%.2fx" % v
    return "%g %s" % (v, unit)


def fmt_range(lo, hi, unit):
    """min - max; durations share their unit when they can: 80.1-90.2 ns."""
    if lo is None:
        return "-"
    if unit == "us":
        return fmt_range(lo * 1e3, hi * 1e3, "ns")
    if unit == "ns":
        a, b = fmt_ns(lo).split(" "), fmt_ns(hi).split(" ")
        if a[1] == b[1]:
            return "%s-%s %s" % (a[0], b[0], a[1])
        return "%s - %s" % (fmt_ns(lo), fmt_ns(hi))
    if unit in ("KiB", "x"):
        return "%.2f - %.2f" % (lo, hi)
    return "%g - %g" % (lo, hi)


def fmt_cell(m, lo, hi, unit="ns"):
    """median (min-max), the unit said once where the three share it."""
    if m is None:
        return "-"
    if unit == "us":
        return fmt_cell(m * 1e3, lo * 1e3, hi * 1e3, "ns")
    if unit == "ns":
        a, b, c = fmt_ns(m).split(" "), fmt_ns(lo).split(" "), fmt_ns(hi).split(" ")
        if a[1] == b[1] == c[1]:
            return "%s %s (%s-%s)" % (a[0], a[1], b[0], c[0])
    return "%s (%s)" % (fmt_val(m, unit), fmt_range(lo, hi, unit))


def secs_cell(m, lo, hi):
    """A duration given in ns as seconds, median (min-max): 1.099 s (0.855-1.343)."""
    if m is None:
        return "-"
    return "%.3f s (%.3f-%.3f)" % (m / 1e9, lo / 1e9, hi / 1e9)


def fmt_ratio(r):
    if r is None:
        return "-"
    if r >= 100:
        return "%.0fx" % r
    if r >= 10:
        return "%.1fx" % r
    return "%.2fx" % r


def ratio(a, b):
    """a / b, or None where either is missing or b is 0."""
    return a / b if a is not None and b else None


def plural(n, one, many):
    return "%d %s" % (n, one if n == 1 else many)


def vp_label(c):
    return plural(c, "vproc", "vprocs")


def cpu_label(c):
    return plural(c, "CPU", "CPUs")


def wrap(text, indent="", width=WIDTH):
    """Lines of at most `width` columns; continuation lines indented past `indent`."""
    return "\n".join(textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=" " * (len(indent) + 2),
                                   break_on_hyphens=False)) if text else ""


class Table:
    """A table with a caption above it and notes below it (strings)."""

    def __init__(self, headers, rows, caption="", notes=None, flex=(0,)):
        self.flex = flex      # the columns narrowed first where the table is too wide
        self.headers = headers
        self.rows = [[str(x) for x in r] for r in rows]
        self.caption = caption
        self.notes = [n for n in (notes or []) if n]

    def drop_empty(self, *names):
        """Leave out the named columns where no row has anything in them."""
        for name in names:
            if name in self.headers:
                i = self.headers.index(name)
                if not any(r[i] for r in self.rows):
                    self.headers = self.headers[:i] + self.headers[i + 1:]
                    self.flex = tuple(j - (j > i) for j in self.flex if j != i)
                    self.rows = [r[:i] + r[i + 1:] for r in self.rows]
        return self

    def text(self, width=WIDTH):
        out = []
        if self.caption:
            out.append(wrap(self.caption, width=width))
        out.append(text_table(self.headers, self.rows, width, self.flex))
        out += [wrap(n, "  * ", width) for n in self.notes]
        return "\n".join(out)

    def markdown(self):
        out = []
        if self.caption:
            out.append("**%s**\n" % self.caption)
        out.append(md_table(self.headers, self.rows))
        if self.notes:
            out.append("")
            out += ["- " + n.replace("|", "\\|") for n in self.notes]
        return "\n".join(out)


def text_table(headers, rows, width=WIDTH, flex=(0,)):
    """Columns separated by two spaces; where the table would be wider than
    `width`, the widest of the `flex` columns (text: what a row is) is
    narrowed, down to 16 columns, then the widest of all, and their cells
    wrapped at spaces."""
    cols = len(headers)
    cells = [headers] + rows
    want = [max(len(str(r[i])) for r in cells) for i in range(cols)]
    floor = [max([6] + [len(w) for r in cells for w in str(r[i]).split()]) for i in range(cols)]
    soft = [min(want[i], max(floor[i], 16)) if i in flex else want[i] for i in range(cols)]
    floor = [min(f, w) for f, w in zip(floor, want)]
    w = list(want)
    for low in (soft, floor):
        while sum(w) + 2 * (cols - 1) > width:
            i = max((j for j in range(cols) if w[j] > low[j]), key=lambda j: w[j], default=None)
            if i is None:
                break
            w[i] -= 1

    def lines(row):
        parts = [textwrap.wrap(str(x), w[i], break_on_hyphens=False) or [""] for i, x in enumerate(row)]
        n = max(len(p) for p in parts)
        return ["  ".join((p[k] if k < len(p) else "").ljust(w[i]) for i, p in enumerate(parts)).rstrip()
                for k in range(n)]

    out = lines(headers) + ["  ".join("-" * w[i] for i in range(cols))]
    for r in rows:
        out += lines(r)
    return "\n".join(out)


def md_table(headers, rows):
    def cell(x):
        return str(x).replace("|", "\\|")
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(x) for x in r) + " |")
    return "\n".join(out)
