# SPDX-License-Identifier: BSD-2-Clause
# ab_plots.gp: tools/ab's plots, from the data files it writes in DIR/plot/.
#   gnuplot -e "dir='build/ab'; gv='braid braid_ofi_rxm tcp_ofi_rxm'; \
#               cdf='clean:braid loss1:braid'; tl='braid tcp_ofi_rxm'; tup=1000" tools/ab_plots.gp
# gv: contenders in goodput_vs_loss.dat (its column order); cdf: scenario:contender pairs with
# a cdf_SCENARIO_CONTENDER.dat; tl: contenders with a timeline_CONTENDER.dat (time from the
# failure); tup: when the path came back, ms after the failure (-1: unknown); tlfail: contenders
# whose path failure run failed. tools/ab fills these in.
if (!exists("dir")) dir = "build/ab"
if (!exists("gv")) gv = ""
if (!exists("cdf")) cdf = ""
if (!exists("tl")) tl = ""
if (!exists("tup")) tup = -1
if (!exists("tlfail")) tlfail = ""
pd = dir . "/plot/"

# the contenders' names as the legend shows them, and one colour each
name(c) = c eq "braid" ? "braid (RD, sprayed)" : \
          c eq "braid_ofi_rxm" ? "braid;ofi_rxm (RoCEv2 RC)" : \
          c eq "braid_ofi_rxd" ? "braid;ofi_rxd" : \
          c eq "tcp_ofi_rxm" ? "tcp;ofi_rxm" : c
colour(c) = c eq "braid" ? "#1b7837" : c eq "braid_ofi_rxm" ? "#d6604d" : \
            c eq "braid_ofi_rxd" ? "#8073ac" : c eq "tcp_ofi_rxm" ? "#4393c3" : "#444444"

set terminal pngcairo size 1100,600 font "DejaVu Sans,11" noenhanced
set grid lc rgb "#dddddd"
set key outside right top box

if (strlen(gv) > 0) {
    set output dir . "/goodput_vs_loss.png"
    set title "1 MiB goodput with loss on one of 4 paths (median, min-max)"
    set xlabel "loss on the impaired path"
    set ylabel "goodput, Gbit/s"
    set yrange [0:*]
    set xrange [-0.3:*]
    set offsets 0, 0.3, 0, 0
    plot for [i=1:words(gv)] pd . "goodput_vs_loss.dat" \
        using 1:(column(3*i)):(column(3*i+1)):(column(3*i+2)):xtic(2) \
        with yerrorlines lw 2 pt 7 lc rgb colour(word(gv, i)) title name(word(gv, i))
    unset offsets
    set xrange [*:*]
    set yrange [*:*]
}

if (strlen(cdf) > 0) {
    # the tail is the story: the fraction of round trips slower than x, both axes log
    set output dir . "/latency_cdf.png"
    set title "Half round trip latency, 64 B ping-pong: share of round trips slower than x\n(solid: clean; dashed: 1% loss on one path)"
    set xlabel "microseconds"
    set ylabel "fraction of round trips slower"
    set logscale xy
    set format y "%g"
    set yrange [*:1]
    pair(i) = word(cdf, i)
    sc(i) = pair(i)[1:strstrt(pair(i), ":") - 1]
    ct(i) = pair(i)[strstrt(pair(i), ":") + 1:]
    dash(i) = sc(i) eq "clean" ? 1 : 2
    plot for [i=1:words(cdf)] pd . "cdf_" . sc(i) . "_" . ct(i) . ".dat" using 1:($3 > 0 ? $3 : NaN) \
        with steps lw 2 dt dash(i) lc rgb colour(ct(i)) \
        title name(ct(i)) . (sc(i) eq "clean" ? ", clean" : ", 1% loss")
    unset logscale xy
    set format y
    set yrange [*:*]
}

if (strlen(tl) > 0) {
    set output dir . "/pathdown_timeline.png"
    set title "Goodput over time, 64 KiB messages: the busiest of 4 paths black-holed, then back"
    set xlabel "ms since the path went down (each run lined up on its own failure)"
    set ylabel "goodput, Gbit/s (10 ms ticks)"
    set yrange [0:*]
    set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 3 lw 1.5 lc rgb "#000000"
    set label 1 "path down" at 0, graph 0.97 left offset 0.5, 0
    if (tup > 0) {
        set arrow 2 from tup, graph 0 to tup, graph 1 nohead dt 3 lw 1.5 lc rgb "#777777"
        set label 2 "back up" at tup, graph 0.97 left offset 0.5, 0
    }
    if (strlen(tlfail) > 0) {
        set title "Goodput over time, 64 KiB messages: the busiest of 4 paths black-holed, then back\n(no timeline for " . tlfail . ": the run failed)"
    }
    plot for [i=1:words(tl)] pd . "timeline_" . word(tl, i) . ".dat" using 1:3 \
        with steps lw 1.5 lc rgb colour(word(tl, i)) title name(word(tl, i))
}
