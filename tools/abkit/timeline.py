# SPDX-License-Identifier: BSD-2-Clause
"""The path failure run's timeline: its stall and its goodput before and after the failure, from
the receiver's ticks (as the run ends, or again from runs/*.ticks)."""

import math
import os
import re
import statistics

from .common import fname, num


def fill_pathdown(row, ticks, iv, t0c, t_set, t_act, t_up0):
    """A path failure run's timeline into row: when the down command ran (t_set to t_act,
    on the client's clock; tools/fabric takes tenths of a second under load, the path went
    down somewhere in between) and when the path was being brought back (t_up0, None: not
    before the stream ended), on the receiver's timeline (its ticks, iv ms apart, from its
    first receive at t0c; None: taken as the client's start), then the stall and the goodput
    before and after."""
    offset = max(0.0, t0c) if t0c is not None else 0.0
    row["fail_tick_ms"] = int(max(0.0, t_set - offset) * 1000)
    row["down_tick_ms"] = int(max(0.0, t_act - offset) * 1000)
    if t_up0 is not None:
        row["up_tick_ms"] = int(max(0.0, t_up0 - offset) * 1000)
    row.update(stall(ticks, iv, row["fail_tick_ms"] / 1000))
    row.update(timeline_goodput(ticks, iv, row["fail_tick_ms"] / 1000,
                                row["down_tick_ms"] / 1000,
                                row["up_tick_ms"] / 1000 if "up_tick_ms" in row else None))


def stall_run(vals, iv, t_fail):
    """The path failure run's stall, found in its ticks' bytes (vals, one per iv ms).

    t_fail: when the path went down, in seconds on the timeline (estimated). A tick is low
    when it carries under 10% of the median tick before the failure (ref); the stall is the
    longest run of low ticks that ends after t_fail - 50 ms (early, as a tick index; start-up,
    before the first good tick, does not count; the last tick, partial, is never part of
    it). Returns None with under 5 ticks, {"ref": None} when nothing moved before the
    failure, else {ref, thr, low, good, early, longest, end}: low per tick, good the indices
    of the ticks that are not, longest the stall in ticks and end the index of its last tick
    (None without one)."""
    if len(vals) < 5:
        return None
    early = max(0, int((t_fail - 0.05) * 1000 / iv))
    pre = sorted(v for v in vals[2:max(3, early)] if v > 0) or sorted(v for v in vals if v > 0)
    if not pre:
        return {"ref": None}
    ref = pre[len(pre) // 2]
    thr = 0.1 * ref
    low = [v < thr or v == 0 for v in vals]
    good = [i for i, x in enumerate(low) if not x]
    first = good[0] if good else len(vals)
    longest, run, end_at = 0, 0, None
    for i in range(first, len(vals) - 1):          # the last tick is partial
        run = run + 1 if low[i] else 0
        if run and i >= early and run > longest:
            longest, end_at = run, i
    return {"ref": ref, "thr": thr, "low": low, "good": good, "early": early,
            "longest": longest, "end": end_at}


def stall(ticks, iv, t_fail):
    """The path failure run's timeline -> the longest stall and whether the flow recovered.

    The stall as stall_run() finds it. Low ticks at the very end beyond the last partial one
    mean the flow did not recover before it ended. pre_gbps / post_gbps: the median tick
    before the failure and the median of the good ticks after the stall (see
    timeline_goodput() for the goodput before and after)."""
    vals = [b for _, b in ticks]
    s = stall_run(vals, iv, t_fail)
    if s is None:
        return {}
    if s["ref"] is None:
        return {"stall_ms": None}
    good, thr = s["good"], s["thr"]
    tail = len(vals) - 1 - (good[-1] + 1 if good else 0)
    out = {"stall_ms": s["longest"] * iv, "recovered": 1 if tail <= 2 else 0,
           "pre_gbps": round(s["ref"] * 8 / (iv * 1e6), 4)}
    after = [v for v in vals[(s["end"] or s["early"]) + 1:len(vals) - 1] if v >= thr]
    if after:
        out["post_gbps"] = round(statistics.median(after) * 8 / (iv * 1e6), 4)
    return out


def timeline_goodput(ticks, iv, t_fail, t_down, t_up=None):
    """The path failure run's goodput before and after the failure, the stall left out.

    Seconds on the receiver's timeline: t_fail when the down command started, t_down when it
    had returned (the path was down by then), t_up when the path was being brought back
    (None: not before the stream ended). Before: the mean of the ticks from the first good
    one (and not the first 2: start-up) up to 50 ms before t_fail (stall_run's early).
    After: the mean of the whole ticks from t_down up to t_up (or the last, partial, tick),
    less the ticks of the stall (stall_run's longest run of low ticks): what the flow moved
    with one path gone, its dips included but not the stall. Each needs 5 ticks at least.
    Returns {before_gbps, after_gbps, after_ratio} (what it could compute)."""
    vals = [b for _, b in ticks]
    s = stall_run(vals, iv, t_fail)
    if not s or s["ref"] is None or not s["good"]:
        return {}
    before = vals[max(2, s["good"][0]):s["early"]]
    lo = max(s["early"], int(math.ceil(t_down * 1000 / iv)))
    hi = len(vals) - 1
    if t_up is not None:
        hi = min(hi, int(t_up * 1000 / iv))
    stalled = set(range(s["end"] - s["longest"] + 1, s["end"] + 1)) if s["end"] is not None \
        else set()
    after = [vals[i] for i in range(lo, hi) if i not in stalled]
    out = {}
    if len(before) >= 5:
        out["before_gbps"] = round(statistics.mean(before) * 8 / (iv * 1e6), 4)
    if len(after) >= 5:
        out["after_gbps"] = round(statistics.mean(after) * 8 / (iv * 1e6), 4)
    if out.get("before_gbps") and "after_gbps" in out:
        out["after_ratio"] = round(out["after_gbps"] / out["before_gbps"], 3)
    return out


def read_ticks(path):
    """A runs/*.ticks file -> ([(t_ms, bytes)], the tick interval in ms or None)."""
    ticks = []
    with open(path) as f:
        for line in f:
            fl = line.split()
            if len(fl) >= 2 and not line.startswith("#"):
                ticks.append((int(fl[0]), int(fl[1])))
    steps = sorted(b[0] - a[0] for a, b in zip(ticks, ticks[1:]) if b[0] > a[0])
    return ticks, (steps[len(steps) // 2] if steps else None)


DOWN_NOTE_RE = re.compile(r"down path \d+ at ([\d.]+)-([\d.]+) s")


def fill_timelines(rows, runs):
    """Path failure rows of an older results.csv (no before_gbps): the goodput before and
    after the failure from their tick files in RUNS, where those are. Rows without the
    down_tick_ms / up_tick_ms columns take them from fail_tick_ms, the note's "down path N at
    A-B s" (the down command took B-A s) and up_after_ms (the up command assumed as long as
    the down one). Returns how many rows it filled."""
    n = 0
    for r in rows:
        fail = num(r, "fail_tick_ms")
        if fail is None or num(r, "before_gbps") is not None or r.get("status") != "ok":
            continue
        path = os.path.join(runs, "%s_%s_%s_r%s.ticks" % (r["scenario"], r["measure"],
                                                           fname(r["contender"]), r["rep"]))
        if not os.path.exists(path):
            continue
        ticks, iv = read_ticks(path)
        if not iv:
            continue
        m = DOWN_NOTE_RE.search(r.get("note") or "")
        took = (float(m.group(2)) - float(m.group(1))) * 1000 if m else 0.0
        down = num(r, "down_tick_ms")
        if down is None:
            down = fail + took
        up = num(r, "up_tick_ms")
        if up is None and num(r, "up_after_ms") is not None:
            up = fail + num(r, "up_after_ms") - took
        got = timeline_goodput(ticks, iv, fail / 1000, down / 1000,
                               up / 1000 if up is not None else None)
        if got:
            r.update(got)
            n += 1
    return n
