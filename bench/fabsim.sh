#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/fabsim.sh: the fabric simulator's scenarios, RD against RC, in virtual time (about 1,000 hosts, or tools/fabric's 8), with plots.
#
#   bench/fabsim.sh [BUILD_DIR] [OUT_DIR] [braid_fabsim options: --small, --profile wire-8, --seed N, ...]
#
# Runs build/bench/fabsim/braid_fabsim (every scenario, both transports) into OUT_DIR
# (default fabsim-out): flows.csv, summary.csv, summary.md, cdf_*.dat (--profile wire-8:
# figures.csv, ticks_*.dat too); then gnuplot draws fct_cdf.png (every scenario's FCT CDF,
# RD against RC), fct_pct.png (p50/p99/p999) and, for wire-8, goodput.png (each scenario's
# goodput over time, RD against RC).
set -eu
CLI_NAME=fabsim.sh
usage() {
	cat <<'USAGE'
usage: bench/fabsim.sh [BUILD_DIR] [OUT_DIR] [braid_fabsim options]
Runs BUILD_DIR/bench/fabsim/braid_fabsim (every scenario, RD and RC, about 1,000 hosts in
virtual time, or with --profile wire-8 tools/fabric's 8-host leaf-spine) into OUT_DIR, then
draws fct_cdf.png, fct_pct.png (and for wire-8 goodput.png) there with gnuplot.
  BUILD_DIR  a braid build directory (default build)
  OUT_DIR    where the results go (default fabsim-out)
  braid_fabsim options: --profile dc|dc-small|wire-8, --small, --seed N,
             --scenario NAME (repeatable), --transport rd|rc, --reroute-ms MS, --no-drop,
             --host-mbit M, --spine-mbit M, --link-us US, --queue-ms MS (braid_fabsim --help)
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
	--small | --no-drop | --seed=* | --scenario=* | --transport=* | --reroute-ms=* | \
	--profile=* | --host-mbit=* | --spine-mbit=* | --link-us=* | --queue-ms=*)
		set -- "$@" "$a" ;;
	--seed | --scenario | --transport | --reroute-ms | --profile | --host-mbit | --spine-mbit | \
	--link-us | --queue-ms)
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
	# wire-8: each scenario's goodput over time (every stream's delivered bytes per tick)
	tscens=$(ls "$out"/ticks_*_rd.dat 2>/dev/null | sed 's/.*ticks_\(.*\)_rd\.dat/\1/')
	if [ -n "$tscens" ]; then
		tn=$(echo "$tscens" | wc -w)
		echo "set output '$out/goodput.png'"
		echo "set multiplot layout 2,$(( (tn + 1) / 2 )) title 'braid fabric simulator: goodput over time (every stream summed), RD against RC'"
		echo "unset logscale; set style data lines; set xtics norotate; set key top right"
		echo "set xlabel 'time (ms)'; set ylabel 'goodput (Mbit/s)'; set yrange [0:*]; set xrange [*:*]"
		for s in $tscens; do
			echo "set title '$s'"
			echo "plot '$out/ticks_${s}_rd.dat' using 1:2 with steps lw 2 title 'braid RD', \
'$out/ticks_${s}_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'"
		done
		echo "unset multiplot"
	fi
} > "$out/plots.gp"
rm -f "$out/goodput.png"
gnuplot "$out/plots.gp"
echo "plots: $out/fct_cdf.png $out/fct_pct.png$([ -e "$out/goodput.png" ] && echo " $out/goodput.png")"
