# SPDX-License-Identifier: MIT
"""ito's targets, each declared by the experiment it reads, and their
evaluation: the value measured, whether it meets the threshold, and notes
(a failed run, loaded runs, a configuration the machine could not run)."""
from harness.fmt import fmt_ns
from harness.load import LOADED_FRACTION


class Target:
    """A threshold on one figure.

    value(by_key) returns the measured value, or a dict with "value" and
    optionally "keys" (configurations it reads), "note", "unmeasurable"
    (the machine cannot measure it) and "short" (measured on less than the
    target asks: not met). Without value, the figure is the median of
    configuration `key`. `show` replaces the threshold in tables."""

    def __init__(self, id, text, op, threshold, unit, key=None, value=None, keys=None, show=None):
        self.id, self.text, self.op, self.threshold, self.unit = id, text, op, threshold, unit
        self.key = key
        self.value = value
        self.keys = keys or ([key] if key else [])
        self.show = show

    def evaluate(self, exp, by_key):
        t = {"id": self.id, "exp": exp, "text": self.text, "op": self.op, "threshold": self.threshold,
             "unit": self.unit, "key": self.key, "value": None, "met": None, "note": ""}
        if self.value:
            got = self.value(by_key)
            got = got if isinstance(got, dict) else {"value": got}
        else:
            cfg = by_key.get(self.key)
            got = {"value": cfg.median() if cfg else None}
        keys = got.get("keys", self.keys)
        notes = [got["note"]] if got.get("note") else []
        if any(k not in by_key for k in keys):
            notes.insert(0, "needs 2 CPUs")
        if got.get("unmeasurable"):
            t["unmeasurable"] = True
        present = [by_key[k] for k in keys if k in by_key]
        loaded = [c.key for c in present if any(c.load(r) >= LOADED_FRACTION for r in c.used_runs())]
        if loaded:
            notes.append("from loaded runs (%s)" % ", ".join(loaded))
        v = got.get("value")
        t["value"] = v
        if v is not None:
            t["met"] = {"<=": v <= self.threshold, "<": v < self.threshold,
                        ">": v > self.threshold}.get(self.op, v >= self.threshold)
            if got.get("short"):
                t["met"] = False
        if any(c.failures() for c in present):
            t["met"] = False
            notes.append("a run failed")
        t["note"] = "; ".join(notes)
        t["show"] = self.show
        return t


def not_run(exp, target):
    return {"id": target.id, "exp": exp, "text": target.text, "op": target.op, "threshold": target.threshold,
            "unit": target.unit, "key": target.key, "value": None, "met": None, "note": "not run (--only)",
            "show": target.show}


def met_str(t):
    if t is None:
        return ""
    if t["met"] is None:
        return "not measurable" if t.get("unmeasurable") else "not measured"
    return "MET" if t["met"] else "NOT MET"


def target_str(t):
    """The threshold as a table shows it."""
    if t is None:
        return ""
    if t.get("show"):
        return t["show"]
    thr = t["threshold"]
    if t["unit"] == "ns":
        return "%s %s" % (t["op"], fmt_ns(thr).replace(".0 ", " ").replace(".00 ", " "))
    if t["unit"] in ("KiB", "us"):
        return "%s %g %s" % (t["op"], thr, t["unit"])
    return "%s %gx" % (t["op"], thr)


def target_cell(t):
    """Threshold and verdict in one table cell: "<= 30.0 ns: MET"."""
    return "%s: %s" % (target_str(t), met_str(t)) if t else ""


def target_note(t, what=None):
    """A line below a table for a target that no single row carries."""
    if t is None:
        return ""
    s = "target: %s: %s" % (what or t["text"], met_str(t))
    if t["value"] is not None:
        s += " (%s)" % fmt_value(t)
    note = t["note"]
    if note.startswith(met_str(t) + ": "):
        note = note[len(met_str(t)) + 2:]
    return s + ("; " + note if note else "")


def fmt_value(t):
    v, u = t["value"], t["unit"]
    if v is None:
        return "-"
    if u == "ns":
        return fmt_ns(v)
    if u == "us":
        return fmt_ns(v * 1e3)
    if u == "KiB":
        return "%.2f KiB" % v
    if u == "x":
        return "%.2fx" % v
    return "%g %s" % (v, u)
