/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_sim.c: an in-process, seeded, virtual-time fabric of nodes joined by parallel paths. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_sim.h"
#include "braid/braid_hash.h"

#define SIM_MAX_PATHS	256
#define SIM_MAX_LEN	65536

/**
 * struct sim_pkt - one copy of a packet in flight (a duplicate is its own copy).
 *
 * Allocated by braid_sim_send() with its bytes after it; owned by the
 * destination node's heap until braid_sim_recv() moves it to the sim's
 * "last delivered" list, which frees it on the next recv or on destroy.
 */
struct sim_pkt {
	/** @at: delivery time, ns. */
	uint64_t at;
	/** @seq: global send sequence number: breaks ties of @at. */
	uint64_t seq;
	/** @len: bytes in @data. */
	size_t len;
	/** @src: sending node. */
	int src;
	/** @dst: receiving node. */
	int dst;
	/** @path: path it travels. */
	int path;
	/** @ecn_ce: marked congestion-experienced. */
	bool ecn_ce;
	/** @data: the bytes. */
	uint8_t data[];
};

/** struct sim_path - one path: its behaviour, state and counters. */
struct sim_path {
	/** @cfg: its behaviour. */
	struct braid_sim_path_cfg cfg;
	/** @busy_until: when the serialiser is free again (rate-limited paths). */
	uint64_t busy_until;
	/** @up: false drops every packet that enters the path. */
	bool up;
	/** @stats: its counters. */
	struct braid_sim_stats stats;
};

/** struct sim_node - one node: its inbound packets and whether it is up. */
struct sim_node {
	/** @heap: binary min-heap of packets to this node, by (at, seq). */
	struct sim_pkt **heap;
	/** @len: packets in @heap. */
	size_t len;
	/** @cap: slots in @heap. */
	size_t cap;
	/** @order_pos: this node's index in struct braid_sim.order. */
	size_t order_pos;
	/** @up: false: it neither sends nor receives. */
	bool up;
	/** @nic_rate_bps: the node's own link (0 = unlimited); every packet it sends crosses it first. */
	uint64_t nic_rate_bps;
	/** @nic_busy_until: when the node's link is free again. */
	uint64_t nic_busy_until;
};

/** struct sim_event - a scheduled path/node up/down. */
struct sim_event {
	/** @at: when it applies, ns. */
	uint64_t at;
	/** @seq: scheduling order: breaks ties of @at. */
	uint64_t seq;
	/** @event: what happens. */
	enum braid_sim_event event;
	/** @index: the path or node. */
	int index;
};

/** struct braid_sim - the fabric. */
struct braid_sim {
	/** @rng: xoshiro256** state, seeded through splitmix64. */
	uint64_t rng[4];
	/** @now: the latest time any call has given the sim. */
	uint64_t now;
	/** @send_seq: next packet sequence number. */
	uint64_t send_seq;
	/** @event_seq: next event sequence number. */
	uint64_t event_seq;
	/** @nnodes: number of nodes. */
	int nnodes;
	/** @npaths: number of paths. */
	int npaths;
	/** @nodes: @nnodes nodes. */
	struct sim_node *nodes;
	/** @paths: @npaths paths. */
	struct sim_path *paths;
	/**
	 * @order: every node index, as a binary min-heap keyed by the node's
	 * earliest packet (empty nodes last), so the earliest delivery of the
	 * whole fabric is order[0]'s heap top.
	 */
	int *order;
	/** @in_flight: packets in all node heaps. */
	size_t in_flight;
	/** @events: binary min-heap of scheduled events, by (at, seq). */
	struct sim_event *events;
	/** @nevents: events in @events. */
	size_t nevents;
	/** @events_cap: slots in @events. */
	size_t events_cap;
	/** @last: packets handed out by the last braid_sim_recv(). */
	struct sim_pkt **last;
	/** @nlast: packets in @last. */
	size_t nlast;
	/** @last_cap: slots in @last. */
	size_t last_cap;
};

/* ---- random numbers: splitmix64 seeds xoshiro256** ---- */

static uint64_t splitmix64(uint64_t *x)
{
	return braid_splitmix64(x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct braid_sim *sim)
{
	uint64_t *s = sim->rng;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static double rng_unit(struct braid_sim *sim)
{
	return (double)(rng_next(sim) >> 11) * 0x1.0p-53;
}

/* True with probability @p; draws nothing when @p is 0. */
static bool rng_chance(struct braid_sim *sim, double p)
{
	return p > 0 && rng_unit(sim) < p;
}

/* Uniform in [0, max] (Lemire's multiply-shift; bias below 2^-64 * max). */
static uint64_t rng_upto(struct braid_sim *sim, uint64_t max)
{
	uint64_t x = rng_next(sim);

	if (max == UINT64_MAX)
		return x;
	return (uint64_t)(((unsigned __int128)x * (max + 1)) >> 64);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- packet heaps ---- */

static bool pkt_before(const struct sim_pkt *a, const struct sim_pkt *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void pkt_sift_up(struct sim_pkt **h, size_t i)
{
	struct sim_pkt *p = h[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!pkt_before(p, h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = p;
}

static void pkt_sift_down(struct sim_pkt **h, size_t len, size_t i)
{
	struct sim_pkt *p = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && pkt_before(h[c + 1], h[c]))
			c++;
		if (!pkt_before(h[c], p))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = p;
}

static struct sim_pkt *pkt_pop(struct sim_node *n)
{
	struct sim_pkt *top = n->heap[0];

	n->heap[0] = n->heap[--n->len];
	if (n->len)
		pkt_sift_down(n->heap, n->len, 0);
	return top;
}

static int node_reserve(struct sim_node *n, size_t more)
{
	struct sim_pkt **heap;
	size_t cap;

	if (n->len + more <= n->cap)
		return 0;
	cap = n->cap ? n->cap : 16;
	while (cap < n->len + more)
		cap *= 2;
	heap = realloc(n->heap, cap * sizeof(*heap));
	if (!heap)
		return -FI_ENOMEM;
	n->heap = heap;
	n->cap = cap;
	return 0;
}

/* ---- the node order: a heap of nodes by their earliest packet ---- */

static bool node_before(const struct braid_sim *sim, int a, int b)
{
	const struct sim_node *na = &sim->nodes[a], *nb = &sim->nodes[b];

	if (!na->len)
		return false;
	if (!nb->len)
		return true;
	return pkt_before(na->heap[0], nb->heap[0]);
}

static void order_set(struct braid_sim *sim, size_t i, int node)
{
	sim->order[i] = node;
	sim->nodes[node].order_pos = i;
}

/* Restore the order heap after node @node's earliest packet changed. */
static void order_fix(struct braid_sim *sim, int node)
{
	size_t len = (size_t)sim->nnodes;
	size_t i = sim->nodes[node].order_pos;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!node_before(sim, node, sim->order[parent]))
			break;
		order_set(sim, i, sim->order[parent]);
		i = parent;
	}
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && node_before(sim, sim->order[c + 1], sim->order[c]))
			c++;
		if (!node_before(sim, sim->order[c], node))
			break;
		order_set(sim, i, sim->order[c]);
		i = c;
	}
	order_set(sim, i, node);
}

/* ---- nodes and events ---- */

/* Node @node goes down at @at: what is due to it after @at is lost. */
static void node_down(struct braid_sim *sim, int node, uint64_t at)
{
	struct sim_node *n = &sim->nodes[node];
	size_t i, kept = 0;

	n->up = false;
	for (i = 0; i < n->len; i++) {
		struct sim_pkt *p = n->heap[i];

		if (p->at <= at) {
			n->heap[kept++] = p;
			continue;
		}
		sim->paths[p->path].stats.down_drops++;
		sim->in_flight--;
		free(p);
	}
	if (kept == n->len)
		return;
	n->len = kept;
	for (i = kept / 2; i-- > 0;)
		pkt_sift_down(n->heap, n->len, i);
	order_fix(sim, node);
}

static bool event_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static struct sim_event event_pop(struct braid_sim *sim)
{
	struct sim_event *h = sim->events;
	struct sim_event top = h[0], last;
	size_t len, i = 0;

	len = --sim->nevents;
	if (!len)
		return top;
	last = h[len];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && event_before(&h[c + 1], &h[c]))
			c++;
		if (!event_before(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
	return top;
}

static void event_apply(struct braid_sim *sim, const struct sim_event *e)
{
	switch (e->event) {
	case BRAID_SIM_PATH_DOWN:
		sim->paths[e->index].up = false;
		break;
	case BRAID_SIM_PATH_UP:
		sim->paths[e->index].up = true;
		break;
	case BRAID_SIM_NODE_DOWN:
		node_down(sim, e->index, e->at);
		break;
	case BRAID_SIM_NODE_UP:
		sim->nodes[e->index].up = true;
		break;
	}
}

/* Move the clock to @now (never back) and apply the events due by then, in time order. */
static int sim_run_to(struct braid_sim *sim, uint64_t now)
{
	int applied = 0;

	if (now > sim->now)
		sim->now = now;
	while (sim->nevents && sim->events[0].at <= sim->now) {
		struct sim_event e = event_pop(sim);

		event_apply(sim, &e);
		applied++;
	}
	return applied;
}

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0;	/* false for NaN too */
}

static bool cfg_ok(const struct braid_sim_path_cfg *cfg)
{
	return prob_ok(cfg->loss) && prob_ok(cfg->dup) && prob_ok(cfg->reorder);
}

/* ---- the API ---- */

struct braid_sim *braid_sim_create(uint64_t seed, int nodes, int paths,
				   const struct braid_sim_path_cfg *cfg)
{
	static const struct braid_sim_path_cfg ideal;
	struct braid_sim *sim;
	uint64_t x = seed;
	int i;

	if (!cfg)
		cfg = &ideal;
	if (nodes < 1 || paths < 1 || paths > SIM_MAX_PATHS || !cfg_ok(cfg))
		return NULL;

	sim = calloc(1, sizeof(*sim));
	if (!sim)
		return NULL;
	sim->nnodes = nodes;
	sim->npaths = paths;
	sim->nodes = calloc((size_t)nodes, sizeof(*sim->nodes));
	sim->order = calloc((size_t)nodes, sizeof(*sim->order));
	sim->paths = calloc((size_t)paths, sizeof(*sim->paths));
	if (!sim->nodes || !sim->order || !sim->paths) {
		braid_sim_destroy(sim);
		return NULL;
	}
	for (i = 0; i < nodes; i++) {
		sim->nodes[i].up = true;
		order_set(sim, (size_t)i, i);
	}
	for (i = 0; i < paths; i++) {
		sim->paths[i].cfg = *cfg;
		sim->paths[i].up = true;
	}
	for (i = 0; i < 4; i++)
		sim->rng[i] = splitmix64(&x);
	return sim;
}

static void last_release(struct braid_sim *sim)
{
	size_t i;

	for (i = 0; i < sim->nlast; i++)
		free(sim->last[i]);
	sim->nlast = 0;
}

void braid_sim_destroy(struct braid_sim *sim)
{
	int i;
	size_t j;

	if (!sim)
		return;
	if (sim->nodes) {
		for (i = 0; i < sim->nnodes; i++) {
			for (j = 0; j < sim->nodes[i].len; j++)
				free(sim->nodes[i].heap[j]);
			free(sim->nodes[i].heap);
		}
	}
	last_release(sim);
	free(sim->last);
	free(sim->events);
	free(sim->nodes);
	free(sim->order);
	free(sim->paths);
	free(sim);
}

int braid_sim_set_path(struct braid_sim *sim, int path, const struct braid_sim_path_cfg *cfg)
{
	if (!sim || !cfg || path < 0 || path >= sim->npaths || !cfg_ok(cfg))
		return -FI_EINVAL;
	sim->paths[path].cfg = *cfg;
	return 0;
}

int braid_sim_path_up(struct braid_sim *sim, int path, bool up)
{
	if (!sim || path < 0 || path >= sim->npaths)
		return -FI_EINVAL;
	sim->paths[path].up = up;
	return 0;
}

int braid_sim_node_up(struct braid_sim *sim, int node, bool up)
{
	if (!sim || node < 0 || node >= sim->nnodes)
		return -FI_EINVAL;
	if (up)
		sim->nodes[node].up = true;
	else
		node_down(sim, node, sim->now);
	return 0;
}

int braid_sim_set_node_rate(struct braid_sim *sim, int node, uint64_t rate_bps)
{
	if (!sim || node < 0 || node >= sim->nnodes)
		return -FI_EINVAL;
	sim->nodes[node].nic_rate_bps = rate_bps;
	return 0;
}

int braid_sim_schedule(struct braid_sim *sim, uint64_t at_ns, enum braid_sim_event event, int index)
{
	struct sim_event e, *h;
	size_t i;
	int limit;

	if (!sim)
		return -FI_EINVAL;
	switch (event) {
	case BRAID_SIM_PATH_DOWN:
	case BRAID_SIM_PATH_UP:
		limit = sim->npaths;
		break;
	case BRAID_SIM_NODE_DOWN:
	case BRAID_SIM_NODE_UP:
		limit = sim->nnodes;
		break;
	default:
		return -FI_EINVAL;
	}
	if (index < 0 || index >= limit)
		return -FI_EINVAL;

	if (sim->nevents == sim->events_cap) {
		size_t cap = sim->events_cap ? 2 * sim->events_cap : 8;

		h = realloc(sim->events, cap * sizeof(*h));
		if (!h)
			return -FI_ENOMEM;
		sim->events = h;
		sim->events_cap = cap;
	}
	e = (struct sim_event){ .at = at_ns, .seq = sim->event_seq++, .event = event, .index = index };
	h = sim->events;
	i = sim->nevents++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!event_before(&e, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
	return 0;
}

int braid_sim_advance(struct braid_sim *sim, uint64_t now)
{
	if (!sim)
		return -FI_EINVAL;
	return sim_run_to(sim, now);
}

/*
 * Fill @p's header, then its bytes: the header's trailing padding overlaps
 * @data, so a whole-struct assignment must come before the memcpy.
 */
static void pkt_fill(struct sim_pkt *p, const struct sim_pkt *hdr, const void *data)
{
	*p = *hdr;
	memcpy(p->data, data, hdr->len);
}

static void pkt_push(struct braid_sim *sim, struct sim_pkt *p)
{
	struct sim_node *n = &sim->nodes[p->dst];

	p->seq = sim->send_seq++;
	n->heap[n->len] = p;
	pkt_sift_up(n->heap, n->len++);
	sim->in_flight++;
}

/* Serialisation time of @len bytes at @rate_bps, rounded up to a whole ns. */
static uint64_t ser_ns(size_t len, uint64_t rate_bps)
{
	uint64_t bits_ns = (uint64_t)len * 8 * 1000000000ULL;

	if (!rate_bps)
		return 0;
	return bits_ns / rate_bps + (bits_ns % rate_bps != 0);
}

int braid_sim_send(struct braid_sim *sim, uint64_t now, int src, int dst, int path,
		   const void *data, size_t len)
{
	struct sim_pkt hdr, *p, *dup = NULL;
	struct sim_path *pa;
	uint64_t t, start, depart, at;
	bool ecn_ce, twice;

	if (!sim || src < 0 || src >= sim->nnodes || dst < 0 || dst >= sim->nnodes ||
	    path < 0 || path >= sim->npaths || !data || !len || len > SIM_MAX_LEN)
		return -FI_EINVAL;

	sim_run_to(sim, now);
	t = sim->now;
	pa = &sim->paths[path];
	if (sim->nodes[src].nic_rate_bps && sim->nodes[src].up) {
		/* the sender's own link: packets leave it one after another */
		struct sim_node *sn = &sim->nodes[src];

		if (sn->nic_busy_until > t)
			t = sn->nic_busy_until;
		t = sat_add(t, ser_ns(len, sn->nic_rate_bps));
		sn->nic_busy_until = t;
	}

	if (!pa->up || !sim->nodes[src].up || !sim->nodes[dst].up) {
		pa->stats.sent++;
		pa->stats.bytes += len;
		pa->stats.down_drops++;
		return 0;
	}
	if (rng_chance(sim, pa->cfg.loss)) {
		pa->stats.sent++;
		pa->stats.bytes += len;
		pa->stats.lost++;
		return 0;
	}

	/* Serialise behind what is already queued on the path, then propagate. */
	start = pa->cfg.rate_bps && pa->busy_until > t ? pa->busy_until : t;
	ecn_ce = pa->cfg.ecn_threshold_ns && start - t > pa->cfg.ecn_threshold_ns;
	depart = sat_add(start, ser_ns(len, pa->cfg.rate_bps));
	at = sat_add(depart, pa->cfg.delay_ns);
	if (pa->cfg.jitter_ns)
		at = sat_add(at, rng_upto(sim, pa->cfg.jitter_ns));
	if (rng_chance(sim, pa->cfg.reorder))
		at = sat_add(at, pa->cfg.reorder_ns);
	twice = rng_chance(sim, pa->cfg.dup);

	p = malloc(sizeof(*p) + len);
	if (twice)
		dup = malloc(sizeof(*dup) + len);
	if (!p || (twice && !dup) || node_reserve(&sim->nodes[dst], 2)) {
		free(p);
		free(dup);
		return -FI_ENOMEM;
	}

	if (pa->cfg.rate_bps)
		pa->busy_until = depart;
	pa->stats.sent++;
	pa->stats.bytes += len;
	if (ecn_ce)
		pa->stats.ecn_marks++;
	hdr = (struct sim_pkt){ .at = at, .len = len, .src = src, .dst = dst,
				.path = path, .ecn_ce = ecn_ce };
	pkt_fill(p, &hdr, data);
	pkt_push(sim, p);
	if (dup) {
		hdr.at = sat_add(at, pa->cfg.dup_gap_ns);
		pkt_fill(dup, &hdr, data);
		pkt_push(sim, dup);
		pa->stats.dups++;
	}
	order_fix(sim, dst);
	return 0;
}

int braid_sim_recv(struct braid_sim *sim, uint64_t now, int node,
		   struct braid_sim_pkt *pkts, int max)
{
	struct sim_node *n;
	int got = 0;

	if (!sim || node < 0 || node >= sim->nnodes || max < 0 || (max && !pkts))
		return -FI_EINVAL;

	last_release(sim);
	sim_run_to(sim, now);
	n = &sim->nodes[node];
	while (got < max && n->len && n->heap[0]->at <= now) {
		struct sim_pkt *p;

		if (sim->nlast == sim->last_cap) {
			size_t cap = sim->last_cap ? 2 * sim->last_cap : 64;
			struct sim_pkt **last = realloc(sim->last, cap * sizeof(*last));

			if (!last)
				break;	/* the rest waits for the next call */
			sim->last = last;
			sim->last_cap = cap;
		}
		p = pkt_pop(n);
		sim->last[sim->nlast++] = p;
		sim->in_flight--;
		sim->paths[p->path].stats.delivered++;
		pkts[got++] = (struct braid_sim_pkt){ .data = p->data, .len = p->len,
						      .src = p->src, .dst = p->dst,
						      .path = p->path, .ecn_ce = p->ecn_ce };
	}
	if (got)
		order_fix(sim, node);
	return got;
}

uint64_t braid_sim_next_event(const struct braid_sim *sim)
{
	uint64_t next = UINT64_MAX;
	const struct sim_node *n;

	if (!sim)
		return UINT64_MAX;
	n = &sim->nodes[sim->order[0]];
	if (n->len)
		next = n->heap[0]->at;
	if (sim->nevents && sim->events[0].at < next)
		next = sim->events[0].at;
	return next;
}

const struct braid_sim_stats *braid_sim_path_stats(const struct braid_sim *sim, int path)
{
	if (!sim || path < 0 || path >= sim->npaths)
		return NULL;
	return &sim->paths[path].stats;
}

size_t braid_sim_in_flight(const struct braid_sim *sim)
{
	return sim ? sim->in_flight : 0;
}
