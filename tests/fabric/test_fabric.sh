#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_fabric.sh: the emulated multipath fabric (tools/fabric) does what the A/B benchmark relies
# on. Up with 4 paths; h1 pings h2; UDP from 64 source ports is sprayed over at least 3 paths;
# 50% loss on one path drops about half of what crosses it and nothing elsewhere; delay=20 on a
# path adds 20 ms per crossing to the round trip of a flow pinned to it (and nothing to a flow
# on other paths), and delay=0 takes the delay stage out again; a path set down swallows its
# packets and comes back when set up; down leaves no namespace behind.
#
# usage: test_fabric.sh [DELAY_STAGE]   (the built braid_fabric_delay; without it, no delay check)
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, nft, tc or python3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
traffic=$here/traffic.py
# its own namespaces (bft-*), so a fabric someone has up (bf-*) is left alone
export BRAID_FABRIC_PREFIX=bft
if [ $# -ge 1 ]; then
	BRAID_FABRIC_DELAY=$(readlink -f "$1")
	export BRAID_FABRIC_DELAY
fi

test_name=test_fabric
. "$(dirname "$0")/fabric_lib.sh"

# delta BEFORE AFTER: per path "P r1r2_fwd r1r2_drop r2r1_fwd r2r1_drop" of what changed
delta() {
	awk -F, 'FNR == 1 { next }
		NR == FNR { f1[$1] = $7; d1[$1] = $9; f2[$1] = $11; d2[$1] = $13; next }
		{ print $1, $7 - f1[$1], $9 - d1[$1], $11 - f2[$1], $13 - d2[$1] }' \
		"$tmp/$1.csv" "$tmp/$2.csv"
}

# burst NAME FIRST_PORT COUNT: COUNT datagrams from each of 64 source ports, h1 -> h2:9000,
# with counter snapshots NAME.0 / NAME.1 around it; sets got: how many h2 received
burst() {
	local name=$1 sport=$2 count=$3 rpid
	rm -f "$tmp/ready"
	in_host h2 python3 "$traffic" recv 9000 --expect $((64 * count)) --idle 1 \
		--ready "$tmp/ready" >"$tmp/$name.recv" &
	rpid=$!
	wait_file "$tmp/ready"
	csv "$name.0"
	in_host h1 python3 "$traffic" send 10.77.2.2 9000 --sports "$sport:$((sport + 63))" \
		--count "$count" >/dev/null || fail "the sender failed"
	wait $rpid || fail "the receiver failed"
	csv "$name.1"
	got=$(cat "$tmp/$name.recv")
}

# --- up, ping ---
"$fabric" up --paths 4 >"$tmp/up.out" 2>&1
rc=$?
cat "$tmp/up.out"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "tools/fabric up failed ($rc)"
in_host h1 python3 "$traffic" ping 10.77.2.2 --count 3 || fail "h1 cannot ping h2"
echo "ok: up, h1 pings h2"

# --- spraying: 64 flows (source ports) over 4 paths ---
burst spray 20000 20
delta spray.0 spray.1 >"$tmp/spray"
sed 's/^/  path /' "$tmp/spray"
[ "$got" = 1280 ] || fail "h2 received $got of 1280 datagrams on a loss-free fabric"
used=$(awk '$2 >= 20 { n++ } END { print n + 0 }' "$tmp/spray")
[ "$used" -ge 3 ] || fail "64 flows crossed only $used of 4 paths (ECMP L4 hashing?)"
echo "ok: 64 flows sprayed over $used of 4 paths, 1280/1280 received"
busy=$(sort -k2,2nr "$tmp/spray" | awk 'NR == 1 { print $1 }')	# the path most flows take

# --- loss: 50% on the busiest path ---
"$fabric" set "$busy" loss=50 || fail "set $busy loss=50 failed"
burst loss 20000 50
delta loss.0 loss.1 >"$tmp/loss"
sed 's/^/  path /' "$tmp/loss"
read -r fwd drop < <(awk -v p="$busy" '$1 == p { print $2, $3 }' "$tmp/loss")
offered=$((fwd + drop))
[ "$offered" -ge 200 ] || fail "only $offered packets crossed path $busy"
awk -v d="$drop" -v o="$offered" 'BEGIN { exit !(d > 0.35 * o && d < 0.65 * o) }' ||
	fail "path $busy at 50% loss dropped $drop of $offered"
others=$(awk -v p="$busy" '$1 != p { s += $3 + $5 } END { print s + 0 }' "$tmp/loss")
[ "$others" = 0 ] || fail "paths without loss dropped $others packets"
[ "$got" = $((3200 - drop)) ] || fail "h2 received $got, expected 3200 - $drop dropped"
"$fabric" set "$busy" loss=0 || fail "set $busy loss=0 failed"
echo "ok: 50% loss on path $busy dropped $drop of $offered, other paths none, h2 got $got = 3200 - $drop"

# --- loss=100: every packet on the path (nft has no "< 1000000" share of a million) ---
"$fabric" set "$busy" loss=100 || fail "set $busy loss=100 failed"
burst all 24000 20
delta all.0 all.1 >"$tmp/all"
read -r fwd drop < <(awk -v p="$busy" '$1 == p { print $2, $3 }' "$tmp/all")
[ "$drop" -ge 80 ] && [ "$fwd" = 0 ] || fail "path $busy at 100% loss forwarded $fwd, dropped $drop"
[ "$got" = $((1280 - drop)) ] || fail "h2 received $got, expected 1280 - $drop dropped"
"$fabric" set "$busy" loss=0 || fail "set $busy loss=0 failed"
echo "ok: 100% loss on path $busy dropped all $drop of its packets, h2 got $got = 1280 - $drop"

# --- delay: 20 ms on the path of a pinned flow ---
mode=$("$fabric" status | sed -n 's/^delay and loss by //p')
case $mode in
*"tc netem"*) why="" ;;	# netem delays without the stage
*"no delay"*) why="this kernel has neither netem nor NFQUEUE" ;;
*)
	why=""
	[ -n "${BRAID_FABRIC_DELAY:-}" ] || why="no delay stage given (braid_fabric_delay not built)"
	;;
esac
if [ -n "$why" ]; then
	echo "note: $why: delay not checked"
else
	rm -f "$tmp/ready"
	in_host h2 python3 "$traffic" echo 9001 --lifetime 60 --ready "$tmp/ready" >/dev/null &
	wait_file "$tmp/ready"
	# which path each source port's request (r1->r2) and reply (r2->r1) take
	pinned="" control=""
	for sport in $(seq 30000 30031); do
		csv probe.0
		in_host h1 python3 "$traffic" rtt 10.77.2.2 9001 --sport "$sport" --count 3 >/dev/null ||
			fail "no echo from h2 to source port $sport"
		csv probe.1
		read -r a b < <(delta probe.0 probe.1 |
			awk '$2 >= 3 { a = $1 } $4 >= 3 { b = $1 } END { print a, b }')
		if [ -z "$a" ] || [ -z "$b" ]; then
			fail "cannot tell the path of source port $sport"
		fi
		if [ -z "$pinned" ]; then
			pinned=$sport dpath=$a crossings=$((1 + (b == a)))
		elif [ "$a" != "$dpath" ] && [ "$b" != "$dpath" ]; then
			control=$sport
			break
		fi
	done
	[ -n "$control" ] || fail "no source port in 30000..30031 avoids path $dpath"
	# rtt VAR PORT: median round trip of 20 probes from source port PORT, in ms
	rtt() {
		local out
		out=$(in_host h1 python3 "$traffic" rtt 10.77.2.2 9001 --sport "$2" --count 20) ||
			fail "no echo to source port $2: $out"
		printf -v "$1" %s "${out%% *}"
	}
	base="" base_c="" slow="" slow_c="" back=""
	rtt base "$pinned"
	rtt base_c "$control"
	"$fabric" set "$dpath" delay=20 || fail "set $dpath delay=20 failed"
	rtt slow "$pinned"
	rtt slow_c "$control"
	want=$((20 * crossings))
	echo "  port $pinned crosses path $dpath $crossings time(s): rtt $base -> $slow ms (want +$want);" \
		"port $control (other paths): $base_c -> $slow_c ms"
	awk -v b="$base" -v s="$slow" -v w="$want" 'BEGIN { d = s - b; exit !(d > w - 3 && d < w + 5) }' ||
		fail "delay=20 on path $dpath: rtt rose $base -> $slow ms, want about +$want"
	awk -v b="$base_c" -v s="$slow_c" 'BEGIN { exit !(s - b < 2) }' ||
		fail "delay on path $dpath slowed a flow on other paths: $base_c -> $slow_c ms"
	"$fabric" set "$dpath" delay=0 || fail "set $dpath delay=0 failed"
	rtt back "$pinned"
	awk -v b="$base" -v s="$back" 'BEGIN { exit !(s - b < 2) }' ||
		fail "delay=0 on path $dpath: rtt still $back ms (was $base)"
	for r in r1 r2; do
		[ -z "$(ip netns pids "bft-$r")" ] || fail "delay=0 left a process in bft-$r"
	done
	echo "ok: delay=20 on path $dpath: +$(awk -v b="$base" -v s="$slow" 'BEGIN { printf "%.1f", s - b }') ms" \
		"(want +$want), other paths unchanged; delay=0: $back ms, stage gone"
fi

# --- a path set down swallows its packets; up brings it back ---
"$fabric" set "$busy" down || fail "set $busy down failed"
burst down 20000 20
delta down.0 down.1 >"$tmp/down"
read -r fwd drop < <(awk -v p="$busy" '$1 == p { print $2, $3 }' "$tmp/down")
if [ "$fwd" != 0 ] || [ "$drop" -le 0 ]; then
	fail "path $busy down: $fwd crossed, $drop dropped"
fi
[ "$got" = $((1280 - drop)) ] || fail "h2 received $got, expected 1280 - $drop"
down_drop=$drop
"$fabric" set "$busy" up || fail "set $busy up failed"
burst up 20000 20
read -r fwd drop < <(delta up.0 up.1 | awk -v p="$busy" '$1 == p { print $2, $3 }')
if [ "$fwd" -le 0 ] || [ "$drop" != 0 ] || [ "$got" != 1280 ]; then
	fail "path $busy up again: $fwd crossed, $drop dropped, h2 got $got of 1280"
fi
echo "ok: path $busy down: none of its packets crossed ($down_drop dropped), h2 got the other" \
	"$((1280 - down_drop)); up: $fwd cross again, 1280/1280 received"

# --- down leaves nothing ---
"$fabric" down || fail "tools/fabric down failed"
left=$(ip netns list | awk '$1 ~ /^bft-/ { print $1 }')
[ -z "$left" ] || fail "namespaces left after down: $left"
[ ! -e /run/braid-fabric/bft ] || fail "state left after down: /run/braid-fabric/bft"
pgrep -f /run/braid-fabric/bft/ >/dev/null && fail "a delay stage outlived down"
"$fabric" down >/dev/null || fail "a second down failed"
echo "ok: down left no bft- namespace, state or delay stage; down again is fine"
echo "test_fabric: PASS"
