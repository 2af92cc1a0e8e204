#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_gro.sh: braid's RDM over UDP GRO on the real wire (tools/fabric up --gro: the hosts'
# interfaces coalesce what arrives, as a NIC's GRO does; the paths still carry one-MTU
# packets). A 1 MiB stream from h1 to h2, every byte checked, twice: braid's default (the
# receiver takes coalesced runs: it must see some, and split them right) and FI_BRAID_GRO=0
# (none). Both report goodput; the test checks behaviour, not speed.
#   usage: test_gro.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not root, no namespaces, no ethtool, or not built).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
export BRAID_FABRIC_PREFIX=bfg
build=${1:-}
case $build in /*) ;; *) build=$PWD/$build ;; esac
test_name=test_gro
. "$(dirname "$0")/fabric_lib.sh"
ab=$build/bench/braid_ab
[ -x "$ab" ] || { echo "SKIP: $ab not built"; exit 77; }
command -v ethtool >/dev/null || { echo "SKIP: ethtool not found (Debian: ethtool)"; exit 77; }

"$fabric" up --paths 4 --gro >"$tmp/up.out" 2>&1 || fail "fabric up --gro: $(tail -3 "$tmp/up.out")"
grep -q 'gro on' "$tmp/up.out" || fail "the fabric did not say gro on: $(cat "$tmp/up.out")"

# run NAME GRO: a checked 1 MiB stream for 2 s; the receiver's INFO log in $tmp/NAME.srv
run() {
	local name=$1 gro=$2 port=$((24000 + RANDOM % 4000))
	local env="env FI_PROVIDER_PATH=$build/providers FI_BRAID_GRO=$gro FI_LOG_LEVEL=info FI_LOG_PROV=braid"

	"$fabric" exec h2 -- timeout 60 $env "$ab" -p braid -a 10.77.2.2 -C $port -k 1 \
		>"$tmp/$name.srv" 2>&1 &
	local spid=$!
	sleep 0.3
	"$fabric" exec h1 -- timeout 60 $env "$ab" -p braid -a 10.77.1.2 -c 10.77.2.2 -C $port \
		-m bw -s 1048576 -t 2 -w 8 -v -T 30 >"$tmp/$name.cli" 2>&1 ||
		fail "$name: the stream failed: $(tail -3 "$tmp/$name.cli")"
	wait $spid || fail "$name: the receiver failed: $(tail -3 "$tmp/$name.srv")"
	grep -q 'prov=braid ' "$tmp/$name.cli" || fail "$name: not braid's native RDM"
}
# the receiver's count of coalesced runs, from its endpoint's close line (the largest: its
# data endpoint)
runs() {
	sed -n 's/.* \([0-9]*\) in \([0-9]*\) coalesced runs (UDP GRO).*/\2 \1/p' "$tmp/$1.srv" |
		sort -n | tail -1
}

run gro 1
grep -q 'UDP GRO on' "$tmp/gro.srv" || fail "FI_BRAID_GRO=1: the endpoint did not say UDP GRO on"
read -r nruns ndgrams <<<"$(runs gro)"
echo "  GRO on: $(grep -o 'goodput_gbps=[0-9.]*' "$tmp/gro.cli" | head -1); $ndgrams datagrams came in $nruns coalesced runs"
[ "${nruns:-0}" -gt 0 ] || fail "GRO on: no coalesced run received ($(grep 'coalesced' "$tmp/gro.srv"))"
[ "${ndgrams:-0}" -gt "${nruns:-0}" ] || fail "GRO on: runs of one datagram?"
echo "ok: GRO on: the receiver took $nruns coalesced runs ($ndgrams datagrams), every byte checked"

run plain 0
grep -q 'UDP GRO off' "$tmp/plain.srv" || fail "FI_BRAID_GRO=0: the endpoint did not say UDP GRO off"
read -r nruns ndgrams <<<"$(runs plain)"
echo "  GRO off: $(grep -o 'goodput_gbps=[0-9.]*' "$tmp/plain.cli" | head -1)"
[ "${nruns:-1}" -eq 0 ] || fail "FI_BRAID_GRO=0: $nruns coalesced runs"
echo "ok: GRO off: datagram by datagram, every byte checked"
