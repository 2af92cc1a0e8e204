#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's report: results.csv written and read back, a run's progress line,
summary.md's tables (medians, ranges, failed runs, braid's ratios) and targets, and what
--summarize keeps from an earlier summary.md."""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.report import (COLUMNS, describe, load_rows, previous_meta, summary,  # noqa: E402
                          targets_section, write_rows)

RC = "braid;ofi_rxm"


def row(sc, key, cont, rep, status="ok", **cols):
    r = {"scenario": sc, "measure": key, "mode": "bw", "contender": cont, "rep": str(rep),
         "status": status, "rc": "0" if status == "ok" else "1", "note": ""}
    r.update({k: str(v) for k, v in cols.items()})
    return r


class Csv(unittest.TestCase):
    def test_write_rows__round_trip_in_column_order(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.csv")
            write_rows(path, [{"scenario": "clean", "contender": "braid;ofi_rxm", "rep": 1,
                               "goodput_gbps": 1.5, "note": "a, b; c", "ticks": [1, 2]}])
            with open(path) as f:
                self.assertEqual(f.readline().strip(), ",".join(COLUMNS))
            rows = load_rows(path)
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["contender"], rows[0]["rep"], rows[0]["goodput_gbps"],
                          rows[0]["note"], rows[0]["stall_ms"]),
                         ("braid;ofi_rxm", "1", "1.5", "a, b; c", ""))
        self.assertNotIn("ticks", rows[0])

    def test_write_rows__empty_run(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.csv")
            write_rows(path, [])
            self.assertEqual(load_rows(path), [])


class Describe(unittest.TestCase):
    def test_describe__failed(self):
        self.assertEqual(describe({"status": "fail", "rc": "1", "note": "x" * 200}),
                         "FAIL (exit 1) " + "x" * 120)

    def test_describe__latency(self):
        self.assertEqual(describe({"status": "ok", "mode": "lat", "p50_us": 12.34,
                                   "p99_us": 20.0, "p999_us": None, "victim_share": 0.25,
                                   "victim_path": 2}),
                         "p50 12.3 p99 20.0 p99.9 - us, 25% on path 2")

    def test_describe__rate(self):
        self.assertEqual(describe({"status": "ok", "mode": "rate", "msgs_per_s": 2500000}),
                         "2.50 M msg/s")

    def test_describe__path_failure(self):
        self.assertEqual(describe({"status": "ok", "mode": "bw", "goodput_gbps": 1.5,
                                   "stall_ms": 40, "recovered": 0, "after_ratio": 0.75,
                                   "overhead_ratio": 0.1}),
                         "1.50 Gbit/s, stall 40 ms (no recovery), after/before 0.75x, "
                         "overhead 0.10")

    def test_describe__switchback(self):
        self.assertEqual(describe({"status": "ok", "mode": "bw", "goodput_gbps": 1.0,
                                   "sw_ratio": 0.98}),
                         "1.00 Gbit/s impaired, 0.98x its clean periods'")
        self.assertEqual(describe({"status": "ok", "mode": "bw", "goodput_gbps": None,
                                   "sw_periods": "1 on 0.20 s, 1 off 1.00 s"}),
                         "- Gbit/s (switchback without enough of both kinds: 1 on 0.20 s, "
                         "1 off 1.00 s)")


class Summary(unittest.TestCase):
    def test_summary__medians_ranges_failures_and_ratios(self):
        rows = [row("clean", "bw1m", "braid", 1, goodput_gbps=2.0),
                row("clean", "bw1m", "braid", 2, goodput_gbps=3.0),
                row("clean", "bw1m", RC, 1, goodput_gbps=1.0),
                row("clean", "bw1m", RC, 2, "fail", note="boom "),
                row("clean", "lat", "braid", 1, p50_us=10, p99_us=30),
                row("clean", "lat", RC, 1, p50_us=20)]
        md = summary(rows, ["braid", RC], [], "META", {"clean": "4 paths"}).split("\n")
        self.assertEqual(md[:3], ["# braid A/B", "", "META"])
        at = md.index("## clean")
        self.assertEqual(md[at:at + 5], [
            "## clean", "", "4 paths", "",
            "| measure | braid | RoCE RC (braid;ofi_rxm) | braid / braid;ofi_rxm |"])
        self.assertIn("| goodput 1 MiB, Gbit/s | 2.50 (2.00-3.00) | 1.00 [1 failed] | 2.50x |",
                      md)
        self.assertIn("| latency p50, us | 10.0 | 20.0 | 0.50x |", md)
        # braid's alone: no ratio
        self.assertIn("| latency p99, us | 30.0 | - |  |", md)
        self.assertIn("- braid;ofi_rxm bw1m rep 2: fail (exit 1) boom", md)
        self.assertNotIn("## Targets", md)

    def test_summary__without_braid_no_ratios(self):
        rows = [row("clean", "bw1m", RC, 1, goodput_gbps=1.0)]
        md = summary(rows, [RC], [], "M", {}).split("\n")
        self.assertIn("| measure | RoCE RC (braid;ofi_rxm) |", md)
        self.assertIn("| goodput 1 MiB, Gbit/s | 1.00 |", md)

    def test_summary__pairs_and_shares(self):
        rows = [row("pathdown", "timeline", "braid", 1, pre_gbps=2.0, post_gbps=1.5,
                    victim_share=0.3),
                row("pathdown", "timeline", RC, 1, pre_gbps=1.0)]
        md = summary(rows, ["braid", RC], [], "M", {}).split("\n")
        self.assertIn("| median tick before / after the failure, Gbit/s | 2.00 / 1.50 | "
                      "1.00 / - |  |", md)
        self.assertFalse(any(line.startswith("| goodput before / after") for line in md))

    def test_summary__empty_run(self):
        self.assertEqual(summary([], ["braid"], [], "M", {}).split("\n")[:3],
                         ["# braid A/B", "", "M"])

    def test_targets_section__scenarios_that_did_not_run(self):
        targets = [{"target": "loss1: a", "verdict": "met", "worst": "1x in r1",
                    "median": "1x over 1", "missed": "none", "scenario": "loss1", "ran": True},
                   {"target": "pathdown: b", "verdict": "not evaluated: x", "worst": "-",
                    "median": "-", "missed": "-", "scenario": "pathdown", "ran": False},
                   {"target": "pathdown: c", "verdict": "not evaluated: x", "worst": "-",
                    "median": "-", "missed": "-", "scenario": "pathdown", "ran": False}]
        out = targets_section(targets)
        self.assertIn("| loss1: a | met | 1x in r1 | 1x over 1 | none |", out)
        self.assertFalse(any("pathdown: b" in line for line in out))
        self.assertEqual(out[-2], "Not evaluated, their scenario did not run: pathdown.")


class PreviousMeta(unittest.TestCase):
    def test_previous_meta(self):
        lines = ["# braid A/B", "", "2026-11-28; 2 cores [re-summarized from x by tools/ab]", "",
                 "intro", "", "## clean", "", "4 paths, no impairment", "", "| measure |",
                 "## loss1", "", "| measure |", "## Targets", "", "Judged per repetition"]
        self.assertEqual(previous_meta(lines),
                         ("2026-11-28; 2 cores", {"clean": "4 paths, no impairment"}))

    def test_previous_meta__not_a_summary(self):
        self.assertEqual(previous_meta(["# something else", "", "x"]), (None, {}))
        self.assertEqual(previous_meta(["# braid A/B", "", ""]), (None, {}))
        self.assertEqual(previous_meta([]), (None, {}))


if __name__ == "__main__":
    unittest.main()
