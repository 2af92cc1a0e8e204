# SPDX-License-Identifier: BSD-2-Clause
"""What one run does to the fabric, and when: the busiest path found and impaired (or black-holed)
mid-run, the switchback's turns, the clean baseline's matching work, and the fabric put back."""

from .plan import switch_plan

# bytes the paths must carry between two counter readings before the busiest one is picked
MIN_PICK_BYTES = 50000
# how many times the reading is repeated, --window-s apart, while they carry less
MAX_PICK_TRIES = 10


def plan_actions(sc, m, args, use_fabric, victim_fixed):
    """The changes planned for a run of measurement m in scenario sc, as [(seconds after the
    client's start, what)], done in list order, each once it is due: "snap" reads the path
    counters, "impair" and "down" then act on the path that carried the most bytes since that
    snapshot (this run's data, not the set-up or control traffic before it), "mark" rebuilds
    that path's rules unchanged (the clean baseline of the impaired runs), "up" brings the
    black-holed path back. A switchback adds its turns ("sw1", "sw2", ...) as it goes.
    Nothing off the fabric, nor where the victim is fixed (impaired before the run)."""
    a = args
    actions = []
    if use_fabric and sc.impair and not m.pathdown and not victim_fixed:
        actions += [(a.probe, "snap"), (a.probe + a.window_s, "impair")]
    if use_fabric and sc.name == "clean" and m.mode != "lat" and not m.pathdown:
        # the baseline of the impaired runs, measured the same way: the same snapshot,
        # look at the counters and rebuild of the busiest path's rules at the same
        # moments (this program's own work on the 2 cores included), nothing impaired,
        # and goodput counted from then on, as theirs
        actions += [(a.probe, "snap"), (a.probe + a.window_s, "mark")]
    if use_fabric and m.pathdown:
        # a black hole (the route stays) from half way to the end of sending: then back,
        # so that single-path flows caught on it can finish and show whether they recover
        actions += [(m.seconds / 2 - a.window_s, "snap"), (m.seconds / 2, "down")]
        actions.append((m.seconds, "up"))
    return actions


def busiest(deltas):
    """The path that carried the most bytes ({path: bytes}); of equals, the lowest number."""
    return max(sorted(deltas), key=lambda p: deltas[p])


class Schedule:
    """The fabric's changes during one run (plan_actions), done as they fall due, and what
    they did: victim (the path changed), t_set and t_act (when the last change began and was
    done, seconds on the client's clock), t_up0 (when the black-holed path was being brought
    back), switches (the switchback's changes: (on|off|end, began, done, planned seconds)).
    Notes on what was done go into the run's row."""

    def __init__(self, fabric, sc, m, args, rep, row, use_fabric, victim_fixed, fixed,
                 switchback, stat=None):
        """fixed: the path impaired before the run when victim_fixed; switchback: whether the
        impairment is lifted and put back in turns; stat: called with "before" or "after"
        when braid-stat should read braid's counters (None: not this run)."""
        self.fabric, self.sc, self.m, self.a, self.row = fabric, sc, m, args, row
        self.victim_fixed, self.fixed, self.switchback = victim_fixed, fixed, switchback
        self.stat = stat
        self.sw_plan = switch_plan(args.switches, rep)
        self.restore = {k: sc.base.get(k, 0) for k in sc.impair}
        self.actions = plan_actions(sc, m, args, use_fabric, victim_fixed)
        self.impair_first = use_fabric and sc.impair and not m.pathdown and victim_fixed
        self.victim = self.t_set = self.t_act = self.t_up0 = None
        self.switches = []
        self.snap, self.tries = {}, 0

    def start(self):
        """Before the run: a fixed victim impaired from the start."""
        if self.impair_first:
            self.fabric.set(self.fixed, **self.sc.impair)

    def run_due(self, now, clock, running):
        """Does the changes due at now (seconds after the client's start) while running()
        says every client still runs; clock() reads the time on that scale."""
        while self.actions and now >= self.actions[0][0] and running():
            _, what = self.actions.pop(0)
            if what == "up":
                self._up(clock)
            elif what.startswith("sw"):
                self._switch(int(what[2:]), clock)
            elif what == "snap":
                self.snap = self.fabric.quick_counts()
                if self.stat:
                    self.stat("before")
            else:
                self._change(what, now, clock)

    def _up(self, clock):
        """The black-holed path brought back."""
        if self.victim is None:
            return
        if self.stat:
            self.stat("after")
        self.t_up0 = clock()
        self.fabric.set(self.victim, state="up")
        t_up = clock()
        self.row["note"] += "up again at %.2f s; " % t_up
        if self.t_set is not None:
            self.row["up_after_ms"] = int((t_up - self.t_set) * 1000)

    def _switch(self, i, clock):
        """Switchback: period i of the plan begins (past the plan: the end of the counting)."""
        kind = self.sw_plan[i][0] if i < len(self.sw_plan) else "end"
        self.t_set = clock()
        if kind == "on":
            self.fabric.set(self.victim, **self.sc.impair)
        elif self.switches[-1][0] == "on":
            self.fabric.set(self.victim, **self.restore)
        t_done = clock()
        if kind != "end":
            self._turn(i, t_done)
        else:
            self.switches.append(("end", self.t_set, t_done, 0.0))

    def _turn(self, i, t_done):
        """Switchback period i began (its change done at t_done): recorded, the next one
        planned after it."""
        length = self.sw_plan[i][1] * self.a.switch_s
        self.switches.append((self.sw_plan[i][0], self.t_set, t_done, length))
        self.actions.append((t_done + length, "sw%d" % (i + 1)))

    def _change(self, what, now, clock):
        """impair, down or mark: on the busiest path since the last snapshot."""
        mid = self.fabric.quick_counts()
        deltas = {p: mid[p] - self.snap.get(p, 0) for p in mid}
        if what == "mark":
            # the impaired runs' work at this moment, with nothing impaired: the busiest
            # path's rules rebuilt with no loss (tools/fabric set takes tenths of a second
            # of the 2 cores)
            path = busiest(deltas)
            self.t_set = clock()
            self.fabric.set(path, loss=0)
            self.t_act = clock()
            self.row["note"] += "path %d's rules rebuilt unchanged at %.2f-%.2f s; " % (
                path, self.t_set, self.t_act)
            return
        if sum(deltas.values()) < MIN_PICK_BYTES and self.tries < MAX_PICK_TRIES:
            # the data has not started flowing yet: look again a little later
            self.tries += 1
            self.snap = mid
            self.actions.insert(0, (now + self.a.window_s, what))
            return
        self.victim = self.fixed if self.victim_fixed else busiest(deltas)
        self.t_set = clock()
        clean_first = what == "impair" and self.switchback and self.sw_plan[0][0] == "off"
        if clean_first:
            self.fabric.set(self.victim, **self.restore)   # the same work, nothing impaired yet
        elif what == "impair":
            self.fabric.set(self.victim, **self.sc.impair)
        else:
            self.fabric.set(self.victim, state="down")
        self.t_act = clock()
        if what == "impair" and self.switchback:
            self._turn(0, self.t_act)
        self.row["note"] += "%s path %d at %.2f-%.2f s; " % (
            "picked (rules rebuilt unchanged, the first period clean)" if clean_first
            else what, self.victim, self.t_set, self.t_act)

    def put_back(self):
        """After the run: the path it changed (or the fixed victim) up, no loss, the base
        delay."""
        if self.victim_fixed and not self.m.pathdown:
            self.victim = self.fixed
            self.t_act = 0.0
        if self.victim is not None:
            self.fabric.set(self.victim, state="up", loss=0,
                            delay=self.sc.base.get("delay", 0))
