#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/fabsim.sh: the fabric simulator's scenarios, RD against RC, about 1,000 hosts in virtual time, with plots.
#
#   bench/fabsim.sh [BUILD_DIR] [OUT_DIR] [braid_fabsim options: --small, --seed N, --no-drop, ...]
#
# Runs build/bench/fabsim/braid_fabsim (every scenario, both transports) into OUT_DIR
# (default fabsim-out): flows.csv, summary.csv, summary.md, cdf_*.dat; then gnuplot draws
# fct_cdf.png (every scenario's FCT CDF, RD against RC) and fct_pct.png (p50/p99/p999).
set -eu
CLI_NAME=fabsim.sh
usage() {
	cat <<'USAGE'
usage: bench/fabsim.sh [BUILD_DIR] [OUT_DIR] [braid_fabsim options]
Runs BUILD_DIR/bench/fabsim/braid_fabsim (every scenario, RD and RC, about 1,000 hosts in
virtual time) into OUT_DIR, then draws fct_cdf.png and fct_pct.png there with gnuplot.
  BUILD_DIR  a braid build directory (default build)
  OUT_DIR    where the results go (default fabsim-out)
  braid_fabsim options: --small, --seed N, --scenario NAME (repeatable),
             --transport rd|rc, --reroute-ms MS, --no-drop (braid_fabsim --help)
  -h, --help this text
USAGE
}
. "$(dirname "$0")/../tools/cli.sh"
build=build out=fabsim-out
case ${1:-} in -*) ;; ?*) build=$1; shift ;; esac
case ${1:-} in -*) ;; ?*) out=$1; shift ;; esac
# braid_fabsim's options, checked here so that a wrong one starts nothing
n=$#
while [ $n -gt 0 ]; do
	a=$1
	shift
	n=$((n - 1))
	case $a in
	-h | --help) usage; exit 0 ;;
	--small | --no-drop | --seed=* | --scenario=* | --transport=* | --reroute-ms=*)
		set -- "$@" "$a" ;;
	--seed | --scenario | --transport | --reroute-ms)
		[ $n -gt 0 ] || cli_usage_error "$a needs a value"
		set -- "$@" "$a" "$1"
		shift
		n=$((n - 1)) ;;
	*) cli_usage_error "unknown argument '$a'" ;;
	esac
done
prog="$build/bench/fabsim/braid_fabsim"
[ -x "$prog" ] || { echo "fabsim.sh: $prog not built (meson compile -C $build)" >&2; exit 1; }
mkdir -p "$out"
echo "command: $prog --out $out $*" | tee "$out/command.txt"
nice -n 10 "$prog" --out "$out" "$@"

command -v gnuplot >/dev/null || { echo "fabsim.sh: no gnuplot: no plots" >&2; exit 0; }
if gnuplot -e 'set terminal pngcairo' 2>/dev/null; then term='pngcairo size 1400,900 font ",10"'
else term='png size 1400,900'; fi
scens=$(ls "$out"/cdf_*_rd.dat 2>/dev/null | sed 's/.*cdf_\(.*\)_rd\.dat/\1/')
n=$(echo "$scens" | wc -w)
# percentiles per scenario and transport from summary.csv (failed: -1, drawn at the top)
awk -F, 'NR > 1 { print $1, $2, $6, $7, $8 }' "$out/summary.csv" > "$out/pct.dat"
{
	echo "set terminal $term"
	echo "set output '$out/fct_cdf.png'"
	echo "set multiplot layout 2,$(( (n + 1) / 2 )) title 'braid fabric simulator: flow completion time CDFs, RD against RC'"
	echo "set logscale x; set xlabel 'FCT (us)'; set ylabel 'fraction of flows'; set key bottom right"
	echo "set yrange [0:1]; set grid"
	for s in $scens; do
		echo "set title '$s'"
		echo "plot '$out/cdf_${s}_rd.dat' using 1:2 with steps lw 2 title 'braid RD', \
'$out/cdf_${s}_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'"
	done
	echo "unset multiplot"
	echo "set output '$out/fct_pct.png'"
	echo "set title 'FCT percentiles per scenario (log scale; a percentile that fell on a failed flow is not drawn)'"
	echo "set logscale y; unset logscale x; set ylabel 'FCT (us)'; set xlabel ''; set yrange [*:*]"
	echo "set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1"
	echo "set key top left; set xtics rotate by -30"
	echo "plot '$out/pct.dat' using 3:xtic(sprintf('%s %s', stringcolumn(1), stringcolumn(2))) title 'p50', \
'' using 4 title 'p99', '' using 5 title 'p999'"
} > "$out/plots.gp"
gnuplot "$out/plots.gp"
echo "plots: $out/fct_cdf.png $out/fct_pct.png"
