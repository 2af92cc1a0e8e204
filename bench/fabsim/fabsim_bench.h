/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_bench.h: the fabric simulator program's scenarios and reports (bench/fabsim/fabsim_main.c runs them). */
#ifndef FABSIM_BENCH_H
#define FABSIM_BENCH_H

#include <stdio.h>

#include "fabsim.h"

/** struct fabsim_shape - the size of a run: topology and workload knobs. */
struct fabsim_shape {
	/** @tors, @hosts_per_tor, @spines: the fabric. */
	int tors, hosts_per_tor, spines;
	/** @perm_flows, @perm_size: flows per host of the permutation (one after another) and their bytes. */
	int perm_flows;
	uint64_t perm_size;
	/** @a2a_hosts, @a2a_size: hosts of the all-to-all (spread over the ToRs) and bytes per pair. */
	int a2a_hosts;
	uint64_t a2a_size;
	/** @incast_senders, @incast_size: senders into host 0 and bytes each. */
	int incast_senders;
	uint64_t incast_size;
	/** @fail_at_ns: when the failure scenario's link fails; @reroute_ns: when routing reacts. */
	uint64_t fail_at_ns, reroute_ns;
	/** @loss: the lossy link's loss. */
	double loss;
	/** @limit_ns: virtual time a run may take. */
	uint64_t limit_ns;
	/**
	 * @no_drop: queues without a limit (nothing is dropped for want of room):
	 * a stand-in for a lossless (PFC) fabric, without its pauses.
	 */
	bool no_drop;
};

/** fabsim_shape_default() - about 1,000 hosts (@small false) or 64 hosts (@small true). */
void fabsim_shape_default(struct fabsim_shape *s, bool small);

/** struct fabsim_scenario - one scenario, ready to run with either transport. */
struct fabsim_scenario {
	/** @name, @what: its short name and one line saying what it is. */
	const char *name;
	char what[200];
	/** @net: the fabric. */
	struct braid_fabsim_cfg net;
	/** @flows, @nflows: the workload (the scenario owns it). */
	struct fabsim_flow *flows;
	size_t nflows;
	/** @bad_tor, @bad_spine: the ToR-spine link the scenario breaks or makes lossy (-1: none). */
	int bad_tor, bad_spine;
	/** @fail_at_ns: 0, or when that link fails (both directions, for the rest of the run). */
	uint64_t fail_at_ns;
	/** @loss: its loss, both directions. */
	double loss;
	/** @limit_ns: virtual time the run may take. */
	uint64_t limit_ns;
};

/* the scenarios fabsim_scenario_build() knows, in the order --all runs them */
extern const char *const fabsim_scenario_names[];

/**
 * fabsim_scenario_build() - scenario @name at @shape with @seed (random
 * permutation). Return: 0, -FI_ENOENT (no such scenario), -FI_ENOMEM.
 * The caller must eventually call fabsim_scenario_free().
 */
int fabsim_scenario_build(const char *name, const struct fabsim_shape *shape, uint64_t seed,
			  struct fabsim_scenario *sc);

/** fabsim_scenario_apply() - put the scenario's failure or loss on the freshly opened @net. */
int fabsim_scenario_apply(const struct fabsim_scenario *sc, struct braid_fabsim *net);

/** fabsim_scenario_free() - free the workload. */
void fabsim_scenario_free(struct fabsim_scenario *sc);

/** struct fabsim_result - what one transport did in one scenario. */
struct fabsim_result {
	/** @scenario, @transport: names. */
	const char *scenario, *transport;
	/** @flows, @failed, @corrupt: flows, of them not delivered (errors, time limit), of them with wrong data. */
	size_t flows, failed, corrupt;
	/** @p50_ns, @p99_ns, @p999_ns, @max_ns: FCT percentiles (UINT64_MAX: a failed flow). */
	uint64_t p50_ns, p99_ns, p999_ns, max_ns;
	/** @marked, @marked_p99_ns: flows the scenario marked (they may cross its bad link) and their p99. */
	size_t marked;
	uint64_t marked_p99_ns;
	/** @cnt: the transport's packet counts. */
	struct fabsim_counters cnt;
	/** @queue_drops, @down_drops, @loss_drops, @ecn_marks: the fabric's, over every link. */
	uint64_t queue_drops, down_drops, loss_drops, ecn_marks;
	/** @virt_ns: virtual time the run took; @wall_s: wall-clock seconds. */
	uint64_t virt_ns;
	double wall_s;
};

/**
 * fabsim_result_collect() - fill @r from a finished @run over @net; write
 * each flow as a CSV row to @flows_csv (when not NULL) and the FCT CDF to
 * @cdf (when not NULL; "fct_us fraction" lines).
 */
void fabsim_result_collect(struct fabsim_result *r, const struct fabsim_scenario *sc,
			   struct fabsim_run *run, FILE *flows_csv, FILE *cdf);

/** fabsim_flows_csv_header() - the header row of the per-flow CSV. */
void fabsim_flows_csv_header(FILE *f);

/**
 * fabsim_report_summary() - the results as CSV (@csv) and as a Markdown
 * table with the targets checked (@md, and stdout).
 */
void fabsim_report_summary(const struct fabsim_result *r, size_t n, FILE *csv, FILE *md);

#endif /* FABSIM_BENCH_H */
