#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's plan: the scenarios the options make, the switchback's turns and
length, the order of the runs and the time they take."""

import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit import cli  # noqa: E402
from abkit.plan import (Measure, PlanError, Scenario, make_plan,  # noqa: E402
                        plan_lines, run_order, seconds_left, switch_plan, switchback_seconds)


def options(*argv):
    """tools/ab's options as parsed from argv."""
    return cli.parse(cli.parser("test"), list(argv))[0]


def names(plan):
    return [s.name for s in plan]


def scenario(plan, name):
    return next(s for s in plan if s.name == name)


class SwitchPlan(unittest.TestCase):
    def test_switch_plan__odd_repetition_starts_impaired(self):
        self.assertEqual(switch_plan(2, 1), [("on", 1), ("off", 1), ("on", 1), ("off", 1)])

    def test_switch_plan__even_repetition_starts_clean(self):
        self.assertEqual(switch_plan(2, 2), [("off", 1), ("on", 1), ("off", 1), ("on", 1)])

    def test_switch_plan__one_turn(self):
        self.assertEqual(switch_plan(1, 3), [("on", 1), ("off", 1)])

    def test_switchback_seconds__defaults(self):
        a = options()
        loss1 = scenario(make_plan(a), "loss1")
        bw1m = next(m for m in loss1.measures if m.key == "bw1m")
        # 0.3 probe + 0.15 window + 2 x 4 turns of 1 s + 9 changes x 0.15 s + 0.5
        self.assertAlmostEqual(switchback_seconds(loss1, bw1m, a), 10.3)

    def test_switchback_seconds__a_longer_stream_keeps_its_length(self):
        a = options("--seconds", "20")
        loss1 = scenario(make_plan(a), "loss1")
        bw1m = next(m for m in loss1.measures if m.key == "bw1m")
        self.assertEqual(switchback_seconds(loss1, bw1m, a), 20)

    def test_switchback_seconds__none_where_nothing_is_switched(self):
        a = options()
        plan = make_plan(a)
        loss1, clean, pathdown = (scenario(plan, n) for n in ("loss1", "clean", "pathdown"))
        lat = next(m for m in loss1.measures if m.mode == "lat")
        bw1m = next(m for m in loss1.measures if m.key == "bw1m")
        self.assertIsNone(switchback_seconds(loss1, lat, a))
        self.assertIsNone(switchback_seconds(clean, bw1m, a))
        self.assertIsNone(switchback_seconds(pathdown, pathdown.measures[0], a))
        self.assertIsNone(switchback_seconds(loss1, bw1m, options("--victim", "2")))
        self.assertIsNone(switchback_seconds(loss1, bw1m, options("--switch-s", "0")))


class MakePlan(unittest.TestCase):
    def test_make_plan__every_scenario_by_default(self):
        self.assertEqual(names(make_plan(options())), [
            "loopback", "clean", "loss0.1", "loss1", "loss5", "delay0.2", "delay2", "delay20",
            "slowpath", "pathdown", "incast"])

    def test_make_plan__base_delay_adds_its_scenario(self):
        plan = make_plan(options("--base-delay", "5"))
        self.assertEqual([n for n in names(plan) if n.startswith("delay")],
                         ["delay0.2", "delay2", "delay5", "delay20"])
        self.assertIn("(the slowpath baseline)", scenario(plan, "delay5").what)
        self.assertNotIn("baseline", scenario(plan, "delay0.2").what)
        self.assertEqual(scenario(plan, "slowpath").impair, {"delay": 50})

    def test_make_plan__quick(self):
        plan = make_plan(options("--quick"))
        self.assertEqual(names(plan), ["clean", "loss1", "pathdown"])
        clean = scenario(plan, "clean")
        self.assertEqual([m.key for m in clean.measures], ["bw1m", "lat", "write1m"])
        self.assertEqual(clean.measures[0].seconds, 1.5)
        self.assertEqual(clean.measures[1].iters, 1000)
        self.assertEqual(scenario(plan, "pathdown").measures[0].seconds, 2.0)

    def test_make_plan__seconds_and_iters(self):
        plan = make_plan(options("--seconds", "3", "--iters", "800"))
        self.assertEqual(scenario(plan, "pathdown").measures[0].seconds, 6)
        self.assertEqual(scenario(plan, "clean").measures[0].seconds, 3)
        # latency round trips: halved at 1% loss, an eighth at 5% (at least 200)
        lat = {s.name: m.iters for s in plan for m in s.measures if m.mode == "lat"}
        self.assertEqual(lat, {"loopback": 800, "clean": 800, "loss0.1": 800, "loss1": 400,
                               "loss5": 200, "slowpath": 200})

    def test_make_plan__measures_subset(self):
        plan = make_plan(options("--measures", "lat"))
        self.assertEqual(names(plan), ["loopback", "clean", "loss0.1", "loss1", "loss5",
                                       "slowpath"])
        self.assertTrue(all([m.key for m in s.measures] == ["lat"] for s in plan))

    def test_make_plan__scenarios_outside_quick_come_from_the_full_plan(self):
        self.assertEqual(names(make_plan(options("--quick", "--scenarios", "clean,incast"))),
                         ["clean", "incast"])

    def test_make_plan__incast_hosts(self):
        incast = scenario(make_plan(options("--incast", "5")), "incast")
        self.assertEqual(incast.hosts, 5)
        self.assertEqual([m.clients for m in incast.measures], [4, 4])

    def test_make_plan__unknown_scenario(self):
        with self.assertRaises(PlanError) as e:
            make_plan(options("--scenarios", "clean,nosuch"))
        self.assertTrue(str(e.exception).startswith("ab: unknown scenario(s) nosuch; known: "
                                                    "loopback, clean,"))

    def test_make_plan__unknown_measure(self):
        with self.assertRaises(PlanError) as e:
            make_plan(options("--measures", "bw2m"))
        self.assertEqual(str(e.exception), "ab: unknown measure(s) bw2m; known: bw1m, bw64k, "
                         "incast1m, incast64k, lat, rate, timeline, write1m")

    def test_make_plan__nothing_left(self):
        self.assertEqual(make_plan(options("--scenarios", "pathdown", "--measures", "lat")), [])


class Order(unittest.TestCase):
    def setUp(self):
        self.a = Scenario("a", False, "", [Measure("m1", "bw", 8, 1)])
        self.b = Scenario("b", False, "", [Measure("m1", "bw", 8, 1), Measure("m2", "bw", 8, 1)])

    def test_run_order__contenders_start_one_later_each_repetition(self):
        todo = run_order([self.a, self.b], ["x", "y", "z"], 2)
        self.assertEqual(len(todo), 18)
        got = [(s.name, rep, m.key, c) for s, rep, m, c in todo]
        self.assertEqual(got[:3], [("a", 1, "m1", "x"), ("a", 1, "m1", "y"),
                                   ("a", 1, "m1", "z")])
        self.assertEqual(got[6:9], [("b", 1, "m2", "x"), ("b", 1, "m2", "y"),
                                    ("b", 1, "m2", "z")])
        self.assertEqual(got[9:12], [("a", 2, "m1", "y"), ("a", 2, "m1", "z"),
                                     ("a", 2, "m1", "x")])

    def test_run_order__one_contender(self):
        got = [(s.name, rep, m.key, c) for s, rep, m, c in run_order([self.a], ["x"], 3)]
        self.assertEqual(got, [("a", 1, "m1", "x"), ("a", 2, "m1", "x"), ("a", 3, "m1", "x")])

    def test_run_order__no_repetitions(self):
        self.assertEqual(run_order([self.a], ["x"], 0), [])

    def test_seconds_left__measured_mean_else_estimate(self):
        lat = Measure("lat", "lat", 64, iters=1000)
        bw = Measure("bw", "bw", 8, 2.0)
        rest = [(self.a, 1, lat, "x"), (self.a, 1, bw, "x")]
        # lat: the mean of 2 and 4 s done; bw: its estimate, 2 s + 1.5
        self.assertAlmostEqual(seconds_left(rest, {("a", "lat"): [2.0, 4.0]}, options()), 6.5)
        self.assertEqual(seconds_left([], {}, options()), 0)

    def test_measure_label_and_estimate(self):
        self.assertEqual(Measure("lat", "lat", 64, iters=1000).label(), "lat 64 B")
        self.assertEqual(Measure("r", "rate", 8, 2).label(), "rate 8 B")
        self.assertEqual(Measure("w", "write", 1 << 20, 2).label(), "RMA write 1 MiB")
        self.assertEqual(Measure("i", "bw", 1 << 20, 2, clients=2).label(), "bw 1 MiB x2")
        self.assertEqual(Measure("b", "bw", 65536, 2).label(), "bw 64 KiB")
        self.assertAlmostEqual(Measure("lat", "lat", 64, iters=1000).estimate(), 1.56)
        self.assertEqual(Measure("b", "bw", 8, 2.0).estimate(), 3.5)
        self.assertAlmostEqual(Measure("b", "bw", 8, 2.0).estimate(10.3), 11.8)

    def test_plan_lines__quick(self):
        a = options("--quick")
        lines = plan_lines(make_plan(a), ["braid", "tcp;ofi_rxm"], 1, a)
        self.assertEqual(lines[0], "clean     4 paths, no impairment")
        self.assertEqual(lines[1], "          bw 1 MiB       1.5 s, window 16")
        self.assertEqual(lines[2], "          lat 64 B       1000 round trips")
        self.assertIn("          bw 64 KiB      2 s, window 64, path down at 1 s", lines)
        # clean 3 + 1.56 + 3, loss1 11.8 + 1.56 + 11.8 (switchbacks), pathdown 3.5: 36.22 s
        # a contender
        self.assertEqual(lines[-1], "14 runs (2 contenders x 1 repetitions), about 1m12s")


if __name__ == "__main__":
    unittest.main()
