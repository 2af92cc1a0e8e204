#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_leafspine.sh: the leaf-spine fabric (tools/fabric up --leaves L --spines S) is built and
# behaves as docs/fabric.md says. 2 leaves, 2 spines, 4 hosts (h1, h3 on l1; h2, h4 on l2): every
# host reaches every other; UDP from 64 source ports between leaves is sprayed over both spines
# and counted on the host links at both ends, and traffic within a leaf crosses no spine; 50%
# loss on one leaf-spine link drops about half of what enters it and nothing elsewhere; a spine
# set down (by its name) swallows what is hashed onto it and comes back when set up; every link
# starts at the fabric's rate and a host link's rate changes alone; wrong link names are usage
# errors; down leaves nothing.
#
# usage: test_leafspine.sh
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, nft, tc or python3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
traffic=$here/traffic.py
export BRAID_FABRIC_PREFIX=bfls

test_name=test_leafspine
. "$(dirname "$0")/fabric_lib.sh"

# delta BEFORE AFTER: per link "NAME up_fwd up_drop down_fwd down_drop" of what changed
delta() {
	awk -F, 'FNR == 1 { next }
		NR == FNR { f1[$21] = $7; d1[$21] = $9; f2[$21] = $11; d2[$21] = $13; next }
		{ print $21, $7 - f1[$21], $9 - d1[$21], $11 - f2[$21], $13 - d2[$21] }' \
		"$tmp/$1.csv" "$tmp/$2.csv"
}

# field FILE LINK COLUMN: COLUMN (2 up_fwd, 3 up_drop, 4 down_fwd, 5 down_drop) of LINK in FILE
field() { awk -v l="$2" -v c="$3" '$1 == l { print $c }' "$1"; }

# burst NAME SRC DST FIRST_PORT COUNT: COUNT datagrams from each of 64 source ports, hSRC ->
# hDST:9000, with counter snapshots around it into $tmp/NAME (delta); sets got: how many arrived
burst() {
	local name=$1 src=$2 dst=$3 sport=$4 count=$5 rpid
	rm -f "$tmp/ready"
	in_host "h$dst" python3 "$traffic" recv 9000 --expect $((64 * count)) --idle 1 \
		--ready "$tmp/ready" >"$tmp/$name.recv" &
	rpid=$!
	wait_file "$tmp/ready"
	csv "$name.0"
	in_host "h$src" python3 "$traffic" send "10.77.$dst.2" 9000 --sports "$sport:$((sport + 63))" \
		--count "$count" >/dev/null || fail "the sender h$src failed"
	wait $rpid || fail "the receiver h$dst failed"
	csv "$name.1"
	got=$(cat "$tmp/$name.recv")
	delta "$name.0" "$name.1" >"$tmp/$name"
}

# --- up; every host reaches every other ---
"$fabric" up --leaves 2 --spines 2 --hosts 4 >"$tmp/up.out" 2>&1
rc=$?
cat "$tmp/up.out"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "tools/fabric up --leaves 2 --spines 2 --hosts 4 failed ($rc)"
for s in 1 2 3 4; do
	for d in 1 2 3 4; do
		[ "$s" = "$d" ] && continue
		in_host "h$s" python3 "$traffic" ping "10.77.$d.2" --count 1 >/dev/null ||
			fail "h$s cannot ping h$d"
	done
done
echo "ok: up (2 leaves, 2 spines, 4 hosts), every host pings every other"
links=$(awk -F, 'NR > 1 { printf "%s ", $21 }' <("$fabric" status --csv))
[ "$links" = "l1-s1 l1-s2 l2-s1 l2-s2 h1 h2 h3 h4 " ] || fail "links are '$links'"
rates=$(awk -F, 'NR > 1 && $6 != 50 { n++ } END { print n + 0 }' <("$fabric" status --csv))
[ "$rates" = 0 ] || fail "$rates links do not start at 50 Mbit/s"
"$fabric" status >"$tmp/status" || fail "status failed"
grep -q "^l1-s2 " "$tmp/status" || fail "status does not name link l1-s2"

# --- spraying between leaves, counted at both host links; within a leaf no spine ---
burst spray 1 2 20000 20
sed 's/^/  link /' "$tmp/spray"
[ "$got" = 1280 ] || fail "h2 received $got of 1280 datagrams on a loss-free fabric"
s1=$(field "$tmp/spray" l1-s1 2) s2=$(field "$tmp/spray" l1-s2 2)
[ "$s1" -ge 200 ] && [ "$s2" -ge 200 ] || fail "64 flows h1 -> h2 crossed l1-s1 $s1, l1-s2 $s2 times"
[ $((s1 + s2)) = 1280 ] || fail "l1-s1 and l1-s2 carried $((s1 + s2)) of 1280 up"
[ $(($(field "$tmp/spray" l2-s1 4) + $(field "$tmp/spray" l2-s2 4))) = 1280 ] ||
	fail "the spines' links down to l2 did not carry all 1280"
[ "$(field "$tmp/spray" h1 2)" = 1280 ] && [ "$(field "$tmp/spray" h2 4)" = 1280 ] ||
	fail "host links: h1 up $(field "$tmp/spray" h1 2), h2 down $(field "$tmp/spray" h2 4), want 1280"
echo "ok: 64 flows h1 -> h2 sprayed over both spines ($s1 / $s2), every datagram on both host links"
burst local 1 3 21000 10
spine=$(awk '$1 ~ /-s/ { s += $2 + $4 } END { print s + 0 }' "$tmp/local")
[ "$got" = 640 ] && [ "$spine" = 0 ] || fail "h1 -> h3 (one leaf): got $got of 640, $spine on spine links"
echo "ok: h1 -> h3 within leaf l1: 640/640, no spine link crossed"

# --- 50% loss on l1-s1 ---
"$fabric" set l1-s1 loss=50 || fail "set l1-s1 loss=50 failed"
burst loss 1 2 20000 50
read -r fwd drop < <(awk '$1 == "l1-s1" { print $2, $3 }' "$tmp/loss")
offered=$((fwd + drop))
[ "$offered" -ge 500 ] || fail "only $offered packets entered l1-s1"
awk -v d="$drop" -v o="$offered" 'BEGIN { exit !(d > 0.35 * o && d < 0.65 * o) }' ||
	fail "l1-s1 at 50% loss dropped $drop of $offered"
others=$(awk '$1 != "l1-s1" { s += $3 + $5 } END { print s + 0 }' "$tmp/loss")
[ "$others" = 0 ] || fail "links without loss dropped $others packets"
[ "$got" = $((3200 - drop)) ] || fail "h2 received $got, expected 3200 - $drop dropped"
"$fabric" set l1-s1 loss=0 || fail "set l1-s1 loss=0 failed"
echo "ok: 50% loss on l1-s1 dropped $drop of $offered, other links none, h2 got $got"

# --- spine s2 down by name: what is hashed onto it is lost; up: back ---
"$fabric" set s2 down || fail "set s2 down failed"
states=$(awk -F, 'NR > 1 { printf "%s=%s ", $21, $2 }' <("$fabric" status --csv))
[[ $states == *"l1-s2=down l2-s1=up l2-s2=down h1=up"* ]] || fail "set s2 down: $states"
burst down 1 2 20000 20
read -r fwd drop < <(awk '$1 == "l1-s2" { print $2, $3 }' "$tmp/down")
[ "$fwd" = 0 ] && [ "$drop" -ge 200 ] || fail "s2 down: l1-s2 forwarded $fwd, dropped $drop"
[ "$got" = $((1280 - drop)) ] || fail "s2 down: h2 got $got, expected 1280 - $drop"
"$fabric" set s2 up || fail "set s2 up failed"
burst up 1 2 20000 20
[ "$got" = 1280 ] && [ "$(field "$tmp/up" l1-s2 2)" -ge 200 ] ||
	fail "s2 up again: h2 got $got of 1280, l1-s2 carried $(field "$tmp/up" l1-s2 2)"
echo "ok: spine s2 down: l1-s2 dropped all $drop of its packets, h2 got the rest; up: 1280/1280"

# --- a host link's rate alone; names that are no link ---
"$fabric" set h4 rate=20 || fail "set h4 rate=20 failed"
rates=$(awk -F, 'NR > 1 { printf "%s=%s ", $21, $6 }' <("$fabric" status --csv))
[[ $rates == *"h3=50 h4=20 "* ]] && [[ $rates == "l1-s1=50 "* ]] || fail "after set h4 rate=20: $rates"
for bad in l3-s1 l1-s3 h5 s3 spines 16; do
	"$fabric" set "$bad" loss=1 >/dev/null 2>&1
	rc=$?
	[ $rc = 2 ] || fail "set $bad loss=1 exited $rc, want 2 (no such link)"
done
echo "ok: set h4 rate=20 changed h4 alone; l3-s1, l1-s3, h5, s3, spines and 16 are usage errors"

# --- down leaves nothing ---
"$fabric" down || fail "tools/fabric down failed"
left=$(ip netns list | awk '$1 ~ /^bfls-/ { print $1 }')
[ -z "$left" ] || fail "namespaces left after down: $left"
[ ! -e /run/braid-fabric/bfls ] || fail "state left after down: /run/braid-fabric/bfls"
echo "ok: down left no bfls- namespace or state"
echo "test_leafspine: PASS"
