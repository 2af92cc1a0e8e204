# SPDX-License-Identifier: BSD-2-Clause
"""One run of one contender: braid_ab started on both sides, the fabric changed as the schedule
says, the run watched and timed out, and what it printed and the fabric counted made a row."""

import os
import shutil
import signal
import subprocess
import time

from .braid_ab import client_argv, cmd_line, parse_output, run_hosts, server_argv
from .common import fname, log, num
from .fabric import Fabric, path_figures, spread
from .pathview import braid_paths
from .plan import switchback_seconds
from .schedule import Schedule
from .stats import (fill_fairness, fill_latency, fill_stream, fill_switchback, receiver_t0,
                    switch_periods)
from .timeline import fill_pathdown


def run_limit(m, args, run_s):
    """Seconds after the client's start when a run of measurement m is killed (a timeout): a
    latency run 15 s + --lat-budget-us per round trip, a stream run_s + --stuck-timeout +
    15 s."""
    if m.mode == "lat":
        return 15 + m.iters * args.lat_budget_us * 1e-6
    return run_s + args.stuck_timeout + 15


class Proc:
    """One side of a run: a process in its own process group, its output in a file."""

    def __init__(self, argv, env, out_path):
        self.argv, self.out_path = argv, out_path
        self.out = open(out_path, "w+")
        self.p = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        self.killed = False

    def done(self):
        return self.p.poll() is not None

    def kill(self):
        """Our own process group only (start_new_session)."""
        if self.p.poll() is None:
            self.killed = True
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.p.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    continue

    def text(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read()

    def close(self):
        self.out.close()


class Runner:
    """Makes the runs, their files in OUTDIR/runs: each side's output, ticks, latency samples,
    switchback periods, braid's path view."""

    def __init__(self, args, outdir):
        self.args = args
        self.outdir = outdir
        self.rundir = os.path.join(outdir, "runs")
        os.makedirs(self.rundir, exist_ok=True)
        self.env = dict(os.environ)
        self.env["FI_PROVIDER_PATH"] = args.provider_path
        # a fresh control port for every run
        self.port = 20000 + (os.getpid() * 7) % 20000
        self.live = []

    def next_port(self):
        self.port += 1
        if self.port > 60000:
            self.port = 20001
        return self.port

    def kill_all(self):
        for pr in self.live:
            pr.kill()
        self.live = []

    def run(self, sc, m, contender, rep, where, fabric):
        """One measurement of one contender: both sides, the impairment, the counters.

        A latency run is too short to impair its busiest path mid-run (and braid_ab's
        ping-pong has no time bound), so with --victim busiest it runs with path
        --lat-victim impaired from the start and is run again (fresh ports, so a new ECMP
        draw) while its traffic missed that path by hashing: under --min-share of the run's
        bytes on it and on fewer than 3 paths (a flow spread over 3 or more paths sprays;
        if it keeps off the impaired one, that is its own doing). Up to --lat-attempts
        times; the attempts are recorded."""
        a = self.args
        if not (isinstance(where, Fabric) and sc.impair and m.mode == "lat"
                and a.victim == "busiest"):
            return self.run_once(sc, m, contender, rep, where, fabric, None)
        misses, wall = [], 0.0
        for attempt in range(1, a.lat_attempts + 1):
            row = self.run_once(sc, m, contender, rep, where, fabric, a.lat_victim)
            wall += row["wall_s"]
            row["wall_s"] = round(wall, 2)
            share = row.get("victim_share")
            if row["status"] != "ok" or share is None or share >= a.min_share or \
                    row.get("spread", 0) >= 3:
                break
            misses.append("%.0f%%" % (100 * share))
        row["attempts"] = attempt
        if misses:
            row["note"] += "earlier attempts missed the impaired path (%s of their bytes on " \
                           "it); " % ", ".join(misses)
            if row.get("victim_share", 1) < a.min_share:
                row["note"] += "none of %d attempts crossed it; " % attempt
        return row

    def braid_stat(self, statdir, name):
        """braid-stat --json of the processes publishing in @statdir, into runs/@name."""
        try:
            r = subprocess.run([self.args.braid_stat, "-d", statdir, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               timeout=10)
            with open(os.path.join(self.rundir, name), "w") as f:
                f.write(r.stdout)
        except (OSError, subprocess.TimeoutExpired) as e:
            log("ab: braid-stat: %s" % e)

    def run_once(self, sc, m, contender, rep, where, fabric, pre_victim):
        """One run: pre_victim, a path impaired from the start (None: as --victim says)."""
        a = self.args
        tag = "%s_%s_%s_r%d" % (sc.name, m.key, fname(contender), rep)
        port = self.next_port()
        row = {"scenario": sc.name, "measure": m.key, "mode": m.mode, "size": m.size,
               "contender": contender, "rep": rep, "status": "", "note": ""}
        use_fabric = isinstance(where, Fabric)
        if use_fabric:
            row["base_delay_ms"] = sc.base.get("delay", 0)
        victim_fixed = use_fabric and (a.victim != "busiest" or pre_victim is not None)
        # switchback: the impairment on and off in turns within the run (see switch_periods)
        sw_s = switchback_seconds(sc, m, a) if use_fabric and not victim_fixed else None
        run_s = sw_s or m.seconds
        statdir = self.stat_dir(contender, m, use_fabric, tag)
        srv_host, server, clients, samples = self.commands(sc, m, contender, where, port, run_s,
                                                           statdir, tag)
        fixed = pre_victim if pre_victim is not None else \
            (int(a.victim) if a.victim != "busiest" else None)
        sched = Schedule(fabric, sc, m, a, rep, row, use_fabric, victim_fixed, fixed,
                         sw_s is not None, stat=(lambda when: self.braid_stat(
                             statdir, "%s.stat_%s.json" % (tag, when))) if statdir else None)
        sched.start()
        limit = run_limit(m, a, run_s)
        row["cmd"] = cmd_line(clients[0])

        before = fabric.status() if use_fabric else None
        t_start = time.monotonic()
        srv = Proc(where.argv(srv_host, server), self.env,
                   os.path.join(self.rundir, tag + ".server"))
        self.live = [srv]
        time.sleep(0.05)
        t_client = time.monotonic()
        cls = [Proc(c, self.env, os.path.join(self.rundir, tag + ".client%d" % i))
               for i, c in enumerate(clients)]
        self.live += cls
        t_exit, timed_out = self.watch(cls, sched, t_client, limit)
        srv_hung = self.stop(srv, cls, timed_out)
        row["wall_s"] = round(time.monotonic() - t_start, 2)

        # put the fabric back
        if use_fabric and (sc.impair or m.pathdown):
            sched.put_back()
        after = fabric.status() if use_fabric else None

        # what the processes said
        outs = [c.text() for c in cls]
        stext = srv.text()
        for pr in cls + [srv]:
            pr.close()
        res, ticks = parse_output(outs[0])
        run_status(row, [c.p.returncode for c in cls], res, timed_out, srv_hung,
                   outs[0] + "\n" + stext)
        if res:
            t0c = receiver_t0(res, t_client, t_exit)
            self.figures(row, m, res, ticks, outs, samples, tag, t0c, run_s, sched,
                         victim_fixed)
        if use_fabric and before is not None and after is not None:
            deltas = path_figures(row, before, after, sched.victim)
        if statdir:
            braid_paths(self.rundir, tag, row)
            shutil.rmtree(statdir, ignore_errors=True)
            row["spread"] = spread(deltas)
        return row

    def stat_dir(self, contender, m, use_fabric, tag):
        """Native braid through a path failure: a directory for its counters, which
        braid-stat reads before the failure and before the path comes back (published every
        50 ms); else None."""
        if contender == "braid" and m.pathdown and use_fabric and \
                os.access(self.args.braid_stat, os.X_OK):
            statdir = os.path.join(self.rundir, tag + ".stat")
            os.makedirs(statdir, exist_ok=True)
            return statdir
        return None

    def commands(self, sc, m, contender, where, port, run_s, statdir, tag):
        """Both sides' command lines: (the server's host, its argv, [each client's argv with
        its host's wrapping], the latency samples file or None)."""
        a = self.args
        srv_host, cl_hosts = run_hosts(m, sc.hosts)
        srv_ip = where.ip(srv_host)
        # the A/B compares wires: both sides of the loopback scenario (one namespace) use
        # braid's UDP wire too, not its shared memory for local peers (fi_braid(7), LOCAL PEERS)
        prefix = ["env", "FI_PROVIDER_PATH=" + a.provider_path, "FI_BRAID_SHM=0"]
        if statdir:
            prefix += ["FI_BRAID_STAT_DIR=" + statdir, "FI_BRAID_STAT_MS=50"]
        prefix.append(a.braid_ab)
        server = server_argv(prefix, contender, srv_ip, port, len(cl_hosts))
        samples = os.path.join(self.rundir, tag + ".lat") if m.mode == "lat" else None
        clients = [where.argv(h, client_argv(prefix, contender, where.ip(h), srv_ip, port, m,
                                             i + 1, a, run_s, samples))
                   for i, h in enumerate(cl_hosts)]
        return srv_host, server, clients, samples

    def watch(self, cls, sched, t_client, limit):
        """Until every client has exited or limit seconds have passed since t_client (when
        the clients started), the schedule's changes made as they fall due: (when the first
        client exited, on that clock, or None; whether the run timed out)."""
        def clock():
            return time.monotonic() - t_client

        def running():
            return all(not c.done() for c in cls)
        t_exit = None
        while True:
            now = clock()
            sched.run_due(now, clock, running)
            if t_exit is None and cls[0].done():
                t_exit = clock()
            if all(c.done() for c in cls):
                return t_exit, False
            if now > limit:
                return t_exit, True
            time.sleep(0.02)

    def stop(self, srv, cls, timed_out):
        """The clients killed if they still run; the server given a moment to end once they
        are done (rxd can hang at exit), then killed. Returns whether it had hung."""
        deadline = time.monotonic() + (3 if not timed_out else 0)
        while not srv.done() and time.monotonic() < deadline:
            time.sleep(0.02)
        for c in cls:
            if not c.done():
                c.kill()
        srv_hung = not srv.done()
        srv.kill()
        self.live = []
        return srv_hung

    def figures(self, row, m, res, ticks, outs, samples, tag, t0c, run_s, sched,
                victim_fixed):
        """The run's figures from braid_ab's result res and ticks (outs: every client's
        output), with its ticks, latency samples and switchback periods kept in runs/."""
        switchback = sched.switchback
        if m.mode == "lat":
            v = []
            if samples and os.path.exists(samples):
                with open(samples) as f:
                    v = [float(x) for x in f if x.strip()]
            fill_latency(row, m.size, v, res)
        else:
            if ticks:
                self.write_ticks(tag, ticks, m.interval_ms)
            # with a mid-run impairment only the part after it
            after_t = sched.t_act if (m.pathdown or not victim_fixed) and not switchback \
                else None
            fill_stream(row, m, res, ticks, after_t, t0c, run_s)
            if m.clients > 1:
                sent = []
                for o in outs:
                    r, _ = parse_output(o)
                    if r and "sent" in r:
                        sent.append(int(r["sent"]) * m.size)
                fill_fairness(row, sent, m.clients)
        if switchback:
            secs = num(res, "seconds") or 0.0
            per = switch_periods(sched.switches, t0c + secs) if t0c is not None else []
            if per:
                self.write_periods(tag, per, t0c)
            fill_switchback(row, m, ticks, per, t0c, len(sched.switches), run_s)
        if m.pathdown and ticks and sched.t_set is not None:
            fill_pathdown(row, ticks, m.interval_ms, t0c, sched.t_set, sched.t_act,
                          sched.t_up0)

    def write_ticks(self, tag, ticks, iv):
        """runs/TAG.ticks: the receiver's timeline, iv ms a tick."""
        with open(os.path.join(self.rundir, tag + ".ticks"), "w") as f:
            f.write("# t_ms bytes gbps\n")
            for t, b in ticks:
                f.write("%d %d %.4f\n" % (t, b, b * 8 / (iv * 1e6)))

    def write_periods(self, tag, per, t0c):
        """runs/TAG.periods: a switchback's periods on the .ticks file's timeline, for a
        second look at the run's ticks."""
        with open(os.path.join(self.rundir, tag + ".periods"), "w") as f:
            f.write("# on|off from_ms to_ms, on the .ticks file's timeline\n")
            for kind, lo, hi in per:
                f.write("%s %d %d\n" % (kind, round((lo - t0c) * 1000),
                                        round((hi - t0c) * 1000)))


def run_status(row, rcs, res, timed_out, srv_hung, text):
    """A run's status into row from its clients' exit statuses (rcs), braid_ab's result line
    (res, None: none) and whether it timed out: ok, fail or timeout, with the last lines of
    its output (text, the ticks left out) in the note when it is not ok."""
    row["rc"] = "/".join(str(r) for r in rcs)
    ok = not timed_out and all(r == 0 for r in rcs) and res is not None
    if timed_out:
        row["status"] = "timeout"
    elif res is None or any(r != 0 for r in rcs):
        row["status"] = "fail"
    else:
        row["status"] = "ok"
    if srv_hung and ok:
        row["note"] += "server hung at exit, killed; "
    if not ok:
        tail = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("tick ")][-3:]
        row["note"] += "; ".join(tail)[-300:]
    return ok
