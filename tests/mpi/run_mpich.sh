#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_mpich.sh: MPICH's ch4:ofi device over braid's native RDM endpoint, 2 ranks on this host:
# braid_mpi (ping-pong 0 B .. 64 MiB, every byte checked; Probe, Mprobe, wildcards; Allreduce,
# Alltoall) and braid_osc (MPI_Put, MPI_Get, MPI_Accumulate, MPI_Fetch_and_op,
# MPI_Compare_and_swap with active and passive target), both built here with MPICH's mpicc.
# Proves what ran: MPICH's own report of its provider (MPIR_CVAR_DEBUG_SUMMARY: "libfabric
# provider: braid"), and from inside each rank (TRACE_LIB, ofi_trace.so, LD_PRELOADed) that
# libmpi opened braid's RDM endpoint and nothing else, with the one-sided calls it made there;
# and that the traffic went over braid's wire (UDP datagrams counted by the kernel, and
# datagrams through local peers' shared memory counted by braid: wire_count.sh).
#
# Usage: run_mpich.sh SRC_DIR TRACE_LIB
#   SRC_DIR: where braid_mpi.c and braid_osc.c are (tests/mpi).
# Settings:
#   BRAID_MPICH_PREFIX  an MPICH installation built with --with-device=ch4:ofi (and, so that
#                       messages between ranks on one host go through libfabric too,
#                       --with-ch4-shmmods=none), against the libfabric this braid build was
#                       built against: MPICH asks libfabric for the API of the library it runs
#                       with, and braid answers the API of its headers (fi_braid(7)).
# Exit status: 0 pass, 1 fail, 77 skipped (no such MPICH), 2 bad usage.
set -uo pipefail

usage() {
	echo "usage: $0 SRC_DIR TRACE_LIB   (BRAID_MPICH_PREFIX: an MPICH built for ch4:ofi)"
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
src=$1
trace=$2
prefix=${BRAID_MPICH_PREFIX:-}
if [ -z "$prefix" ]; then
	echo "SKIP: BRAID_MPICH_PREFIX is not set (an MPICH installed with --with-device=ch4:ofi;"
	echo "      Debian's MPICH is built for UCX, not libfabric)"
	exit 77
fi
for t in mpicc mpiexec mpichversion; do
	if [ ! -x "$prefix/bin/$t" ]; then
		echo "SKIP: $prefix/bin/$t not found: BRAID_MPICH_PREFIX must be an MPICH installation"
		exit 77
	fi
done
device=$("$prefix/bin/mpichversion" | sed -n 's/^MPICH Device:[[:space:]]*//p')
case "$device" in
ch4:ofi*) ;;
*)
	echo "SKIP: $prefix is MPICH's '$device' device, not ch4:ofi"
	exit 77
	;;
esac
if [ ! -r "$trace" ]; then
	echo "run_mpich: FAIL: the trace library $trace is missing"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in braid_mpi braid_osc; do
	if ! "$prefix/bin/mpicc" -O2 -o "$tmp/$p" "$src/$p.c" 2>"$tmp/cc.log"; then
		echo "run_mpich: FAIL: $prefix/bin/mpicc could not build $p.c:"
		cat "$tmp/cc.log"
		exit 1
	fi
done
echo "run_mpich: $("$prefix/bin/mpichversion" | sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p')," \
	"device $device, libfabric $(ldd "$tmp/braid_mpi" | awk '/libfabric\.so/ { print $3 }')"

. "$(dirname "$0")/wire_count.sh"
wire_log_env
fail=0
die() {
	echo "run_mpich: FAIL: $*"
	fail=1
}

# a sanitized build's trace library needs the sanitizer's runtime loaded first
preload=$trace
asan=$(ldd "$trace" 2>/dev/null | awk '/libasan\.so/ { print $3 }')
[ -n "$asan" ] && preload="$asan $trace"

# run NAME: 2 ranks of $tmp/NAME over braid (FI_PROVIDER, libfabric's own filter), MPICH's
# summary on; its output in $tmp/NAME.log
run() {
	local name=$1 before after rc
	before=$(udp_out)
	FI_PROVIDER=braid FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo} FI_BRAID_LAYERING=0 \
		MPIR_CVAR_DEBUG_SUMMARY=1 LD_PRELOAD="$preload" \
		timeout -k 10 240 "$prefix/bin/mpiexec" -launcher fork -n 2 "$tmp/$name" \
		>"$tmp/$name.log" 2>&1
	rc=$?
	after=$(udp_out)
	local_dgrams=$(local_sent "$tmp/$name.log")
	sent=$((after - before + local_dgrams))
	grep -E "^$name|MISMATCH|rank check failed|Fatal|[Ee]rror" "$tmp/$name.log" |
		grep -v -e '^ofi_trace: ' -e ':braid:' | head -20
	[ "$rc" = 124 ] && die "$name: mpiexec timed out (240 s): hang"
	[ "$rc" -ne 0 ] && die "$name: mpiexec exit $rc"
	# MPICH's own word for its provider (rank 0 prints the summary)
	chosen=$(sed -n 's/^libfabric provider: \([^ ]*\) - .*/\1/p' "$tmp/$name.log" | sort -u)
	echo "  $name: MPICH's libfabric provider: ${chosen:-none reported}; $((sent - local_dgrams))" \
		"UDP datagrams, $local_dgrams through local peers' shared memory"
	[ "${FI_BRAID_SHM:-1}" != 0 ] && [ "$local_dgrams" -eq 0 ] &&
		die "$name: the ranks did not reach each other through shared memory"
	[ "$chosen" = braid ] || die "$name: MPICH did not report running over braid"
	# seen from inside each rank: libmpi opened braid's RDM endpoint, and no other provider
	[ "$(grep -c '^ofi_trace: .* caller=libmpi[^ ]* prov=braid ep_type=FI_EP_RDM ' \
		"$tmp/$name.log")" -ge 2 ] || die "$name: libmpi did not open braid's RDM endpoint in both ranks"
	grep '^ofi_trace: ' "$tmp/$name.log" | grep -v ' prov=braid ' &&
		die "$name: a provider other than braid was opened"
	field() { sed -n "s/.* $1=\([0-9]*\) .*/\1/p"; }
	while read -r line; do
		[ -z "$line" ] && continue
		[ "$(echo "$line" | field errors)" -eq 0 ] || die "$name: braid refused calls: $line"
	done < <(grep '^ofi_trace: ' "$tmp/$name.log")
}

echo "run_mpich: two-sided and collectives (braid_mpi)"
run braid_mpi
grep -q '^braid_mpi: .*; PASS' "$tmp/braid_mpi.log" || die "braid_mpi did not report PASS"
# 64 MiB each way, twice, at most 64 KiB per datagram
[ "$sent" -ge 4000 ] || die "too few datagrams ($sent): the traffic did not go through braid"

echo "run_mpich: one-sided (braid_osc)"
run braid_osc
grep -q '^braid_osc: PASS' "$tmp/braid_osc.log" || die "braid_osc did not report PASS"
grep '^ofi_trace: ' "$tmp/braid_osc.log" | sed 's/^ofi_trace: /    /'
# MPICH's MPI_Put and MPI_Get over braid's fi_write and fi_read, in each rank. Its accumulates
# and atomics travel as its own active messages (braid's tagged messages): ch4:ofi keeps network
# atomics off for windows that a process could also reach through shared memory (its "auto"
# mode), as every window here can.
rma=$(grep '^ofi_trace: .* caller=libmpi[^ ]* prov=braid ' "$tmp/braid_osc.log")
while read -r line; do
	[ -z "$line" ] && continue
	w=$(echo "$line" | sed -n 's/.* write=\([0-9]*\) .*/\1/p')
	r=$(echo "$line" | sed -n 's/.* read=\([0-9]*\) .*/\1/p')
	[ "${w:-0}" -gt 0 ] && [ "${r:-0}" -gt 0 ] ||
		die "a rank's MPICH made no fi_write or fi_read on braid: $line"
done <<<"$rma"
[ "$sent" -ge 1000 ] || die "too few datagrams ($sent): the traffic did not go through braid"

if [ "$fail" -ne 0 ]; then
	for p in braid_mpi braid_osc; do
		[ -f "$tmp/$p.log" ] || continue
		echo "run_mpich: the last lines of $p's log:"
		tail -30 "$tmp/$p.log"
	done
	exit 1
fi
echo "run_mpich: PASS"
