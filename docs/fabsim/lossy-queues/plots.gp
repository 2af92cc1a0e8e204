set terminal pngcairo size 1400,900 font ",10"
set output 'docs/fabsim/lossy-queues/fct_cdf.png'
set multiplot layout 2,3 title 'braid fabric simulator: flow completion time CDFs, RD against RC'
set logscale x; set xlabel 'FCT (us)'; set ylabel 'fraction of flows'; set key bottom right
set yrange [0:1]; set grid
set title 'alltoall'
plot 'docs/fabsim/lossy-queues/cdf_alltoall_rd.dat' using 1:2 with steps lw 2 title 'braid RD', 'docs/fabsim/lossy-queues/cdf_alltoall_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'
set title 'failure'
plot 'docs/fabsim/lossy-queues/cdf_failure_rd.dat' using 1:2 with steps lw 2 title 'braid RD', 'docs/fabsim/lossy-queues/cdf_failure_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'
set title 'incast'
plot 'docs/fabsim/lossy-queues/cdf_incast_rd.dat' using 1:2 with steps lw 2 title 'braid RD', 'docs/fabsim/lossy-queues/cdf_incast_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'
set title 'lossy'
plot 'docs/fabsim/lossy-queues/cdf_lossy_rd.dat' using 1:2 with steps lw 2 title 'braid RD', 'docs/fabsim/lossy-queues/cdf_lossy_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'
set title 'permutation'
plot 'docs/fabsim/lossy-queues/cdf_permutation_rd.dat' using 1:2 with steps lw 2 title 'braid RD', 'docs/fabsim/lossy-queues/cdf_permutation_rc.dat' using 1:2 with steps lw 2 title 'RoCE RC'
unset multiplot
set output 'docs/fabsim/lossy-queues/fct_pct.png'
set title 'FCT percentiles per scenario (log scale; a percentile that fell on a failed flow is not drawn)'
set logscale y; unset logscale x; set ylabel 'FCT (us)'; set xlabel ''; set yrange [*:*]
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set key top left; set xtics rotate by -30
plot 'docs/fabsim/lossy-queues/pct.dat' using 3:xtic(sprintf('%s %s', stringcolumn(1), stringcolumn(2))) title 'p50', '' using 4 title 'p99', '' using 5 title 'p999'
