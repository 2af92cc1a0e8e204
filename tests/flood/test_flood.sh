#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_flood.sh BUILD_DIR [PKTS]: a spoofing flood (protocol.md §4.9) on loopback.
#
# A braid RDM endpoint on 127.0.0.1 (FI_BRAID_MAX_PEERS=4096) receives a checked stream from a
# genuine peer while PKTS (default 1,000,000) RD_DATA packets arrive from as many forged source
# addresses (127.64.0.0/10, IP_PKTINFO: no root needed). Passes when
#   - every message of the genuine peer arrived once and intact, every send completed;
#   - the endpoint's resident memory grew by no more than its budget: the peer cap times 1 KiB
#     (braid's state is about 300 bytes a peer) plus the staging it is allowed
#     (FI_BRAID_UNEXP_BYTES, 4 MiB here) plus 8 MiB for the allocator and the CQ;
#   - braid's log says it evicted strangers and kept at most the cap.
# Then the control: the same flood (200,000 packets) with no cap (FI_BRAID_MAX_PEERS=0) must
# grow the memory past that budget, which shows the measure can see the growth the cap prevents.
set -u
BUILD=${1:?usage: test_flood.sh BUILD_DIR [PKTS]}
PKTS=${2:-1000000}
FLOOD=$BUILD/tests/flood/flood
CAP=4096
UNEXP=$((4 << 20))
BUDGET_KB=$(( (CAP * 1024 + UNEXP) / 1024 + 8 * 1024 ))
MSGS=1000
export FI_PROVIDER_PATH=$BUILD/providers
export FI_BRAID_UNEXP_BYTES=$UNEXP
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run CAP PKTS MSGS LABEL: victim, sprayer and genuine sender at once; sets rss_start rss_end
# rss_peak and the victim's log in $dir/LABEL.log
run() {
	local cap=$1 pkts=$2 msgs=$3 label=$4 vpid spid gpid i
	rm -f "$dir/name" "$dir/stop"
	FI_BRAID_MAX_PEERS=$cap FI_LOG_LEVEL=info FI_LOG_PROV=braid \
		"$FLOOD" victim "$dir/name" >"$dir/$label.out" 2>"$dir/$label.log" &
	vpid=$!
	pids+=("$vpid")
	for i in $(seq 100); do [ -s "$dir/name" ] && break; sleep 0.1; done
	[ -s "$dir/name" ] || fail "$label: the victim did not start: $(tail -3 "$dir/$label.log")"
	# the genuine stream first: the victim's memory is read once it runs, before the flood
	"$FLOOD" send "$dir/name" "$msgs" "$dir/stop" >"$dir/$label.send" 2>&1 &
	gpid=$!
	pids+=("$gpid")
	for i in $(seq 100); do grep -q rss_start "$dir/$label.out" && break; sleep 0.1; done
	grep -q rss_start "$dir/$label.out" || fail "$label: the genuine stream did not start"
	"$FLOOD" spray "$dir/name" "$pkts" >"$dir/$label.spray" 2>&1 &
	spid=$!
	pids+=("$spid")
	wait "$spid" || fail "$label: the sprayer failed: $(cat "$dir/$label.spray")"
	sleep 0.5	# what the socket holds is taken in
	touch "$dir/stop"
	wait "$gpid" || fail "$label: the genuine sender failed: $(tail -3 "$dir/$label.send")"
	wait "$vpid" || fail "$label: the victim failed: $(cat "$dir/$label.out"; grep -v "^libfabric:.*info" "$dir/$label.log" | tail -3)"
	rss_start=$(sed -n 's/^rss_start_kb=\([0-9]*\).*/\1/p' "$dir/$label.out")
	rss_end=$(sed -n 's/^rss_end_kb=\([0-9]*\).*/\1/p' "$dir/$label.out")
	rss_peak=$(sed -n 's/.*rss_peak_kb=\([0-9]*\).*/\1/p' "$dir/$label.out")
	[ -n "$rss_start" ] && [ -n "$rss_end" ] || fail "$label: no memory figures: $(cat "$dir/$label.out")"
	echo "$label: $(cat "$dir/$label.spray"); $(cat "$dir/$label.send"); victim: $(tail -1 "$dir/$label.out")"
	echo "$label: braid: $(grep -o 'peers: .*' "$dir/$label.log" | head -1)"
}

[ -x "$FLOOD" ] || fail "no $FLOOD (build first)"
run $CAP "$PKTS" $MSGS capped
line=$(grep -o 'peers: [0-9]* with state ([0-9]* proven), [0-9]* evicted' "$dir/capped.log" | head -1)
[ -n "$line" ] || fail "capped: braid logged no peer counts"
with=$(echo "$line" | sed 's/peers: \([0-9]*\) with.*/\1/')
evicted=$(echo "$line" | sed 's/.*, \([0-9]*\) evicted/\1/')
[ "$with" -le $CAP ] || fail "capped: $with peers with state, over the cap of $CAP"
[ "$evicted" -ge $((PKTS / 10)) ] || fail "capped: only $evicted strangers evicted of $PKTS forged sources"
if grep -q 'sanitized=1' "$dir/capped.out"; then
	echo "PASS (memory not judged: built with AddressSanitizer, whose allocator keeps freed memory): $PKTS forged sources, at most $CAP peers kept, the genuine stream intact"
	exit 0
fi
grew=$((rss_end - rss_start))
echo "capped: memory grew by $grew KiB during the flood (peak $rss_peak KiB, from $rss_start), budget $BUDGET_KB KiB"
[ "$grew" -le "$BUDGET_KB" ] || fail "capped: the endpoint's memory grew by $grew KiB, over its budget of $BUDGET_KB KiB"
[ $((rss_peak - rss_start)) -le "$BUDGET_KB" ] || fail "capped: peak memory $rss_peak KiB is over $rss_start + $BUDGET_KB KiB"

run 0 200000 100 uncapped
grew=$((rss_end - rss_start))
echo "uncapped (control): memory grew by $grew KiB for 200,000 forged sources"
[ "$grew" -gt "$BUDGET_KB" ] || fail "control: without the cap the memory grew by only $grew KiB, within the budget of $BUDGET_KB KiB: the check could not tell"
echo "PASS: $PKTS forged sources kept within $BUDGET_KB KiB and the genuine stream intact"
