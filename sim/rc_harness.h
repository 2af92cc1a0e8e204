/* SPDX-License-Identifier: BSD-2-Clause */
/* rc_harness.h: drives two RC queue pairs (A = node 0, B = node 1) over one sim path in virtual time, for the RC engine's tests. */
#ifndef RC_HARNESS_H
#define RC_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid_rc.h"
#include "braid_sim.h"

#define RCH_MAX_COMPS	65536
#define RCH_MAX_MRS	8
#define RCH_QPN_A	0x000a11u
#define RCH_QPN_B	0x000b22u
#define RCH_IP_A	0x0a000001u	/* 10.0.0.1 */
#define RCH_IP_B	0x0a000002u	/* 10.0.0.2 */
#define RCH_PORT_A	50001
#define RCH_PORT_B	50002

/** A registered region (FI_MR_VIRT_ADDR style: remote addresses are this process's pointers). */
struct rch_mr {
	uint32_t key;
	uint8_t *base;
	size_t len;
	uint32_t access;
};

struct rch_node {
	struct braid_rc_qp *qp;
	struct braid_rc_config cfg;
	/** @comps, @comp_time: every completion polled, in order, and the virtual time it was seen. */
	struct braid_rc_comp *comps;
	uint64_t *comp_time;
	size_t ncomps;
	struct rch_mr mrs[RCH_MAX_MRS];
	int nmrs;
	/** @tx, @rx: packets this node put on the path / got from it. */
	uint64_t tx, rx;
	/** @rx_ret: per return value of braid_rc_input (index -ret, 0 = used). */
	uint64_t rx_ret[BRAID_RC_DROP_MAX + 1];
};

struct rch;

/* return false to drop a packet @src is about to send; it may edit @pkt and *@len */
typedef bool (*rch_filter_fn)(struct rch *h, int src, uint8_t *pkt, size_t *len, void *arg);

struct rch {
	struct braid_sim *sim;
	struct rch_node n[2];
	uint64_t now;
	rch_filter_fn filter;
	void *filter_arg;
	/** @filter_drops: packets the filter dropped, per source node. */
	uint64_t filter_drops[2];
};

static int rch_mr_check(void *ctx, uint32_t rkey, uint64_t addr, size_t len, uint32_t access,
			void **ptr)
{
	struct rch_node *nd = ctx;
	int i;

	for (i = 0; i < nd->nmrs; i++) {
		struct rch_mr *m = &nd->mrs[i];
		uint64_t base = (uint64_t)(uintptr_t)m->base;

		if (m->key != rkey)
			continue;
		if ((m->access & access) != access)
			return -FI_EACCES;
		if (addr < base || len > m->len || addr - base > m->len - len)
			return -FI_EACCES;
		*ptr = m->base + (addr - base);
		return 0;
	}
	return -FI_EACCES;
}

static inline void rch_mr_add(struct rch *h, int node, uint32_t key, void *base, size_t len,
			      uint32_t access)
{
	struct rch_node *nd = &h->n[node];

	nd->mrs[nd->nmrs++] = (struct rch_mr){ key, base, len, access };
}

/* the configs of A and B: @base's tunables, addresses, QPNs and PSNs filled in */
static inline void rch_configs(const struct braid_rc_config *base, uint32_t psn_ab, uint32_t psn_ba,
			       struct braid_rc_config *a, struct braid_rc_config *b)
{
	*a = *base;
	a->addr = (struct braid_roce_addr){ RCH_IP_A, RCH_IP_B, RCH_PORT_A, RCH_PORT_B };
	a->local_qpn = RCH_QPN_A;
	a->remote_qpn = RCH_QPN_B;
	a->sq_psn = psn_ab;
	a->rq_psn = psn_ba;
	*b = *base;
	b->addr = (struct braid_roce_addr){ RCH_IP_B, RCH_IP_A, RCH_PORT_B, RCH_PORT_A };
	b->local_qpn = RCH_QPN_B;
	b->remote_qpn = RCH_QPN_A;
	b->sq_psn = psn_ba;
	b->rq_psn = psn_ab;
}

/*
 * rch_init() - A and B over one path configured as @p (NULL: ideal), each
 * opened with @ca / @cb (NULL: @base for both, with the given PSNs).
 * Return: 0 or the failing braid_rc_open() result (-1: the sim).
 */
static inline int rch_init_cfg(struct rch *h, const struct braid_sim_path_cfg *p, uint64_t seed,
			       const struct braid_rc_config *ca, const struct braid_rc_config *cb)
{
	const struct braid_rc_config *c[2] = { ca, cb };
	int i, ret;

	memset(h, 0, sizeof(*h));
	h->sim = braid_sim_create(seed, 2, 1, p);
	if (!h->sim)
		return -1;
	for (i = 0; i < 2; i++) {
		struct rch_node *nd = &h->n[i];

		nd->cfg = *c[i];
		nd->cfg.mr_check = rch_mr_check;
		nd->cfg.mr_ctx = nd;
		nd->comps = calloc(RCH_MAX_COMPS, sizeof(*nd->comps));
		nd->comp_time = calloc(RCH_MAX_COMPS, sizeof(*nd->comp_time));
		if (!nd->comps || !nd->comp_time)
			return -1;
		ret = braid_rc_open(&nd->cfg, &nd->qp);
		if (ret)
			return ret;
	}
	return 0;
}

static inline int rch_init(struct rch *h, const struct braid_sim_path_cfg *p, uint64_t seed,
			   const struct braid_rc_config *base, uint32_t psn_ab, uint32_t psn_ba)
{
	struct braid_rc_config a, b;

	rch_configs(base, psn_ab, psn_ba, &a, &b);
	return rch_init_cfg(h, p, seed, &a, &b);
}

static inline void rch_fini(struct rch *h)
{
	int i;

	for (i = 0; i < 2; i++) {
		braid_rc_close(h->n[i].qp);
		free(h->n[i].comps);
		free(h->n[i].comp_time);
	}
	braid_sim_destroy(h->sim);
}

/* one packet as the wire carries it: header, payload, pad + ICRC */
static inline size_t rch_flatten(const struct braid_rc_out *o, uint8_t *buf)
{
	size_t len = o->hdr_len;
	int j;

	memcpy(buf, o->hdr, o->hdr_len);
	for (j = 0; j < o->payload_iovcnt; j++) {
		memcpy(buf + len, o->payload[j].iov_base, o->payload[j].iov_len);
		len += o->payload[j].iov_len;
	}
	memcpy(buf + len, o->trailer, o->trailer_len);
	return len + o->trailer_len;
}

static inline void rch_poll(struct rch *h, int i)
{
	struct rch_node *nd = &h->n[i];
	int n;

	while (nd->ncomps < RCH_MAX_COMPS &&
	       (n = braid_rc_poll(nd->qp, nd->comps + nd->ncomps,
				  (int)(RCH_MAX_COMPS - nd->ncomps))) > 0) {
		for (int k = 0; k < n; k++)
			nd->comp_time[nd->ncomps + (size_t)k] = h->now;
		nd->ncomps += (size_t)n;
	}
}

/* move packets, timers and completions of both QPs at the current time until nothing changes */
static inline void rch_pump(struct rch *h)
{
	static uint8_t buf[65536];
	struct braid_sim_pkt pkts[64];
	struct braid_rc_out out[32];
	int i, k, n, changed;

	do {
		changed = 0;
		for (i = 0; i < 2; i++) {
			struct rch_node *nd = &h->n[i];

			while ((n = braid_sim_recv(h->sim, h->now, i, pkts, 64)) > 0) {
				changed = 1;
				for (k = 0; k < n; k++) {
					int r = braid_rc_input(nd->qp, pkts[k].data, pkts[k].len, h->now);

					nd->rx++;
					nd->rx_ret[r < 0 ? -r : 0]++;
				}
			}
			if (braid_rc_next_deadline(nd->qp) <= h->now)
				braid_rc_timer(nd->qp, h->now);
			while ((n = braid_rc_output(nd->qp, h->now, out, 32)) > 0) {
				changed = 1;
				for (k = 0; k < n; k++) {
					size_t len = rch_flatten(&out[k], buf);

					if (h->filter && !h->filter(h, i, buf, &len, h->filter_arg)) {
						h->filter_drops[i]++;
						continue;
					}
					nd->tx++;
					braid_sim_send(h->sim, h->now, i, 1 - i, 0, buf, len);
				}
			}
			rch_poll(h, i);
		}
	} while (changed);
}

/* advance virtual time to the next event (or @limit); false when nothing is left before @limit */
static inline bool rch_step(struct rch *h, uint64_t limit)
{
	uint64_t next;
	int i;

	rch_pump(h);
	next = braid_sim_next_event(h->sim);
	for (i = 0; i < 2; i++) {
		uint64_t d = braid_rc_next_deadline(h->n[i].qp);

		if (d < next)
			next = d;
	}
	if (next == UINT64_MAX || next > limit) {
		if (h->now < limit && next != UINT64_MAX)
			h->now = limit;
		rch_pump(h);
		return false;
	}
	if (next > h->now)
		h->now = next;
	rch_pump(h);
	return true;
}

/* run until @done(h, arg) holds or nothing is left to do before virtual time @limit */
static inline bool rch_run(struct rch *h, uint64_t limit, bool (*done)(struct rch *, void *),
			   void *arg)
{
	for (;;) {
		if (done && done(h, arg))
			return true;
		if (!rch_step(h, limit))
			break;
	}
	return done ? done(h, arg) : true;
}

struct rch_want {
	int node;
	size_t n;
};

static inline bool rch_have(struct rch *h, void *arg)
{
	struct rch_want *w = arg;

	return h->n[w->node].ncomps >= w->n;
}

/* run until node @node has @n completions (or @limit) */
static inline bool rch_wait(struct rch *h, int node, size_t n, uint64_t limit)
{
	struct rch_want w = { node, n };

	return rch_run(h, limit, rch_have, &w);
}

/* run until both QPs are idle (nothing pending, nothing in flight) or @limit */
static inline bool rch_idle(struct rch *h, void *arg)
{
	(void)arg;
	return !braid_rc_pending(h->n[0].qp) && !braid_rc_pending(h->n[1].qp) &&
	       braid_sim_in_flight(h->sim) == 0;
}

#endif /* RC_HARNESS_H */
