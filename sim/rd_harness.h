/* SPDX-License-Identifier: BSD-2-Clause */
/* rd_harness.h: drives RD engines over the sim fabric in virtual time, for the engine's tests and benchmark. */
#ifndef RD_HARNESS_H
#define RD_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid_peer.h"
#include "braid_rd.h"
#include "rd_dgram.h"
#include "braid_sim.h"

#define H_MAX_NODES	16
#define H_MAX_COMPS	65536

struct h_node {
	struct braid_rd *rd;
	struct braid_rd_config cfg;
	uint64_t key;
	struct braid_rd_comp *comps;	/* every completion seen, in order */
	size_t ncomps;
	bool down;
};

struct harness {
	struct braid_sim *sim;
	struct braid_peer_table *peers[H_MAX_NODES];
	struct h_node nodes[H_MAX_NODES];
	int n;
	int sim_paths;
	/**
	 * @spines, @leaf_seed, @spine_down: with @spines > 0, every node sits
	 * on a leaf of its own joined to the others by @spines spines: a packet
	 * takes sim path (its route selector, for a reply the route of the
	 * packet it answers) mod paths and crosses the spine its sender's leaf
	 * hashes that path to with @leaf_seed[sender] (one seed for all: a reply
	 * crosses its packet's spine, as a symmetric ECMP hash does; a seed per
	 * leaf: it may cross another). A spine whose bit is set in @spine_down
	 * is black-holed both ways (@spine_drops counts what it swallowed).
	 */
	int spines;
	uint64_t leaf_seed[H_MAX_NODES];
	uint32_t spine_down;
	uint64_t spine_drops;
	uint64_t now;
	uint64_t epoch_base;
	/** @tap, @tap_arg: when set, shown each datagram h_pump sends (to count what goes on the wire). */
	void (*tap)(struct harness *h, int src, int dst, const uint8_t *buf, size_t len, void *arg);
	void *tap_arg;
};

static inline uint32_t h_ip(int i) { return 0x7f010001u + (uint32_t)i; }	/* 127.1.0.(i+1): never leaves the process */
static inline uint64_t h_key(int i) { return braid_peer_key(h_ip(i), 7000); }

static inline int h_node_of_ip(struct harness *h, uint32_t ip)
{
	int i = (int)(ip - 0x7f010001u);

	return i >= 0 && i < h->n ? i : -1;
}

static inline int h_start_node(struct harness *h, int i, const struct braid_rd_config *base)
{
	struct h_node *nd = &h->nodes[i];

	nd->cfg = *base;
	nd->cfg.local_ip = h_ip(i);
	nd->cfg.local_port = 7000;
	nd->cfg.epoch = (uint32_t)(h->epoch_base += 1000);
	nd->cfg.seed = base->seed * 31 + (uint64_t)i;
	nd->key = h_key(i);
	nd->down = false;
	return braid_rd_open(&nd->cfg, h->peers[i], &nd->rd);
}

/* A fabric of @n engines joined by @paths sim paths configured as @pcfg. */
static inline int h_init(struct harness *h, int n, int paths, const struct braid_sim_path_cfg *pcfg,
			 const struct braid_rd_config *base, uint64_t seed)
{
	int i, ret;

	memset(h, 0, sizeof(*h));
	h->n = n;
	h->sim_paths = paths;
	h->epoch_base = 1000;
	h->sim = braid_sim_create(seed, n, paths, pcfg);
	if (!h->sim)
		return -1;
	for (i = 0; i < n; i++) {
		/* one table per node (each node is its own host/domain) */
		ret = braid_peer_table_open(&h->peers[i], 64, NULL);
		if (ret)
			return ret;
		h->nodes[i].comps = calloc(H_MAX_COMPS, sizeof(struct braid_rd_comp));
		ret = h_start_node(h, i, base);
		if (ret)
			return ret;
	}
	return 0;
}

static inline void h_fini(struct harness *h)
{
	int i;

	for (i = 0; i < h->n; i++) {
		braid_rd_close(h->nodes[i].rd);
		braid_peer_table_close(h->peers[i]);
		free(h->nodes[i].comps);
	}
	braid_sim_destroy(h->sim);
}

/* Restart node @i: a new engine with a later epoch (its peer table survives: other domains' state). */
static inline int h_restart(struct harness *h, int i, const struct braid_rd_config *base)
{
	braid_rd_close(h->nodes[i].rd);
	braid_peer_table_close(h->peers[i]);
	if (braid_peer_table_open(&h->peers[i], 64, NULL))
		return -1;
	h->nodes[i].ncomps = 0;
	return h_start_node(h, i, base);
}

/* The spine node @src's leaf hashes sim path @path to is black-holed. */
static inline bool h_spine_dead(const struct harness *h, int src, int path)
{
	uint64_t z = h->leaf_seed[src] + (uint64_t)path * 0x9e3779b97f4a7c15ULL;

	if (!h->spines || !h->spine_down)
		return false;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return h->spine_down >> (z % (uint64_t)h->spines) & 1;
}

/* Move packets and timers of every node at the current time. */
static inline void h_pump(struct harness *h)
{
	struct braid_sim_pkt pkts[64];
	struct braid_rd_out out[64];
	int i, k, n, changed;

	do {
		changed = 0;
		for (i = 0; i < h->n; i++) {
			struct h_node *nd = &h->nodes[i];

			while ((n = braid_sim_recv(h->sim, h->now, i, pkts, 64)) > 0) {
				changed = 1;
				for (k = 0; k < n; k++)
					braid_rd_input_from(nd->rd, pkts[k].data, pkts[k].len,
							    h_ip(pkts[k].src), pkts[k].path,
							    pkts[k].ecn_ce, h->now);
			}
			if (braid_rd_next_deadline(nd->rd) <= h->now)
				braid_rd_timer(nd->rd, h->now);
			while ((n = braid_rd_output(nd->rd, h->now, out, 64)) > 0) {
				changed = 1;
				for (k = 0; k < n;) {
					uint8_t buf[65536];
					const struct braid_rd_out *o = &out[k];
					int dst = h_node_of_ip(h, o->dst_ip);
					int route = o->reply_route >= 0 ? o->reply_route : o->entropy;
					int path = route % h->sim_paths;
					size_t len = rd_dgram_copy(o, n - k, buf, &k);

					if (h->tap)
						h->tap(h, i, dst, buf, len, h->tap_arg);
					/* a reply goes back on the path its packet came by
					 * (a symmetric ECMP hash); the rest by entropy */
					if (dst >= 0 && h_spine_dead(h, i, path))
						h->spine_drops++;
					else if (dst >= 0)
						braid_sim_send(h->sim, h->now, i, dst, path, buf, len);
				}
			}
			while (nd->ncomps < H_MAX_COMPS &&
			       (n = braid_rd_poll(nd->rd, nd->comps + nd->ncomps,
						  (int)(H_MAX_COMPS - nd->ncomps))) > 0)
				nd->ncomps += (size_t)n;
		}
	} while (changed);
}

/* Advance virtual time to the next event (or @limit); false when nothing is left to do. */
static inline bool h_step(struct harness *h, uint64_t limit)
{
	uint64_t next;
	int i;

	/* pump first: what the caller queued since the last step goes on the wire
	 * before the next event is chosen (else time would jump past it) */
	h_pump(h);
	next = braid_sim_next_event(h->sim);
	for (i = 0; i < h->n; i++) {
		uint64_t d = braid_rd_next_deadline(h->nodes[i].rd);

		if (d < next)
			next = d;
	}
	if (next == UINT64_MAX || next > limit) {
		h->now = limit;
		h_pump(h);
		return false;
	}
	if (next > h->now)
		h->now = next;
	h_pump(h);
	return true;
}

/* Run until @done(h, arg) or virtual time @limit. */
static inline bool h_run(struct harness *h, uint64_t limit, bool (*done)(struct harness *, void *),
			 void *arg)
{
	while (h->now < limit) {
		if (done && done(h, arg))
			return true;
		if (!h_step(h, limit))
			break;
	}
	return done ? done(h, arg) : true;
}

#endif /* RD_HARNESS_H */
