#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of tools/abkit's parsing and pure helpers: braid_ab's command lines and output,
tools/fabric's counters (status --csv, nft) and a run's share of them, braid-stat's per-path
view, a run's status and time limit, and the shared number formats."""

import argparse
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from abkit.braid_ab import (client_argv, cmd_line, parse_kv, parse_output, run_hosts,  # noqa: E402
                            server_argv)
from abkit.common import fmt, human_size, human_time, num  # noqa: E402
from abkit.fabric import (fabric_table, parse_nft_counters, parse_status_csv,  # noqa: E402
                          path_figures, spread)
from abkit.pathview import paths_view, sender  # noqa: E402
from abkit.plan import Measure  # noqa: E402
from abkit.runner import run_limit, run_status  # noqa: E402


class BraidAb(unittest.TestCase):
    def test_parse_kv(self):
        self.assertEqual(parse_kv("a=1 b=x=y word  c="), {"a": "1", "b": "x=y", "c": ""})
        self.assertEqual(parse_kv(""), {})

    def test_parse_output(self):
        text = ("connected\ntick t_ms=0 bytes=100\ntick t_ms=50 bytes=x\ntick bytes=5\n"
                "tick t_ms=100 bytes=300 gbps=1\nresult seconds=1.5 bytes=400\n")
        self.assertEqual(parse_output(text), ({"seconds": "1.5", "bytes": "400"},
                                              [(0, 100), (100, 300)]))

    def test_parse_output__no_result(self):
        self.assertEqual(parse_output("tick t_ms=0 bytes=1\nfi_getinfo: -61\n"),
                         (None, [(0, 1)]))
        self.assertEqual(parse_output(""), (None, []))

    def test_run_hosts(self):
        self.assertEqual(run_hosts(Measure("bw", "bw", 8, 1), 2), ("h2", ["h1"]))
        self.assertEqual(run_hosts(Measure("i", "bw", 8, 1, clients=2), 3), ("h2", ["h1", "h3"]))
        # more clients than hosts: in turn
        self.assertEqual(run_hosts(Measure("i", "bw", 8, 1, clients=4), 3),
                         ("h2", ["h1", "h3", "h1", "h3"]))

    def test_command_lines(self):
        a = argparse.Namespace(stuck_timeout=6.0, verify=False)
        pre = ["env", "X=1", "braid_ab"]
        self.assertEqual(server_argv(pre, "braid", "10.77.2.2", 20001, 1),
                         pre + ["-p", "braid", "-a", "10.77.2.2", "-C", "20001", "-k", "1"])
        bw = Measure("bw1m", "bw", 1 << 20, 2.0, 16, interval_ms=50)
        self.assertEqual(client_argv(pre, "braid;ofi_rxm", "10.77.1.2", "10.77.2.2", 20001, bw,
                                     1, a, 10.3, None)[3:],
                         ["-p", "braid;ofi_rxm", "-a", "10.77.1.2", "-c", "10.77.2.2", "-C",
                          "20001", "-m", "bw", "-I", "1", "-T", "6.0", "-s", "1048576", "-t",
                          "10.3", "-w", "16", "-i", "50"])
        a.verify = True
        lat = Measure("lat", "lat", 64, iters=1000)
        self.assertEqual(client_argv(pre, "braid", "ip", "srv", 1, lat, 2, a, 0, "x.lat")[-7:],
                         ["-s", "64", "-n", "1000", "-o", "x.lat", "-v"])

    def test_cmd_line__quotes_contender_names(self):
        self.assertEqual(cmd_line(["braid_ab", "-p", "braid;ofi_rxm", "-t", "2"]),
                         "braid_ab -p 'braid;ofi_rxm' -t 2")


class FabricCounters(unittest.TestCase):
    def test_parse_status_csv__directions_summed(self):
        text = ("# tools/fabric status\npath,dir,bytes,packets,drops,drop_bytes\n"
                "0,fwd,100,2,1,64\n0,rev,50,1,0,0\n1,fwd,10,1,0,0\nx,fwd,1,1,1,1\n\n")
        self.assertEqual(parse_status_csv(text), {
            0: {"bytes": 150, "packets": 3, "drops": 65},
            1: {"bytes": 10, "packets": 1, "drops": 0}})

    def test_parse_status_csv__errors(self):
        with self.assertRaises(RuntimeError):
            parse_status_csv("# nothing\n")
        with self.assertRaises(RuntimeError):
            parse_status_csv("link,bytes\n0,1\n")

    def test_parse_nft_counters(self):
        text = ("table inet braid_fabric {\n\tcounter p0_fwd {\n\t\tpackets 3 bytes 300\n\t}\n"
                "\tcounter p0_drop {\n\t\tpackets 1 bytes 100\n\t}\n"
                "\tcounter p1_rev { packets 2 bytes 200 }\n"
                "\tcounter p0_rev { packets 1 bytes 30 }\n"
                "\tcounter ce_p1 { packets 9 bytes 900 }\n}\n")
        self.assertEqual(parse_nft_counters(text), {0: 330, 1: 200})
        self.assertEqual(parse_nft_counters(""), {})

    def test_fabric_table(self):
        self.assertEqual(fabric_table("X=1\nTABLE=braid_fab2\n"), "braid_fab2")
        self.assertEqual(fabric_table("  TABLE=indented\n"), "braid_fabric")
        self.assertEqual(fabric_table(""), "braid_fabric")

    def test_path_figures(self):
        before = {0: {"bytes": 100, "drops": 0}, 1: {"bytes": 100, "drops": 1}}
        after = {0: {"bytes": 1100, "drops": 2}, 1: {"bytes": 3100, "drops": 1},
                 2: {"bytes": 0, "drops": 0}}
        row = {"payload_bytes": 3200}
        self.assertEqual(path_figures(row, before, after, 1), {0: 1000, 1: 3000, 2: 0})
        self.assertEqual(row, {"payload_bytes": 3200, "fabric_bytes": 4000, "fabric_drops": 2,
                               "path_bytes": "1000/3000/0", "overhead_ratio": 0.25,
                               "victim_path": 1, "victim_share": 0.75})

    def test_path_figures__no_victim_no_payload_no_traffic(self):
        row = {}
        path_figures(row, {}, {0: {"bytes": 0, "drops": 0}}, 0)
        self.assertEqual(row, {"fabric_bytes": 0, "fabric_drops": 0, "path_bytes": "0"})
        row = {}
        path_figures(row, {}, {0: {"bytes": 10, "drops": 0}}, None)
        self.assertNotIn("victim_share", row)

    def test_spread(self):
        self.assertEqual(spread({0: 1000, 1: 3000, 2: 100, 3: 0}), 2)
        self.assertEqual(spread({0: 25, 1: 25, 2: 25, 3: 25}), 4)
        self.assertEqual(spread({0: 0, 1: 0}), 0)
        self.assertEqual(spread({}), 0)


def endpoint(k, addr="10.77.1.2:1", peer="10.77.2.2:1"):
    """A braid-stat endpoint k samples on: path 0 dies and is re-drawn."""
    paths = [{"rd.path.entropy": 100 + i + (k if i == 0 else 0), "rd.tx_data": 1000 * k,
              "rd.retx_pkts": k * i, "rd.lost_pkts": k, "rd.path_deaths": k if i == 0 else 0,
              "rd.path_redraws": k if i == 0 else 0, "rd.path.srtt_ns": 25000 * (i + 1),
              "rd.path.state": 1 if i == 0 else 0} for i in range(2)]
    counters = {"rd.tx_data": 10000 * k, "rd.path_deaths": k, "rd.retx_dead": 3 * k,
                "rd.path_redraws": 2 * k, "rd.retx_rack": k, "rd.retx_tlp": 2 * k,
                "rd.retx_rto": 0}
    return {"addr": addr, "counters": counters, "peers": [{"addr": peer, "paths": paths}]}


class PathView(unittest.TestCase):
    def test_sender__the_endpoint_that_sent_most(self):
        idle = {"addr": "x", "counters": {"rd.tx_data": 99999}, "peers": []}
        self.assertIs(sender([endpoint(1), idle, endpoint(2, addr="b")])["addr"], "b")
        self.assertIsNone(sender([idle]))
        self.assertIsNone(sender([]))

    def test_paths_view(self):
        totals, text = paths_view(endpoint(1), endpoint(3))
        self.assertEqual(totals, {"path_deaths": 2, "retx_dead": 6, "redraws": 4})
        lines = text.split("\n")
        self.assertEqual(lines[4], "| 0 | 101 -> 103 | 2000 | 0 | 2 | 2 | 2 | 25 us | sick |")
        self.assertEqual(lines[5], "| 1 | 101 | 2000 | 2 | 2 | 0 | 0 | 50 us | ok |")
        self.assertEqual(lines[7], "Resends by cause meanwhile: 2 time-based, 4 tail probe, "
                         "0 RTO, 6 of a dead path's packets.")

    def test_paths_view__another_endpoint_or_peer(self):
        self.assertIsNone(paths_view(endpoint(1), endpoint(2, addr="other")))
        self.assertIsNone(paths_view(endpoint(1), endpoint(2, peer="other")))


class RunHelpers(unittest.TestCase):
    def test_run_limit(self):
        a = argparse.Namespace(lat_budget_us=10000, stuck_timeout=6)
        self.assertAlmostEqual(run_limit(Measure("lat", "lat", 64, iters=4000), a, 0), 55)
        self.assertEqual(run_limit(Measure("bw", "bw", 8, 2.0), a, 10.3), 31.3)

    def test_run_status(self):
        row = {"note": ""}
        self.assertTrue(run_status(row, [0], {"seconds": "1"}, False, False, "tick x\n"))
        self.assertEqual((row["status"], row["rc"], row["note"]), ("ok", "0", ""))
        row = {"note": ""}
        run_status(row, [0], {"seconds": "1"}, False, True, "")
        self.assertEqual(row["note"], "server hung at exit, killed; ")

    def test_run_status__failed_and_timed_out(self):
        out = "a\ntick t_ms=0 bytes=1\nb\n\nc\nd\n"
        row = {"note": ""}
        self.assertFalse(run_status(row, [0, 1], {"x": "1"}, False, True, out))
        self.assertEqual((row["status"], row["rc"], row["note"]), ("fail", "0/1", "b; c; d"))
        row = {"note": ""}
        run_status(row, [-15], None, True, True, "")
        self.assertEqual((row["status"], row["rc"]), ("timeout", "-15"))
        row = {"note": ""}
        run_status(row, [0], None, False, False, "no result")
        self.assertEqual(row["status"], "fail")


class Formats(unittest.TestCase):
    def test_num(self):
        self.assertEqual([num({"k": v}, "k") for v in ("1.5", "", "x", None, 2)],
                         [1.5, None, None, None, 2.0])
        self.assertIsNone(num({}, "k"))

    def test_fmt(self):
        self.assertEqual([fmt(v) for v in (None, 1234.6, -2500, 123.4, 12.34, 1.234, 0.1234,
                                           0)],
                         ["-", "1,235", "-2,500", "123", "12.3", "1.23", "0.123", "0.000"])
        self.assertEqual(fmt(2.5, " us"), "2.50 us")

    def test_human(self):
        self.assertEqual([human_size(n) for n in (64, 1024, 65536, 1 << 20, 1536, 3 << 20)],
                         ["64 B", "1 KiB", "64 KiB", "1 MiB", "1536 B", "3 MiB"])
        self.assertEqual([human_time(s) for s in (0, 5, 59.6, 125, 3600)],
                         ["0s", "5s", "1m00s", "2m05s", "60m00s"])


if __name__ == "__main__":
    unittest.main()
