#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_mpi_mix.sh: one Open MPI job over braid (ofi MTL) whose ranks have both kinds of peer:
# ranks 0 and 1 with local peers through shared memory (fi_braid(7), LOCAL PEERS), ranks 2 and
# 3 with it off (FI_BRAID_SHM=0: by UDP, as peers on another host). braid_mpi_mix makes every
# pair exchange, checked, and runs checked collectives. Checks that every rank ran over braid
# (Open MPI's own report), that the shared-memory ranks' endpoints wrote into each other's
# rings and the others' did not, and that UDP carried the rest (wire_count.sh).
# Usage: run_mpi_mix.sh MPI_PROGRAM
set -uo pipefail
prog=$1

if ! command -v mpirun >/dev/null; then
	echo "SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
. "$(dirname "$0")/wire_count.sh"
wire_log_env
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mca=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include braid --mca mtl_ofi_verbose 1
     --mca btl self,vader --mca mpi_yield_when_idle 1)
before=$(udp_out)
FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo} FI_BRAID_LAYERING=0 timeout -k 10 300 \
	mpirun "${root[@]}" --oversubscribe "${mca[@]}" \
	-x FI_BRAID_IFACE -x FI_BRAID_LAYERING -x FI_LOG_LEVEL -x FI_LOG_PROV \
	-np 2 -x FI_BRAID_SHM=1 "$prog" : -np 2 -x FI_BRAID_SHM=0 "$prog" >"$log" 2>&1
rc=$?
after=$(udp_out)
udp=$((after - before))
grep -E '^braid_mpi_mix|rank [0-9]+:' "$log"
fail=0
die() {
	echo "run_mpi_mix: FAIL: $*"
	fail=1
}
[ "$rc" = 124 ] && die "mpirun timed out (300 s): hang"
[ "$rc" -ne 0 ] && die "mpirun exit $rc"
grep -q '^braid_mpi_mix: 4 ranks; PASS' "$log" || die "braid_mpi_mix did not report PASS"
[ "$(grep -c 'mtl:ofi:prov: braid$' "$log")" -eq 4 ] || die "not every rank ran over braid"
# each endpoint's datagrams into local peers' rings, one line per endpoint
counts=$(sed -n "s/.*datagrams through local peers' shared memory: \([0-9]*\) sent.*/\1/p" "$log")
on=$(echo "$counts" | awk '$1 > 0' | wc -l)
off=$(echo "$counts" | awk '$1 == 0' | wc -l)
echo "run_mpi_mix: $(echo "$counts" | wc -l) endpoints: $on wrote into local peers' rings" \
	"($(local_sent "$log") datagrams), $off did not; $udp UDP datagrams"
[ "$on" -ge 2 ] || die "the two shared-memory ranks did not reach each other through it"
[ "$off" -ge 2 ] || die "the ranks with FI_BRAID_SHM=0 wrote into rings"
# 2 ranks by UDP: each pair with them moves 1 MiB and more each way, 64 KiB a datagram at most
[ "$udp" -ge 200 ] || die "too few UDP datagrams ($udp) for the pairs with the UDP ranks"
if [ "$fail" -ne 0 ]; then
	echo "run_mpi_mix: the log's last lines:"
	grep -v ':braid:' "$log" | tail -30
	exit 1
fi
echo "run_mpi_mix: PASS"
