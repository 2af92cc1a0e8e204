#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's run schedule: what a run does to the fabric and when (the busiest
path picked and impaired, the switchback's turns in both orders, the clean baseline's matching
work, the path failure and its return, the fabric put back), with a stand-in fabric and clock."""

import argparse
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.plan import Measure, Scenario  # noqa: E402
from abkit.schedule import Schedule, busiest, plan_actions  # noqa: E402

LOSS1 = Scenario("loss1", True, "", [], impair={"loss": 1})
SLOW = Scenario("slowpath", True, "", [], impair={"delay": 2.0}, base={"delay": 0.2})
CLEAN = Scenario("clean", True, "", [])
PATHDOWN = Scenario("pathdown", True, "", [])
BW = Measure("bw1m", "bw", 1 << 20, 2.0, 16, interval_ms=50)
LAT = Measure("lat", "lat", 64, iters=100)
TIMELINE = Measure("timeline", "bw", 65536, 4.0, 64, interval_ms=10, pathdown=True)


def options(**kw):
    d = dict(probe=0.3, window_s=0.15, switches=2, switch_s=1.0)
    d.update(kw)
    return argparse.Namespace(**d)


class FakeFabric:
    """Records every set; quick_counts gives its counts in turn (the last one again after)."""

    def __init__(self, counts=()):
        self.sets, self.counts = [], list(counts)

    def set(self, path, **kw):
        self.sets.append((path, kw))

    def quick_counts(self):
        return self.counts.pop(0) if len(self.counts) > 1 else self.counts[0]


class Clock:
    """Seconds on the client's clock; every reading takes 0.05 s (a tools/fabric command)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.05
        return self.t


ZERO = {0: 0, 1: 0, 2: 0, 3: 0}
BUSY = {0: 100000, 1: 300000, 2: 0, 3: 50000}


def schedule(sc, m, fabric, rep=1, fixed=None, switchback=False, stat=None, **kw):
    row = {"note": ""}
    return Schedule(fabric, sc, m, options(**kw), rep, row, True, fixed is not None, fixed,
                    switchback, stat), row


def drive(s, clock, until):
    """Runs the schedule's actions as they fall due, up to until seconds."""
    while s.actions and s.actions[0][0] <= until:
        clock.t = max(clock.t, s.actions[0][0])
        s.run_due(clock.t, clock, lambda: True)


def actions(*args):
    """plan_actions' list, its times to the microsecond."""
    return [(round(t, 6), what) for t, what in plan_actions(*args)]


class Actions(unittest.TestCase):
    def test_plan_actions(self):
        a = options()
        self.assertEqual(actions(LOSS1, BW, a, True, False), [(0.3, "snap"), (0.45, "impair")])
        self.assertEqual(actions(LOSS1, BW, a, True, True), [])
        self.assertEqual(actions(LOSS1, BW, a, False, False), [])
        self.assertEqual(actions(CLEAN, BW, a, True, False), [(0.3, "snap"), (0.45, "mark")])
        self.assertEqual(actions(CLEAN, LAT, a, True, False), [])
        self.assertEqual(actions(PATHDOWN, TIMELINE, a, True, False),
                         [(1.85, "snap"), (2.0, "down"), (4.0, "up")])

    def test_busiest__ties_go_to_the_lowest_path(self):
        self.assertEqual(busiest({2: 9, 0: 5, 1: 9}), 1)
        self.assertEqual(busiest({3: 0}), 3)


class Switchback(unittest.TestCase):
    def test_switchback__odd_repetition_starts_impaired(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, row = schedule(LOSS1, BW, fab, rep=1, switchback=True)
        drive(s, clock, 100)
        self.assertEqual(fab.sets, [(1, {"loss": 1}), (1, {"loss": 0}), (1, {"loss": 1}),
                                    (1, {"loss": 0})])
        self.assertEqual([k for k, _, _, _ in s.switches], ["on", "off", "on", "off", "end"])
        self.assertEqual([p for _, _, _, p in s.switches], [1.0, 1.0, 1.0, 1.0, 0.0])
        # each change due a period after the last was done (begun one clock reading later)
        for (_, _, done, planned), (_, began, _, _) in zip(s.switches, s.switches[1:]):
            self.assertAlmostEqual(began, done + planned + 0.05)
        self.assertEqual(s.victim, 1)
        self.assertTrue(row["note"].startswith("impair path 1 at 0.50-0.55 s; "))

    def test_switchback__even_repetition_starts_clean(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, row = schedule(SLOW, BW, fab, rep=2, switchback=True)
        drive(s, clock, 100)
        self.assertEqual([kw for _, kw in fab.sets], [{"delay": 0.2}, {"delay": 2.0},
                                                      {"delay": 0.2}, {"delay": 2.0},
                                                      {"delay": 0.2}])
        self.assertEqual([k for k, _, _, _ in s.switches], ["off", "on", "off", "on", "end"])
        self.assertTrue(row["note"].startswith("picked (rules rebuilt unchanged, the first "
                                               "period clean) path 1 at"))

    def test_impair__once_to_the_end_without_switchback(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, _ = schedule(LOSS1, BW, fab)
        drive(s, clock, 100)
        self.assertEqual(fab.sets, [(1, {"loss": 1})])
        self.assertEqual(s.switches, [])
        self.assertAlmostEqual(s.t_act - s.t_set, 0.05)


class Picking(unittest.TestCase):
    def test_pick__waits_for_the_data_to_flow(self):
        fab, clock = FakeFabric([ZERO, {0: 1000, 1: 0, 2: 0, 3: 0}, BUSY]), Clock()
        s, _ = schedule(LOSS1, BW, fab)
        drive(s, clock, 0.45)
        self.assertEqual(fab.sets, [])
        self.assertEqual(s.tries, 1)
        self.assertAlmostEqual(s.actions[0][0], 0.6)
        drive(s, clock, 100)
        # the busiest since the last look: path 1
        self.assertEqual(fab.sets, [(1, {"loss": 1})])

    def test_pick__gives_up_waiting_after_10_looks(self):
        fab, clock = FakeFabric([ZERO] + [{0: 10 * i, 1: 0, 2: 0, 3: 20 * i}
                                          for i in range(1, 20)]), Clock()
        s, _ = schedule(LOSS1, BW, fab)
        drive(s, clock, 100)
        self.assertEqual(s.tries, 10)
        self.assertEqual(fab.sets, [(3, {"loss": 1})])

    def test_mark__the_clean_baseline_rebuilds_the_busiest_path(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, row = schedule(CLEAN, BW, fab)
        drive(s, clock, 100)
        self.assertEqual(fab.sets, [(1, {"loss": 0})])
        self.assertIsNone(s.victim)
        self.assertEqual(row["note"], "path 1's rules rebuilt unchanged at 0.50-0.55 s; ")

    def test_nothing_once_a_client_has_exited(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, _ = schedule(LOSS1, BW, fab)
        s.run_due(100, clock, lambda: False)
        self.assertEqual(fab.sets, [])
        self.assertEqual(len(s.actions), 2)


class PathDown(unittest.TestCase):
    def test_pathdown__down_then_up_with_braid_stat(self):
        fab, clock, stats = FakeFabric([ZERO, BUSY]), Clock(), []
        s, row = schedule(PATHDOWN, TIMELINE, fab, stat=stats.append)
        drive(s, clock, 100)
        self.assertEqual(fab.sets, [(1, {"state": "down"}), (1, {"state": "up"})])
        self.assertEqual(stats, ["before", "after"])
        self.assertAlmostEqual(s.t_set, 2.05)
        self.assertAlmostEqual(s.t_up0, 4.05)
        self.assertEqual(row["up_after_ms"], 2050)
        self.assertEqual(row["note"], "down path 1 at 2.05-2.10 s; up again at 4.10 s; ")

    def test_pathdown__fixed_victim(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, _ = schedule(PATHDOWN, TIMELINE, fab, fixed=2)
        drive(s, clock, 100)
        self.assertEqual(fab.sets, [(2, {"state": "down"}), (2, {"state": "up"})])

    def test_up__without_a_path_down(self):
        fab, clock = FakeFabric([ZERO]), Clock()
        s, row = schedule(PATHDOWN, TIMELINE, fab)
        s.actions = [(4.0, "up")]
        drive(s, clock, 100)
        self.assertEqual((fab.sets, row["note"]), ([], ""))


class PutBack(unittest.TestCase):
    def test_start_and_put_back__fixed_victim(self):
        fab = FakeFabric([ZERO])
        s, _ = schedule(SLOW, LAT, fab, fixed=0)
        self.assertEqual(s.actions, [])
        s.start()
        s.put_back()
        self.assertEqual(fab.sets, [(0, {"delay": 2.0}), (0, {"state": "up", "loss": 0,
                                                                "delay": 0.2})])
        self.assertEqual((s.victim, s.t_act), (0, 0.0))

    def test_start_and_put_back__busiest(self):
        fab, clock = FakeFabric([ZERO, BUSY]), Clock()
        s, _ = schedule(LOSS1, BW, fab)
        s.start()
        self.assertEqual(fab.sets, [])
        drive(s, clock, 100)
        s.put_back()
        self.assertEqual(fab.sets[-1], (1, {"state": "up", "loss": 0, "delay": 0}))

    def test_put_back__nothing_changed(self):
        fab = FakeFabric([ZERO])
        s, _ = schedule(LOSS1, BW, fab)
        s.put_back()
        self.assertEqual(fab.sets, [])


if __name__ == "__main__":
    unittest.main()
