#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# wires_fabric.sh: braid's native RDM over its UDP wire against its DPDK wire (net_af_packet
# on each host's eth0) across the emulated fabric (tools/fabric: 2 hosts, 4 ECMP paths,
# MTU 1500), clean and at 1% loss on every path both ways, the wires alternating in every
# repetition: a 1 MiB stream (goodput, every byte checked) and 8-byte ping-pongs
# (p50/p99). Prints a table of medians with each wire's ratio. Root; no hugepages.
#   usage: bench/wires_fabric.sh [BUILD_DIR] [REPS]      (default build, 3)
set -uo pipefail
CLI_NAME=wires_fabric.sh
usage() {
	cat <<'USAGE'
usage: bench/wires_fabric.sh [BUILD_DIR] [REPS]
braid's native RDM over its UDP wire against its DPDK wire (net_af_packet) across the
emulated fabric (tools/fabric: 2 hosts, 4 paths), clean and at 1% loss: 1 MiB goodput and
8 B ping-pong p50/p99, wires alternating; a table of medians. Root; exits 77 without it.
  BUILD_DIR  a braid build directory (default: the checkout's build/)
  REPS       repetitions (default 3)
  -h, --help this text
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
cli_operands 0 2 "$@"
[ $# -lt 2 ] || cli_count REPS "$2"
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
reps=${2:-3}
case $build in /*) ;; *) build=$PWD/$build ;; esac
export BRAID_FABRIC_PREFIX=bfw
fabric=$repo/tools/fabric
ab=$build/bench/braid_ab
[ "$(id -u)" = 0 ] || { echo "wires_fabric: needs root (network namespaces)"; exit 77; }
[ -x "$ab" ] || { echo "wires_fabric: $ab not built"; exit 1; }
tmp=$(mktemp -d)
trap '"$fabric" down >/dev/null 2>&1; rm -rf "$tmp"' EXIT
"$fabric" up --paths 4 >"$tmp/up" 2>&1 || { cat "$tmp/up"; exit 1; }
eal="--no-huge --no-shconf -m 512 --no-pci --no-telemetry --log-level=3"

# one WIRE HOST ARGS...: braid_ab on HOST with WIRE
one() {
	local wire=$1 h=$2
	shift 2
	"$fabric" exec "$h" -- timeout 60 env FI_PROVIDER_PATH="$build/providers" FI_BRAID_WIRE="$wire" \
		FI_BRAID_DPDK_ARGS="$eal --file-prefix=$BRAID_FABRIC_PREFIX-$h --vdev=net_af_packet0,iface=eth0" \
		"$ab" "$@"
}
# measure WIRE MODE: the client's result line, or "failed"
measure() {
	local wire=$1 mode=$2 port=$((24000 + RANDOM % 4000)) args
	if [ "$mode" = bw ]; then args="-m bw -s 1048576 -t 4 -v"; else args="-m lat -s 8 -n 20000 -v"; fi
	one "$wire" h2 -p braid -a 10.77.2.2 -C $port -k 1 >"$tmp/srv" 2>&1 &
	local spid=$!
	sleep 1
	one "$wire" h1 -p braid -a 10.77.1.2 -c 10.77.2.2 -C $port -T 20 $args >"$tmp/cli" 2>&1
	wait $spid
	grep '^result' "$tmp/cli" || echo failed
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }

echo "braid native RDM, UDP wire against DPDK wire (net_af_packet on eth0), tools/fabric 2 hosts x 4 paths,"
echo "MTU 1500, $reps repetitions, wires alternating; stream: 1 MiB messages for 4 s, every byte checked"
for loss in 0 1; do
	"$fabric" set all loss=$loss >/dev/null
	for ((r = 0; r < reps; r++)); do
		for wire in udp dpdk; do
			measure $wire bw | field goodput_gbps >>"$tmp/bw.$wire.$loss"
			measure $wire lat >"$tmp/lat"
			field p50_us <"$tmp/lat" >>"$tmp/p50.$wire.$loss"
			field p99_us <"$tmp/lat" >>"$tmp/p99.$wire.$loss"
		done
	done
done
python3 - "$tmp" <<'PY'
import sys, statistics, os
d = sys.argv[1]
def vals(k):
    p = os.path.join(d, k)
    return [float(x) for x in open(p).read().split()] if os.path.exists(p) else []
def med(k):
    v = vals(k)
    return statistics.median(v) if v else float('nan')
print("\n%-34s %10s %10s %10s" % ("(median of repetitions)", "udp", "dpdk", "dpdk/udp"))
for loss in ("0", "1"):
    for what, k, unit in (("goodput, Gbit/s", "bw", ""), ("8 B p50, us", "p50", ""), ("8 B p99, us", "p99", "")):
        u, p = med("%s.udp.%s" % (k, loss)), med("%s.dpdk.%s" % (k, loss))
        n = min(len(vals("%s.udp.%s" % (k, loss))), len(vals("%s.dpdk.%s" % (k, loss))))
        print("%-34s %10.2f %10.2f %9.2fx" % ("%s%% loss: %s" % (loss, what), u, p, p / u if u else float('nan')))
print("(a repetition that failed is missing from its median)")
PY
