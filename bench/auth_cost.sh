#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# auth_cost.sh: what an authorization key costs braid's native RDM on loopback
# (docs/benchmarks.md, *What an authorization key costs*): the loopback benchmark's single measurements (-1) with no
# key, with one (FI_BRAID_AUTH=tag, the default: the tag covers the headers) and with
# one in mac mode (every byte), the three alternating in every repetition; medians,
# and what each keyed mode costs against keyless (latency over latency, throughput
# under throughput: >1 is slower). Run it on an idle machine.
#
#   bench/auth_cost.sh BUILD_DIR [REPS]      (REPS default 5)
set -euo pipefail
CLI_NAME=auth_cost.sh
usage() {
	cat <<'USAGE'
usage: bench/auth_cost.sh BUILD_DIR [REPS]
What an authorization key costs braid's native RDM on loopback: braid_loopback_bench's
single measurements with no key, FI_BRAID_AUTH=tag and FI_BRAID_AUTH=mac, alternating in
every repetition; prints a Markdown table of medians and each keyed mode's cost.
  BUILD_DIR  a braid build directory (its bench/braid_loopback_bench and providers/)
  REPS       repetitions (default 5)
  -h, --help this text
AUTH_COST_TESTS (default "lat,8 lat,4096 lat,65536 bw,65536 bw,1048576 rate,8") picks the
measurements.
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
cli_operands 1 2 "$@"
[ $# -lt 2 ] || cli_count REPS "$2"
[ -d "$1" ] || cli_usage_error "no such build directory: $1"
build=$(cd "$1" && pwd)
reps=${2:-5}
bench=$build/bench/braid_loopback_bench
export FI_PROVIDER_PATH=$build/providers
# lat: half round trip, us; bw: MB/s; rate: M msg/s (braid_loopback_bench.c)
read -r -a tests <<< "${AUTH_COST_TESTS:-lat,8 lat,4096 lat,65536 bw,65536 bw,1048576 rate,8}"
modes=(keyless tag mac)
declare -A vals

run() {	# run MODE TEST: one measurement
	local -a env=()
	case $1 in
	tag) env=(BENCH_AUTH_KEY=bench-job-4711 FI_BRAID_AUTH=tag) ;;
	mac) env=(BENCH_AUTH_KEY=bench-job-4711 FI_BRAID_AUTH=mac) ;;
	esac
	env "${env[@]}" "$bench" -1 "braid,$2" -r 1 2>/dev/null | awk '/^braid /{print $NF}'
}

for r in $(seq "$reps"); do
	echo "repetition $r/$reps" >&2
	for t in "${tests[@]}"; do
		for m in "${modes[@]}"; do
			v=$(run "$m" "$t")
			[ -n "$v" ] || { echo "auth_cost: braid,$t ($m) gave no number" >&2; exit 1; }
			vals[$m,$t]+="$v "
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '| measurement | keyless | tag | mac | tag cost | mac cost |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for t in "${tests[@]}"; do
	k=$(echo "${vals[keyless,$t]}" | median)
	g=$(echo "${vals[tag,$t]}" | median)
	m=$(echo "${vals[mac,$t]}" | median)
	case $t in
	lat,*) unit="us, half round trip"; cost() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; } ;;
	*) [[ $t == bw,* ]] && unit="MB/s" || unit="M msg/s"
	   cost() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", b / a}'; } ;;
	esac
	printf '| %s %s B (%s) | %s | %s | %s | %s | %s |\n' "${t%%,*}" "${t#*,}" "$unit" "$k" "$g" "$m" \
		"$(cost "$g" "$k")" "$(cost "$m" "$k")"
done
