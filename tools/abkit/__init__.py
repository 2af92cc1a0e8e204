# SPDX-License-Identifier: BSD-2-Clause
"""abkit: the library behind tools/ab, braid's A/B benchmark over the emulated multipath fabric.

tools/ab is the command; the work is here, one concern per module:

- common: the contenders, the hosts, names and number formatting shared by the others
- plan: the scenarios and measurements, their order and how long they take
- fabric: tools/fabric (up, down, impairing a path, its per-path counters) and the loopback
- braid_ab: bench/braid_ab's command lines and its output
- schedule: what one run does to the fabric, and when (the busiest path, the switchback)
- runner: one run of one contender: both sides started, watched, timed out, read
- stats: one run's figures (percentiles, the switchback's periods, goodput after an
  impairment, fairness) and several runs' (median and spread)
- timeline: the path failure run's stall and its goodput before and after
- pathview: braid's own per-path view of the path failure, from braid-stat
- targets: the targets judged per repetition
- report: results.csv, the progress line and summary.md
- plots: the data files for tools/ab_plots.gp, and gnuplot
- campaign: the whole A/B: every repetition, the fabric up and down, the report at the end
- cli: the options and main()
"""
