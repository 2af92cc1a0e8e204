# SPDX-License-Identifier: BSD-2-Clause
"""The plots: data files in OUTDIR/plot/ for tools/ab_plots.gp (goodput against loss, latency
CDFs, goodput across the path failure), and gnuplot run on them."""

import os
import shutil
import subprocess

from .common import LOSS_OF, REPO, fname, log, num
from .stats import stats


def goodput_vs_loss(rows, pd, contenders):
    """plot/goodput_vs_loss.dat: 1 MiB goodput's median, min and max per contender at each
    loss, where at least 2 of clean and the loss scenarios ran. Returns the contenders'
    file names for gnuplot's gv, or None."""
    loss_sc = [s for s in ("clean", "loss0.1", "loss1", "loss5")
               if any(r["scenario"] == s and r["measure"] == "bw1m" for r in rows)]
    gconts = [c for c in ("braid", "braid;ofi_rxm", "tcp;ofi_rxm", "braid;ofi_rxd")
              if c in contenders]
    if len(loss_sc) < 2:
        return None
    with open(os.path.join(pd, "goodput_vs_loss.dat"), "w") as f:
        f.write("# x label " + " ".join("%s_med %s_min %s_max" % ((fname(c),) * 3)
                                       for c in gconts) + "\n")
        for i, s in enumerate(loss_sc):
            vals = []
            for c in gconts:
                st = stats([num(r, "goodput_gbps") for r in rows if r["scenario"] == s
                            and r["measure"] == "bw1m" and r["contender"] == c
                            and r["status"] == "ok"])
                vals += ["%.4f %.4f %.4f" % st[:3] if st else "NaN NaN NaN"]
            f.write("%d \"%s%%\" %s\n" % (i, LOSS_OF[s], " ".join(vals)))
    return " ".join(fname(c) for c in gconts)


def latency_cdfs(rows, pd, contenders, runs):
    """plot/cdf_SCENARIO_CONTENDER.dat of clean and loss1: every ok run's latency samples
    (runs/*.lat), as fractions at or below and above. Returns gnuplot's cdf list."""
    cdf = []
    for s in ("clean", "loss1"):
        for c in contenders:
            v = []
            for r in rows:
                if r["scenario"] == s and r["measure"] == "lat" and r["contender"] == c \
                        and r["status"] == "ok":
                    tag = "%s_lat_%s_r%s.lat" % (s, fname(c), r["rep"])
                    p = os.path.join(runs, tag)
                    if os.path.exists(p):
                        with open(p) as fh:
                            v += [float(x) for x in fh if x.strip()]
            if not v:
                continue
            v.sort()
            n = len(v)
            step = max(1, n // 3000)
            name = "cdf_%s_%s.dat" % (s.replace(".", "_"), fname(c))
            with open(os.path.join(pd, name), "w") as f:
                f.write("# us fraction_at_or_below fraction_above\n")
                for i in list(range(0, n, step)) + list(range(max(0, n - 300), n)):
                    f.write("%.3f %.6f %.6f\n" % (v[i], (i + 1) / n, (n - 1 - i) / n))
            cdf.append("%s:%s" % (s.replace(".", "_"), fname(c)))
    return cdf


def failure_timelines(rows, pd, contenders, runs, made):
    """plot/timeline_CONTENDER.dat: goodput over time across the path failure, one run per
    contender (its median stall), lined up on its own failure. Sets made's tl (those
    plotted), tup (when the path came back) and tlfail (contenders whose runs all failed)."""
    tl = []
    for c in contenders:
        sel = [r for r in rows if r["scenario"] == "pathdown" and r["contender"] == c
               and r["status"] == "ok" and num(r, "stall_ms") is not None]
        if not sel:
            continue
        sel.sort(key=lambda r: num(r, "stall_ms"))
        r = sel[len(sel) // 2]
        src = os.path.join(runs, "pathdown_timeline_%s_r%s.ticks" % (fname(c), r["rep"]))
        fail = num(r, "fail_tick_ms")
        if os.path.exists(src) and fail is not None:
            # time from the failure: every contender's run lined up on its own failure
            with open(src) as fi, open(os.path.join(pd, "timeline_%s.dat" % fname(c)), "w") as fo:
                fo.write("# ms_since_path_down bytes gbps\n")
                for line in fi:
                    f = line.split()
                    if f and not line.startswith("#"):
                        fo.write("%d %s %s\n" % (int(f[0]) - fail, f[1], f[2]))
            tl.append(fname(c))
            if num(r, "up_after_ms") is not None:
                made["tup"] = "%.0f" % num(r, "up_after_ms")
    if tl:
        made["tl"] = " ".join(tl)
    lost = [c for c in contenders if fname(c) not in tl
            and any(r["scenario"] == "pathdown" and r["contender"] == c for r in rows)]
    if lost:
        made["tlfail"] = " ".join(lost)


def write_plot_data(rows, outdir, contenders, runs):
    """Data files for tools/ab_plots.gp in OUTDIR/plot/; returns gnuplot -e assignments."""
    pd = os.path.join(outdir, "plot")
    os.makedirs(pd, exist_ok=True)
    for f in os.listdir(pd):
        os.unlink(os.path.join(pd, f))
    made = {}
    gv = goodput_vs_loss(rows, pd, contenders)
    if gv is not None:
        made["gv"] = gv
    cdf = latency_cdfs(rows, pd, contenders, runs)
    if cdf:
        made["cdf"] = " ".join(cdf)
    failure_timelines(rows, pd, contenders, runs, made)
    return made


def plot(outdir, made, verbose):
    """gnuplot tools/ab_plots.gp on the data files (made: write_plot_data's assignments):
    None, or why there are no plots."""
    gp = os.path.join(REPO, "tools", "ab_plots.gp")
    if not shutil.which("gnuplot"):
        return "gnuplot not found: no plots (the data is in %s/plot/)" % outdir
    if not made:
        return "nothing to plot"
    assigns = "dir='%s'; gv='%s'; cdf='%s'; tl='%s'; tup=%s; tlfail='%s'" % (
        outdir, made.get("gv", ""), made.get("cdf", ""), made.get("tl", ""),
        made.get("tup", "-1"), made.get("tlfail", ""))
    r = subprocess.run(["gnuplot", "-e", assigns, gp], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    if r.returncode != 0:
        return "gnuplot failed: %s" % r.stdout.strip()[-500:]
    if verbose and r.stdout.strip():
        log(r.stdout.strip())
    return None
