/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_fabsim.c: the leaf-spine fabric simulator: links with FIFO queues, drop-tail and ECN, ECMP at the ToRs, loss, failures and routing that reacts to them after a delay. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_evq.h"
#include "braid_fabsim.h"
#include "braid/braid_hash.h"

/* one directed link and the queue that feeds it */
struct fs_link {
	/** @cfg: rate, delay, queue limit and marking threshold. */
	struct braid_fabsim_link_cfg cfg;
	/** @tx_free_at: when the link has sent every byte queued on it so far. */
	uint64_t tx_free_at;
	/** @loss: random loss probability. */
	double loss;
	/** @up: false while failed. */
	bool up;
	/** @gen: bumped each time the link goes down: packets of an older one on it are lost. */
	uint32_t gen;
	/** @down_at: when it last went down (routing reacts @reroute_ns later). */
	uint64_t down_at;
	/** @st: counters. */
	struct braid_fabsim_link_stats st;
};

/* a packet on its way; the event queue holds its pointer until it reaches the far end of @link */
struct fs_pkt {
	/** @src, @dst: hosts. */
	int src, dst;
	/** @link: the directed link it is crossing; @gen: that link's gen when it entered. */
	int link;
	uint32_t gen;
	/** @spine: the spine ECMP chose, -1 before (or under one ToR). */
	int spine;
	/** @entropy: its route selector. */
	uint16_t entropy;
	/** @ce: ECN congestion experienced. */
	bool ce;
	/** @len, @data: the datagram. */
	uint32_t len;
	uint8_t data[];
};

/* event values: a packet pointer (even), or a link event (odd): link << 2 | up << 1 | 1 */
#define EV_LINK(link, up)	(((uint64_t)(link) << 2) | ((uint64_t)(up) << 1) | 1)

struct braid_fabsim {
	/** @cfg: the topology. */
	struct braid_fabsim_cfg cfg;
	/** @hosts: tors * hosts_per_tor. */
	int hosts;
	/** @links: every directed link: host up, host down, ToR up, spine down (braid_fabsim_link()). */
	struct fs_link *links;
	int nlinks;
	/** @down: links down now (0: ECMP needs no check). */
	int down;
	/** @evq: packets in flight and scheduled link events. */
	struct braid_evq evq;
	/** @now: the time of the last event handled or packet sent. */
	uint64_t now;
	/** @rng: the loss generator's state. */
	uint64_t rng;
	/** @held: the packet the last braid_fabsim_step() delivered (freed by the next). */
	struct fs_pkt *held;
	/** @in_flight: packets in the event queue. */
	size_t in_flight;
};

static double rng_unit(struct braid_fabsim *fs)
{
	fs->rng += 0x9e3779b97f4a7c15ULL;
	return (double)(braid_mix64(fs->rng) >> 11) / 9007199254740992.0;
}

static bool link_cfg_ok(const struct braid_fabsim_link_cfg *c)
{
	return c->rate_bps > 0;
}

int braid_fabsim_open(const struct braid_fabsim_cfg *cfg, struct braid_fabsim **out)
{
	struct braid_fabsim *fs;
	int i, h, ts;

	if (!cfg || !out || cfg->tors < 1 || cfg->hosts_per_tor < 1 || cfg->spines < 1 ||
	    cfg->spines > BRAID_FABSIM_MAX_SPINES || !link_cfg_ok(&cfg->host) ||
	    !link_cfg_ok(&cfg->fabric) || (int64_t)cfg->tors * cfg->hosts_per_tor > (1 << 24) ||
	    (cfg->mtu && (cfg->mtu < 576 || cfg->mtu > 65535)))
		return -FI_EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -FI_ENOMEM;
	fs->cfg = *cfg;
	h = fs->hosts = cfg->tors * cfg->hosts_per_tor;
	ts = cfg->tors * cfg->spines;
	fs->nlinks = 2 * h + 2 * ts;
	fs->links = calloc((size_t)fs->nlinks, sizeof(*fs->links));
	if (!fs->links) {
		free(fs);
		return -FI_ENOMEM;
	}
	for (i = 0; i < fs->nlinks; i++) {
		struct fs_link *l = &fs->links[i];

		l->cfg = i < 2 * h ? cfg->host : cfg->fabric;
		l->up = true;
	}
	/* the NIC's queue is the host's memory: the sender paces itself by tx_free_at */
	for (i = 0; i < h; i++)
		fs->links[i].cfg.queue_bytes = 0;
	fs->rng = cfg->seed;
	braid_evq_construct(&fs->evq);
	*out = fs;
	return 0;
}

void braid_fabsim_close(struct braid_fabsim *fs)
{
	struct braid_evq_ent e;

	if (!fs)
		return;
	while (braid_evq_pop(&fs->evq, &e))
		if (!(e.val & 1))
			free((void *)(uintptr_t)e.val);
	braid_evq_destruct(&fs->evq);
	free(fs->held);
	free(fs->links);
	free(fs);
}

int braid_fabsim_hosts(const struct braid_fabsim *fs)
{
	return fs->hosts;
}

size_t braid_fabsim_max_dgram(const struct braid_fabsim *fs)
{
	size_t ip_udp = 20 + 8;

	if (!fs->cfg.mtu || fs->cfg.mtu - ip_udp > BRAID_FABSIM_MAX_PKT)
		return BRAID_FABSIM_MAX_PKT;
	return fs->cfg.mtu - ip_udp;
}

int braid_fabsim_tor_of(const struct braid_fabsim *fs, int host)
{
	return host / fs->cfg.hosts_per_tor;
}

int braid_fabsim_links(const struct braid_fabsim *fs)
{
	return fs->nlinks;
}

int braid_fabsim_link(const struct braid_fabsim *fs, enum braid_fabsim_link_kind kind, int a, int b)
{
	int h = fs->hosts, s = fs->cfg.spines, ts = fs->cfg.tors * s;

	switch (kind) {
	case BRAID_FABSIM_HOST_UP:
	case BRAID_FABSIM_HOST_DOWN:
		if (a < 0 || a >= h)
			return -FI_EINVAL;
		return (kind == BRAID_FABSIM_HOST_UP ? 0 : h) + a;
	case BRAID_FABSIM_TOR_UP:
	case BRAID_FABSIM_SPINE_DOWN:
		if (a < 0 || a >= fs->cfg.tors || b < 0 || b >= s)
			return -FI_EINVAL;
		return 2 * h + (kind == BRAID_FABSIM_TOR_UP ? 0 : ts) + a * s + b;
	}
	return -FI_EINVAL;
}

int braid_fabsim_set_loss(struct braid_fabsim *fs, int link, double loss)
{
	if (link < 0 || link >= fs->nlinks || !(loss >= 0 && loss <= 1))
		return -FI_EINVAL;
	fs->links[link].loss = loss;
	return 0;
}

int braid_fabsim_schedule(struct braid_fabsim *fs, uint64_t at_ns, int link, bool up)
{
	if (link < 0 || link >= fs->nlinks || at_ns < fs->now)
		return -FI_EINVAL;
	return braid_evq_push(&fs->evq, at_ns, EV_LINK(link, up));
}

static void link_set(struct braid_fabsim *fs, int link, bool up, uint64_t now)
{
	struct fs_link *l = &fs->links[link];

	if (l->up == up)
		return;
	l->up = up;
	if (!up) {
		l->gen++;
		l->down_at = now;
		/* what was queued is gone: the next packet finds an empty queue when it returns */
		l->tx_free_at = now;
		fs->down++;
	} else {
		fs->down--;
	}
}

/* is @link in the routing tables at @now? (up, or failed too recently for routing to know) */
static bool link_routable(const struct braid_fabsim *fs, int link, uint64_t now)
{
	const struct fs_link *l = &fs->links[link];

	return l->up || !fs->cfg.reroute_ns || now - l->down_at < fs->cfg.reroute_ns;
}

/* may ToR @ts reach ToR @td through spine @s at @now, as far as routing knows? */
static bool spine_routable(const struct braid_fabsim *fs, int ts, int td, int s, uint64_t now)
{
	return link_routable(fs, braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, ts, s), now) &&
	       link_routable(fs, braid_fabsim_link(fs, BRAID_FABSIM_SPINE_DOWN, td, s), now);
}

static int ecmp(const struct braid_fabsim *fs, int src, int dst, uint16_t entropy, uint64_t now)
{
	int lo = src < dst ? src : dst, hi = src < dst ? dst : src;
	int ts = braid_fabsim_tor_of(fs, src), td = braid_fabsim_tor_of(fs, dst);
	uint64_t hash = braid_mix64(fs->cfg.seed * 0x2545f4914f6cdd1dULL ^ ((uint64_t)lo << 40) ^
			      ((uint64_t)hi << 16) ^ entropy);
	int cand[BRAID_FABSIM_MAX_SPINES];
	int n = 0, s;

	s = (int)(hash % (uint64_t)fs->cfg.spines);
	if (!fs->down || spine_routable(fs, ts, td, s, now))
		return s;
	/* resilient hashing: only the flows of a spine taken out move, spread over the rest */
	for (s = 0; s < fs->cfg.spines; s++)
		if (spine_routable(fs, ts, td, s, now))
			cand[n++] = s;
	return n ? cand[braid_mix64(hash) % (uint64_t)n] : -FI_EHOSTUNREACH;
}

int braid_fabsim_route(const struct braid_fabsim *fs, int src, int dst, uint16_t entropy)
{
	if (src < 0 || src >= fs->hosts || dst < 0 || dst >= fs->hosts)
		return -FI_EINVAL;
	if (braid_fabsim_tor_of(fs, src) == braid_fabsim_tor_of(fs, dst))
		return -1;
	return ecmp(fs, src, dst, entropy, fs->now);
}

/* bytes queued ahead of a packet entering @l at @now */
static uint64_t link_backlog(const struct fs_link *l, uint64_t now)
{
	if (l->tx_free_at <= now)
		return 0;
	return (uint64_t)((unsigned __int128)(l->tx_free_at - now) * l->cfg.rate_bps / 8000000000ULL);
}

/* @p enters the queue of @link at @now: dropped (freed), or on its way to the far end */
static int link_enqueue(struct braid_fabsim *fs, struct fs_pkt *p, int link, uint64_t now)
{
	struct fs_link *l = &fs->links[link];
	uint64_t wire = p->len + fs->cfg.overhead, backlog, ser, start;
	int ret;

	l->st.pkts++;
	l->st.bytes += p->len;
	if (!l->up) {
		l->st.drops_down++;
		goto drop;
	}
	if (l->loss > 0 && rng_unit(fs) < l->loss) {
		l->st.drops_loss++;
		goto drop;
	}
	backlog = link_backlog(l, now);
	if (backlog > l->st.max_backlog)
		l->st.max_backlog = backlog;
	if (l->cfg.queue_bytes && backlog + wire > l->cfg.queue_bytes) {
		l->st.drops_queue++;
		goto drop;
	}
	if (l->cfg.ecn_bytes && backlog > l->cfg.ecn_bytes) {
		l->st.ecn_marks++;
		p->ce = true;
	}
	ser = (wire * 8000000000ULL + l->cfg.rate_bps - 1) / l->cfg.rate_bps;
	start = l->tx_free_at > now ? l->tx_free_at : now;
	l->tx_free_at = start + ser;
	l->st.busy_ns += ser;
	p->link = link;
	p->gen = l->gen;
	ret = braid_evq_push(&fs->evq, l->tx_free_at + l->cfg.delay_ns, (uint64_t)(uintptr_t)p);
	if (ret) {
		free(p);
		return ret;
	}
	fs->in_flight++;
	return 0;
drop:
	free(p);
	return 0;
}

int braid_fabsim_send(struct braid_fabsim *fs, uint64_t now, int src, int dst, uint16_t entropy,
		      const void *data, size_t len)
{
	struct fs_pkt *p;

	if (src < 0 || src >= fs->hosts || dst < 0 || dst >= fs->hosts || !len || !data ||
	    now < fs->now)
		return -FI_EINVAL;
	if (len > braid_fabsim_max_dgram(fs))
		return -FI_EMSGSIZE;
	p = malloc(sizeof(*p) + len);
	if (!p)
		return -FI_ENOMEM;
	*p = (struct fs_pkt){ .src = src, .dst = dst, .spine = -1, .entropy = entropy,
			      .len = (uint32_t)len };
	memcpy(p->data, data, len);
	fs->now = now;
	return link_enqueue(fs, p, braid_fabsim_link(fs, BRAID_FABSIM_HOST_UP, src, 0), now);
}

uint64_t braid_fabsim_tx_free_at(const struct braid_fabsim *fs, int host)
{
	return fs->links[host].tx_free_at;
}

uint64_t braid_fabsim_next(const struct braid_fabsim *fs)
{
	return braid_evq_next(&fs->evq);
}

uint64_t braid_fabsim_now(const struct braid_fabsim *fs)
{
	return fs->now;
}

/* @p reached the far end of its link at @now: the next link, or NULL when it is at its host */
static struct fs_pkt *pkt_forward(struct braid_fabsim *fs, struct fs_pkt *p, uint64_t now)
{
	int h = fs->hosts, s = fs->cfg.spines, ts = fs->cfg.tors * s;
	int td = braid_fabsim_tor_of(fs, p->dst), next;

	if (p->link < h) {			/* at the source ToR */
		if (braid_fabsim_tor_of(fs, p->src) == td) {
			next = braid_fabsim_link(fs, BRAID_FABSIM_HOST_DOWN, p->dst, 0);
		} else {
			p->spine = ecmp(fs, p->src, p->dst, p->entropy, now);
			if (p->spine < 0) {	/* no route left: the ToR drops it */
				fs->links[p->link].st.drops_down++;
				free(p);
				return NULL;
			}
			next = braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP,
						 braid_fabsim_tor_of(fs, p->src), p->spine);
		}
	} else if (p->link < 2 * h) {		/* at the destination host */
		return p;
	} else if (p->link < 2 * h + ts) {	/* at the spine */
		next = braid_fabsim_link(fs, BRAID_FABSIM_SPINE_DOWN, td, p->spine);
	} else {				/* at the destination ToR */
		next = braid_fabsim_link(fs, BRAID_FABSIM_HOST_DOWN, p->dst, 0);
	}
	link_enqueue(fs, p, next, now);
	return NULL;
}

int braid_fabsim_step(struct braid_fabsim *fs, uint64_t until, struct braid_fabsim_pkt *out)
{
	struct braid_evq_ent e;

	free(fs->held);
	fs->held = NULL;
	while (braid_evq_next(&fs->evq) <= until && braid_evq_pop(&fs->evq, &e)) {
		struct fs_pkt *p;

		if (e.at > fs->now)
			fs->now = e.at;
		if (e.val & 1) {
			link_set(fs, (int)(e.val >> 2), (e.val >> 1) & 1, e.at);
			continue;
		}
		p = (struct fs_pkt *)(uintptr_t)e.val;
		fs->in_flight--;
		if (p->gen != fs->links[p->link].gen) {	/* its link went down under it */
			fs->links[p->link].st.drops_down++;
			free(p);
			continue;
		}
		p = pkt_forward(fs, p, e.at);
		if (!p)
			continue;
		fs->held = p;
		*out = (struct braid_fabsim_pkt){ .data = p->data, .len = p->len, .src = p->src,
						  .dst = p->dst, .entropy = p->entropy,
						  .spine = p->spine, .ecn_ce = p->ce, .at = e.at };
		return 1;
	}
	return 0;
}

const struct braid_fabsim_link_stats *braid_fabsim_link_stats(const struct braid_fabsim *fs, int link)
{
	if (link < 0 || link >= fs->nlinks)
		return NULL;
	return &fs->links[link].st;
}

size_t braid_fabsim_in_flight(const struct braid_fabsim *fs)
{
	return fs->in_flight;
}
