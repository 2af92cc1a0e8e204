# SPDX-License-Identifier: BSD-2-Clause
"""The A/B's targets, judged per repetition: repetition r's braid run against the baseline of
the same repetition r (its own clean periods, RC's run, the same run before the failure); a
target is met only when every repetition meets it."""

import math
import re
import statistics

from .common import RC, fmt, human_size, num
from .plan import delay_scenario

STALL_MAX_MS = 50


def rep_row(rows, sc, key, cont, rep):
    """The row of one run: scenario, measure, contender, repetition (None: no such run)."""
    sel = [r for r in rows if r["scenario"] == sc and r["measure"] == key
           and r["contender"] == cont and str(r["rep"]) == str(rep)]
    return sel[-1] if sel else None


def has_runs(rows, sc, key, cont):
    return any(r["scenario"] == sc and r["measure"] == key and r["contender"] == cont
               for r in rows)


def reps_of(rows, sc, key):
    """The repetitions in which scenario sc's measure key ran, for any contender."""
    return sorted({int(r["rep"]) for r in rows if r["scenario"] == sc and r["measure"] == key})


def run_missing(row, who):
    """None when the run is there and ok, else why not: "no WHO run", "WHO timeout", ...
    (its status, with its exit status when it has one)."""
    if row is None:
        return "no %s run" % who
    if row.get("status") != "ok":
        rc = row.get("rc")
        return "%s %s%s" % (who, row.get("status") or "?",
                            ", exit %s" % rc if rc not in (None, "") else "")
    return None


def stream_seconds(row):
    """The streaming seconds braid_ab was asked for (its -t, from the cmd column), or None."""
    m = re.search(r"(?:^|\s)-t\s+([\d.]+)", row.get("cmd") or "")
    return float(m.group(1)) if m else None


def fmt_ratio(q):
    if q is None:
        return "-"
    if math.isinf(q):
        return "inf"
    return ("%.3gx" if q >= 0.1 else "%.2gx") % q


def fmt_ms(v):
    return "-" if v is None else "%.0f ms" % v


def fmt_gbps(v):
    return "-" if v is None else "%s Gbit/s" % fmt(v)


def not_evaluated(name, why):
    return {"target": name, "verdict": "not evaluated: " + why, "worst": "-", "median": "-",
            "missed": "-", "reps": []}


def judge(name, per_rep, higher, show):
    """One target from its repetitions: per_rep is a list of dicts {rep, value (None when the
    repetition could not be measured), ok, why (what went wrong, when value is None),
    detail (the numbers behind the value)}; higher: whether a higher value is better; show
    formats a value. Met when every repetition met it. worst: the worst value and its
    repetition; median: over the repetitions with a value; missed: every repetition that
    missed, with its value or why."""
    if not per_rep:
        return not_evaluated(name, "no repetition ran")
    vals = [p for p in per_rep if p["value"] is not None]
    worst = "-"
    if vals:
        w = (min if higher else max)(vals, key=lambda p: p["value"])
        worst = "%s in r%d%s" % (show(w["value"]), w["rep"],
                                 " (%s)" % w["detail"] if w.get("detail") else "")
    median = "-"
    if vals:
        median = "%s over %d" % (show(statistics.median(p["value"] for p in vals)), len(vals))
    missed = [p for p in per_rep if not p["ok"]]
    out = {"target": name, "verdict": "**NOT met**" if missed else "met", "worst": worst,
           "median": median, "reps": per_rep,
           "missed": ", ".join("r%d (%s)" % (p["rep"], p["why"] if p["value"] is None
                                             else show(p["value"]) + (
                                                 ", " + p["why"] if p.get("why") else ""))
                               for p in missed) or "none"}
    return out


def miss(rep, why):
    """A repetition that could not be measured: why."""
    return {"rep": rep, "value": None, "ok": False, "why": why, "detail": ""}


def measured(rep, value, ok, why=None, detail=""):
    """A repetition's value, whether it met the target, why not, the numbers behind it."""
    return {"rep": rep, "value": value, "ok": ok, "why": why, "detail": detail}


def is_switchback(rows, which):
    """Whether the runs of which = (scenario, measure, contender) were switchbacks."""
    return any(r.get("sw_periods") not in (None, "") for r in rows
               if (r["scenario"], r["measure"], r["contender"]) == which)


def within_rep(r, a, cont, limit, higher, col, show_v):
    """Repetition r of a switchback run a (of cont): its impaired periods over its clean
    ones (sw_ratio) against limit; a miss without a run or a ratio."""
    why = run_missing(a, cont)
    q = None if why else num(a, "sw_ratio")
    if why or q is None:
        return miss(r, why or "no clean periods to compare within the run (%s)" %
                    (a.get("sw_periods") or "no switchback"))
    return measured(r, q, q >= limit if higher else q <= limit,
                    detail="%s vs %s with the impairment lifted, in the same run" % (
                        fmt(num(a, col)), show_v(num(a, "sw_clean_gbps"))))


def between_rep(r, a, b, cont, base_name, limit, higher, col, show_v, zero_base_met):
    """Repetition r's run a (of cont) over its baseline run b, in column col, against limit;
    a miss without either run or either value, or with a baseline of 0 unless zero_base_met
    (an infinite ratio, where higher is better)."""
    why = run_missing(a, cont) or run_missing(b, "%s baseline" % base_name)
    if why:
        return miss(r, why)
    va, vb = num(a, col), num(b, col)
    if va is None or vb is None:
        return miss(r, "no %s in the %s run" % (
            col, cont if va is None else "%s baseline" % base_name))
    detail = "%s vs %s %s" % (fmt(va), base_name, show_v(vb))
    if vb == 0:
        if not (zero_base_met and higher):
            return miss(r, "the %s baseline is 0" % base_name)
        q = math.inf
        detail += ": %s delivered nothing" % base_name
    else:
        q = va / vb
    return measured(r, q, q >= limit if higher else q <= limit, detail=detail)


def ratio_target(rows, name, imp, base, limit, higher=True, col="goodput_gbps",
                 show_v=fmt_gbps, base_name="clean", zero_base_met=False, within=False):
    """A target on the ratio of two runs of the same repetition: imp and base are
    (scenario, measure, contender); in every repetition r in which imp's scenario ran, imp's
    col in r over base's col in r must be >= limit (higher) or <= limit. A repetition whose
    imp or base run is missing or failed is a miss, so is one without the value; a base of
    0 is a miss too, unless zero_base_met (braid against a baseline that delivered nothing:
    an infinite ratio). Not evaluated when either scenario has no run of its contender.
    within: imp's runs that were switchbacks (sw_periods set) are judged on their sw_ratio
    (their impaired periods over their clean ones), base's runs not needed; a switchback
    without a ratio is a miss."""
    (isc, ikey, icont), (bsc, bkey, bcont) = imp, base
    sw = within and is_switchback(rows, imp)
    lack = ["%s %s runs of %s" % (sc, key, cont) for sc, key, cont in
            ((imp,) if sw else (imp, base)) if not has_runs(rows, sc, key, cont)]
    if lack:
        return not_evaluated(name, "no " + " and no ".join(lack))
    per = []
    for r in reps_of(rows, isc, ikey):
        a = rep_row(rows, isc, ikey, icont, r)
        if sw:
            per.append(within_rep(r, a, icont, limit, higher, col, show_v))
        else:
            per.append(between_rep(r, a, rep_row(rows, bsc, bkey, bcont, r), icont, base_name,
                                   limit, higher, col, show_v, zero_base_met))
    return judge(name, per, higher, fmt_ratio)


def braid_reps(rows, sc, key, one):
    """Every repetition in which scenario sc's measure key ran: braid's run of it judged by
    one(r, row) where it is there and ok, else a miss saying why not."""
    per = []
    for r in reps_of(rows, sc, key):
        row = rep_row(rows, sc, key, "braid", r)
        why = run_missing(row, "braid")
        per.append(miss(r, why) if why else one(r, row))
    return per


def stall_target(rows):
    """Path failure: in every repetition braid's longest stall <= STALL_MAX_MS and the flow
    recovered before it ended."""
    name = "pathdown: a path black-holed mid-run: braid's longest stall <= %d ms, and it " \
           "recovers" % STALL_MAX_MS
    if not has_runs(rows, "pathdown", "timeline", "braid"):
        return not_evaluated(name, "no pathdown runs of braid")

    def one(r, row):
        v = num(row, "stall_ms")
        if v is None:
            return miss(r, "no timeline to find the stall in")
        rec = num(row, "recovered") != 0
        return measured(r, v, v <= STALL_MAX_MS and rec, None if rec else "did not recover",
                        "" if rec else "did not recover")
    return judge(name, braid_reps(rows, "pathdown", "timeline", one), False, fmt_ms)


def pathdown_goodput_target(rows, limit=0.7):
    """Path failure: in every repetition braid's goodput after the failure >= limit x its
    goodput before it, in the same run (timeline_goodput(): means of the receiver's ticks,
    the stall left out). Rows of an older results.csv without tick files fall back on the
    median ticks (pre_gbps, post_gbps), which leave out every dip: said in the detail."""
    name = "pathdown: a path black-holed mid-run: braid goodput after the failure >= " \
           "%gx before it (1 of 4 paths gone costs <= %d%%)" % (limit, round(100 * (1 - limit)))
    if not has_runs(rows, "pathdown", "timeline", "braid"):
        return not_evaluated(name, "no pathdown runs of braid")

    def one(r, row):
        b, a, note = num(row, "before_gbps"), num(row, "after_gbps"), ""
        if b is None and a is None and num(row, "pre_gbps") is not None:
            b, a, note = num(row, "pre_gbps"), num(row, "post_gbps"), \
                "; median ticks: no tick file"
        if not b or a is None:
            return miss(r, "no goodput %s the failure on the timeline" % (
                "before" if not b else "after"))
        q = a / b
        return measured(r, q, q >= limit,
                        detail="%s after vs %s before%s" % (fmt(a), fmt_gbps(b), note))
    return judge(name, braid_reps(rows, "pathdown", "timeline", one), True, fmt_ratio)


def drain_seconds(row, gbps):
    """How long the run's window of sends (braid_ab -w, in its command) takes to arrive at
    the run's goodput: what a window-bound flow on a long path still delivers after the
    stream's end, without being stuck."""
    m = re.search(r"-w (\d+)", row.get("cmd") or "")
    size = num(row, "size")
    if not m or not size or not gbps:
        return 0.0
    return int(m.group(1)) * size * 8 / (gbps * 1e9)


def completes_target(rows, sc):
    """Scenario sc (no ratio target): braid's 1 MiB runs complete in every repetition, with
    no error and no stuck run. Stuck: nothing delivered, everything delivered in one burst
    at the end (stats.fill_stream's note), or receiving that took over twice the streaming
    time plus 1.5x the time its window of sends takes to arrive at its goodput (braid_ab
    waits for its last sends; a window stuck for seconds shows there)."""
    name = "%s: every path %s ms one way: braid 1 MiB runs complete, no error, no stuck " \
           "run" % (sc, sc[len("delay"):])
    if not has_runs(rows, sc, "bw1m", "braid"):
        return not_evaluated(name, "no %s bw1m runs of braid" % sc)

    def one(r, row):
        g, secs, t = num(row, "goodput_gbps"), num(row, "seconds"), stream_seconds(row)
        if not g:
            return miss(r, "stuck: nothing delivered")
        if "saw it all within" in (row.get("note") or ""):
            return measured(r, g, False, "stuck: everything arrived in one burst at the end")
        if t and secs and secs > 2 * t + 1.5 * drain_seconds(row, g):
            return measured(r, g, False, "stuck: receiving took %.1f s for a %g s stream" % (
                secs, t))
        return measured(r, g, True)
    return judge(name, braid_reps(rows, sc, "bw1m", one), True, fmt_gbps)


def check_targets(rows, base_delay=0.2):
    """The A/B's targets, each judged per repetition (see judge()): a list of dicts
    {target, verdict (met, **NOT met**, not evaluated: why), worst, median, missed}.
    base_delay: the slowpath scenario's delay on every path, when its rows do not say."""
    out = []
    lat = [r for r in rows if r["scenario"] == "loss1" and r["measure"] == "lat"]
    lat_size = human_size(int(float(lat[0]["size"]))) if lat and lat[0].get("size") else "small"
    out.append(ratio_target(
        rows, "loss1: 1% loss on one of 4 paths: braid 1 MiB goodput >= 0.9x its clean "
        "1 MiB goodput", ("loss1", "bw1m", "braid"), ("clean", "bw1m", "braid"), 0.9,
        within=True))
    if has_runs(rows, "loss1", "write1m", "braid"):
        out.append(ratio_target(
            rows, "loss1 RMA: 1% loss on one of 4 paths: braid 1 MiB RMA write goodput >= 0.9x "
            "its clean RMA write goodput", ("loss1", "write1m", "braid"),
            ("clean", "write1m", "braid"), 0.9, within=True))
    # loss5: 1 MiB where both scenarios measured it, else 64 KiB
    key = next((k for k in ("bw1m", "bw64k") if has_runs(rows, "loss5", k, "braid")
                and (has_runs(rows, "clean", k, "braid")
                     or is_switchback(rows, ("loss5", k, "braid")))), "bw1m")
    size = "1 MiB" if key == "bw1m" else "64 KiB"
    out.append(ratio_target(
        rows, "loss5: 5%% loss on one of 4 paths: braid %s goodput >= 0.8x its clean %s "
        "goodput" % (size, size), ("loss5", key, "braid"), ("clean", key, "braid"), 0.8,
        within=True))
    out.append(ratio_target(
        rows, "loss1 vs RC: 1%% loss on one of 4 paths: braid 1 MiB goodput >= 5x %s's" % RC,
        ("loss1", "bw1m", "braid"), ("loss1", "bw1m", RC), 5, base_name=RC,
        zero_base_met=True))
    out.append(ratio_target(
        rows, "loss1 p99: 1%% loss: braid %s p99 latency <= 2x its clean p99" % lat_size,
        ("loss1", "lat", "braid"), ("clean", "lat", "braid"), 2, higher=False, col="p99_us",
        show_v=lambda v: "-" if v is None else "%s us" % fmt(v)))
    out.append(stall_target(rows))
    out.append(pathdown_goodput_target(rows))
    sp = [num(r, "base_delay_ms") for r in rows if r["scenario"] == "slowpath"]
    d = next((x for x in sp if x is not None), base_delay)
    base_sc = delay_scenario(d)
    out.append(ratio_target(
        rows, "slowpath: one of 4 paths 10x slower: braid 1 MiB goodput >= 0.7x its 1 MiB "
        "goodput with every path at %g ms (%s)" % (d, base_sc),
        ("slowpath", "bw1m", "braid"), (base_sc, "bw1m", "braid"), 0.7, base_name=base_sc,
        within=True))
    delays = sorted({r["scenario"] for r in rows if re.match(r"delay[\d.]+$", r["scenario"])},
                    key=lambda n: float(n[5:]))
    for sc in delays or [delay_scenario(x) for x in (0.2, 2, 20)]:
        out.append(completes_target(rows, sc))
    ran = {r["scenario"] for r in rows}
    for t in out:
        # the scenario a target judges: its name up to the first ':' or ' '
        t["scenario"] = re.split(r"[: ]", t["target"], 1)[0]
        t["ran"] = t["scenario"] in ran
    return out
