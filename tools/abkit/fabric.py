# SPDX-License-Identifier: BSD-2-Clause
"""Where the runs take place: tools/fabric (up, down, a path impaired, its per-path counters)
and the loopback namespace."""

import csv
import os
import re
import shutil
import subprocess
import time

from .common import EXIT_SKIP, HOST_IP, log


class FabricGone(Exception):
    """The fabric failed under us (taken down by someone else, a command failing)."""


class Fabric:
    """tools/fabric: the namespace fabric (hosts, 2 routers, N ECMP paths)."""

    def __init__(self, path, verbose):
        self.path, self.verbose, self.up_ok = path, verbose, False
        self.prefix = os.environ.get("BRAID_FABRIC_PREFIX", "bf")
        self.table = None
        self.paths = 0
        self.state = {}         # path -> settings we gave it

    def run(self, *argv, check=True, timeout=60, tries=3):
        """tools/fabric ARGV; set and status are repeated on failure (they are idempotent)."""
        cmd = ["bash", self.path] + [str(a) for a in argv]
        if self.verbose:
            log("  $ " + " ".join(cmd[1:]))
        for i in range(tries):
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=timeout)
            if r.returncode == 0 or argv[0] not in ("set", "status"):
                break
            time.sleep(0.3)
        if check and r.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                                     (r.stderr.strip() or "(no stderr)") +
                                                     " / stdout: " + r.stdout.strip()[-200:]))
        return r

    def up(self, paths, hosts, gso=False, gro=False):
        """Brings the fabric up: None, or why it cannot run here (tools/fabric's exit 77).
        Raises RuntimeError when it fails otherwise."""
        r = self.run("up", "--paths", paths, "--hosts", hosts, *(["--gso"] if gso else []),
                     *(["--gro"] if gro else []), check=False, timeout=180)
        if r.returncode == EXIT_SKIP:
            return (r.stderr or r.stdout).strip() or "tools/fabric cannot run here (exit 77)"
        if r.returncode != 0:
            raise RuntimeError("tools/fabric up: exit %d: %s" %
                               (r.returncode, (r.stderr or r.stdout).strip()[-600:]))
        self.up_ok, self.paths = True, paths
        self.state = {p: {} for p in range(paths)}
        return None

    def down(self):
        if self.up_ok:
            self.up_ok = False
            try:
                self.run("down", check=False, timeout=120)
            except Exception as e:         # noqa: BLE001 - best effort at exit
                log("ab: tools/fabric down: %s" % e)

    def set(self, path, **kw):
        """set P delay=MS loss=PCT [down|up]: only what is given changes."""
        argv = ["set", path]
        for k, v in kw.items():
            if k == "state":
                argv.append(v)
            else:
                argv.append("%s=%g" % (k, v))
        self.run(*argv)
        self.state.setdefault(path, {}).update(kw)

    def reset(self, base):
        """Every path up, no loss, no rate limit, the base delay (0: none)."""
        self.run("set", "all", "delay=%g" % base.get("delay", 0), "loss=0", "rate=0", "up")
        for p in range(self.paths):
            self.state[p] = {"delay": base.get("delay", 0), "loss": 0, "state": "up"}

    def status(self):
        """Per path: {path: (bytes, packets, drops)} from tools/fabric status --csv."""
        r = self.run("status", "--csv", timeout=30)
        return parse_status_csv(r.stdout)

    def argv(self, host, argv):
        return ["bash", self.path, "exec", host, "--"] + argv

    def quick_counts(self):
        """{path: bytes} now, for picking the busiest path mid-run. `status --csv` takes
        0.4-0.6 s while a benchmark keeps both cores busy, so this reads the routers' nft
        counters straight (two commands): every counter named p<N>_<what> except drops, in
        the table tools/fabric names in its TABLE= line. Falls back to status --csv."""
        if self.table is None:
            try:
                with open(self.path) as f:
                    self.table = fabric_table(f.read())
            except OSError:
                self.table = fabric_table("")
        out = {}
        try:
            for r in ("r1", "r2"):
                t = subprocess.run(["ip", "netns", "exec", "%s-%s" % (self.prefix, r), "nft",
                                    "list", "counters", "table", "inet", self.table],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True, timeout=10).stdout
                for p, b in parse_nft_counters(t).items():
                    out[p] = out.get(p, 0) + b
        except (OSError, subprocess.TimeoutExpired):
            out = {}
        if len(out) < self.paths:
            return {p: d["bytes"] for p, d in self.status().items()}
        return out

    def ip(self, host):
        return HOST_IP[host]


def fabric_table(script):
    """The nft table tools/fabric keeps its counters in: its TABLE= line, else braid_fabric."""
    m = re.search(r"^TABLE=([A-Za-z0-9_]+)", script, re.M)
    return m.group(1) if m else "braid_fabric"


def parse_nft_counters(text):
    """`nft list counters` of one router -> {path: bytes}: every counter named p<N>_<what>
    adds to path N's bytes, except the drop counters."""
    out = {}
    for m in re.finditer(r"counter p(\d+)_(\w+)\s*\{\s*packets \d+ bytes (\d+)", text):
        if "drop" not in m.group(2):
            out[int(m.group(1))] = out.get(int(m.group(1)), 0) + int(m.group(3))
    return out


def parse_status_csv(text):
    """tools/fabric status --csv -> {path: {"bytes", "packets", "drops"}} (both directions summed).

    Column names are matched loosely: a "path" column; every column whose name
    has "byte" (and not "drop") adds to bytes, "pkt"/"packet" to packets,
    "drop" to drops. Several rows of one path (directions) are summed."""
    rows = list(csv.reader(line for line in text.splitlines() if line.strip()
                           and not line.startswith("#")))
    if not rows:
        raise RuntimeError("tools/fabric status --csv printed nothing")
    head = [h.strip().lower() for h in rows[0]]
    try:
        pcol = next(i for i, h in enumerate(head) if h in ("path", "p", "path_id", "id"))
    except StopIteration:
        raise RuntimeError("tools/fabric status --csv: no path column in %r" % rows[0])
    out = {}
    for row in rows[1:]:
        if len(row) <= pcol:
            continue
        try:
            p = int(row[pcol])
        except ValueError:
            continue
        d = out.setdefault(p, {"bytes": 0, "packets": 0, "drops": 0})
        for i, h in enumerate(head):
            if i >= len(row) or i == pcol:
                continue
            try:
                v = int(float(row[i]))
            except ValueError:
                continue
            if "drop" in h:
                d["drops"] += v
            elif "byte" in h:
                d["bytes"] += v
            elif "pkt" in h or "packet" in h:
                d["packets"] += v
    return out


def path_figures(row, before, after, victim):
    """A run's share of the fabric, from the per-path counters before and after it (status()):
    fabric_bytes, fabric_drops and path_bytes into row; overhead_ratio where row has its
    payload_bytes; victim_path and victim_share where a path was impaired. Returns the bytes
    each path carried, {path: bytes}."""
    deltas = {p: after[p]["bytes"] - before.get(p, {}).get("bytes", 0) for p in after}
    drops = sum(after[p]["drops"] - before.get(p, {}).get("drops", 0) for p in after)
    fb = sum(deltas.values())
    row["fabric_bytes"] = fb
    row["fabric_drops"] = drops
    row["path_bytes"] = "/".join(str(deltas[p]) for p in sorted(deltas))
    payload = row.get("payload_bytes")
    if payload:
        row["overhead_ratio"] = round((fb - payload) / payload, 4)
    if victim is not None and fb:
        row["victim_path"] = victim
        row["victim_share"] = round(deltas.get(victim, 0) / fb, 3)
    return deltas


def spread(deltas):
    """How many paths carried at least 5% of the bytes (a single-path flow uses one each
    way)."""
    fb = sum(deltas.values())
    return sum(1 for v in deltas.values() if fb and v >= 0.05 * fb)


class Loopback:
    """Both sides in one fresh namespace's lo (root), else plain 127.0.0.1."""

    def __init__(self, verbose):
        self.ns = None
        self.verbose = verbose

    def up(self):
        """None, or why the runs go over this namespace's 127.0.0.1 instead."""
        if os.geteuid() != 0 or not shutil.which("ip"):
            return "not root: loopback runs on this namespace's 127.0.0.1"
        name = "ab-lo-%d" % os.getpid()
        r = subprocess.run(["ip", "netns", "add", name], stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            return "ip netns add failed (%s): loopback runs on 127.0.0.1" % r.stderr.strip()
        self.ns = name
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return None

    def down(self):
        if self.ns:
            subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
            self.ns = None

    def argv(self, host, argv):
        return (["ip", "netns", "exec", self.ns] + argv) if self.ns else argv

    def ip(self, host):
        return "127.0.0.1"
