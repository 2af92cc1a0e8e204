# SPDX-License-Identifier: BSD-2-Clause
"""What tools/ab writes: results.csv, the progress line of each run, summary.md (per scenario a
table of medians and braid's ratios, then the targets), and --summarize from results.csv."""

import csv
import os

from .common import SHORT, fmt, log, num
from .plots import plot, write_plot_data
from .stats import stats
from .targets import check_targets
from .timeline import fill_timelines

COLUMNS = ["scenario", "measure", "mode", "size", "base_delay_ms", "contender", "rep",
           "status", "rc", "goodput_gbps", "goodput_run_gbps", "msgs_per_s", "seconds", "bytes",
           "p50_us", "p99_us", "p999_us", "mean_us", "max_us", "samples",
           "fabric_bytes", "payload_bytes", "overhead_ratio", "fabric_drops", "path_bytes",
           "victim_path", "victim_share", "spread", "attempts", "fail_tick_ms", "down_tick_ms",
           "up_tick_ms", "up_after_ms", "stall_ms", "recovered", "pre_gbps", "post_gbps",
           "before_gbps", "after_gbps", "after_ratio", "path_deaths", "retx_dead", "redraws",
           "fairness", "per_client_bytes", "sw_clean_gbps", "sw_ratio", "sw_periods", "wall_s",
           "note", "cmd"]

# what each table row shows: (label, measure key, column, scale, higher is better)
METRICS = [
    ("goodput 64 KiB, Gbit/s", "bw64k", "goodput_gbps", 1, True),
    ("goodput 1 MiB, Gbit/s", "bw1m", "goodput_gbps", 1, True),
    ("latency p50, us", "lat", "p50_us", 1, False),
    ("latency p99, us", "lat", "p99_us", 1, False),
    ("latency p99.9, us", "lat", "p999_us", 1, False),
    ("rate 8 B, M msg/s", "rate", "msgs_per_s", 1e-6, True),
    ("RMA write 1 MiB goodput, Gbit/s", "write1m", "goodput_gbps", 1, True),
    ("overhead 1 MiB (fabric bytes / goodput - 1)", "bw1m", "overhead_ratio", 1, False),
    ("overhead 64 KiB", "bw64k", "overhead_ratio", 1, False),
    ("share of bytes on the impaired path, 1 MiB", "bw1m", "victim_share", 1, None),
    ("share of bytes on the impaired path, latency", "lat", "victim_share", 1, None),
    ("goodput 64 KiB, path failure run, Gbit/s", "timeline", "goodput_gbps", 1, True),
    ("longest stall after the failure, ms", "timeline", "stall_ms", 1, False),
    ("goodput before / after the failure (means, stall left out), Gbit/s", "timeline",
     "beforeafter", 1, None),
    ("goodput after / before the failure", "timeline", "after_ratio", 1, None),
    ("median tick before / after the failure, Gbit/s", "timeline", "prepost", 1, None),
    ("incast goodput 64 KiB, Gbit/s (sum)", "incast64k", "goodput_gbps", 1, True),
    ("incast goodput 1 MiB, Gbit/s (sum)", "incast1m", "goodput_gbps", 1, True),
    ("incast fairness 1 MiB (Jain, 1 = fair)", "incast1m", "fairness", 1, None),
]

# table rows showing two columns as "a / b" (medians)
PAIRS = {"prepost": ("pre_gbps", "post_gbps"), "beforeafter": ("before_gbps", "after_gbps")}

# columns whose braid / X ratio means nothing
NO_RATIO = ("victim_share", "after_ratio", "fairness")

INTRO = ("Medians over the repetitions, (min-max) when there were several. "
         "\"braid / X\": braid's median over X's (for goodput and rate higher is better "
         "for braid, for latency and overhead lower is). Overhead: bytes forwarded across "
         "the fabric's paths (both directions: data, headers, ACKs, retransmissions, "
         "control channel) over the payload bytes delivered, minus 1.")

TARGETS_INTRO = (
    "Judged per repetition: repetition r's braid run against the baseline run of "
    "the same repetition r (ratios within one invocation); the targets of a loss or "
    "slowpath scenario against its clean baseline, where its runs were switchbacks, "
    "against the clean periods of the same run (the impairment lifted and put back "
    "in turns; a switchback run's path share, drops and overhead cover its whole "
    "run). Met only when every "
    "repetition meets it; a failed braid run or a missing baseline is a miss. "
    "worst: the worst repetition's value; median: over the repetitions with a "
    "value; missed in: the repetitions that missed.")


def load_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def write_rows(path, rows):
    """results.csv: every run so far, COLUMNS in order (a row's other keys left out)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def describe(row):
    """A run's outcome on its progress line: its status and exit when it failed, else its
    figures."""
    if row["status"] != "ok":
        return "%s (exit %s) %s" % (row["status"].upper(), row.get("rc"),
                                    row.get("note", "")[-120:])
    if row["mode"] == "lat":
        s = "p50 %s p99 %s p99.9 %s us" % (fmt(row.get("p50_us")), fmt(row.get("p99_us")),
                                            fmt(row.get("p999_us")))
    elif row["mode"] == "rate":
        s = "%s M msg/s" % fmt((row.get("msgs_per_s") or 0) / 1e6)
    else:
        s = "%s Gbit/s" % fmt(row.get("goodput_gbps"))
        if row.get("stall_ms") is not None:
            s += ", stall %d ms%s" % (row["stall_ms"], "" if row.get("recovered", 1)
                                      else " (no recovery)")
        if row.get("after_ratio") is not None:
            s += ", after/before %.2fx" % row["after_ratio"]
        if row.get("fairness") is not None:
            s += ", fairness %.2f" % row["fairness"]
    if row.get("sw_ratio") is not None:
        s += " impaired, %.2fx its clean periods'" % row["sw_ratio"]
    elif row.get("sw_periods"):
        s += " (switchback without enough of both kinds: %s)" % row["sw_periods"]
    if row.get("overhead_ratio") is not None:
        s += ", overhead %.2f" % row["overhead_ratio"]
    if row.get("victim_share") is not None:
        s += ", %.0f%% on path %s" % (100 * row["victim_share"], row["victim_path"])
    return s


def fmt_stat(st, scale=1.0):
    """stats()'s (median, min, max, n) as "median (min-max)", the median alone for one."""
    if st is None:
        return "-"
    med, lo, hi, n = st
    if n == 1:
        return fmt(med * scale)
    return "%s (%s-%s)" % (fmt(med * scale), fmt(lo * scale), fmt(hi * scale))


def cell(rows, sc, key, col, cont):
    """One table cell: (stats() of col over cont's ok runs of sc's key, or None; the text of a
    PAIRS cell, or None; how many of those runs failed)."""
    sel = [r for r in rows if r["scenario"] == sc and r["measure"] == key
           and r["contender"] == cont]
    ok = [r for r in sel if r["status"] == "ok"]
    bad = len(sel) - len(ok)
    if col in PAIRS:
        a, b = (stats([num(r, k) for r in ok]) for k in PAIRS[col])
        if not a and not b:
            return None, "-", bad
        return None, "%s / %s" % (fmt(a[0]) if a else "-", fmt(b[0]) if b else "-"), bad
    st = stats([num(r, col) for r in ok])
    return st, None, bad


def metric_row(rows, sc, metric, contenders):
    """A scenario table's row for metric (a METRICS entry): each contender's cell, then
    braid's ratio over each other contender where one means something."""
    label, key, col, scale, _hib = metric
    cells, meds = [], {}
    for c in contenders:
        st, text, bad = cell(rows, sc, key, col, c)
        t = text if text is not None else fmt_stat(st, scale)
        if bad:
            t += " [%d failed]" % bad
        cells.append(t)
        meds[c] = st[0] if st else None
    if "braid" in contenders:
        for c in contenders:
            if c == "braid":
                continue
            b, o = meds.get("braid"), meds.get(c)
            if col in NO_RATIO or col in PAIRS or b is None or not o:
                cells.append("")
            else:
                q = b / o
                cells.append(("%.2fx" if q >= 0.1 else "%.2gx") % q)
    return "| " + " | ".join([label] + cells) + " |"


def scenario_section(rows, sc, contenders, what):
    """summary.md's section of scenario sc: what it is, its table (a row per metric some run
    measured), its failed runs."""
    srows = [r for r in rows if r["scenario"] == sc]
    out = ["## %s" % sc]
    if what:
        out += ["", what]
    out.append("")
    head = ["measure"] + [SHORT.get(c, c) for c in contenders]
    if "braid" in contenders:
        head += ["braid / %s" % c for c in contenders if c != "braid"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + " --- |" * len(head))
    for metric in METRICS:
        key, col = metric[1], metric[2]
        if any(r["measure"] == key and r["status"] == "ok" and
               any(r.get(k) not in ("", None) for k in PAIRS.get(col, (col,)))
               for r in srows):
            out.append(metric_row(rows, sc, metric, contenders))
    fails = [r for r in srows if r["status"] != "ok"]
    if fails:
        out += ["", "Failed runs:"]
        for r in fails:
            out.append("- %s %s rep %s: %s (exit %s) %s" % (
                r["contender"], r["measure"], r["rep"], r["status"], r["rc"],
                r.get("note", "").strip()))
    out.append("")
    return out


def targets_section(targets):
    """summary.md's Targets: a row per target whose scenario ran, then those that did not."""
    out = ["## Targets", "", TARGETS_INTRO, "",
           "| target | verdict | worst repetition | median | missed in |",
           "| --- | --- | --- | --- | --- |"]
    for t in targets:
        if t.get("ran", True):
            out.append("| %s | %s | %s | %s | %s |" % (t["target"], t["verdict"],
                                                       t["worst"], t["median"], t["missed"]))
    absent = [t["scenario"] for t in targets if not t.get("ran", True)]
    if absent:
        out += ["", "Not evaluated, their scenario did not run: %s." %
                ", ".join(dict.fromkeys(absent))]
    out.append("")
    return out


def summary(rows, contenders, targets, meta, what):
    """summary.md: per scenario (what: {scenario: its description}), a table of medians
    (min-max) and braid's ratios; then the targets."""
    out = ["# braid A/B", "", meta, "", INTRO, ""]
    for sc in dict.fromkeys(r["scenario"] for r in rows):
        out += scenario_section(rows, sc, contenders, what.get(sc))
    if targets:
        out += targets_section(targets)
    return "\n".join(out)


def paths_section(rows, runs):
    """braid's per-path view of the path failure (braid-stat), from its median-stall run."""
    sel = [r for r in rows if r["scenario"] == "pathdown" and r["contender"] == "braid"
           and r["status"] == "ok" and num(r, "stall_ms") is not None]
    sel.sort(key=lambda r: num(r, "stall_ms"))
    for r in sel[len(sel) // 2:] + sel[:len(sel) // 2]:
        src = os.path.join(runs, "pathdown_timeline_braid_r%s.paths.md" % r["rep"])
        if os.path.exists(src):
            with open(src) as f:
                return "\n## pathdown: braid's paths (repetition %s)\n\n%s\n" % (r["rep"], f.read())
    return ""


def report(rows, contenders, outdir, meta, args, what):
    """summary.md (judging the targets) and the plots in outdir, from rows; the summary
    printed too. what: {scenario: its description}. Returns 0."""
    seen = [c for c in contenders if any(r["contender"] == c for r in rows)]
    targets = check_targets(rows, args.base_delay)
    md = summary(rows, seen or contenders, targets, meta, what)
    made = write_plot_data(rows, outdir, seen or contenders, os.path.join(outdir, "runs"))
    err = plot(outdir, made, args.verbose)
    pngs = sorted(f for f in os.listdir(outdir) if f.endswith(".png")) if not err else []
    if pngs:
        md += "\nPlots: " + ", ".join("[%s](%s)" % (p, p) for p in pngs) + "\n"
    md += paths_section(rows, os.path.join(outdir, "runs"))
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(md + "\n")
    log("")
    log(md)
    if err:
        log("ab: %s" % err)
    log("ab: wrote %s, %s%s" % (os.path.join(outdir, "results.csv"),
                               os.path.join(outdir, "summary.md"),
                               "".join(", " + os.path.join(outdir, p) for p in pngs)))
    return 0


def previous_meta(lines):
    """An earlier summary.md's lines -> (its description of the run, None when it has none;
    {scenario: its description}), the "[re-summarized ...]" of an earlier --summarize left
    out."""
    what = {}
    if not (lines and lines[0] == "# braid A/B" and len(lines) > 2 and lines[2].strip()):
        return None, what
    meta = lines[2].split(" [re-summarized")[0]
    # the scenarios as that run described them (--quick, --seconds change them)
    for i, line in enumerate(lines[:-2]):
        if line.startswith("## ") and line != "## Targets" and \
                lines[i + 2].strip() and not lines[i + 2].startswith("|"):
            what[line[3:].strip()] = lines[i + 2].strip()
    return meta, what


def resummarize(outdir, contenders, args, what):
    """--summarize DIR / --replot: summary.md, targets and plots again from DIR/results.csv,
    without running anything; path failure rows of an older results.csv get their goodput
    before and after the failure from DIR/runs/*.ticks (fill_timelines). The run's own
    description is kept from the summary.md there (what: the scenarios' descriptions where
    it has none). 2 when there is no results.csv."""
    csv_path = os.path.join(outdir, "results.csv")
    if not os.path.exists(csv_path):
        log("ab: %s not found" % csv_path)
        return 2
    rows = load_rows(csv_path)
    contenders = contenders + [c for c in dict.fromkeys(r["contender"] for r in rows)
                               if c not in contenders]
    n = fill_timelines(rows, os.path.join(outdir, "runs"))
    meta, what = None, dict(what)
    try:
        with open(os.path.join(outdir, "summary.md")) as f:
            meta, before = previous_meta(f.read().split("\n"))
        what.update(before)
    except OSError:
        pass
    meta = "%s [re-summarized from %s by tools/ab%s]" % (
        meta or "(no summary.md: when and where unknown)", csv_path,
        "; path failure goodput before / after of %d run(s) from their tick files" % n
        if n else "")
    return report(rows, contenders, outdir, meta, args, what)
