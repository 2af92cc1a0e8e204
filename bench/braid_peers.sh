#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# braid_peers.sh [N [PROCS]]: many peers end to end. N peers (default 100,000),
# endpoints of PROCS child processes (default 24), each exchange a message with one native RDM
# endpoint, which inserts each into its AV and answers; it reports the rate first contacts were
# served at and its memory per peer once they are quiet (bench/braid_idle_mem.c -x).
# Two UDP ports an endpoint: 100,000 do not fit one address, so it runs in a network namespace
# of its own (root) whose loopback has an address per process (127.10.<i>.1); nothing leaves it.
set -eu
CLI_NAME=braid_peers.sh
usage() {
	cat <<'USAGE'
usage: bench/braid_peers.sh [N [PROCS]]
N peers, endpoints of PROCS child processes, each exchange a message with one braid RDM
endpoint (braid_idle_mem -x) in a network namespace of its own; reports the rate first
contacts were served at and the memory per peer once they are quiet. Root; exits 77
without it. BUILD (default: the checkout's build/) names the build directory.
  N          peers (default 100000)
  PROCS      sending processes, 1 to 64 (default 24)
  -h, --help this text
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
cli_operands 0 2 "$@"
[ $# -lt 1 ] || cli_count N "$1"
[ $# -lt 2 ] || cli_count PROCS "$2"
n=${1:-100000} procs=${2:-24}
build=${BUILD:-$(dirname "$0")/../build}
[ "$(id -u)" = 0 ] || { echo "braid_peers: needs root (a network namespace of its own)"; exit 77; }
command -v unshare >/dev/null || { echo "braid_peers: needs unshare (util-linux)"; exit 77; }
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$build/providers}
# the idle records are what is measured here (FI_BRAID_FORGET_MS would forget them)
export FI_BRAID_FORGET_MS=${FI_BRAID_FORGET_MS:-0}
exec unshare -n sh -c '
	ip link set lo up
	i=0
	while [ $i -lt "$2" ]; do ip addr add 127.10.$i.1/32 dev lo; i=$((i + 1)); done
	exec "$3" -x -n "$1" -P "$2"' sh "$n" "$procs" "$build/bench/braid_idle_mem"
