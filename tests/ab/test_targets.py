#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's judging: each target per repetition against the baseline of the
same repetition, with failed contenders, missing runs and scenarios, ties and zero baselines."""

import math
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.targets import (check_targets, completes_target, drain_seconds, fmt_gbps,  # noqa: E402
                           fmt_ms, fmt_ratio, judge, measured, miss, pathdown_goodput_target,
                           ratio_target, rep_row, run_missing, stall_target, stream_seconds)

RC = "braid;ofi_rxm"


def row(sc, key, cont, rep, status="ok", **cols):
    """A results.csv row as load_rows() gives it: every cell a string."""
    r = {"scenario": sc, "measure": key, "contender": cont, "rep": str(rep),
         "status": status, "rc": "0" if status == "ok" else "1", "note": "", "size": "1048576"}
    r.update({k: str(v) for k, v in cols.items()})
    return r


def loss1_vs_clean(rows, **kw):
    return ratio_target(rows, "loss1: test", ("loss1", "bw1m", "braid"),
                        ("clean", "bw1m", "braid"), 0.9, **kw)


class Judge(unittest.TestCase):
    def test_judge__every_repetition_met(self):
        t = judge("t", [measured(1, 1.0, True), measured(2, 0.95, True)], True, fmt_ratio)
        self.assertEqual((t["verdict"], t["worst"], t["median"], t["missed"]),
                         ("met", "0.95x in r2", "0.975x over 2", "none"))

    def test_judge__a_failed_repetition_is_a_miss(self):
        t = judge("t", [measured(1, 1.0, True), miss(2, "braid fail, exit 1")], True, fmt_ratio)
        self.assertEqual((t["verdict"], t["worst"], t["median"], t["missed"]),
                         ("**NOT met**", "1x in r1", "1x over 1", "r2 (braid fail, exit 1)"))

    def test_judge__no_repetition(self):
        t = judge("t", [], True, fmt_ratio)
        self.assertEqual((t["verdict"], t["worst"], t["median"], t["missed"], t["reps"]),
                         ("not evaluated: no repetition ran", "-", "-", "-", []))

    def test_judge__nothing_measured(self):
        t = judge("t", [miss(1, "no braid run")], True, fmt_ratio)
        self.assertEqual((t["verdict"], t["worst"], t["median"], t["missed"]),
                         ("**NOT met**", "-", "-", "r1 (no braid run)"))

    def test_judge__ties_name_the_first_worst(self):
        t = judge("t", [measured(1, 0.8, False, detail="a"), measured(2, 0.8, False, detail="b")],
                  True, fmt_ratio)
        self.assertEqual(t["worst"], "0.8x in r1 (a)")
        self.assertEqual(t["missed"], "r1 (0.8x), r2 (0.8x)")

    def test_judge__lower_is_better(self):
        t = judge("t", [measured(1, 10, True), measured(2, 30, True), measured(3, 20, True)],
                  False, fmt_ms)
        self.assertEqual((t["worst"], t["median"]), ("30 ms in r2", "20 ms over 3"))

    def test_judge__a_value_that_missed_with_why(self):
        t = judge("t", [measured(1, 60, False, "did not recover", "did not recover")], False,
                  fmt_ms)
        self.assertEqual((t["worst"], t["missed"]),
                         ("60 ms in r1 (did not recover)", "r1 (60 ms, did not recover)"))

    def test_formats(self):
        self.assertEqual([fmt_ratio(q) for q in (None, math.inf, 1.2345, 0.05, 12.0)],
                         ["-", "inf", "1.23x", "0.05x", "12x"])
        self.assertEqual((fmt_ms(None), fmt_ms(49.6)), ("-", "50 ms"))
        self.assertEqual((fmt_gbps(None), fmt_gbps(1.5)), ("-", "1.50 Gbit/s"))


class Ratio(unittest.TestCase):
    def test_ratio_target__against_the_same_repetition(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("clean", "bw1m", "braid", 2, goodput_gbps=1.0),
                row("loss1", "bw1m", "braid", 1, goodput_gbps=1.9),
                row("loss1", "bw1m", "braid", 2, goodput_gbps=0.8)]
        t = loss1_vs_clean(rows)
        self.assertEqual([p["value"] for p in t["reps"]], [0.95, 0.8])
        self.assertEqual((t["verdict"], t["worst"], t["missed"]),
                         ("**NOT met**", "0.8x in r2 (0.800 vs clean 1.00 Gbit/s)", "r2 (0.8x)"))

    def test_ratio_target__single_repetition_met(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("loss1", "bw1m", "braid", 1, goodput_gbps=1.9)]
        t = loss1_vs_clean(rows)
        self.assertEqual((t["verdict"], t["worst"], t["median"]),
                         ("met", "0.95x in r1 (1.90 vs clean 2.00 Gbit/s)", "0.95x over 1"))

    def test_ratio_target__missing_baseline_repetition(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("loss1", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("loss1", "bw1m", "braid", 2, goodput_gbps=2.0)]
        self.assertEqual(loss1_vs_clean(rows)["missed"], "r2 (no clean baseline run)")

    def test_ratio_target__failed_contender(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("clean", "bw1m", "braid", 2, goodput_gbps=2.0),
                row("loss1", "bw1m", "braid", 1, "fail"),
                row("loss1", "bw1m", "braid", 2, "timeout", rc="")]
        t = loss1_vs_clean(rows)
        self.assertEqual((t["verdict"], t["worst"], t["missed"]),
                         ("**NOT met**", "-", "r1 (braid fail, exit 1), r2 (braid timeout)"))

    def test_ratio_target__failed_baseline(self):
        rows = [row("clean", "bw1m", "braid", 1, "fail"),
                row("loss1", "bw1m", "braid", 1, goodput_gbps=2.0)]
        self.assertEqual(loss1_vs_clean(rows)["missed"], "r1 (clean baseline fail, exit 1)")

    def test_ratio_target__missing_scenario(self):
        t = loss1_vs_clean([row("loss1", "bw1m", "braid", 1, goodput_gbps=2.0)])
        self.assertEqual(t["verdict"], "not evaluated: no clean bw1m runs of braid")
        t = loss1_vs_clean([])
        self.assertEqual(t["verdict"], "not evaluated: no loss1 bw1m runs of braid and no "
                         "clean bw1m runs of braid")

    def test_ratio_target__missing_value(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("loss1", "bw1m", "braid", 1, goodput_gbps="")]
        self.assertEqual(loss1_vs_clean(rows)["missed"], "r1 (no goodput_gbps in the braid run)")

    def test_ratio_target__zero_baseline(self):
        rows = [row("loss1", "bw1m", RC, 1, goodput_gbps=0),
                row("loss1", "bw1m", "braid", 1, goodput_gbps=1.0)]
        args = (rows, "vs RC", ("loss1", "bw1m", "braid"), ("loss1", "bw1m", RC), 5)
        self.assertEqual(ratio_target(*args, base_name=RC)["missed"],
                         "r1 (the %s baseline is 0)" % RC)
        t = ratio_target(*args, base_name=RC, zero_base_met=True)
        self.assertEqual((t["verdict"], t["worst"]),
                         ("met", "inf in r1 (1.00 vs %s 0.000 Gbit/s: %s delivered nothing)" %
                          (RC, RC)))

    def test_ratio_target__lower_is_better(self):
        rows = [row("clean", "lat", "braid", 1, p99_us=100),
                row("loss1", "lat", "braid", 1, p99_us=250)]
        t = ratio_target(rows, "p99", ("loss1", "lat", "braid"), ("clean", "lat", "braid"), 2,
                         higher=False, col="p99_us")
        self.assertEqual((t["verdict"], t["missed"]), ("**NOT met**", "r1 (2.5x)"))

    def test_ratio_target__switchback_within_the_run(self):
        rows = [row("loss1", "bw1m", "braid", 1, goodput_gbps=1.96, sw_clean_gbps=2.0,
                    sw_ratio=0.98, sw_periods="4 on 4.00 s, 4 off 4.00 s")]
        t = loss1_vs_clean(rows, within=True)
        self.assertEqual((t["verdict"], t["worst"]),
                         ("met", "0.98x in r1 (1.96 vs 2.00 Gbit/s with the impairment lifted, "
                          "in the same run)"))

    def test_ratio_target__switchback_without_a_ratio(self):
        rows = [row("loss1", "bw1m", "braid", 1, goodput_gbps="", sw_ratio="",
                    sw_periods="1 on 0.20 s, 1 off 1.00 s")]
        self.assertEqual(loss1_vs_clean(rows, within=True)["missed"],
                         "r1 (no clean periods to compare within the run (1 on 0.20 s, 1 off "
                         "1.00 s))")

    def test_ratio_target__switchback_not_judged_within_unless_asked(self):
        rows = [row("loss1", "bw1m", "braid", 1, goodput_gbps=1.0, sw_ratio=1.0,
                    sw_periods="4 on 4.00 s, 4 off 4.00 s")]
        self.assertEqual(loss1_vs_clean(rows)["verdict"],
                         "not evaluated: no clean bw1m runs of braid")


class PathFailure(unittest.TestCase):
    def test_stall_target(self):
        rows = [row("pathdown", "timeline", "braid", 1, stall_ms=30, recovered=1),
                row("pathdown", "timeline", "braid", 2, stall_ms=80, recovered=1),
                row("pathdown", "timeline", "braid", 3, stall_ms=20, recovered=0),
                row("pathdown", "timeline", "braid", 4, stall_ms=""),
                row("pathdown", "timeline", RC, 5, "fail")]
        t = stall_target(rows)
        self.assertEqual(t["verdict"], "**NOT met**")
        self.assertEqual(t["worst"], "80 ms in r2")
        self.assertEqual(t["missed"], "r2 (80 ms), r3 (20 ms, did not recover), r4 (no "
                         "timeline to find the stall in), r5 (no braid run)")

    def test_stall_target__no_braid_runs(self):
        t = stall_target([row("pathdown", "timeline", RC, 1, stall_ms=10, recovered=1)])
        self.assertEqual(t["verdict"], "not evaluated: no pathdown runs of braid")

    def test_pathdown_goodput_target(self):
        rows = [row("pathdown", "timeline", "braid", 1, before_gbps=1.0, after_gbps=0.8),
                row("pathdown", "timeline", "braid", 2, pre_gbps=1.0, post_gbps=0.6),
                row("pathdown", "timeline", "braid", 3, before_gbps=0, after_gbps=0.5),
                row("pathdown", "timeline", "braid", 4, before_gbps=1.0)]
        t = pathdown_goodput_target(rows)
        self.assertEqual([p["value"] for p in t["reps"]], [0.8, 0.6, None, None])
        self.assertEqual(t["worst"], "0.6x in r2 (0.600 after vs 1.00 Gbit/s before; median "
                         "ticks: no tick file)")
        self.assertEqual(t["missed"], "r2 (0.6x), r3 (no goodput before the failure on the "
                         "timeline), r4 (no goodput after the failure on the timeline)")


class Completes(unittest.TestCase):
    def test_completes_target(self):
        cmd = "braid_ab -p braid -t 2 -w 16"
        rows = [row("delay20", "bw1m", "braid", 1, goodput_gbps=1.0, seconds=2.1, cmd=cmd),
                row("delay20", "bw1m", "braid", 2, goodput_gbps=0, seconds=2.0, cmd=cmd),
                row("delay20", "bw1m", "braid", 3, goodput_gbps=1.0, seconds=0.1, cmd=cmd,
                    note="the receiver saw it all within 0.100 s: bytes / 2 s; "),
                row("delay20", "bw1m", "braid", 4, goodput_gbps=1.0, seconds=9, cmd=cmd),
                row("delay20", "bw1m", "braid", 5, "fail")]
        t = completes_target(rows, "delay20")
        self.assertEqual(t["target"], "delay20: every path 20 ms one way: braid 1 MiB runs "
                         "complete, no error, no stuck run")
        self.assertEqual([p["ok"] for p in t["reps"]], [True, False, False, False, False])
        self.assertEqual(t["missed"], "r2 (stuck: nothing delivered), r3 (1.00 Gbit/s, stuck: "
                         "everything arrived in one burst at the end), r4 (1.00 Gbit/s, stuck: "
                         "receiving took 9.0 s for a 2 s stream), r5 (braid fail, exit 1)")

    def test_completes_target__the_window_drains_after_the_stream(self):
        # 16 x 1 MiB at 0.1 Gbit/s take 1.34 s: 4.1 s of receiving for a 2 s stream is not
        # stuck (2 x 2 + 1.5 x 1.34 = 6.0 s)
        rows = [row("delay20", "bw1m", "braid", 1, goodput_gbps=0.1, seconds=4.1,
                    cmd="braid_ab -t 2 -w 16")]
        self.assertEqual(completes_target(rows, "delay20")["verdict"], "met")

    def test_drain_and_stream_seconds(self):
        r = row("delay20", "bw1m", "braid", 1, cmd="braid_ab -T 6 -t 10.3 -w 16")
        self.assertAlmostEqual(drain_seconds(r, 1.0), 16 * 1048576 * 8 / 1e9)
        self.assertEqual(drain_seconds(r, 0), 0.0)
        self.assertEqual(drain_seconds(row("x", "y", "z", 1, cmd="braid_ab -t 2"), 1.0), 0.0)
        self.assertEqual(stream_seconds(r), 10.3)
        self.assertIsNone(stream_seconds(row("x", "y", "z", 1, cmd="braid_ab -T 6")))
        self.assertIsNone(stream_seconds({}))


class Rows(unittest.TestCase):
    def test_run_missing(self):
        self.assertEqual(run_missing(None, "braid"), "no braid run")
        self.assertEqual(run_missing(row("a", "b", "braid", 1, "fail", rc=134), "braid"),
                         "braid fail, exit 134")
        self.assertEqual(run_missing({"status": ""}, "braid"), "braid ?")
        self.assertIsNone(run_missing(row("a", "b", "braid", 1), "braid"))

    def test_rep_row__the_last_of_a_repetition(self):
        rows = [row("a", "b", "braid", 1, goodput_gbps=1), row("a", "b", "braid", 1,
                                                                goodput_gbps=2)]
        self.assertEqual(rep_row(rows, "a", "b", "braid", 1)["goodput_gbps"], "2")
        self.assertIsNone(rep_row(rows, "a", "b", "braid", 2))


class AllTargets(unittest.TestCase):
    def test_check_targets__no_runs(self):
        t = check_targets([])
        self.assertEqual([x["scenario"] for x in t],
                         ["loss1", "loss5", "loss1", "loss1", "pathdown", "pathdown", "slowpath",
                          "delay0.2", "delay2", "delay20"])
        self.assertFalse(any(x["ran"] for x in t))
        self.assertTrue(all(x["verdict"].startswith("not evaluated: ") for x in t))
        self.assertIn("(delay0.2)", t[6]["target"])
        self.assertIn("braid small p99", t[3]["target"])

    def test_check_targets__from_the_rows(self):
        rows = [row("clean", "bw64k", "braid", 1, goodput_gbps=2.0),
                row("loss5", "bw64k", "braid", 1, goodput_gbps=1.7),
                row("loss1", "lat", "braid", 1, size=64, p99_us=10),
                row("loss1", "write1m", "braid", 1, goodput_gbps=1.0),
                row("slowpath", "bw1m", "braid", 1, base_delay_ms=5, goodput_gbps=1.0),
                row("delay5", "bw1m", "braid", 1, goodput_gbps=1.0, seconds=2,
                    cmd="braid_ab -t 2 -w 16")]
        t = {x["target"].split(":")[0]: x for x in check_targets(rows)}
        self.assertEqual(sorted(t), ["delay5", "loss1", "loss1 RMA", "loss1 p99", "loss1 vs RC",
                                     "loss5", "pathdown", "slowpath"])
        # loss5 on 64 KiB: the only size both scenarios measured
        self.assertIn("braid 64 KiB goodput >= 0.8x", t["loss5"]["target"])
        self.assertEqual(t["loss5"]["verdict"], "met")
        self.assertIn("braid 64 B p99", t["loss1 p99"]["target"])
        self.assertIn("(delay5)", t["slowpath"]["target"])
        self.assertEqual(t["slowpath"]["verdict"], "met")
        self.assertEqual(t["delay5"]["verdict"], "met")
        self.assertTrue(t["loss1 RMA"]["ran"])
        self.assertFalse(t["pathdown"]["ran"])


if __name__ == "__main__":
    unittest.main()
