/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_path.h: per-peer path set for spraying: entropy, RTT, loss and ECN per path, and path choice. */
#ifndef BRAID_PATH_H
#define BRAID_PATH_H

#include <stdbool.h>
#include <stdint.h>

#define BRAID_PATH_AVOID	8	/* abandoned entropies a flow keeps off */
#define BRAID_PATH_BASE_WINDOW_NS	1000000000ULL	/* base RTT: min over 1-2 s */
/*
 * An ACK echoes one of the packets it acknowledges (the latest to arrive),
 * so a path's packets go unechoed for about as many as an ACK acknowledges.
 * A path none of whose packets was echoed in this many times that (packets
 * acknowledged in a row by ACKs echoing other paths) is one way only: its
 * data arrives, but the ACKs that answer it by the reverse of its route die
 * (replies hashed on their own into a dead link). It is moved.
 */
#define BRAID_PATH_UNHEARD	32

/**
 * struct braid_path - what a sender knows about one of its paths to a peer.
 * A path is named by its slot; its route is chosen by @entropy, a route
 * selector the wire turns into a route (UDP: one of its source-port sockets;
 * DPDK: the UDP source port it writes; sim: hashed to a sim path). When the
 * path turns sick or dies, its entropy is re-drawn: a value no other slot of
 * the flow uses and not one recently abandoned, so the slot really moves to
 * another route (ECMP hashes the new selector anew).
 */
struct braid_path {
	/** @entropy: the route selector, 0 .. entropies - 1. */
	uint16_t entropy;
	/** @consec_losses: losses since the last acknowledged packet on this path. */
	uint16_t consec_losses;
	/** @srtt_ns, @rttvar_ns: smoothed RTT and its variation (0 = no sample yet). */
	uint32_t srtt_ns, rttvar_ns;
	/**
	 * @min_rtt_ns: the route's base RTT: the lowest sample of the current
	 * and the previous base window (BRAID_PATH_BASE_WINDOW_NS each), so a
	 * lasting rise that no sender causes (a host's scheduling delay, a
	 * re-route) becomes the new base within two windows (0 = no sample yet).
	 */
	uint32_t min_rtt_ns;
	/** @min_cur_ns, @min_start: the lowest sample of the current window and when it began. */
	uint32_t min_cur_ns;
	/**
	 * @unheard: packets of the path acknowledged since an ACK last echoed
	 * one of them (BRAID_PATH_UNHEARD).
	 */
	uint16_t unheard;
	/**
	 * @trial: the slot was re-drawn and nothing sent on its new route has
	 * been acknowledged yet: it carries one packet until one is (a fresh
	 * route may lead into the same dead link as the old).
	 */
	bool trial;
	uint64_t min_start;
	/** @loss: EWMA of the loss fraction (0..1). */
	float loss;
	/** @ecn: EWMA of the CE-marked fraction (0..1). */
	float ecn;
	/** @sent: packets sent since the last redraw. */
	uint32_t sent;
};

/** struct braid_pathset - the paths of one flow and the chooser's state. */
struct braid_pathset {
	uint32_t n;
	uint32_t rr;
	/** @entropies: distinct route selectors the wire offers (entropy values 0 .. entropies-1). */
	uint32_t entropies;
	uint64_t rng;
	/** @avoid: entropies abandoned lately (ring, @avoid_n so far); a re-draw keeps off them. */
	uint16_t avoid[BRAID_PATH_AVOID];
	uint32_t avoid_n;
	/** @redraws: entropy re-draws so far. */
	uint32_t redraws;
	/** @agg_age, @best_srtt, @mean_loss: cross-path aggregates, refreshed every 32 picks. */
	uint32_t agg_age;
	uint32_t best_srtt;
	float mean_loss;
	struct braid_path p[];
};

/**
 * braid_pathset_init() - @n paths on entropies 0 .. n-1 (distinct routes), of
 * @entropies selectors the wire offers (0: 65536); @seed drives later choices.
 */
void braid_pathset_init(struct braid_pathset *ps, uint32_t n, uint32_t entropies, uint64_t seed);

/**
 * braid_pathset_pick() - the path for the next packet.
 * Round robin over the paths (even load on equal paths); with @health,
 * sick paths are skipped: losing far more than the others (loss EWMA above
 * 3x the mean and 10 points over it), three losses in a row, mostly
 * ECN-marked, or a smoothed RTT above twice the best path's (+20 us). @avoid (or -1) is a path not to use (the one
 * a lost packet went on), unless it is the only one.
 */
uint32_t braid_pathset_pick(struct braid_pathset *ps, bool health, int avoid);

/**
 * braid_path_is_sick() - slot @idx is sick by the aggregates of the latest
 * pick (what the chooser skips when path health is on).
 */
bool braid_path_is_sick(const struct braid_pathset *ps, uint32_t idx);

/** braid_path_rtt() - fold an RTT sample taken at @now into the path (RFC 6298 gains; base RTT). */
void braid_path_rtt(struct braid_path *p, uint64_t rtt_ns, uint64_t now);

/** braid_path_acked() - a packet sent on the path was acknowledged; @ecn if CE-marked.
 * Inline: every packet acknowledged tells its path. */
static inline void braid_path_acked(struct braid_path *p, bool ecn)
{
	p->consec_losses = 0;
	p->trial = false;
	p->loss -= p->loss / 32.0f;
	p->ecn += ((ecn ? 1.0f : 0.0f) - p->ecn) / 16.0f;
}

/* losses in a row that make a path sick: the chooser skips it but for probes */
#define BRAID_PATH_SICK_RUN	3

/**
 * braid_path_suspect() - a packet sent on the path went missing while its copy,
 * sent later on another path, arrived (the probe-answered rule, protocol.md
 * §4.5): the path is sick at once, as after BRAID_PATH_SICK_RUN losses in a row,
 * until something it carries is acknowledged; one more loss re-draws it
 * (braid_path_lost()).
 */
static inline void braid_path_suspect(struct braid_path *p)
{
	if (p->consec_losses < BRAID_PATH_SICK_RUN)
		p->consec_losses = BRAID_PATH_SICK_RUN;
}

/**
 * braid_path_lost() - a packet sent on the path was declared lost. If the
 * path is clearly worse than the others (four losses in a row, or a loss
 * EWMA above 1/4 and 3x the mean) and @redraw is set, a new entropy is
 * drawn and its statistics restart.
 * Return: true if the entropy was re-drawn.
 */
bool braid_path_lost(struct braid_pathset *ps, uint32_t idx, bool redraw);

/**
 * braid_path_redraw() - move slot @idx to a fresh route: an entropy no other
 * slot uses and not abandoned lately (while the wire offers enough), then
 * restart its statistics. The old entropy joins the avoid ring.
 */
void braid_path_redraw(struct braid_pathset *ps, uint32_t idx);

/** braid_pathset_rtt_spread() - max - min smoothed RTT over paths with samples (ns). */
uint64_t braid_pathset_rtt_spread(const struct braid_pathset *ps);

#endif /* BRAID_PATH_H */
