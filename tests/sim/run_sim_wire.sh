#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# run_sim_wire.sh SIM_WIRE: run the sim-wire test with braid's INFO log, then check from
# the endpoints' close lines that the sim really lost and duplicated packets and that
# braid retransmitted (a perfect network would make the test prove nothing). With
# BENCH_AUTH_KEY set every endpoint is keyed: their close lines must say so, with no
# bad_auth drop.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
FI_LOG_LEVEL=info "$1" >"$log" 2>&1
rc=$?
grep -v '^libfabric' "$log"
[ $rc -eq 0 ] || exit 1
grep -q 'sim wire: 4 paths, seed 7, loss 0.030, dup 0.020, reorder 0.100' "$log" ||
	{ echo "FAIL: the sim wire did not start with the test's fabric"; exit 1; }
awk '/RDM endpoint on port .* closed:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "retransmitted,") r += $i }
     /loss recovery:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "duplicate,") d += $i }
     END { printf "braid retransmitted %d packets and dropped %d duplicates\n", r, d;
           exit !(r > 0 && d > 0) }' "$log" ||
	{ echo "FAIL: no retransmission or no duplicate: the sim did not misbehave"; exit 1; }
# keyed (BENCH_AUTH_KEY, protocol.md §2.4): every endpoint keyed, no datagram of its own job refused
if [ -n "${BENCH_AUTH_KEY:-}" ]; then
	keyed=$(grep -c 'closed (keyed)' "$log")
	grep 'closed (keyless)' "$log" && { echo "FAIL: a keyless endpoint in the keyed run"; exit 1; }
	grep 'closed (keyed).*bad_auth=' "$log" && { echo "FAIL: a keyed endpoint refused its own job's datagrams"; exit 1; }
	[ "$keyed" -ge 6 ] || { echo "FAIL: $keyed keyed endpoints closed, want RDM, MSG and DGRAM's 6"; exit 1; }
	echo "$keyed keyed endpoints, none refused a datagram of its own job"
fi
