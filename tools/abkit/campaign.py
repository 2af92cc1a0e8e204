# SPDX-License-Identifier: BSD-2-Clause
"""The whole A/B in one invocation: the fabric up, repetition after repetition of every scenario
with the contenders in turns, results.csv after every run, the fabric down and the report, also
when it is interrupted or the fabric fails."""

import os
import shutil
import signal
import subprocess
import time

from .common import EXIT_SKIP, human_time, log
from .fabric import Fabric, FabricGone, Loopback
from .plan import run_order, seconds_left, switch_plan
from .report import describe, load_rows, report, write_rows
from .runner import Runner


def campaign_meta(args, reps):
    """summary.md's line on the invocation: when, where, how many repetitions, how the
    impaired path is chosen, the switchback and the fabric's options."""
    meta = "%s; %d cores, kernel %s; %d repetition(s)%s; every repetition runs every " \
           "scenario, the contenders alternating; victim path: %s" % (
               time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(),
               os.uname().release, reps, " (--quick)" if args.quick else "",
               "per run, the path that carried the most bytes over %g s from about %g s after "
               "the client started" % (args.window_s, args.probe)
               if args.victim == "busiest" else "path %s" % args.victim)
    if args.switch_s > 0 and args.victim == "busiest":
        meta += "; impaired streaming runs are switchbacks: %s, periods of %g s" % (
            ", ".join(k for k, n in switch_plan(args.switches) for _ in range(n)) +
            " (odd repetitions; even ones start off)",
            args.switch_s)
    if args.fabric_gso:
        meta += "; fabric up --gso (TCP super-packets cross whole)"
    if args.fabric_gro:
        meta += "; fabric up --gro (the hosts' interfaces coalesce, as a NIC's GRO)"
    return meta


def error_row(s, m, c, rep, e):
    """The row of a run lost to the fabric refusing a change (or a command timing out)."""
    return {"scenario": s.name, "measure": m.key, "mode": m.mode, "size": m.size,
            "contender": c, "rep": rep, "status": "error", "rc": "",
            "note": str(e)[-300:], "wall_s": 0}


def on_signal(signum, _frame):
    raise KeyboardInterrupt("signal %d" % signum)


class Campaign:
    """One invocation's runs (plan: the scenarios; what: {scenario: its description}), their
    rows, and how many failed: failed in all, hard those that fail the A/B (braid's, or the
    fabric refusing a change)."""

    def __init__(self, args, plan, contenders, reps, outdir, what):
        self.args, self.plan, self.contenders, self.reps = args, plan, contenders, reps
        self.outdir, self.what = outdir, what
        self.csv_path = os.path.join(outdir, "results.csv")
        self.rows, self.skipped = [], []
        self.failed = self.hard = 0

    def run(self):
        """Everything, then the report: the exit status (0, 1 when braid failed or the fabric
        refused a change, 77 when nothing could run, 130 when interrupted)."""
        args = self.args
        os.makedirs(self.outdir, exist_ok=True)
        runs_dir = os.path.join(self.outdir, "runs")
        if os.path.isdir(runs_dir):
            shutil.rmtree(runs_dir)
        self.fabric = Fabric(args.fabric, args.verbose)
        self.loop = Loopback(args.verbose)
        self.runner = Runner(args, self.outdir)
        signal.signal(signal.SIGINT, on_signal)     # also when started in the background
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGHUP, on_signal)
        started = time.monotonic()
        meta = campaign_meta(args, self.reps)
        try:
            if self.run_all() == EXIT_SKIP:
                return EXIT_SKIP
            self.loop.down()
        except FabricGone as e:
            return self.stop("\nab: stopping: %s" % e, meta + " (stopped: the fabric failed)",
                             1)
        except KeyboardInterrupt as e:
            return self.stop("\nab: interrupted (%s): cleaning up" % (e or "Ctrl-C"),
                             meta + " (interrupted)", 130)
        except Exception:
            self.runner.kill_all()
            raise
        finally:
            self.runner.kill_all()
            self.loop.down()
            was_up = self.fabric.up_ok
            self.fabric.down()
            if was_up:
                log("ab: fabric down")
        failed, hard = self.failed, self.hard
        log("ab: %d runs in %s, %d failed%s" % (
            len(self.rows), human_time(time.monotonic() - started), failed,
            " (%d of them baselines failing on the impaired fabric: reported, not an A/B "
            "failure)" % (failed - hard) if failed > hard else ""))
        if self.skipped:
            meta += "; skipped: %s" % ", ".join(self.skipped)
        report(load_rows(self.csv_path), self.contenders, self.outdir, meta, args, self.what)
        return 1 if hard else 0

    def stop(self, why, meta, rc):
        """Stopped early: everything killed and taken down, the report of the runs made."""
        log(why)
        self.runner.kill_all()
        self.loop.down()
        self.fabric.down()
        if self.rows:
            report(load_rows(self.csv_path), self.contenders, self.outdir, meta, self.args,
                   self.what)
        return rc

    def fabric_up(self, need_fabric):
        """The fabric up for the scenarios that need it: None, or why it cannot be."""
        args = self.args
        if os.geteuid() != 0:
            return "not root"
        if not os.access(args.fabric, os.X_OK):
            return "%s not found" % args.fabric
        hosts = max(s.hosts for s in need_fabric)
        log("ab: fabric up: %d paths, %d hosts" % (args.paths, hosts))
        return self.fabric.up(args.paths, hosts, args.fabric_gso, args.fabric_gro)

    def run_all(self):
        """Every run of the plan that can run here, in run_order(); EXIT_SKIP when none can."""
        plan = self.plan
        need_fabric = [s for s in plan if s.fabric]
        if need_fabric:
            why = self.fabric_up(need_fabric)
            if why:
                self.skipped = [s.name for s in need_fabric]
                log("ab: SKIP the fabric scenarios (%s): %s" % (", ".join(self.skipped), why))
                plan = [s for s in plan if not s.fabric]
        if not plan:
            log("ab: nothing can run here")
            return EXIT_SKIP
        todo = run_order(plan, self.contenders, self.reps)
        done_t = {}
        log("ab: %d runs: %s; %d contenders, %d repetition(s); results in %s" % (
            len(todo), ", ".join(s.name for s in plan), len(self.contenders), self.reps,
            self.outdir))
        cur, bad_scenarios, where = None, set(), None
        for i, (s, rep, m, c) in enumerate(todo):
            if s is not cur:
                if cur is not None and not cur.fabric:
                    self.loop.down()
                cur = s
                where = self.enter(s, rep, bad_scenarios)
            if s.name in bad_scenarios:
                continue
            row = self.run_one(s, rep, m, c, where)
            self.record(row, c)
            done_t.setdefault((s.name, m.key), []).append(row["wall_s"])
            left = seconds_left(todo[i + 1:], done_t, self.args)
            log("[%3d/%d] %-8s %-12s %-14s rep %d/%d  %s  %.1fs  ETA %s" % (
                i + 1, len(todo), s.name, m.label(), c, rep, self.reps, describe(row),
                row["wall_s"], human_time(left)))
            write_rows(self.csv_path, self.rows)
        return None

    def enter(self, s, rep, bad_scenarios):
        """Scenario s begins (in repetition rep): the fabric set for it (a scenario it cannot
        be set for is added to bad_scenarios and skipped), or the loopback up. Returns where
        its runs take place."""
        log("-- %s (repetition %d): %s" % (s.name, rep, s.what))
        if s.fabric:
            try:
                self.fabric.reset(s.base)
            except RuntimeError as e:
                log("ab: SKIP %s: the fabric cannot be set up for it: %s" % (s.name, e))
                bad_scenarios.add(s.name)
                if s.name not in self.skipped:
                    self.skipped.append(s.name)
            return self.fabric
        why = self.loop.up()
        if why:
            log("ab: %s" % why)
        return self.loop

    def run_one(self, s, rep, m, c, where):
        """One run's row; a run the fabric refused a change for is an error row, the fabric
        put back (FabricGone when it cannot be)."""
        try:
            return self.runner.run(s, m, c, rep, where, self.fabric)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            # the fabric refused a change: this run is lost, the fabric put back
            self.runner.kill_all()
            row = error_row(s, m, c, rep, e)
            try:
                self.fabric.reset(s.base)
            except RuntimeError as e2:
                raise FabricGone("the fabric cannot be reset: %s" % e2)
            return row

    def record(self, row, c):
        """A run's row kept and counted: a baseline failing on the impaired fabric (an RC QP
        running out of retries, TCP not finishing in time) is a measured outcome, reported in
        the summary; braid failing, or the fabric refusing a change, fails the A/B."""
        self.rows.append(row)
        if row["status"] != "ok":
            self.failed += 1
            if c == "braid" or row["status"] == "error":
                self.hard += 1
