#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# demo.sh: braid's main job, shown: what libfabric sees, ping-pong over braid beside libfabric's
# own transports on loopback, braid's reliable-datagram engine on a simulated lossy multipath
# fabric, and the A/B against RoCE RC and TCP on an emulated one (namespaces; loopback without
# root). About two minutes. Run tools/setup.sh first (the README's command does).
set -uo pipefail
CLI_NAME=demo.sh
usage() {
	cat <<'USAGE'
usage: tools/demo.sh
braid's main job, shown in about two minutes: what libfabric sees (fi_info -p braid),
ping-pong over braid beside libfabric's own transports on loopback, braid's RD engine on
a simulated lossy multipath fabric, and a short A/B against RoCE RC and TCP (tools/ab
--quick; on the emulated fabric with root, else on loopback). Takes no arguments; run
tools/setup.sh first. BRAID_DEMO_ITERS (default 3000): ping-pong iterations per size.
  -h, --help this text
USAGE
}
. "$(dirname "$0")/cli.sh"
cli_operands 0 0 "$@"
cd "$(dirname "$0")/.."

export FI_PROVIDER_PATH="$PWD/build/providers"
PP=build/fabtests/braid_pingpong
RUN=fabtests/run_pair.sh
ITERS=${BRAID_DEMO_ITERS:-3000}

echo "braid demo: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r)"
echo
echo "1. What libfabric offers through braid (fi_info -p braid)"
fi_info -p braid 2>/dev/null | awk '
	/^provider:/ { p = $2 } /fabric:/ { f = $2 } /domain:/ { d = $2 }
	/type:/ { printf "   %-15s %-12s fabric %-16s domain %s\n", p, $2, f, d }'
echo

echo "2. Ping-pong on loopback: half round trip in microseconds (lower is better),"
echo "   every message data-checked; $ITERS iterations per size, after a warm-up"
printf "   %-16s %-6s %10s %10s  %s\n" provider type "64 B" "1 KiB" result
fails=0
for spec in "braid rdm" "braid;ofi_rxm rdm" "tcp rdm" "braid;ofi_rxd rdm" "udp;ofi_rxd rdm" "braid dgram" "udp dgram"; do
	prov=${spec% *}
	type=${spec##* }
	exact=()
	# braid's own endpoint, not a layering over it; braid;ofi_rxm is RDM over braid's RoCEv2 RC
	case "$prov" in braid|"braid;ofi_rxm") exact=(-x) ;; esac
	out=$($RUN --timeout 60 "$PP" -- -p "$prov" -e "$type" "${exact[@]}" -S 64,64,1024 -I "$ITERS" 2>&1)
	rc=$?
	lat=$(echo "$out" | awk '/^client: [0-9]+ +[0-9]+ +[0-9.]+ +PASS/ { n++; if (n > 1) printf "%10s ", $4 }')
	name=$prov
	[ "$prov" = tcp ] && name="tcp;ofi_rxm"
	if [ $rc -eq 0 ]; then
		printf "   %-16s %-6s %s %s\n" "$name" "$type" "$lat" PASS
	else
		printf "   %-16s %-6s %21s  FAIL\n" "$name" "$type" ""
		echo "$out" | tail -5 | sed 's/^/      /'
		fails=$((fails + 1))
	fi
done
echo

echo "3. braid's reliable-datagram engine (sans-I/O) on the simulated fabric: 8 paths,"
echo "   virtual time, packets sprayed, lost ones found by time and resent on other paths"
build/bench/braid_rd_bench --quick | sed 's/^/   /'
echo
echo "4. The A/B: braid against RoCE RC (braid;ofi_rxm), braid;ofi_rxd and tcp;ofi_rxm on the"
echo "   emulated lossy multipath fabric (namespaces, 4 ECMP paths; needs root), else on loopback;"
echo "   a short version of tools/ab (the full one: docs/benchmarks.md, *The A/B: how it runs*); braid-stat shows"
echo "   braid's own view of the path failure: which paths died, moved and resent what"
if ! tools/ab --quick -o build/ab-demo 2>&1 | sed 's/^/   /'; then
	echo "   the A/B run failed (build/ab-demo holds what it wrote)"
	fails=$((fails + 1))
fi
echo
if [ $fails -ne 0 ]; then
	echo "demo: $fails run(s) failed"
	exit 1
fi
echo "demo: done"
