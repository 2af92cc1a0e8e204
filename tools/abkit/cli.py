# SPDX-License-Identifier: BSD-2-Clause
"""tools/ab's command line: its options, their checks, --list, --summarize, and main()."""

import argparse
import os
import shutil
import subprocess

from .campaign import Campaign
from .common import CONTENDERS, EXIT_SKIP, REPO, log
from .plan import PlanError, make_plan, plan_lines
from .report import resummarize

EPILOG = ("Exit: 0 every braid run passed (targets are reported, not enforced; baselines "
          "that fail on the impaired fabric are reported in the summary), 1 a braid run "
          "failed or the fabric refused a change, 2 usage (or --summarize DIR without a "
          "DIR/results.csv), 77 nothing could run here.")


def count(text):
    """argparse type: a whole number of 1 or more."""
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("want 1 or more, not %s" % text)
    return v


def index(text):
    """argparse type: a whole number of 0 or more."""
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError("want 0 or more, not %s" % text)
    return v


def positive(text):
    """argparse type: a number above 0."""
    v = float(text)
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError("want a number above 0, not %s" % text)
    return v


def nonnegative(text):
    """argparse type: a number of 0 or more."""
    v = float(text)
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError("want a number of 0 or more, not %s" % text)
    return v


def fraction(text):
    """argparse type: a number from 0 to 1."""
    v = float(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError("want a number from 0 to 1, not %s" % text)
    return v


def plan_options(ap):
    """What runs: the plan's size and subsets, the contenders, the fabric's size."""
    ap.add_argument("--quick", action="store_true",
                    help="about a minute: clean, loss1 and pathdown; 1 MiB goodput and "
                         "latency; 1 repetition")
    ap.add_argument("-r", "--reps", type=count, help="repetitions (default 5, --quick 1)")
    ap.add_argument("-o", "--out", default=os.path.join(REPO, "build", "ab"),
                    help="results directory (default build/ab)")
    ap.add_argument("--scenarios", help="comma-separated subset of: loopback, clean, loss0.1, "
                    "loss1, loss5, delay0.2, delay2, delay20 (every path delayed; also "
                    "delay<--base-delay>), slowpath, pathdown, incast")
    ap.add_argument("--measures", help="comma-separated subset of: bw64k, bw1m, lat, rate, "
                    "write1m (RMA writes), timeline (pathdown), incast64k, incast1m")
    ap.add_argument("--contenders", default=",".join(CONTENDERS),
                    help="comma-separated (default: %(default)s)")
    ap.add_argument("--paths", type=count, default=4, help="fabric paths (default 4)")
    ap.add_argument("--incast", type=int, default=3,
                    help="hosts in the incast scenario: one receiver, the rest send (default 3)")


def victim_options(ap):
    """The impaired path: which, when it is picked, the latency runs' attempts, the switchback."""
    ap.add_argument("--victim", default="busiest",
                    help="the impaired path: 'busiest' (default: the path carrying most of "
                         "the run's bytes after --probe s) or a path number, impaired from the "
                         "start")
    ap.add_argument("--probe", type=nonnegative, default=0.3,
                    help="seconds after the client's start when the counters are first read "
                         "(default 0.3); the busiest path over the next --window-s is impaired")
    ap.add_argument("--lat-victim", type=index, default=0,
                    help="latency runs with --victim busiest: the path impaired from the start "
                         "(default 0); runs whose traffic missed it are repeated")
    ap.add_argument("--min-share", type=fraction, default=0.15,
                    help="a latency run counts when at least this share of its fabric bytes "
                         "crossed the impaired path, or its bytes spread over 3 or more paths "
                         "(default 0.15)")
    ap.add_argument("--lat-attempts", type=count, default=8,
                    help="latency runs: at most this many attempts to cross the impaired path")
    ap.add_argument("--window-s", type=positive, default=0.15,
                    help="seconds of counting that pick the busiest path (default 0.15)")
    ap.add_argument("--switch-s", type=nonnegative, default=1.0,
                    help="switchback (with --victim busiest): an impaired streaming run "
                         "(loss, slowpath) lifts its impairment and puts it back in periods of "
                         "this many seconds, and its target compares the impaired periods with "
                         "the clean ones of the same run (default 1; 0: impaired once, to the "
                         "end, judged against the clean scenario's run)")
    ap.add_argument("--switches", type=int, default=4, choices=range(1, 11), metavar="N",
                    help="switchback: impaired periods per run, 1 to 10, and as many clean "
                         "ones, in turns (odd repetitions start impaired, even ones clean) "
                         "(default 4; the run "
                         "is made long enough for them)")


def run_options(ap):
    """Each run: its length, sizes, ticks, delays, time limits and payload checks."""
    ap.add_argument("--seconds", type=positive, help="streaming seconds per bw/rate run "
                    "(default 2, --quick 1.5; the path failure run streams twice that)")
    ap.add_argument("--iters", type=count, help="latency round trips on a clean fabric "
                    "(default 4000, --quick 1000; halved at 1%% loss, an eighth at 5%%)")
    ap.add_argument("--lat-size", type=index, default=64, help="latency message size (64)")
    ap.add_argument("--tick-ms", type=count, default=50,
                    help="timeline interval of bw/rate runs (default 50 ms)")
    ap.add_argument("--base-delay", type=nonnegative, default=0.2,
                    help="slowpath: every path's one-way delay in ms; one path gets 10x (its "
                         "baseline, scenario delay<this>, has every path at this delay)")
    ap.add_argument("--stuck-timeout", type=positive, default=6,
                    help="a client with nothing completing for this long fails (braid_ab -T)")
    ap.add_argument("--lat-budget-us", type=positive, default=10000,
                    help="latency runs are killed after 15 s + iters x this (default 10 ms)")
    ap.add_argument("-v", "--verify", action="store_true",
                    help="every payload byte checked, exactly once (braid_ab -v)")


def program_options(ap):
    """The programs used and the fabric's namespaces and offloads."""
    ap.add_argument("--fabric", default=os.path.join(REPO, "tools", "fabric"))
    ap.add_argument("--prefix", default=os.environ.get("BRAID_FABRIC_PREFIX",
                                                       "ab%d" % (os.getpid() % 1000000)),
                    help="the fabric's namespace prefix (default: BRAID_FABRIC_PREFIX, else "
                         "ab<pid>: a fabric of this run's own, apart from any other)")
    ap.add_argument("--fabric-gso", action="store_true",
                    help="tools/fabric up --gso: TCP's 64 KB super-packets cross whole (TCP is "
                         "several times faster; each is then lost and counted as one packet)")
    ap.add_argument("--fabric-gro", action="store_true",
                    help="tools/fabric up --gro: the hosts' interfaces coalesce what arrives, as "
                         "a NIC's GRO does (braid's UDP_GRO receives runs; TCP its segments)")
    ap.add_argument("--braid-ab", default=os.path.join(REPO, "build", "bench", "braid_ab"))
    ap.add_argument("--braid-stat", default=None,
                    help="braid-stat, for braid's per-path view of the path failure (default: "
                         "tools/braid-stat of --braid-ab's build tree)")
    ap.add_argument("--provider-path", default=os.path.join(REPO, "build", "providers"))


def mode_options(ap):
    """Modes without runs (--replot, --summarize, --list) and verbosity."""
    ap.add_argument("--replot", action="store_true",
                    help="no runs: summary, targets and plots again from OUT/results.csv")
    ap.add_argument("--summarize", metavar="DIR",
                    help="no runs: DIR/summary.md (targets judged again) and the plots from "
                         "DIR/results.csv and DIR/runs/ (--replot -o DIR); results.csv is "
                         "not changed")
    ap.add_argument("--list", action="store_true", help="print the plan and exit")
    ap.add_argument("--verbose", action="store_true", help="print every fabric command")


def parser(description):
    """tools/ab's options; description: its help text (tools/ab's own docstring)."""
    ap = argparse.ArgumentParser(
        prog="tools/ab", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=description, epilog=EPILOG)
    for add in (plan_options, victim_options, run_options, program_options, mode_options):
        add(ap)
    return ap


def parse(ap, argv=None):
    """The options, checked (usage and exit 2 when they are wrong): (args, repetitions,
    contenders)."""
    args = ap.parse_args(argv)
    reps = args.reps or (1 if args.quick else 5)
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    contenders = ["tcp;ofi_rxm" if c == "tcp" else c for c in contenders]
    if args.victim != "busiest" and not args.victim.isdigit():
        ap.error("--victim: 'busiest' or a path number")
    if args.incast < 2:
        ap.error("--incast: at least 2 hosts")
    return args, reps, contenders


def prepare(args):
    """Before any run: braid_ab there (else EXIT_SKIP), a build tree's braid_ab, braid-stat
    and provider brought up to date (1 when that fails), --braid-stat defaulted to that
    tree's. None when the runs can go ahead."""
    if not os.access(args.braid_ab, os.X_OK):
        log("ab: %s not found: build it first (tools/setup.sh, or ninja -C build "
            "bench/braid_ab)" % args.braid_ab)
        return EXIT_SKIP
    # a build tree's braid_ab and provider are brought up to date first: a stale build
    # measures old code (its braid_ab once lacked -m write, and every RMA run failed)
    builddir = os.path.dirname(os.path.dirname(os.path.abspath(args.braid_ab)))
    if os.path.exists(os.path.join(builddir, "build.ninja")) and shutil.which("ninja"):
        r = subprocess.run(["ninja", "-C", builddir, "bench/braid_ab", "tools/braid-stat",
                            "providers/libbraid-fi.so"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            log("ab: ninja -C %s failed:\n%s" % (builddir, r.stdout[-2000:]))
            return 1
    if args.braid_stat is None:
        args.braid_stat = os.path.join(builddir, "tools", "braid-stat")
    return None


def main(description, argv=None):
    """tools/ab: the exit status (see EPILOG)."""
    ap = parser(description)
    args, reps, contenders = parse(ap, argv)
    os.environ["BRAID_FABRIC_PREFIX"] = args.prefix
    try:
        plan = make_plan(args)
    except PlanError as e:
        ap.error(str(e).removeprefix("ab: "))
    what = {s.name: s.what for s in plan}
    if args.summarize:
        args.out, args.replot = args.summarize, True
    outdir = os.path.abspath(args.out)
    if args.list:
        for line in plan_lines(plan, contenders, reps, args):
            log(line)
        return 0
    if args.replot:
        return resummarize(outdir, contenders, args, what)
    rc = prepare(args)
    if rc is not None:
        return rc
    return Campaign(args, plan, contenders, reps, outdir, what).run()
