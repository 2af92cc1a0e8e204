#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_ab.sh: tools/ab end to end, its smallest scenarios: the namespace fabric (2 hosts,
# 4 paths) with, in turn, 1% loss on one path (the one carrying most of the run's data,
# from about 0.5 s on, lifted and put back in 0.75 s periods: tools/ab's switchback), one
# path black-holed half way through a stream, and 0.2 ms of
# delay on every path; one short streaming run per contender (braid, braid;ofi_rxm,
# braid;ofi_rxd, tcp;ofi_rxm) with every payload byte checked exactly once at the
# receiver (braid_ab -v), the fabric down again. Fails if braid fails anywhere, or another
# contender on the lossy or delayed fabric (a single-path contender may fail when its one
# path is black-holed, and braid;ofi_rxd, which drops reordered datagrams, on the delayed
# one: their real weaknesses, reported, not failures of this test);
# skips (77) where the fabric cannot run (not root, no namespaces) or braid_ab is not built.
# Speed is not checked.
#   usage: tests/ab/test_ab.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${MESON_BUILD_ROOT:-build}}
case $build in /*) ;; *) build=$PWD/$build ;; esac

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
[ -x tools/fabric ] || skip "tools/fabric not found"
[ -x "$build/bench/braid_ab" ] || skip "$build/bench/braid_ab not built"
command -v python3 >/dev/null || skip "python3 not found"
[ -x "$build/tools/braid_fabric_delay" ] || skip "$build/tools/braid_fabric_delay not built (libnetfilter-queue-dev)"
export BRAID_FABRIC_DELAY=$build/tools/braid_fabric_delay
export BRAID_FABRIC_PREFIX=abt$$	# our own namespaces, apart from any other fabric
[ ${#BRAID_FABRIC_PREFIX} -le 12 ] || export BRAID_FABRIC_PREFIX=abt$((RANDOM))

out=$(mktemp -d /tmp/test_ab.XXXXXX)
trap 'rm -rf "$out"' EXIT
# tools/ab brings the fabric up and down itself (down also when it fails or is killed)
timeout -k 10 270 tools/ab --scenarios loss1,pathdown,delay0.2 --measures bw64k,bw1m,timeline \
	-r 1 --seconds 1.5 --switch-s 0.75 --switches 2 \
	--verify --stuck-timeout 15 --braid-ab "$build/bench/braid_ab" \
	--provider-path "$build/providers" -o "$out" >"$out/log" 2>&1
rc=$?
grep -E '^(ab:|\[|--)' "$out/log"
if [ $rc -eq 77 ]; then
	skip "$(grep -m1 SKIP "$out/log" || echo 'tools/ab: nothing could run')"
fi
# every contender's rows: status ok, the runs on the impaired fabric with data checked
fails=0
for c in braid 'braid;ofi_rxm' 'braid;ofi_rxd' 'tcp;ofi_rxm'; do
	while read -r verdict line; do
		echo "$c: $line"
		[ "$verdict" = bad ] && fails=$((fails + 1))
	done < <(python3 - "$out/results.csv" "$c" <<'PY'
import csv, sys
want = {"loss1", "pathdown", "delay0.2"}
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["contender"] == sys.argv[2]]
for sc in sorted(want - {r["scenario"] for r in rows}):
    print("bad %s: missing" % sc)
for r in rows:
    ok = r["status"] == "ok"
    # a single path black-holed kills a single-path transport's connection: its real
    # weakness, shown in the A/B; braid, which sprays, must ride through it
    excused = not ok and r["scenario"] == "pathdown" and sys.argv[2] != "braid"
    # libfabric's rxd drops every datagram that arrives out of order and waits for its
    # retransmission; braid's DGRAM sprays (unordered, fi_braid(7)), and on a delayed
    # fabric the paths reorder: rxd crawls (0.01 Gbit/s, 30-45x retransmitted bytes)
    # and in about 1 run of 8 leaves a send stuck. Its weakness, in benchmarks.md;
    # on the lossy fabric it must still deliver
    excused = excused or (not ok and r["scenario"].startswith("delay")
                          and sys.argv[2] == "braid;ofi_rxd")
    # the lossy runs are switchbacks (tools/ab: the loss lifted and put back in turns):
    # each must have counted at least 0.5 s of both kinds of period, and have a ratio
    import re
    m = re.match(r"\d+ on ([\d.]+) s, \d+ off ([\d.]+) s$", r["sw_periods"] or "")
    if r["scenario"] == "loss1" and ok and not (
            m and float(m.group(1)) >= 0.5 and float(m.group(2)) >= 0.5 and r["sw_ratio"]):
        ok = False
        r["note"] += " (not a switchback with both kinds of period counted: %s)" % (
            r["sw_periods"] or "none")
    print("%s %s %s %s: %s %s Gbit/s, %s packets dropped by the fabric; %s" % (
        "ok" if ok or excused else "bad", r["scenario"], r["measure"], r["size"], r["status"],
        r["goodput_gbps"] or "-", r["fabric_drops"] or "-", r["note"].strip()))
PY
	)
done
if ip netns list 2>/dev/null | grep -q "^$BRAID_FABRIC_PREFIX-"; then
	echo "FAIL: the fabric's namespaces are still there"
	BRAID_FABRIC_PREFIX=$BRAID_FABRIC_PREFIX tools/fabric down >/dev/null 2>&1
	fails=$((fails + 1))
fi
# a reader that goes away early (`tools/ab ... | head -1`) must not leave the fabric behind
pipe_prefix=${BRAID_FABRIC_PREFIX}p
BRAID_FABRIC_PREFIX=$pipe_prefix timeout -k 10 120 tools/ab --scenarios clean --measures bw64k \
	--contenders braid -r 1 --seconds 0.5 --braid-ab "$build/bench/braid_ab" \
	--provider-path "$build/providers" -o "$out/pipe" 2>&1 | head -1 >/dev/null
if ip netns list 2>/dev/null | grep -q "^$pipe_prefix-"; then
	echo "FAIL: tools/ab read through a closed pipe left its namespaces"
	BRAID_FABRIC_PREFIX=$pipe_prefix tools/fabric down >/dev/null 2>&1
	fails=$((fails + 1))
else
	echo "tools/ab whose reader went away: the fabric down all the same"
fi
if [ $rc -ne 0 ] || [ $fails -ne 0 ]; then
	echo "FAIL: tools/ab exit $rc, $fails contender(s) failed"
	tail -20 "$out/log"
	exit 1
fi
echo "PASS: braid moved its data through loss, a black-holed path and delay, every byte checked; the others through loss and delay"
