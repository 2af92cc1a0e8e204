#!/bin/bash
# run_mpi.sh: Open MPI's ofi MTL over braid's native FI_EP_RDM (2 ranks on this host) running
# braid_mpi; checks the traffic really went through braid (UDP datagrams counted by the kernel).
# Usage: run_mpi.sh MPI_PROGRAM [PROVIDER]   (PROVIDER default "braid"; "braid;ofi_rxm" later)
set -uo pipefail
prog=$1
prov=${2:-braid}

if ! command -v mpirun >/dev/null; then
	echo "SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)

udp_out() { awk '/^Udp:/ { if (++n == 2) print $5 }' /proc/net/snmp; }

before=$(udp_out)
# Debian disables the ofi MTL in /etc/openmpi/openmpi-mca-params.conf; ask for it explicitly.
FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo} timeout 300 mpirun "${root[@]}" --oversubscribe -np 2 \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
	--mca btl self,vader "$prog"
rc=$?
after=$(udp_out)
sent=$((after - before))
echo "run_mpi: $sent UDP datagrams sent during the run"
if [ $rc -ne 0 ]; then
	echo "run_mpi: FAIL (mpirun exit $rc)"
	exit 1
fi
# 64 MiB each way, twice, at most 64 KiB per datagram: thousands of datagrams at least
if [ "$sent" -lt 4000 ]; then
	echo "run_mpi: FAIL: too few UDP datagrams ($sent): the traffic did not go through braid"
	exit 1
fi
echo "run_mpi: PASS"
