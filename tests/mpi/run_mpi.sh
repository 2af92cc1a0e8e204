#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_mpi.sh: Open MPI's ofi MTL over braid (2 ranks on this host) running braid_mpi; checks that
# Open MPI chose exactly PROVIDER (its own report, --mca mtl_ofi_verbose) and that the traffic
# went through braid's wire (UDP datagrams counted by the kernel, and datagrams through local
# peers' shared memory counted by braid: wire_count.sh); with local peers on (FI_BRAID_SHM, not
# 0), that braid's ranks reached each other through shared memory.
# Usage: run_mpi.sh MPI_PROGRAM [PROVIDER]   (PROVIDER: "braid", braid's native RDM, the default;
# "braid;ofi_rxm", RDM over braid's RoCEv2 RC)
set -uo pipefail
prog=$1
prov=${2:-braid}

if ! command -v mpirun >/dev/null; then
	echo "SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# Open MPI takes the first provider whose name starts with an include-list entry, from a
# request that names none: braid's layered providers are offered to such requests only with
# FI_BRAID_LAYERING=1 (fi_braid(7)), and then ahead of braid's own RDM endpoint.
layering=0
[ "$prov" != braid ] && layering=1

. "$(dirname "$0")/wire_count.sh"
wire_log_env
log=$(mktemp)
trap 'rm -f "$log"' EXIT

before=$(udp_out)
# Debian disables the ofi MTL in /etc/openmpi/openmpi-mca-params.conf; ask for it explicitly.
FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo} FI_BRAID_LAYERING=$layering timeout 300 \
	mpirun "${root[@]}" --oversubscribe -np 2 -x FI_BRAID_LAYERING -x FI_LOG_LEVEL -x FI_LOG_PROV \
	${FI_BRAID_SHM:+-x FI_BRAID_SHM} \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
	--mca mtl_ofi_verbose 1 --mca btl self,vader "$prog" 2>&1 | tee "$log" |
	grep -v -e 'not in include list' -e ':braid:'
rc=${PIPESTATUS[0]}
after=$(udp_out)
udp=$((after - before))
local_dgrams=$(local_sent "$log")
sent=$((udp + local_dgrams))
echo "run_mpi: $udp UDP datagrams sent during the run, $local_dgrams through local peers' shared memory"
if [ "$rc" -ne 0 ]; then
	echo "run_mpi: FAIL (mpirun exit $rc)"
	exit 1
fi
# what each rank's ofi MTL chose: "mtl:ofi:prov: NAME"
chosen=$(sed -n 's/.*mtl:ofi:prov: \(.*\)$/\1/p' "$log" | sort | uniq -c)
echo "run_mpi: Open MPI chose:"
echo "$chosen"
if [ "$(sed -n 's/.*mtl:ofi:prov: \(.*\)$/\1/p' "$log" | grep -cxF -- "$prov")" -ne 2 ]; then
	echo "run_mpi: FAIL: the ranks did not both run over $prov"
	exit 1
fi
# 64 MiB each way, twice, at most 64 KiB per datagram: thousands of datagrams at least
if [ "$sent" -lt 4000 ]; then
	echo "run_mpi: FAIL: too few datagrams ($sent): the traffic did not go through braid"
	exit 1
fi
# braid's RDM endpoints of one host: through shared memory, unless it is off
if [ "$prov" = braid ] && [ "${FI_BRAID_SHM:-1}" != 0 ] && [ "$local_dgrams" -lt 4000 ]; then
	echo "run_mpi: FAIL: the ranks did not reach each other through shared memory ($local_dgrams)"
	exit 1
fi
if [ "${FI_BRAID_SHM:-1}" = 0 ] && [ "$local_dgrams" -ne 0 ]; then
	echo "run_mpi: FAIL: FI_BRAID_SHM=0, yet $local_dgrams datagrams went through shared memory"
	exit 1
fi
echo "run_mpi: PASS"
