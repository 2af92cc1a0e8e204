/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_sim.h: an in-process, seeded, virtual-time fabric of nodes joined by N parallel paths. */
#ifndef BRAID_SIM_H
#define BRAID_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The sim moves datagrams between @nodes nodes over @paths parallel paths
 * (think: ECMP routes through a fabric). Time is virtual: every call takes
 * "now" in nanoseconds from the caller, and the sim never reads a clock.
 * Everything random (loss, jitter, duplication, reordering) comes from one
 * seeded generator, so a run is identical for the same seed and calls.
 *
 * Each path applies, to every packet that enters it: loss (probability),
 * then a serialisation delay at @rate_bps (packets queue behind each other
 * on the path: a rate-limited path builds a queue and its delay grows),
 * then a propagation delay of @delay_ns plus uniform jitter in
 * [0, @jitter_ns], then with probability @reorder an extra @reorder_ns,
 * and with probability @dup a second copy delivered @dup_gap_ns later.
 * A path or node that is down drops everything that enters it (or leaves
 * it: a down node neither sends nor receives). A node may have a link rate
 * of its own (braid_sim_set_node_rate): its packets cross it, one after
 * another, before they enter their path, as a host's NIC before the fabric.
 *
 * Time: the sim keeps the latest "now" any call has given it; a call with an
 * earlier now is treated as happening at that latest time (recv still only
 * returns packets due by the now it is given). Loss is drawn before the
 * serialiser, so a lost packet takes no room on the path; serialisation
 * takes len * 8 * 1e9 / rate_bps ns, rounded up to a whole ns.
 */

/** struct braid_sim_path_cfg - the behaviour of one path. */
struct braid_sim_path_cfg {
	/** @delay_ns: one-way propagation delay. */
	uint64_t delay_ns;
	/** @jitter_ns: extra uniform random delay in [0, jitter_ns]. */
	uint64_t jitter_ns;
	/** @rate_bps: bits per second of the path; 0 = unlimited. */
	uint64_t rate_bps;
	/** @loss: probability a packet is dropped, 0..1. */
	double loss;
	/** @dup: probability a packet is delivered twice, 0..1. */
	double dup;
	/** @dup_gap_ns: delay of the duplicate after the original. */
	uint64_t dup_gap_ns;
	/** @reorder: probability a packet is held back by @reorder_ns, 0..1. */
	double reorder;
	/** @reorder_ns: the hold-back. */
	uint64_t reorder_ns;
	/** @ecn_threshold_ns: mark ECN CE when the path's queue delay exceeds this; 0 = never. */
	uint64_t ecn_threshold_ns;
};

/** struct braid_sim_pkt - a delivered packet (braid_sim_recv). */
struct braid_sim_pkt {
	/** @data: the bytes; valid until the next braid_sim_recv on this sim. */
	const uint8_t *data;
	/** @len: bytes. */
	size_t len;
	/** @src: sending node. */
	int src;
	/** @dst: receiving node. */
	int dst;
	/** @path: path it travelled. */
	int path;
	/** @ecn_ce: marked congestion-experienced on the way. */
	bool ecn_ce;
};

/**
 * struct braid_sim_stats - counters of one path.
 *
 * At any time: sent + dups == delivered + lost + down_drops + (copies still
 * in flight on the path).
 */
struct braid_sim_stats {
	/** @sent: packets braid_sim_send() put on the path (dropped ones too). */
	uint64_t sent;
	/** @delivered: copies handed out by braid_sim_recv() (duplicates too). */
	uint64_t delivered;
	/** @lost: packets dropped by random loss. */
	uint64_t lost;
	/** @dups: extra copies made by duplication. */
	uint64_t dups;
	/** @down_drops: copies dropped by a down path, source or destination node. */
	uint64_t down_drops;
	/** @ecn_marks: packets marked CE (a duplicate of one is not counted again). */
	uint64_t ecn_marks;
	/** @bytes: bytes of the @sent packets. */
	uint64_t bytes;
};

struct braid_sim;

/**
 * braid_sim_create() - a fabric of @nodes nodes and @paths paths, every path
 * configured as @cfg (NULL: an ideal path, all zero), random generator
 * seeded with @seed.
 * Return: the sim, or NULL (bad arguments: nodes < 1, paths < 1 or > 256,
 * probabilities outside 0..1; or out of memory).
 * The caller must eventually call braid_sim_destroy().
 */
struct braid_sim *braid_sim_create(uint64_t seed, int nodes, int paths,
				   const struct braid_sim_path_cfg *cfg);

/** braid_sim_destroy() - free the sim and every packet in flight. */
void braid_sim_destroy(struct braid_sim *sim);

/** braid_sim_set_path() - reconfigure one path (packets already in flight keep their times). Return 0 or -FI_EINVAL. */
int braid_sim_set_path(struct braid_sim *sim, int path, const struct braid_sim_path_cfg *cfg);

/** braid_sim_path_up() - bring a path down (false) or up (true) at once. Return 0 or -FI_EINVAL. */
int braid_sim_path_up(struct braid_sim *sim, int path, bool up);

/**
 * braid_sim_node_up() - bring a node down or up at once. A node going down
 * loses what is in flight to it: every packet due after the sim's latest now
 * (packets due by then have arrived and stay for braid_sim_recv()).
 * Return 0 or -FI_EINVAL.
 */
int braid_sim_node_up(struct braid_sim *sim, int node, bool up);

/**
 * braid_sim_set_node_rate() - give node @node a link of @rate_bps (0 =
 * unlimited, the default) between it and the paths: every packet it sends
 * is serialised on that link first (a host's NIC), then enters its path.
 * Return 0 or -FI_EINVAL.
 */
int braid_sim_set_node_rate(struct braid_sim *sim, int node, uint64_t rate_bps);

/**
 * Scheduled events: take effect, in time order (ties in scheduling order),
 * when a braid_sim_advance(), braid_sim_send() or braid_sim_recv() call's
 * now reaches @at_ns. A NODE_DOWN at T loses the packets to the node due
 * after T; a PATH_DOWN drops what enters the path from then on (packets
 * already on it still arrive).
 */
enum braid_sim_event {
	BRAID_SIM_PATH_DOWN,
	BRAID_SIM_PATH_UP,
	BRAID_SIM_NODE_DOWN,
	BRAID_SIM_NODE_UP,
};

/** braid_sim_schedule() - apply @event to path/node @index at time @at_ns. Return 0 or -FI_EINVAL / -FI_ENOMEM. */
int braid_sim_schedule(struct braid_sim *sim, uint64_t at_ns, enum braid_sim_event event, int index);

/**
 * braid_sim_advance() - move the sim's clock to @now and apply the scheduled
 * events due by then (send and recv do this too).
 * Return: the number of events applied, or -FI_EINVAL for a NULL sim.
 */
int braid_sim_advance(struct braid_sim *sim, uint64_t now);

/**
 * braid_sim_send() - put a packet on the fabric at time @now: copies @len
 * bytes of @data (the caller may reuse its buffer at once).
 * Return: 0 (accepted; it may still be lost on the way), -FI_EINVAL for bad
 * nodes/path or len 0 or > 65536, -FI_ENOMEM.
 */
int braid_sim_send(struct braid_sim *sim, uint64_t now, int src, int dst, int path,
		   const void *data, size_t len);

/**
 * braid_sim_recv() - packets for node @node whose delivery time is <= @now,
 * earliest first (ties in send order), at most @max.
 * Return: the number written to @pkts, or -FI_EINVAL (bad node, @max < 0,
 * @pkts NULL with @max > 0). Their data stays valid until the next
 * braid_sim_recv() call on this sim (or braid_sim_destroy()).
 */
int braid_sim_recv(struct braid_sim *sim, uint64_t now, int node,
		   struct braid_sim_pkt *pkts, int max);

/** braid_sim_next_event() - the earliest delivery or scheduled event time, or UINT64_MAX if none. */
uint64_t braid_sim_next_event(const struct braid_sim *sim);

/** braid_sim_path_stats() - counters of @path (NULL for a bad index). */
const struct braid_sim_stats *braid_sim_path_stats(const struct braid_sim *sim, int path);

/** braid_sim_in_flight() - packets not yet delivered. */
size_t braid_sim_in_flight(const struct braid_sim *sim);

#endif /* BRAID_SIM_H */
