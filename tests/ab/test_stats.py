#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's statistics: percentiles, median and range, fairness, when the
receiver started, a run's latency and streaming figures, goodput after an impairment, and the
switchback's period accounting."""

import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.plan import Measure  # noqa: E402
from abkit.stats import (after_impairment, fill_fairness, fill_latency, fill_stream,  # noqa: E402
                         fill_switchback, jain, percentile, period_totals, receiver_t0, stats,
                         switch_periods)

MIB = 1 << 20


def new_row(scenario="loss1"):
    return {"scenario": scenario, "note": ""}


class Percentiles(unittest.TestCase):
    def test_percentile__ceil_rule(self):
        v = list(range(1, 11))
        self.assertEqual(percentile(v, 0.5), 5)
        self.assertEqual(percentile(v, 0.99), 10)
        self.assertEqual(percentile(v, 0.91), 10)
        self.assertEqual(percentile(v, 0.9), 9)
        self.assertEqual(percentile(v, 0.0), 1)

    def test_percentile__single_value(self):
        self.assertEqual(percentile([7.5], 0.5), 7.5)
        self.assertEqual(percentile([7.5], 0.999), 7.5)

    def test_stats__empty(self):
        self.assertIsNone(stats([]))
        self.assertIsNone(stats([None, None]))

    def test_stats__single_repetition(self):
        self.assertEqual(stats([3.0]), (3.0, 3.0, 3.0, 1))

    def test_stats__missing_values_left_out(self):
        self.assertEqual(stats([1, None, 5, 3]), (3, 1, 5, 3))

    def test_stats__even_count_and_ties(self):
        self.assertEqual(stats([4, 1, 3, 2]), (2.5, 1, 4, 4))
        self.assertEqual(stats([2, 2, 2]), (2, 2, 2, 3))

    def test_jain(self):
        self.assertEqual(jain([5, 5, 5]), 1.0)
        self.assertEqual(jain([10, 0]), 0.5)
        self.assertAlmostEqual(jain([1, 3]), 0.8)
        self.assertIsNone(jain([0, 0]))


class ReceiverStart(unittest.TestCase):
    def test_receiver_t0__from_braid_ab(self):
        self.assertAlmostEqual(receiver_t0({"t0": "100.5"}, 100.0, 3.0), 0.5)

    def test_receiver_t0__from_the_client_exit(self):
        self.assertAlmostEqual(receiver_t0({"t0": "0", "seconds": "1.0"}, 100.0, 2.0), 0.98)
        self.assertAlmostEqual(receiver_t0({"seconds": "1.0"}, 100.0, 0.5), 0.0)
        self.assertAlmostEqual(receiver_t0({}, 100.0, 0.5), 0.48)

    def test_receiver_t0__unknown(self):
        self.assertIsNone(receiver_t0({"seconds": "1.0"}, 100.0, None))


class Latency(unittest.TestCase):
    def test_fill_latency__from_samples(self):
        row = new_row()
        fill_latency(row, 64, [40.0, 10.0, 30.0, 20.0], {"p50_us": "99"})
        self.assertEqual(row, {"scenario": "loss1", "note": "", "payload_bytes": 2 * 64 * 104,
                               "samples": 4, "p50_us": 20.0, "p99_us": 40.0, "p999_us": 40.0,
                               "mean_us": 25.0, "max_us": 40.0})

    def test_fill_latency__single_sample(self):
        row = new_row()
        fill_latency(row, 64, [12.345], {})
        self.assertEqual((row["p50_us"], row["p99_us"], row["max_us"]), (12.35, 12.35, 12.35))
        self.assertEqual(row["payload_bytes"], 2 * 64 * 101)

    def test_fill_latency__no_samples_takes_the_result_line(self):
        row = new_row()
        fill_latency(row, 64, [], {"iters": "1000", "p50_us": "12.5", "p99_us": "",
                                   "mean_us": "x"})
        self.assertEqual(row["payload_bytes"], 2 * 64 * 1100)
        self.assertEqual(row["p50_us"], 12.5)
        self.assertIsNone(row["p99_us"])
        self.assertIsNone(row["mean_us"])
        self.assertNotIn("samples", row)

    def test_fill_latency__empty_run(self):
        row = new_row()
        fill_latency(row, 64, [], {})
        self.assertEqual(row["payload_bytes"], 2 * 64 * 100)
        self.assertIsNone(row["p999_us"])


class Streams(unittest.TestCase):
    def setUp(self):
        self.bw = Measure("bw1m", "bw", MIB, 2.0, 16, interval_ms=50)
        # 1 Gbit/s for 2 s: 250,000,000 bytes
        self.res = {"seconds": "2.0", "bytes": "250000000", "goodput_gbps": "1.0",
                    "msgs_per_s": "119"}
        # 10 ticks of 50 ms at 1 Gbit/s
        self.ticks = [(50 * i, 6250000) for i in range(10)]

    def test_after_impairment__ticks_after_the_change(self):
        ticks = [(0, 100), (50, 100), (100, 100), (150, 100), (200, 100)]
        got, dur = after_impairment(ticks, 50, 1.06, 1.0, 0.25)
        # the first whole tick after 60 ms is the one at 100 ms: 3 ticks, from 1.1 to 1.25
        self.assertEqual(got, 300)
        self.assertAlmostEqual(dur, 0.15)

    def test_after_impairment__receiver_start_unknown(self):
        got, dur = after_impairment([(0, 100), (50, 100)], 50, 1.0, None, 0.1)
        self.assertEqual(got, 200)
        self.assertAlmostEqual(dur, 0.1)

    def test_after_impairment__receiver_started_after_the_change(self):
        got, dur = after_impairment([(0, 100), (50, 100)], 50, 0.5, 1.0, 0.1)
        self.assertEqual(got, 200)
        self.assertAlmostEqual(dur, 0.6)

    def test_fill_stream__whole_run(self):
        row = new_row()
        fill_stream(row, self.bw, self.res, self.ticks, None, 0.0, None)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["goodput_run_gbps"], 1.0)
        self.assertEqual(row["msgs_per_s"], 119)
        self.assertEqual((row["seconds"], row["bytes"], row["payload_bytes"]),
                         (2.0, 250000000, 250000000))
        self.assertEqual(row["note"], "")

    def test_fill_stream__everything_in_one_burst(self):
        row = new_row()
        res = dict(self.res, seconds="0.1", goodput_gbps="20")
        fill_stream(row, self.bw, res, [], None)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["goodput_run_gbps"], 20.0)
        self.assertEqual(row["msgs_per_s"], 119)        # 250e6 / 1 MiB / 2 s = 119.2
        self.assertEqual(row["note"], "the receiver saw it all within 0.100 s: bytes / 2 s; ")

    def test_fill_stream__after_the_impairment(self):
        row = new_row()
        # from 0.2 s to the last receive at 0.5 s: 6 ticks of 6.25 MB in 0.3 s
        fill_stream(row, self.bw, dict(self.res, seconds="0.5", goodput_gbps="3"),
                    self.ticks, 0.2, 0.0, 0.5)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["msgs_per_s"], round(37500000 / MIB / 0.3))
        self.assertEqual(row["note"], "goodput over the 0.30 s after the impairment; ")

    def test_fill_stream__clean_baseline_counts_from_that_moment(self):
        row = new_row("clean")
        fill_stream(row, self.bw, dict(self.res, seconds="0.5"), self.ticks, 0.2, 0.0, 0.5)
        self.assertEqual(row["note"], "goodput over the 0.30 s after that moment; ")

    def test_fill_stream__too_little_after_the_impairment(self):
        row = new_row()
        fill_stream(row, self.bw, dict(self.res, seconds="0.5"), self.ticks, 0.4, 0.0, 0.5)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["note"], "under 0.2 s of receiving after the impairment: whole "
                         "run counted; ")

    def test_fill_stream__path_failure_counts_the_whole_run(self):
        row = new_row("pathdown")
        timeline = Measure("timeline", "bw", 65536, 2.0, 64, interval_ms=50, pathdown=True)
        fill_stream(row, timeline, self.res, self.ticks, 0.2, 0.0)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["note"], "")

    def test_fill_stream__empty_result(self):
        row = new_row()
        fill_stream(row, self.bw, {}, [], None)
        self.assertEqual((row["goodput_gbps"], row["msgs_per_s"], row["bytes"]), (None, None, 0))

    def test_fill_fairness(self):
        row = new_row()
        fill_fairness(row, [300, 100], 2)
        self.assertEqual((row["fairness"], row["per_client_bytes"]), (0.8, "300/100"))
        row = new_row()
        fill_fairness(row, [100], 2)          # a client that did not say
        fill_fairness(row, [0, 0], 2)         # nothing sent
        self.assertNotIn("fairness", row)


class Switchback(unittest.TestCase):
    def test_switch_periods__each_to_the_next_change(self):
        changes = [("on", 1.0, 1.1, 1.0), ("off", 2.1, 2.2, 1.0), ("end", 3.2, 3.3, 0.0)]
        self.assertEqual(switch_periods(changes, 10), [("on", 1.1, 2.1), ("off", 2.2, 3.2)])

    def test_switch_periods__run_ended_before_the_last_change(self):
        changes = [("on", 1.0, 1.1, 1.0), ("off", 2.1, 2.2, 1.0)]
        self.assertEqual(switch_periods(changes, 2.7), [("on", 1.1, 2.1), ("off", 2.2, 2.7)])
        self.assertEqual(switch_periods(changes, 5), [("on", 1.1, 2.1), ("off", 2.2, 3.2)])

    def test_switch_periods__empty_and_zero_length(self):
        self.assertEqual(switch_periods([], 10), [])
        self.assertEqual(switch_periods([("on", 1.0, 1.1, 1.0), ("off", 1.1, 1.2, 1.0)], 1.5),
                         [("off", 1.2, 1.5)])

    def test_period_totals__whole_ticks_only(self):
        periods = [("on", 0.0, 1.0), ("off", 1.0, 2.0)]
        ticks = [(0, 10), (500, 20), (1000, 30), (1500, 40), (2000, 5)]
        self.assertEqual(period_totals(ticks, periods, 0.0, 0.5),
                         {"on": [30, 1.0], "off": [70, 1.0]})

    def test_period_totals__ticks_straddling_a_change_count_for_neither(self):
        periods = [("on", 0.0, 1.0), ("off", 1.0, 2.0)]
        ticks = [(0, 10), (500, 20), (1000, 30), (1500, 40), (2000, 5)]
        self.assertEqual(period_totals(ticks, periods, 0.25, 0.5),
                         {"on": [10, 0.5], "off": [30, 0.5]})

    def test_period_totals__ten_ticks_of_50_ms_are_half_a_second(self):
        # a float sum of ten 0.05 s ticks is 0.49999999999999994: counted as ticks, it is 0.5,
        # which the switchback's 0.5 s minimum per kind must accept
        periods = [("on", 0.0, 0.5), ("off", 0.5, 1.0)]
        ticks = [(50 * i, 1) for i in range(21)]
        got = period_totals(ticks, periods, 0.0, 0.05)
        self.assertEqual(got, {"on": [10, 0.5], "off": [10, 0.5]})
        self.assertGreaterEqual(got["on"][1], 0.5)

    def test_period_totals__no_periods(self):
        self.assertEqual(period_totals([(0, 10), (50, 10)], [], None, 0.05),
                         {"on": [0, 0.0], "off": [0, 0.0]})

    def setUp(self):
        self.bw = Measure("bw1m", "bw", MIB, 2.0, 16, interval_ms=250)
        # 1 Gbit/s impaired, 2 Gbit/s clean; the last tick is partial
        self.ticks = [(250 * i, 31250000 if i < 4 else 62500000) for i in range(9)]

    def test_fill_switchback__impaired_over_clean(self):
        row = dict(new_row(), goodput_gbps=9.0)
        fill_switchback(row, self.bw, self.ticks, [("on", 0.0, 1.0), ("off", 1.0, 2.0)], 0.0,
                        3, 2.5)
        self.assertEqual(row["goodput_gbps"], 1.0)
        self.assertEqual(row["sw_clean_gbps"], 2.0)
        self.assertEqual(row["sw_ratio"], 0.5)
        self.assertEqual(row["msgs_per_s"], 119)
        self.assertEqual(row["sw_periods"], "1 on 1.00 s, 1 off 1.00 s")
        self.assertEqual(row["note"], "switchback: impaired 1.00 s at 1.000 Gbit/s, clean "
                         "1.00 s at 2.000, in turns within the run; ")

    def test_fill_switchback__too_little_clean(self):
        row = dict(new_row(), sw_ratio=9.0, sw_clean_gbps=9.0)
        fill_switchback(row, self.bw, self.ticks, [("on", 0.0, 1.0), ("off", 1.0, 1.3)], 0.0,
                        3, 2.0)
        self.assertIsNone(row["goodput_gbps"])
        self.assertIsNone(row["msgs_per_s"])
        self.assertNotIn("sw_ratio", row)
        self.assertNotIn("sw_clean_gbps", row)
        self.assertEqual(row["sw_periods"], "1 on 1.00 s, 1 off 0.25 s")
        self.assertEqual(row["note"], "switchback: under 0.5 s counted clean (3 change(s) of "
                         "the path in a 2 s run): no goodput, no ratio; ")

    def test_fill_switchback__no_periods(self):
        row = new_row()
        fill_switchback(row, self.bw, self.ticks, [], None, 1, 2.0)
        self.assertEqual(row["sw_periods"], "0 on 0.00 s, 0 off 0.00 s")
        self.assertIn("under 0.5 s counted impaired", row["note"])

    def test_fill_switchback__clean_periods_delivered_nothing(self):
        row = new_row()
        ticks = [(t, b if t < 1000 else 0) for t, b in self.ticks]
        fill_switchback(row, self.bw, ticks, [("on", 0.0, 1.0), ("off", 1.0, 2.0)], 0.0, 3, 2.0)
        self.assertEqual((row["goodput_gbps"], row["sw_clean_gbps"]), (1.0, 0.0))
        self.assertNotIn("sw_ratio", row)


if __name__ == "__main__":
    unittest.main()
