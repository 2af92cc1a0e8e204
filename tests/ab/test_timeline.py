#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's path failure timeline: the stall, recovery, goodput before and after
the failure, and the same again from an older results.csv and its tick files."""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.timeline import (fill_pathdown, fill_timelines, read_ticks, stall,  # noqa: E402
                            stall_run, timeline_goodput)

GBIT_10MS = 1250000          # bytes in a 10 ms tick at 1 Gbit/s


def ticks_of(vals, iv=10):
    return [(i * iv, v) for i, v in enumerate(vals)]


# 250 ms at 1 Gbit/s, 50 ms of nothing, 200 ms at 1 Gbit/s (10 ms ticks)
RECOVERS = [GBIT_10MS] * 25 + [0] * 5 + [GBIT_10MS] * 20


class Stall(unittest.TestCase):
    def test_stall_run__too_few_ticks(self):
        self.assertIsNone(stall_run([1, 2, 3, 4], 10, 0.0))
        self.assertEqual(stall(ticks_of([1, 2, 3, 4]), 10, 0.0), {})

    def test_stall_run__nothing_moved(self):
        self.assertEqual(stall_run([0] * 8, 10, 0.05), {"ref": None})
        self.assertEqual(stall(ticks_of([0] * 8), 10, 0.05), {"stall_ms": None})

    def test_stall_run__the_longest_low_run_after_the_failure(self):
        vals = [GBIT_10MS] * 10 + [0] * 5 + [GBIT_10MS] * 10
        s = stall_run(vals, 10, 0.1)
        self.assertEqual((s["ref"], s["early"], s["longest"], s["end"]), (GBIT_10MS, 5, 5, 14))
        self.assertEqual(s["thr"], 0.1 * GBIT_10MS)

    def test_stall__recovers(self):
        vals = [GBIT_10MS] * 10 + [0] * 5 + [GBIT_10MS] * 10
        self.assertEqual(stall(ticks_of(vals), 10, 0.1),
                         {"stall_ms": 50, "recovered": 1, "pre_gbps": 1.0, "post_gbps": 1.0})

    def test_stall__does_not_recover(self):
        vals = [GBIT_10MS] * 10 + [0] * 10
        self.assertEqual(stall(ticks_of(vals), 10, 0.1),
                         {"stall_ms": 90, "recovered": 0, "pre_gbps": 1.0})

    def test_stall__a_dip_before_the_failure_does_not_count(self):
        vals = [GBIT_10MS] * 3 + [0] * 2 + [GBIT_10MS] * 20
        self.assertEqual(stall(ticks_of(vals), 10, 0.2)["stall_ms"], 0)

    def test_stall__start_up_does_not_count(self):
        vals = [0, 0, 0] + [GBIT_10MS] * 12
        self.assertEqual(stall(ticks_of(vals), 10, 0.1),
                         {"stall_ms": 0, "recovered": 1, "pre_gbps": 1.0, "post_gbps": 1.0})

    def test_stall__ties_keep_the_first(self):
        vals = [GBIT_10MS] * 10 + [0] * 3 + [GBIT_10MS] * 3 + [0] * 3 + [GBIT_10MS] * 5
        s = stall_run(vals, 10, 0.1)
        self.assertEqual((s["longest"], s["end"]), (3, 12))


class Goodput(unittest.TestCase):
    # 200 ms at 1 Gbit/s, 50 ms of nothing, 100 ms at 0.5 Gbit/s
    HALVED = [GBIT_10MS] * 20 + [0] * 5 + [GBIT_10MS // 2] * 10

    def test_timeline_goodput__before_and_after(self):
        self.assertEqual(timeline_goodput(ticks_of(self.HALVED), 10, 0.2, 0.21),
                         {"before_gbps": 1.0, "after_gbps": 0.5, "after_ratio": 0.5})

    def test_timeline_goodput__until_the_path_came_back(self):
        got = timeline_goodput(ticks_of(self.HALVED), 10, 0.2, 0.21, 0.31)
        self.assertEqual(got["after_gbps"], 0.5)
        # 4 whole ticks after the stall before the path came back: too few for an after
        self.assertEqual(timeline_goodput(ticks_of(self.HALVED), 10, 0.2, 0.21, 0.29),
                         {"before_gbps": 1.0})

    def test_timeline_goodput__too_few_ticks_before(self):
        self.assertEqual(timeline_goodput(ticks_of([GBIT_10MS] * 5 + [0] * 2 + [GBIT_10MS] * 10),
                                          10, 0.06, 0.07), {"after_gbps": 1.0})

    def test_timeline_goodput__nothing_to_measure(self):
        self.assertEqual(timeline_goodput(ticks_of([0] * 10), 10, 0.05, 0.06), {})
        self.assertEqual(timeline_goodput(ticks_of([1, 2]), 10, 0.0, 0.0), {})

    def test_fill_pathdown__on_the_receivers_timeline(self):
        row = {}
        # the receiver began 0.5 s after the client; down from 0.75 to 0.875 s
        fill_pathdown(row, ticks_of(RECOVERS), 10, 0.5, 0.75, 0.875, None)
        self.assertEqual(row, {"fail_tick_ms": 250, "down_tick_ms": 375, "stall_ms": 50,
                               "recovered": 1, "pre_gbps": 1.0, "post_gbps": 1.0,
                               "before_gbps": 1.0, "after_gbps": 1.0, "after_ratio": 1.0})

    def test_fill_pathdown__path_back_early(self):
        row = {}
        fill_pathdown(row, ticks_of(RECOVERS), 10, 0.5, 0.75, 0.875, 0.875)
        self.assertEqual(row["up_tick_ms"], 375)
        self.assertNotIn("after_gbps", row)

    def test_fill_pathdown__receiver_start_unknown_or_early(self):
        for t0c in (None, -0.25):
            row = {}
            fill_pathdown(row, ticks_of(RECOVERS), 10, t0c, 0.25, 0.375, None)
            self.assertEqual((row["fail_tick_ms"], row["down_tick_ms"]), (250, 375))


class FromFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.runs = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def write_ticks(self, name, ticks):
        with open(os.path.join(self.runs, name), "w") as f:
            f.write("# t_ms bytes gbps\n")
            for t, b in ticks:
                f.write("%d %d %.4f\n" % (t, b, b * 8 / 10e6))

    def test_read_ticks(self):
        self.write_ticks("a.ticks", [(0, 100), (50, 200), (100, 300)])
        self.assertEqual(read_ticks(os.path.join(self.runs, "a.ticks")),
                         ([(0, 100), (50, 200), (100, 300)], 50))
        self.write_ticks("one.ticks", [(0, 100)])
        self.assertEqual(read_ticks(os.path.join(self.runs, "one.ticks")), ([(0, 100)], None))
        self.write_ticks("empty.ticks", [])
        self.assertEqual(read_ticks(os.path.join(self.runs, "empty.ticks")), ([], None))

    def test_fill_timelines__older_rows_from_their_tick_files(self):
        self.write_ticks("pathdown_timeline_braid_r1.ticks", ticks_of(RECOVERS))
        self.write_ticks("pathdown_timeline_tcp_ofi_rxm_r1.ticks", ticks_of(RECOVERS))
        base = {"scenario": "pathdown", "measure": "timeline", "status": "ok",
                "fail_tick_ms": "250", "note": "down path 1 at 0.75-0.875 s; "}
        rows = [dict(base, contender="braid", rep="1"),
                dict(base, contender="braid", rep="2"),                      # no tick file
                dict(base, contender="tcp;ofi_rxm", rep="1", before_gbps="2"),  # has them
                dict(base, contender="braid;ofi_rxm", rep="1", status="fail"),
                {"scenario": "clean", "measure": "bw1m", "contender": "braid", "rep": "1",
                 "status": "ok", "fail_tick_ms": ""}]
        self.assertEqual(fill_timelines(rows, self.runs), 1)
        self.assertEqual((rows[0]["before_gbps"], rows[0]["after_gbps"],
                          rows[0]["after_ratio"]), (1.0, 1.0, 1.0))
        self.assertNotIn("after_gbps", rows[1])
        self.assertEqual(rows[2]["before_gbps"], "2")

    def test_fill_timelines__up_after_ms_ends_the_after(self):
        self.write_ticks("pathdown_timeline_braid_r1.ticks", ticks_of(RECOVERS))
        # up_after_ms: from the down command's start to the up command's end; the up command
        # taken as long as the down one (125 ms), the path was back at 250 + 125 - 125 ms,
        # before the down command had returned: no ticks after the failure
        rows = [{"scenario": "pathdown", "measure": "timeline", "contender": "braid",
                 "rep": "1", "status": "ok", "fail_tick_ms": "250", "up_after_ms": "125",
                 "note": "down path 1 at 0.75-0.875 s; "}]
        self.assertEqual(fill_timelines(rows, self.runs), 1)
        self.assertNotIn("after_gbps", rows[0])
        self.assertEqual(rows[0]["before_gbps"], 1.0)


if __name__ == "__main__":
    unittest.main()
