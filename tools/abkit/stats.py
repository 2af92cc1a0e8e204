# SPDX-License-Identifier: BSD-2-Clause
"""The figures of one run (latency percentiles, goodput after an impairment, the switchback's
impaired and clean periods, incast fairness) and of several (median and range)."""

import math
import statistics

from .common import num


def percentile(sorted_v, p):
    """The same rule as braid_ab: the ceil(p*n)-th smallest."""
    n = len(sorted_v)
    i = max(0, min(n - 1, int(math.ceil(p * n)) - 1))
    return sorted_v[i]


def stats(vals):
    """(median, min, max, count) of the values that are not None; None when there are none."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals), len(vals)


def jain(vals):
    """Jain's fairness index of vals: 1 when all are equal, 1/n when one has everything.
    None when they add up to 0."""
    total = sum(vals)
    if not total:
        return None
    return total ** 2 / (len(vals) * sum(x * x for x in vals))


def receiver_t0(res, t_client, t_exit):
    """When the receiver took its first message, in seconds on the client's clock (from its
    start), or None. braid_ab's t0 is CLOCK_MONOTONIC, which the namespaces share with
    time.monotonic() (t_client: the client's start on it); without t0, about the client's
    exit (t_exit) less the receiver's first-to-last seconds, which a blocking change of the
    fabric can make late."""
    if num(res, "t0"):
        return num(res, "t0") - t_client
    if t_exit is not None:
        return max(0.0, t_exit - (num(res, "seconds") or 0.0) - 0.02)
    return None


def fill_latency(row, size, samples, res):
    """A latency run's figures into row: from its round trips' samples (microseconds) where
    there are any, else from braid_ab's result line res."""
    iters = len(samples) or int(num(res, "iters") or 0)
    row["payload_bytes"] = 2 * size * (iters + 100)   # pings and pongs, warm-up too
    if samples:
        s = sorted(samples)
        row["samples"] = len(s)
        row["p50_us"] = round(percentile(s, 0.5), 2)
        row["p99_us"] = round(percentile(s, 0.99), 2)
        row["p999_us"] = round(percentile(s, 0.999), 2)
        row["mean_us"] = round(sum(s) / len(s), 2)
        row["max_us"] = round(s[-1], 2)
    else:
        for k in ("p50_us", "p99_us", "p999_us", "mean_us", "max_us"):
            row[k] = num(res, k)


def after_impairment(ticks, iv, t_act, t0c, secs):
    """The bytes a stream delivered after a change of the fabric at t_act, and over how long:
    (bytes, seconds). Tick times (iv ms apart) count from the receiver's first message, t0c
    on the client's clock (None: taken as t_act); the ticks that began at or after t_act
    count, over the time from the first of them (or from t_act, when the first message came
    later) to the last receive, secs after the first."""
    if t0c is None:
        t0c = t_act
    first = max(0, int(math.ceil((t_act - t0c) * 1000 / iv)))
    win_start = t0c + first * iv / 1000 if first > 0 else t_act
    dur = t0c + secs - win_start
    got = sum(b for t, b in ticks if t // iv >= first)
    return got, dur


def fill_stream(row, m, res, ticks, t_act, t0c=None, run_s=None):
    """A streaming run's figures into row (measurement m, braid_ab's result res, its ticks);
    with a change of the fabric at t_act (None: none counted), only the part after it.
    t0c: the receiver's first receive on the client's clock (None: unknown); run_s: how
    long the client streamed (default the measure's seconds)."""
    size = m.size
    row["seconds"] = num(res, "seconds")
    row["bytes"] = int(num(res, "bytes") or 0)
    row["payload_bytes"] = row["bytes"]
    row["goodput_run_gbps"] = num(res, "goodput_gbps")
    gbps = num(res, "goodput_gbps")
    mps = num(res, "msgs_per_s")
    iv = m.interval_ms
    secs = row["seconds"] or 0.0
    stream_s = run_s or m.seconds
    if secs < 0.25 * stream_s and row["bytes"]:
        # everything arrived in one burst (a stuck window let go at the end): braid_ab's
        # bytes / (first to last receive) means nothing; count the streaming time instead
        gbps = row["bytes"] * 8 / (stream_s * 1e9)
        mps = row["bytes"] / size / stream_s
        row["note"] += "the receiver saw it all within %.3f s: bytes / %g s; " % (
            secs, stream_s)
    if t_act is not None and ticks and not m.pathdown:
        got, dur = after_impairment(ticks, iv, t_act, t0c, secs)
        if dur >= 0.2:
            gbps = got * 8 / (dur * 1e9)
            mps = got / size / dur
            row["note"] += "goodput over the %.2f s after %s; " % (
                dur, "that moment" if row["scenario"] == "clean" else "the impairment")
        else:
            row["note"] += "under 0.2 s of receiving after the impairment: whole run " \
                           "counted; "
    row["goodput_gbps"] = round(gbps, 4) if gbps is not None else None
    row["msgs_per_s"] = round(mps) if mps is not None else None


def fill_fairness(row, sent, clients):
    """Incast: the bytes each of the clients sent (sent, those that said) -> fairness (Jain's
    index) and per_client_bytes in row, when every client said and something was sent."""
    if len(sent) == clients and sum(sent):
        row["fairness"] = round(jain(sent), 3)
        row["per_client_bytes"] = "/".join(str(x) for x in sent)


def switch_periods(switches, end):
    """A switchback run's periods: [(on|off, from, to)] on the client's clock, from the
    list of changes [(on|off|end, began, done, planned seconds)]: each period runs from when
    its change was done to when the next one began (the last one, when the run ended before
    the change that ends it, to end, the last receive, and no longer than planned)."""
    out = []
    for i, (kind, _, done, planned) in enumerate(switches):
        if kind == "end":
            break
        to = switches[i + 1][1] if i + 1 < len(switches) else min(end, done + planned)
        if to > done:
            out.append((kind, done, to))
    return out


def period_totals(ticks, periods, t0c, iv):
    """The bytes and seconds of the ticks (iv seconds long) wholly inside the periods of each
    kind: {"on": [bytes, seconds], "off": [bytes, seconds]}. Tick times count in ms from the
    receiver's first message, t0c on the periods' clock; the last tick, partial, counts for
    neither, nor do ticks that straddle a change."""
    got = {"on": [0, 0.0], "off": [0, 0.0]}
    if not periods:
        return got
    n = {"on": 0, "off": 0}                  # ticks counted: seconds are n * iv, not a float sum
    last = max((t for t, _ in ticks), default=None)
    for t, b in ticks or []:
        if t == last:
            continue                         # partial
        a0 = t0c + t / 1000
        for kind, lo, hi in periods:
            if lo <= a0 and a0 + iv <= hi:
                got[kind][0] += b
                n[kind] += 1
                break
    for kind in got:
        got[kind][1] = round(n[kind] * iv, 9)
    return got


def fill_switchback(row, m, ticks, periods, t0c, changes, run_s):
    """A switchback run's goodput into row: impaired and clean periods of the same run
    (switch_periods), each counted over the ticks wholly inside it (the tenths of a second
    tools/fabric takes to change a path belong to neither). goodput_gbps becomes the
    impaired periods' (the scenario's goodput), sw_clean_gbps the clean periods', sw_ratio
    the one over the other; sw_periods says what was counted (and marks the row a
    switchback). Without 0.5 s of both kinds the run has no goodput and no ratio: a miss,
    not a whole-run figure mixing both. changes: how many times the path was changed;
    run_s: how long the client streamed."""
    for k in ("sw_ratio", "sw_clean_gbps"):
        row.pop(k, None)
    got = period_totals(ticks, periods, t0c, m.interval_ms / 1000)
    (bon, son), (boff, soff) = got["on"], got["off"]
    row["sw_periods"] = "%d on %.2f s, %d off %.2f s" % (
        sum(1 for p in periods if p[0] == "on"), son,
        sum(1 for p in periods if p[0] == "off"), soff)
    if son < 0.5 or soff < 0.5:
        row["goodput_gbps"] = row["msgs_per_s"] = None
        row["note"] += "switchback: under 0.5 s counted %s (%d change(s) of the path in " \
                       "a %g s run): no goodput, no ratio; " % (
                           "impaired" if son < 0.5 else "clean", changes, run_s)
        return
    on, off = bon * 8 / (son * 1e9), boff * 8 / (soff * 1e9)
    row["goodput_gbps"] = round(on, 4)
    row["msgs_per_s"] = round(bon / m.size / son)
    row["sw_clean_gbps"] = round(off, 4)
    if off > 0:
        row["sw_ratio"] = round(on / off, 4)
    row["note"] += "switchback: impaired %.2f s at %.3f Gbit/s, clean %.2f s at %.3f, " \
                   "in turns within the run; " % (son, on, soff, off)
