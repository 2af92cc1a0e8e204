#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_osc.sh: MPI one-sided communication over braid's native RDM endpoint, the way Open MPI
# 4.1 does it on an ofi network: osc/rdma on btl/ofi (fi_write, fi_read, fi_atomic,
# fi_fetch_atomic, fi_compare_atomic on an FI_RMA|FI_ATOMIC endpoint), with the ofi MTL over
# braid for the two-sided traffic (fences, barriers). Runs OSC_PROGRAM (braid_osc) and proves
# what ran:
#   - the one-sided component: osc/rdma, the only osc component opened (--mca osc rdma,
#     osc_base_verbose: "found loaded component rdma", one "rdma component destroying window"
#     per window and rank), so not osc/pt2pt (which would ride on send/recv);
#   - btl/ofi's provider: exactly "braid" (not "braid;ofi_rxm", "braid;ofi_rxd", tcp), as seen
#     from inside each rank by TRACE_LIB (ofi_trace.so, LD_PRELOADed: which DSO opened which
#     provider, and the RMA and atomic calls it made on that endpoint: Open MPI 4.1.4's
#     btl/ofi says nothing of its choice outside debug builds);
#   - the BTLs: ofi and self only (no vader, no sm, no tcp to carry the traffic instead);
#   - the wire: datagrams (UDP ones counted by the kernel, those through local peers' shared
#     memory by braid: wire_count.sh), at least the RMA bytes' worth.
# Usage: run_osc.sh OSC_PROGRAM TRACE_LIB [NODES]
#   NODES 1 (default): every rank on this host, one node for Open MPI. osc/rdma then keeps its
#     lock and window state in shared memory and reaches an MPI_Win_allocate window directly,
#     so braid carries the data of MPI_Win_create windows and the atomics on them.
#   NODES 2: two emulated nodes on this host: mpirun starts one orted per "node" through a
#     stand-in for ssh that runs it in its own UTS namespace (its own hostname; same network
#     namespace, so braid still runs on lo). Open MPI then treats the ranks as remote to each
#     other: osc/rdma's locks, MPI_Win_allocate windows and everything else go through btl/ofi.
#     Needs root (unshare --uts); skips otherwise.
# OSC_NP: the number of ranks (default 2).
set -uo pipefail
prog=$1
trace=$2
nodes=${3:-1}
np=${OSC_NP:-2}

if ! command -v mpirun >/dev/null; then
	echo "SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
if [ ! -r "$trace" ]; then
	echo "run_osc: FAIL: the trace library $trace is missing"
	exit 1
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

placement=(--oversubscribe)
if [ "$nodes" = 2 ]; then
	if ! command -v unshare >/dev/null || ! unshare --uts true 2>/dev/null; then
		echo "SKIP: two emulated nodes need root and unshare --uts (util-linux)"
		exit 77
	fi
	# the "ssh" mpirun uses to start an orted on host $1: here, under hostname $1
	cat >"$tmp/rsh" <<-'EOF'
		#!/bin/sh
		host=$1
		shift
		exec unshare --uts /bin/sh -c "hostname '$host' && $*"
	EOF
	chmod +x "$tmp/rsh"
	per=$(((np + 1) / 2))
	# --bind-to none: each orted believes it has the whole machine and would bind its
	# first rank to the same core as the other's
	placement=(--host "osc-node-a:$per,osc-node-b:$per" --mca plm_rsh_agent "$tmp/rsh"
		--mca plm_rsh_no_tree_spawn 1 --bind-to none)
elif [ "$nodes" != 1 ]; then
	echo "run_osc: NODES must be 1 or 2"
	exit 2
fi

export FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo}
# braid's own RDM endpoint only: the layered braid;ofi_rxm and braid;ofi_rxd are offered by
# their full names only (fi_braid(7)), so a request naming no provider never gets them
export FI_BRAID_LAYERING=0
# a sanitized build's trace library needs the sanitizer's runtime loaded first
# (the MPI program is not built with it)
preload=$trace
asan=$(ldd "$trace" 2>/dev/null | awk '/libasan\.so/ { print $3 }')
[ -n "$asan" ] && preload="$asan $trace"
fwd=(-x FI_BRAID_IFACE -x FI_BRAID_LAYERING -x "LD_PRELOAD=$preload")
[ -n "${FI_PROVIDER_PATH:-}" ] && fwd+=(-x FI_PROVIDER_PATH)

. "$(dirname "$0")/wire_count.sh"
wire_log_env
fwd+=(-x FI_LOG_LEVEL -x FI_LOG_PROV)
[ -n "${FI_BRAID_SHM:-}" ] && fwd+=(-x FI_BRAID_SHM)

before=$(udp_out)
# Debian disables the ofi MTL and BTL (and osc/pt2pt) in /etc/openmpi/openmpi-mca-params.conf;
# ask for them explicitly. btl_ofi_mode 0 (one-sided only, 4.1's default): btl/ofi asks for
# FI_RMA|FI_ATOMIC and carries no two-sided traffic.
timeout -k 10 240 mpirun "${root[@]}" "${placement[@]}" -np "$np" "${fwd[@]}" \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include braid --mca mtl_ofi_verbose 1 \
	--mca osc rdma --mca osc_base_verbose 100 \
	--mca btl ofi,self --mca btl_ofi_provider_include braid --mca btl_ofi_mode 0 \
	--mca btl_base_verbose 100 \
	"$prog" >"$log" 2>&1
rc=$?
after=$(udp_out)
local_dgrams=$(local_sent "$log")
sent=$((after - before + local_dgrams))
# the program's own report, then what the proof rests on
grep -E '^braid_osc|MISMATCH' "$log"
grep -E 'Signal|BTL OFI|failed|ERROR|[Ee]rror' "$log" | grep -v -e '^ofi_trace: ' \
	-e 'not in include list' -e ':braid:' | head -20
fail=0
die() {
	echo "run_osc: FAIL: $*"
	fail=1
}
[ "$rc" = 124 ] && die "mpirun timed out (240 s): hang"
[ "$rc" -ne 0 ] && die "mpirun exit $rc"
grep -q '^braid_osc: PASS' "$log" || die "braid_osc did not report PASS"

echo "run_osc: what ran ($np ranks, $nodes node(s) for Open MPI):"
# 1. the osc component
osc_loaded=$(sed -n 's/.*components_open: found loaded component \([a-z0-9_]*\)$/\1/p' "$log" |
	sort | uniq -c)
echo "  osc and btl components opened (how many ranks opened each):"
echo "$osc_loaded" | sed 's/^/    /'
windows=$(grep -c 'rdma component destroying window with id' "$log")
echo "  osc/rdma windows freed: $windows"
for c in pt2pt sm ucx monitoring; do
	grep -q "components_open: found loaded component $c\$" "$log" &&
		die "osc component $c was opened"
done
[ "$(grep -c 'components_open: found loaded component rdma$' "$log")" -eq "$np" ] ||
	die "osc/rdma was not opened by every rank"
[ "$windows" -ge $((np * 2)) ] || die "fewer osc/rdma windows than expected ($windows)"
# 2. the BTLs
for c in vader sm tcp openib uct; do
	grep -q "components_open: found loaded component $c\$" "$log" && die "btl $c was opened"
done
[ "$(grep -c 'components_open: found loaded component ofi$' "$log")" -eq "$np" ] ||
	die "btl/ofi was not opened by every rank"
# 3. the providers: the MTL's report, and what each rank's btl/ofi and mtl/ofi opened
mtl=$(sed -n 's/.*mtl:ofi:prov: \(.*\)$/\1/p' "$log" | sort | uniq -c)
echo "  mtl/ofi provider (its report): $mtl"
[ "$(sed -n 's/.*mtl:ofi:prov: \(.*\)$/\1/p' "$log" | grep -cxF braid)" -eq "$np" ] ||
	die "the ranks' ofi MTL did not all run over braid"
btl_lines=$(grep '^ofi_trace: .* caller=mca_btl_ofi.so ' "$log")
echo "  seen inside each rank (ofi_trace):"
grep '^ofi_trace: ' "$log" | sed 's/^ofi_trace: /    /'
[ "$(grep -c 'ofi_trace: .* caller=mca_btl_ofi.so prov=braid ep_type=FI_EP_RDM ' "$log")" \
	-eq "$np" ] || die "btl/ofi did not open braid's RDM endpoint exactly once in every rank"
grep '^ofi_trace: .* caller=mca_btl_ofi.so ' "$log" | grep -v ' prov=braid ' &&
	die "btl/ofi opened a provider other than braid"
grep '^ofi_trace: ' "$log" | grep -v ' prov=braid ' && die "a provider other than braid was opened"
# every rank's btl/ofi moved data and ran atomics through braid, without an error
field() { sed -n "s/.* $1=\([0-9]*\) .*/\1/p"; }
total_bytes=0
while read -r line; do
	for f in write read fetch_atomic compare_atomic; do
		[ "$(echo "$line" | field $f)" -gt 0 ] || die "a rank's btl/ofi made no $f: $line"
	done
	[ "$(echo "$line" | field errors)" -eq 0 ] || die "braid refused btl/ofi calls: $line"
	total_bytes=$((total_bytes + $(echo "$line" | field write_bytes) + $(echo "$line" | field read_bytes)))
done <<<"$btl_lines"
if [ "$nodes" = 2 ]; then
	# osc/rdma's locks are network atomics now: fi_atomic (unlock) must have been used
	while read -r line; do
		[ "$(echo "$line" | field atomic)" -gt 0 ] || die "no fi_atomic on a remote lock: $line"
	done <<<"$btl_lines"
	grep -q "^braid_osc: $np ranks on 2 nodes" "$log" || die "the ranks were not on two nodes"
fi
# 4. the wire: a datagram carries at most 64 KiB, so the RMA bytes alone need this many
need=$((total_bytes / 65536))
echo "run_osc: $sent datagrams sent during the run ($local_dgrams through local peers' shared memory); btl/ofi moved $total_bytes bytes by RMA" \
	"(at least $need datagrams)"
[ "$sent" -ge "$need" ] && [ "$sent" -ge 1000 ] ||
	die "too few datagrams ($sent): the traffic did not go through braid"
if [ "$fail" -ne 0 ]; then
	echo "run_osc: the log's last lines:"
	tail -40 "$log"
	exit 1
fi
echo "run_osc: PASS"
