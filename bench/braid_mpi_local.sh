#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# braid_mpi_local.sh: MPI ranks on one host (docs/benchmarks.md, *MPI ranks on one host*):
# bench/braid_mpi_bench under Open MPI over braid's native RDM (its local peers through shared
# memory, and again with FI_BRAID_SHM=0: its UDP wire) and over tcp;ofi_rxm (pml cm, mtl ofi,
# as tests/mpi/run_mpi.sh runs it), against Open MPI's own shared memory (pml ob1, btl
# self,vader): a 2-rank ping-pong and N-rank MPI_Alltoall and MPI_Allreduce, the four
# transports alternating in every repetition; a table per measurement with each transport's
# median time and its ratio to shared memory's in the same repetition. Each rank's ofi MTL
# must report the provider asked for, every mpirun runs under a time limit, and every FI_*
# variable set in the environment reaches the ranks (braid's settings can be compared).
set -uo pipefail
CLI_NAME=braid_mpi_local.sh
usage() {
	cat <<'USAGE'
usage: bench/braid_mpi_local.sh [--ranks N] [--reps R] [--build DIR] [--time S]
                                [--timeout S] [-o FILE]
MPI ranks on one host: Open MPI over braid's native RDM (through shared memory, and again
with FI_BRAID_SHM=0: over its UDP wire), over tcp;ofi_rxm (all pml cm, mtl ofi) and over
its own shared memory (pml ob1, btl self,vader), alternating in every repetition: a
2-rank ping-pong (half round trip, 8 B to 16 MiB) and N-rank MPI_Alltoall and
MPI_Allreduce. Prints a table per measurement: each transport's median time per
operation in microseconds over the repetitions, and the median of its ratio to shared
memory's in the same repetition (1.00 = as fast as shared memory, 2.00 = twice as long).
Fails (exit 1) if a run fails, times out, or Open MPI's ofi MTL chose another provider than
the one asked for. Every FI_* variable set in the environment is passed to the ranks
(e.g. FI_BRAID_PROGRESS_US=0 bench/braid_mpi_local.sh); FI_BRAID_IFACE defaults to lo.
With more ranks than cores, every transport runs with --mca mpi_yield_when_idle 1.
  --ranks N     ranks for alltoall and allreduce (default 8)
  --reps R      repetitions (default 3)
  --build DIR   the braid build directory (its bench/braid_mpi_bench and providers/;
                default: $BUILD, else the checkout's build/), built against the
                libfabric Open MPI loads (Debian's): libfabric offers no provider
                built for a newer API, and the braid runs fail
  --time S      seconds of timed iterations per size (default 1; braid_mpi_bench -t)
  --timeout S   time limit of each mpirun, seconds (default 180)
  -o FILE       also write every measurement to FILE:
                REP TRANSPORT MODE SIZE_BYTES USEC_PER_OP ITERATIONS RANKS
  -h, --help    this text
Exits 77 without mpirun (Open MPI's openmpi-bin).
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"

ranks=8 reps=3 budget=1 tmo=180 out=
build=${BUILD:-$(dirname "$0")/../build}
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--ranks | --reps | --build | --time | --timeout | -o)
		[ $# -ge 2 ] || cli_usage_error "$1 needs a value"
		case $1 in
		--ranks) cli_count "--ranks" "$2"; ranks=$2 ;;
		--reps) cli_count "--reps" "$2"; reps=$2 ;;
		--build) build=$2 ;;
		--time)
			awk -v s="$2" 'BEGIN { exit !(s ~ /^[0-9]*\.?[0-9]+$/ && s >= 0.01 && s <= 60) }' ||
				cli_usage_error "--time must be 0.01 to 60 seconds, not '$2'"
			budget=$2 ;;
		--timeout) cli_count "--timeout" "$2"; tmo=$2 ;;
		-o) out=$2 ;;
		esac
		shift 2 ;;
	*) cli_usage_error "unknown argument '$1'" ;;
	esac
done
[ "$ranks" -ge 2 ] || cli_usage_error "--ranks must be 2 or more"

if ! command -v mpirun >/dev/null; then
	echo "$CLI_NAME: SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
[ -d "$build" ] || { echo "$CLI_NAME: no such build directory: $build" >&2; exit 1; }
build=$(cd "$build" && pwd)
prog=$build/bench/braid_mpi_bench
if [ ! -x "$prog" ]; then
	echo "$CLI_NAME: $prog is not built (meson builds it when it finds Open MPI: libopenmpi-dev)" >&2
	exit 1
fi
export FI_PROVIDER_PATH=$build/providers
export FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo}

# what every mpirun gets: root's permission, room for more ranks than cores, the FI_*
# environment (braid's settings) passed on by name
common=(--oversubscribe)
[ "$(id -u)" = 0 ] && common+=(--allow-run-as-root)
fi_vars=$(compgen -e | grep '^FI_' | sort)
for v in $fi_vars; do
	common+=(-x "$v")
done
cores=$(nproc)

# braid-udp: braid with local peers through shared memory off (FI_BRAID_SHM=0): its UDP wire
transports=(braid braid-udp tcp vader)
declare -A provider=([braid]=braid [braid-udp]=braid [tcp]="tcp;ofi_rxm")
declare -A label=([braid]=braid [braid-udp]="braid, FI_BRAID_SHM=0" [tcp]="tcp;ofi_rxm" [vader]=vader)
modes=(pingpong alltoall allreduce)
declare -A nsizes=([pingpong]=7 [alltoall]=3 [allreduce]=3)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
: >"$results"
failures=0

# run REP TRANSPORT MODE: one mpirun; its measurements appended to $results
run() {
	local rep=$1 tr=$2 mode=$3 np=2 log=$work/log rc chosen got
	local -a args=("${common[@]}")

	[ "$mode" = pingpong ] || np=$ranks
	[ "$np" -gt "$cores" ] && args+=(--mca mpi_yield_when_idle 1)
	if [ "$tr" = vader ]; then
		args+=(--mca pml ob1 --mca btl self,vader)
	else
		# Debian disables the ofi MTL in /etc/openmpi/openmpi-mca-params.conf: asked for here
		args+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "${provider[$tr]}"
		       --mca mtl_ofi_verbose 1 --mca btl self,vader)
	fi
	[ "$tr" = braid-udp ] && args+=(-x FI_BRAID_SHM=0)
	timeout -k 10 "$tmo" mpirun "${args[@]}" -np "$np" "$prog" -t "$budget" "$mode" \
		>"$log.out" 2>"$log.err"
	rc=$?
	got=$(grep -cE "^$mode [0-9]+ " "$log.out")
	if [ "$rc" -ne 0 ] || [ "$got" -ne "${nsizes[$mode]}" ]; then
		[ "$rc" -eq 124 ] && rc="124: timed out after $tmo s"
		echo "$CLI_NAME: FAIL: ${label[$tr]} $mode, $np ranks (repetition $rep): exit $rc," \
			"$got of ${nsizes[$mode]} measurements; its last lines:" >&2
		cat "$log.out" "$log.err" | grep -v 'not in include list' | tail -n 15 >&2
		failures=$((failures + 1))
		return
	fi
	if [ "$tr" != vader ]; then
		# each rank's ofi MTL says which provider it opened: "mtl:ofi:prov: NAME"
		chosen=$(cat "$log.out" "$log.err" | sed -n 's/.*mtl:ofi:prov: \(.*\)$/\1/p')
		if [ "$(grep -cxF -- "${provider[$tr]}" <<<"$chosen")" -ne "$np" ] ||
			[ "$(grep -c . <<<"$chosen")" -ne "$np" ]; then
			echo "$CLI_NAME: FAIL: ${label[$tr]} $mode (repetition $rep): Open MPI's" \
				"ranks chose:" $(sort <<<"$chosen" | uniq -c) >&2
			failures=$((failures + 1))
			return
		fi
	fi
	grep -E "^$mode [0-9]+ " "$log.out" | sed "s/^/$rep $tr /" >>"$results"
}

commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(mpirun --version 2>/dev/null | head -n 1), checkout at $commit, build $build"
echo "# $reps repetitions; pingpong 2 ranks, alltoall and allreduce $ranks ranks;" \
	"FI_* passed: $(echo $fi_vars)"
[ "$ranks" -gt "$cores" ] &&
	echo "# $ranks ranks on $cores cores: --oversubscribe --mca mpi_yield_when_idle 1 for them"
for rep in $(seq "$reps"); do
	for mode in "${modes[@]}"; do
		# the transports alternate, each starting a repetition in turn
		for i in "${!transports[@]}"; do
			tr=${transports[$(((i + rep - 1) % ${#transports[@]}))]}
			echo "repetition $rep/$reps: ${label[$tr]} $mode" >&2
			run "$rep" "$tr" "$mode"
		done
	done
done
[ -z "$out" ] || cp "$results" "$out"

# a table per measurement: median, min, max of the time; the median (and range) of the
# ratio to vader's time in the same repetition
awk -v reps="$reps" '
function median(list, n,    a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	rep = $1; tr = $2; key = $3 " " $4
	if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key; nr[key] = $7 }
	t[rep, tr, key] = $5; times[tr, key] = times[tr, key] " " $5; reps_of[key] = reps_of[key] " " rep
}
END {
	ntr = split("braid braid-udp tcp vader", trs, " ")
	name["braid"] = "braid"; name["braid-udp"] = "braid, FI_BRAID_SHM=0"
	name["tcp"] = "tcp;ofi_rxm"; name["vader"] = "vader"
	for (k = 1; k <= nkeys; k++) {
		key = order[k]; split(key, ks, " ")
		printf "\n%s %s B, %d ranks: microseconds per operation\n", ks[1], ks[2], nr[key]
		printf "| transport | runs | median | min | max | x vader (median) | x vader (range) |\n"
		printf "| --- | --- | --- | --- | --- | --- | --- |\n"
		for (i = 1; i <= ntr; i++) {
			tr = trs[i]
			if (!((tr, key) in times)) { printf "| %s | 0 | failed | | | | |\n", name[tr]; continue }
			m = median(times[tr, key]); n = split(times[tr, key], x, " "); tlo = lo; thi = hi
			ratios = ""
			for (r = 1; r <= reps; r++)
				if (((r, tr, key) in t) && ((r, "vader", key) in t) && t[r, "vader", key] > 0)
					ratios = ratios " " t[r, tr, key] / t[r, "vader", key]
			if (ratios == "") { rm = "-"; rr = "-" }
			else { rm = sprintf("%.2f", median(ratios)); rr = sprintf("%.2f-%.2f", lo, hi) }
			printf "| %s | %d | %.2f | %.2f | %.2f | %s | %s |\n", name[tr], n, m, tlo, thi, rm, rr
		}
	}
}' "$results"

if [ "$failures" -gt 0 ]; then
	echo "$CLI_NAME: FAIL: $failures run(s) failed (above)" >&2
	exit 1
fi
