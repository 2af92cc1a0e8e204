# SPDX-License-Identifier: BSD-2-Clause
"""The A/B's plan: its scenarios and measurements, the switchback's turns, the order of the runs
and how long they take."""

import statistics

from .common import human_size, human_time


class PlanError(ValueError):
    """--scenarios or --measures named something the plan does not have."""


class Measure:
    """One kind of measurement: mode (lat, bw, rate, write: RMA writes), message size and the
    run's parameters."""

    def __init__(self, key, mode, size, seconds=0.0, window=0, iters=0, interval_ms=0,
                 clients=1, pathdown=False):
        self.key, self.mode, self.size = key, mode, size
        self.seconds, self.window, self.iters = seconds, window, iters
        self.interval_ms, self.clients, self.pathdown = interval_ms, clients, pathdown

    def label(self):
        if self.mode == "lat":
            return "lat %s" % human_size(self.size)
        if self.mode == "rate":
            return "rate 8 B"
        if self.mode == "write":
            return "RMA write %s" % human_size(self.size)
        extra = " x%d" % self.clients if self.clients > 1 else ""
        return "bw %s%s" % (human_size(self.size), extra)

    def estimate(self, seconds=None):
        """Rough seconds for one run, before anything was measured."""
        if self.mode == "lat":
            return 1.5 + self.iters * 60e-6
        return (seconds or self.seconds) + 1.5


class Scenario:
    """One state of the fabric (or loopback, fabric False) and the measurements made in it."""

    def __init__(self, name, fabric, what, measures, impair=None, base=None, hosts=2):
        self.name, self.fabric, self.what, self.measures = name, fabric, what, measures
        self.impair = impair or {}      # settings for the victim path (busiest or fixed)
        self.base = base or {}          # settings for every path before the runs
        self.hosts = hosts


def switch_plan(n, rep=1):
    """A switchback's periods, from the first change of the busiest path on: [(on|off,
    length in --switch-s)], n impaired and n clean, in turns, starting impaired in odd
    repetitions and clean in even ones (the first clean period begins with the path's rules
    rebuilt unchanged, as an impairment would rebuild them): across repetitions neither kind
    is always the earlier. Short turns, not ABBA's long middle period: on this machine the
    speed jumps between levels held for a second or a few, rather than drifting (measured
    2026-11-28: on, off, off, on spread a repetition's ratio over 0.74-1.59x, 2 turns of 1 s
    over 0.79-1.41x, and missed 0.9x in 4 of 44 repetitions: a second of slow machine
    falls in one kind of period). The default, 4 turns of 1 s, put braid's loss1 ratios at
    0.96-1.04x in 16 of 16 and 0.98-1.02x in the full A/B's 5 (docs/benchmarks.md, *RMA on native RDM*).
    0.5 s turns did as well for braid but measured RC's impaired goodput
    higher (0.39-0.85 Gbit/s against 0.36-0.77; "loss1 vs RC >= 5x" missed more), and 1 s
    is where RC's loss penalty had always been measured. In loss, neither contender's
    goodput moves within a period (100 ms bins, from the runs/*.periods files), so nothing
    at a period's start is left uncounted."""
    first = "on" if rep % 2 else "off"
    other = "off" if first == "on" else "on"
    return [(first if k % 2 == 0 else other, 1) for k in range(2 * n)]


def switchback_seconds(sc, m, a):
    """How long a run streams when it is a switchback (its impairment lifted and put back in
    turns, see tools/ab's help), else None: streaming runs of an impaired fabric scenario
    whose victim is the busiest path."""
    if not (sc.fabric and sc.impair and m.mode != "lat" and not m.pathdown
            and a.victim == "busiest" and a.switch_s > 0):
        return None
    # a loss toggled takes tools/fabric 50-150 ms under load (two nft transactions): room for
    # them (the changes between the periods, and the last one, which ends the counting)
    changes = len(switch_plan(a.switches)) + 1
    return max(m.seconds, a.probe + a.window_s + 2 * a.switches * a.switch_s + changes * 0.15
               + 0.5)


def delay_scenario(ms):
    """The name of the scenario with every path delayed ms one way: delay0.2, delay2, delay20."""
    return "delay%g" % ms


def measures(args):
    """Every kind of measurement, by name, as the options shape them (--quick, --seconds,
    --iters, --lat-size, --tick-ms, --incast)."""
    q = args.quick
    T = args.seconds or (1.5 if q else 2.0)
    lat_n = args.iters or (1000 if q else 4000)
    pd_T = args.seconds * 2 if args.seconds else (2.0 if q else 4.0)
    return {
        "bw64k": Measure("bw64k", "bw", 65536, T, 64, interval_ms=args.tick_ms),
        "bw1m": Measure("bw1m", "bw", 1 << 20, T, 16, interval_ms=args.tick_ms),
        "lat": Measure("lat", "lat", args.lat_size, iters=lat_n),
        "rate": Measure("rate", "rate", 8, T, 256, interval_ms=args.tick_ms),
        # RMA: fi_writedata of 1 MiB, 16 at a time, into the server's registered buffer
        "write1m": Measure("write1m", "write", 1 << 20, T, 16, interval_ms=args.tick_ms),
        "lossy_lat": Measure("lat", "lat", args.lat_size, iters=max(200, lat_n // 2)),
        "worst_lat": Measure("lat", "lat", args.lat_size, iters=max(200, lat_n // 8)),
        "slow_lat": Measure("lat", "lat", args.lat_size, iters=max(200, lat_n // 4)),
        # 64 KiB messages: 10 ms ticks of 1 MiB messages at these rates would hold 0 to 2 each
        "timeline": Measure("timeline", "bw", 65536, pd_T, 64, interval_ms=10, pathdown=True),
        "incast1m": Measure("incast1m", "bw", 1 << 20, T, 16, interval_ms=args.tick_ms,
                            clients=args.incast - 1),
        "incast64k": Measure("incast64k", "bw", 65536, T, 64, interval_ms=args.tick_ms,
                             clients=args.incast - 1),
    }


def all_scenarios(args, ms):
    """Every scenario with its measurements (ms: measures(args))."""
    base_delay = args.base_delay
    # every path delayed alike, no loss and no slow path: braid's 1 MiB streams over longer
    # round trips, and (every path at --base-delay) the baseline of the slowpath target
    delayed = [Scenario(delay_scenario(d), True,
                        "every path %g ms one way, no loss, no slow path%s" % (
                            d, " (the slowpath baseline)" if d == base_delay else ""),
                        [ms["bw1m"]], base={"delay": d})
               for d in sorted({0.2, 2.0, 20.0} | ({base_delay} if base_delay > 0 else set()))]
    bw64, bw1m, lat, rate, write1m = (ms[k] for k in ("bw64k", "bw1m", "lat", "rate", "write1m"))
    return [
        Scenario("loopback", False, "both sides on one namespace's lo (no fabric)",
                 [bw64, bw1m, lat, rate]),
        Scenario("clean", True, "4 paths, no impairment", [bw64, bw1m, lat, rate, write1m]),
        Scenario("loss0.1", True, "0.1% loss on one of the 4 paths", [bw64, bw1m, lat, rate],
                 impair={"loss": 0.1}),
        Scenario("loss1", True, "1% loss on one of the 4 paths",
                 [bw64, bw1m, ms["lossy_lat"], rate, write1m], impair={"loss": 1}),
        Scenario("loss5", True, "5% loss on one of the 4 paths",
                 [bw64, bw1m, ms["worst_lat"], rate], impair={"loss": 5}),
    ] + delayed + [
        Scenario("slowpath", True,
                 "every path %g ms one way, one path 10x (%g ms)" % (base_delay, 10 * base_delay),
                 [bw1m, ms["slow_lat"]],
                 base={"delay": base_delay}, impair={"delay": 10 * base_delay}),
        Scenario("pathdown", True, "one path goes down half way through a %g s stream" %
                 ms["timeline"].seconds, [ms["timeline"]]),
        Scenario("incast", True, "%d senders to one receiver" % (args.incast - 1),
                 [ms["incast64k"], ms["incast1m"]], hosts=args.incast),
    ]


def quick_plan(full, ms):
    """--quick: clean, loss1 and pathdown (of full); 1 MiB goodput, latency and RMA writes."""
    plan = [s for s in full if s.name in ("clean", "loss1", "pathdown")]
    plan[0].measures = [ms["bw1m"], ms["lat"], ms["write1m"]]
    plan[1].measures = [ms["bw1m"], ms["lat"], ms["write1m"]]
    return plan


def select(plan, full, scenarios=None, measures=None):
    """The plan cut to --scenarios and --measures (comma-separated; None: all). Scenarios the
    plan lacks but the full one has (--quick --scenarios incast) come from the full plan.
    Raises PlanError naming what is unknown."""
    if scenarios:
        want = scenarios.split(",")
        unknown = [w for w in want if w not in [s.name for s in full]]
        if unknown:
            raise PlanError("ab: unknown scenario(s) %s; known: %s" %
                            (", ".join(unknown), ", ".join(s.name for s in full)))
        plan = [s for s in (plan if all(w in [p.name for p in plan] for w in want) else full)
                if s.name in want]
    if measures:
        want = measures.split(",")
        known = {m.key for s in full for m in s.measures}
        unknown = [w for w in want if w not in known]
        if unknown:
            raise PlanError("ab: unknown measure(s) %s; known: %s" %
                            (", ".join(unknown), ", ".join(sorted(known))))
        for s in plan:
            s.measures = [m for m in s.measures if m.key in want]
        plan = [s for s in plan if s.measures]
    return plan


def make_plan(args):
    """The scenarios to run, as the options say; raises PlanError for unknown names."""
    ms = measures(args)
    full = all_scenarios(args, ms)
    plan = quick_plan(full, ms) if args.quick else full
    return select(plan, full, args.scenarios, args.measures)


def run_order(plan, contenders, reps):
    """Every run as (scenario, repetition, measure, contender): repetition after repetition,
    every scenario in each, the contenders in turns starting one later in each repetition.
    A target's ratio pairs repetition r of a scenario with repetition r of its baseline
    scenario, and on a machine whose speed drifts 20-40% within minutes those two runs must
    be neighbours in time, not a whole scenario's runs apart."""
    return [(s, rep, m, c) for rep in range(1, reps + 1) for s in plan
            for m in s.measures
            for c in (contenders[(rep - 1) % len(contenders):] +
                      contenders[:(rep - 1) % len(contenders)])]


def seconds_left(rest, done_t, args):
    """The time the runs in rest (run_order's tuples) should take: the mean wall time of the
    runs of each (scenario, measure) done so far (done_t), else the measure's estimate."""
    return sum(statistics.mean(done_t[(s.name, m.key)]) if (s.name, m.key) in done_t
               else m.estimate(switchback_seconds(s, m, args))
               for s, _, m, _ in rest)


def plan_lines(plan, contenders, reps, args):
    """--list: each scenario and its measurements, then the number of runs and their time."""
    out = []
    for s in plan:
        out.append("%-9s %s%s" % (s.name, s.what, "" if s.fabric else " [no fabric]"))
        for m in s.measures:
            out.append("          %-14s %s" % (m.label(), (
                "%d round trips" % m.iters if m.mode == "lat" else
                "%g s, window %d%s" % (m.seconds, m.window,
                                      ", path down at %g s" % (m.seconds / 2)
                                      if m.pathdown else ""))))
    n = sum(len(s.measures) for s in plan) * len(contenders) * reps
    est = sum(m.estimate(switchback_seconds(s, m, args)) for s in plan
              for m in s.measures) * len(contenders) * reps
    out.append("%d runs (%d contenders x %d repetitions), about %s" %
               (n, len(contenders), reps, human_time(est)))
    return out
