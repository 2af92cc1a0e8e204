#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# braid_ep_strict.sh BUILD_DIR [N]: "10,000 endpoints in one process open
# under strict overcommit". Runs bench/braid_ep_mem -n N (default 10000: N native RDM
# endpoints in one domain, each enabled with its own CQ and AV) with
# vm.overcommit_memory=2, where the kernel refuses any allocation that would take the
# machine's committed memory past CommitLimit (swap + overcommit_ratio% of RAM), so
# reserved-but-untouched memory counts as much as used memory. The open-file limit is
# raised for the endpoints' descriptors: with FI_BRAID_PATHS=1 one socket an endpoint;
# with P > 1 paths, 2P route sockets (the spare ones are for re-drawn routes) and two
# epoll sets (34 by default). braid_ep_mem prints the count it measured.
# Prints CommitLimit, the committed memory before and at the run's peak, and what
# braid_ep_mem says; exits with braid_ep_mem's status.
#
# Root. It changes a machine-wide setting for the length of the run (restored on exit,
# whatever happens): run it on an otherwise idle machine, never beside other jobs.
set -uo pipefail
CLI_NAME=braid_ep_strict.sh
usage() {
	cat <<'USAGE'
usage: bench/braid_ep_strict.sh BUILD_DIR [N]
Opens N braid RDM endpoints in one process (BUILD_DIR/bench/braid_ep_mem -n N) under
strict overcommit (vm.overcommit_memory=2, restored on exit) and prints the machine's
committed memory before and at the peak of the run. Root; exits 77 without it.
  BUILD_DIR  a braid build directory
  N          endpoints (default 10000)
  -h, --help this text
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
cli_operands 1 2 "$@"
[ $# -lt 2 ] || cli_count N "$2"
build=$1
n=${2:-10000}
[ "$(id -u)" -eq 0 ] || { echo "braid_ep_strict.sh: needs root (sysctl, ulimit)"; exit 77; }
bin=$build/bench/braid_ep_mem
[ -x "$bin" ] || { echo "braid_ep_strict.sh: $bin not built"; exit 77; }
paths=${FI_BRAID_PATHS:-16}
if [ "$paths" -eq 1 ]; then per=1; else per=$((2 * paths + 2)); fi
fds=$((n * per + 1024))

hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$fds" ] && ! ulimit -Hn "$fds" 2>/dev/null; then
	echo "braid_ep_strict.sh: $n endpoints with $paths paths need about $fds open files;" \
		"the hard limit is $hard and cannot be raised here (FI_BRAID_PATHS=1: one an endpoint)"
	exit 77
fi
old=$(cat /proc/sys/vm/overcommit_memory)
restore() { echo "$old" >/proc/sys/vm/overcommit_memory; }
trap restore EXIT INT TERM

kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
echo 2 >/proc/sys/vm/overcommit_memory
echo "vm.overcommit_memory=2 (was $old): CommitLimit $(($(kb CommitLimit) / 1024)) MiB," \
	"committed before the run $(($(kb Committed_AS) / 1024)) MiB"

# the peak of the machine's committed memory while the endpoints are open
peakf=$(mktemp)
( peak=0; while :; do c=$(kb Committed_AS); [ "$c" -gt "$peak" ] && peak=$c && echo "$peak" >"$peakf"
	sleep 0.2; done ) &
sampler=$!

(ulimit -n "$fds" && FI_PROVIDER_PATH=$build/providers "$bin" -n "$n")
rc=$?
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
echo "committed at the peak of the run: $(($(cat "$peakf" 2>/dev/null || echo 0) / 1024)) MiB (limit $(($(kb CommitLimit) / 1024)) MiB)"
rm -f "$peakf"
[ $rc -eq 0 ] && echo "braid_ep_strict: $n endpoints opened under strict overcommit" ||
	echo "braid_ep_strict: braid_ep_mem -n $n failed (status $rc) under strict overcommit"
exit $rc
