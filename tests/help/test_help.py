#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every program and script braid ships in bench/, tools/ and examples/ behaves as a
command-line tool: --help and -h print its usage on stdout and exit 0; an unknown option
prints the usage on stderr and exits 2; neither starts any work (each returns within a few
seconds, writes nothing else on stdout and leaves the directory it ran in empty).

    test_help.py SOURCE_ROOT NAME=PATH...

NAME=PATH: each built program (an executable() of bench/, tools/ or examples/) and where
meson built it; an empty PATH: not built in this configuration (its check is skipped,
saying so). The list below must match the tree: an executable file in bench/, tools/ or
examples/, or an executable() there, that is not in it fails the test, so a new program
cannot be left out silently. TAP on stdout."""

import os
import re
import subprocess
import sys
import tempfile

# the built programs (meson executable() names)
PROGRAMS = [
    "braid_rd_bench", "braid_loopback_bench", "braid_av_bench", "braid_ep_mem",
    "braid_dead_peers", "braid_idle_mem", "braid_ab", "braid_fabsim", "braid_mpi_bench",
    "braid-stat", "braid_fabric_delay", "hello_dgram", "hello_rdm", "rma_write", "counters",
]
# the scripts (executable files of the source tree, relative to its root)
SCRIPTS = [
    "bench/auth_cost.sh", "bench/braid_ep_strict.sh", "bench/braid_mpi_local.sh",
    "bench/braid_peers.sh",
    "bench/equal_mtu.sh", "bench/fabsim.sh", "bench/wires_fabric.sh",
    "tools/ab", "tools/demo.sh", "tools/fabric", "tools/fabtests.sh", "tools/fuzz.sh",
    "tools/gpu-check",
    "tools/leafspine", "tools/soak",
    "tools/man.sh", "tools/setup.sh", "tools/test.sh",
]
DIRS = ["bench", "tools", "examples"]
TIMEOUT_S = 15

tap = []


def check(ok, what, why=""):
    tap.append(("ok" if ok else "not ok", what, why))


def executable_files(root):
    """The executable files under DIRS, relative to root."""
    found = []
    for d in DIRS:
        for top, dirs, files in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for f in files:
                p = os.path.join(top, f)
                if os.access(p, os.X_OK):
                    found.append(os.path.relpath(p, root))
    return sorted(found)


def meson_executables(root):
    """The names of the executable() targets in the meson.build files under DIRS; a name
    that is not a literal string is returned as it is written (and matches nothing)."""
    names = []
    for d in DIRS:
        for top, dirs, files in os.walk(os.path.join(root, d)):
            if "meson.build" in files:
                text = open(os.path.join(top, "meson.build")).read()
                for m in re.finditer(r"\bexecutable\(\s*('([^']*)'|[^,)]*)", text):
                    names.append(m.group(2) if m.group(2) is not None else m.group(1))
    return sorted(names)


def run(argv):
    """argv run in an empty directory of its own: (exit status or 'timeout', stdout, stderr,
    what it left in the directory)."""
    with tempfile.TemporaryDirectory(prefix="braid-help-") as cwd:
        try:
            p = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT_S)
            rc = p.returncode
            out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc = "timeout"
            out = (e.stdout or b"").decode(errors="replace")
            err = (e.stderr or b"").decode(errors="replace")
        return rc, out, err, sorted(os.listdir(cwd))


def check_program(name, path):
    """--help and -h: usage on stdout, nothing on stderr, exit 0; --no-such-option: usage on
    stderr, nothing on stdout, exit 2; nothing left behind."""
    for opt in ("--help", "-h"):
        rc, out, err, left = run([path, opt])
        problems = []
        if rc != 0:
            problems.append("exit %s, want 0" % rc)
        if "usage" not in out.lower():
            problems.append("no usage on stdout")
        if err:
            problems.append("stderr: %r" % err[:200])
        if left:
            problems.append("left %s behind" % left)
        check(not problems, "%s %s" % (name, opt), "; ".join(problems))
    rc, out, err, left = run([path, "--no-such-option"])
    problems = []
    if rc != 2:
        problems.append("exit %s, want 2" % rc)
    if "usage" not in err.lower():
        problems.append("no usage on stderr: %r" % err[:200])
    if out:
        problems.append("stdout: %r" % out[:200])
    if left:
        problems.append("left %s behind" % left)
    check(not problems, "%s --no-such-option" % name, "; ".join(problems))


def main(argv):
    if len(argv) < 2:
        print("usage: test_help.py SOURCE_ROOT NAME=PATH...", file=sys.stderr)
        return 2
    root = argv[1]
    built = dict(a.split("=", 1) for a in argv[2:])

    # the lists match the tree and what meson passed
    files = executable_files(root)
    for f in files:
        check(f in SCRIPTS, "executable %s is in the list" % f,
              "add it to SCRIPTS in tests/help/test_help.py (and give it --help)")
    for s in SCRIPTS:
        check(s in files, "script %s exists and is executable" % s)
    targets = meson_executables(root)
    for t in targets:
        check(t in PROGRAMS, "executable('%s') is in the list" % t,
              "add it to PROGRAMS in tests/help/test_help.py and tests/help/meson.build")
    for p in PROGRAMS:
        check(p in targets, "program %s is an executable() of %s" % (p, ", ".join(DIRS)))
        check(p in built, "meson passes program %s" % p, "add it to tests/help/meson.build")

    for p in PROGRAMS:
        if built.get(p):
            check_program(p, built[p])
        elif p in built:
            tap.append(("ok", "%s # SKIP not built in this configuration" % p, ""))
    for s in SCRIPTS:
        if s in files:
            check_program(s, os.path.join(root, s))

    print("1..%d" % len(tap))
    for i, (status, what, why) in enumerate(tap, 1):
        print("%s %d - %s" % (status, i, what))
        if status != "ok" and why:
            print("# " + why.replace("\n", "\n# "))
    return 1 if any(t[0] != "ok" for t in tap) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
