#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# equal_mtu.sh: braid RD against RDM over braid's RoCEv2 RC (braid;ofi_rxm) and tcp;ofi_rxm at
# the same packet size: in a network namespace of its own whose loopback MTU is 4200 bytes, so
# RD's datagrams and RC's 4096-byte IB MTU are about the same size (on plain lo, RD sends 64 KiB
# datagrams while RoCE cannot go above 4096). Prints 1 MiB goodput and 8 B latency per
# contender, REPS times, contenders alternating. Needs root (unshare -n); exits 77 otherwise.
# usage: bench/equal_mtu.sh [REPS]
set -uo pipefail
CLI_NAME=equal_mtu.sh
usage() {
	cat <<'USAGE'
usage: bench/equal_mtu.sh [REPS]
braid RD against braid;ofi_rxm (RoCEv2 RC) and tcp;ofi_rxm at the same packet size: a
network namespace whose loopback MTU is 4200 bytes; 1 MiB goodput and 8 B latency per
contender, REPS times (default 3), contenders alternating. Uses the checkout's build/.
Root and network namespaces; exits 77 without them.
  -h, --help this text
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
cli_operands 0 1 "$@"
[ $# -lt 1 ] || cli_count REPS "$1"
reps=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BRAID_EQMTU_NETNS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
		echo "SKIP: needs root and network namespaces (unshare -n)"
		exit 77
	fi
	exec unshare -n env BRAID_EQMTU_NETNS=1 "$0" "$@"
fi
ip link set lo up
ip link set lo mtu 4200
export FI_PROVIDER_PATH=$root/build/providers
ab=$root/build/bench/braid_ab
port=7100
for rep in $(seq "$reps"); do
	for p in braid "braid;ofi_rxm" tcp; do
		for m in "bw -s 1048576 -t 2" "lat -s 8 -n 5000"; do
			port=$((port + 1))
			"$ab" -p "$p" -a 127.0.0.1 -C $port >/dev/null &
			"$ab" -p "$p" -a 127.0.0.1 -c 127.0.0.1 -C $port -m $m | grep '^result' |
				grep -o 'mode=[^ ]*\|prov=[^ ]*\|p50_us=[^ ]*\|p99_us=[^ ]*\|goodput_gbps=[^ ]*' |
				tr '\n' ' '
			echo "(rep $rep)"
			wait
		done
	done
done
