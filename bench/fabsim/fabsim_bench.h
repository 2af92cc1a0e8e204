/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_bench.h: the fabric simulator program's scenarios and reports (bench/fabsim/fabsim_main.c runs them). */
#ifndef FABSIM_BENCH_H
#define FABSIM_BENCH_H

#include <stdio.h>

#include "fabsim.h"

/** struct fabsim_shape - the size of a run: topology, links and workload knobs. */
struct fabsim_shape {
	/** @profile: the name of the profile it came from (fabsim_shape_profile()). */
	const char *profile;
	/** @scenarios: the scenarios of that profile, NULL-terminated, in the order a run takes them. */
	const char *const *scenarios;
	/** @tors, @hosts_per_tor, @spines: the fabric. */
	int tors, hosts_per_tor, spines;
	/** @host_bps, @fabric_bps: host - ToR and ToR - spine links, bits per second. */
	uint64_t host_bps, fabric_bps;
	/** @link_delay_ns: each link's delay (propagation and switching). */
	uint64_t link_delay_ns;
	/**
	 * @queue_bytes: each switch port's drop-tail limit; @queue_ns: when not
	 * 0, each port's limit is instead its link's rate times this.
	 */
	uint64_t queue_bytes, queue_ns;
	/** @ecn_bytes: ECN CE above this backlog (0: never). */
	uint64_t ecn_bytes;
	/** @overhead: framing bytes per packet; @mtu: the links' IP MTU (0: none, 4 KiB packets). */
	uint32_t overhead, mtu;
	/** @opts: how the runs set up their transports (the seed is the run's). */
	struct fabsim_opts opts;
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
	/**
	 * @stream_bytes, @stream_msg, @stream_window: the streams of the
	 * wire-8 profile's scenarios: each moves stream_bytes in messages of
	 * stream_msg, stream_window of them outstanding (a new one posted as
	 * one is delivered).
	 */
	uint64_t stream_bytes, stream_msg;
	int stream_window;
	/** @tick_ns: the goodput timelines' tick (wire-8). */
	uint64_t tick_ns;
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

/**
 * fabsim_shape_profile() - the shape of profile @name: "dc" (1,024 hosts,
 * fabsim_shape_default()), "dc-small" (64 hosts) or "wire-8" (the
 * namespace fabric's leaf-spine: 2 leaves x 4 hosts, 4 spines, 200 Mbit/s
 * links with 20 ms queues, MTU 1500). Return: 0 or -FI_ENOENT.
 */
int fabsim_shape_profile(struct fabsim_shape *s, const char *name);

/* the profiles fabsim_shape_profile() knows */
extern const char *const fabsim_profile_names[];

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
	/** @opts: the transports' setup (the seed is the run's). */
	struct fabsim_opts opts;
	/**
	 * @streams: its flows are streams of messages (wire-8): the report
	 * gives each stream's goodput, its timeline in ticks of @tick_ns,
	 * and for a failure the stall and the goodput before and after.
	 */
	bool streams;
	uint64_t tick_ns;
	/**
	 * @ref_ns: the time the streams' stall and goodput before and after
	 * are measured around: the failure's, and in the other scenarios of
	 * streams the same time, as a baseline (0: none).
	 */
	uint64_t ref_ns;
	/** @rx_host: the incast's receiver (-1: none): its link's busy time is reported. */
	int rx_host;
	/** @capacity_bps: what the fabric can carry of the workload (goodput is compared with it). */
	uint64_t capacity_bps;
};

/* the scenarios of the dc profiles and of wire-8, in the order a run takes them */
extern const char *const fabsim_scenario_names[];
extern const char *const fabsim_wire_scenario_names[];

/** fabsim_scenario_known() - @name is one of @shape's profile's scenarios. */
bool fabsim_scenario_known(const struct fabsim_shape *shape, const char *name);

/**
 * fabsim_scenario_build() - scenario @name of @shape's profile with @seed
 * (random permutation). Return: 0, -FI_ENOENT (no such scenario), -FI_ENOMEM.
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
	/** @streams: the figures below were measured (the scenario's flows are streams). */
	bool streams;
	/** @nstreams, @recovered: streams, of them delivered whole. */
	size_t nstreams, recovered;
	/**
	 * @goodput_bps: every stream's bytes delivered intact while they all
	 * ran (up to the first stream's end) x 8 over that time;
	 * @min_stream_bps, @max_stream_bps: the slowest and the fastest
	 * stream's bytes x 8 over its own time (a broken one: to the run's end);
	 * @done_ns: when the last stream ended (delivered whole or failed).
	 */
	double goodput_bps, min_stream_bps, max_stream_bps;
	uint64_t done_ns;
	/** @capacity_bps: the scenario's (goodput_bps is compared with it). */
	uint64_t capacity_bps;
	/** @rx_busy: the incast receiver's link busy from the first start to done_ns (0..1; -1: no incast). */
	double rx_busy;
	/**
	 * @stall_ns: the longest stall over the streams around the scenario's
	 * ref_ns (the failure): ticks with under a tenth of the stream's median
	 * tick before it (-1: no ref_ns); @before_bps, @after_bps: the streams'
	 * goodput summed, before ref_ns and after it, the stall left out.
	 */
	int64_t stall_ns;
	double before_bps, after_bps;
};

/**
 * fabsim_result_collect() - fill @r from a finished @run over @net; write
 * each flow as a CSV row to @flows_csv (when not NULL), the FCT CDF to
 * @cdf (when not NULL; "fct_us fraction" lines) and, for a scenario of
 * streams, the goodput timeline to @ticks (when not NULL; "t_ms mbit"
 * lines, every stream's delivered bytes summed per tick).
 * Return: 0 or -FI_ENOMEM.
 */
int fabsim_result_collect(struct fabsim_result *r, const struct fabsim_scenario *sc,
			  struct fabsim_run *run, FILE *flows_csv, FILE *cdf, FILE *ticks);

/** fabsim_flows_csv_header() - the header row of the per-flow CSV. */
void fabsim_flows_csv_header(FILE *f);

/**
 * fabsim_report_summary() - the results as CSV (@csv) and as a Markdown
 * table (@md, and stdout); with the dc profiles' targets checked, or (runs
 * of streams) with a second table of the streams' figures, also as CSV
 * (@fig_csv, when not NULL).
 */
void fabsim_report_summary(const struct fabsim_result *r, size_t n, FILE *csv, FILE *md,
			   FILE *fig_csv);

#endif /* FABSIM_BENCH_H */
