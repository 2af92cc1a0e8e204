/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_scenarios.c: the RD engine on a "real wire" over the sim: any RTT, asymmetric paths, a path dying under a stream, heavy loss, rendezvous on long paths, a sender or receiver dying mid-message, a slow receiver, dead-path slots moving away. */
#include <stdio.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <rdma/fi_errno.h>

#include "rd_harness.h"
#include "braid/braid_errno.h"
#include "braid/braid_hash.h"

#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL
#define GBPS 1000000000ULL

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- payload patterns: every message its own bytes, so a mix-up shows ---- */

static uint64_t mix64(uint64_t z)
{
	return braid_mix64(z + 0x9e3779b97f4a7c15ULL);
}

static void fill(uint8_t *b, size_t len, uint64_t key)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = mix64(key * 0x100000001b3ULL + i / 8);

		memcpy(b + i, &w, len - i < 8 ? len - i : 8);
	}
}

/* The first offset where @b differs from the pattern of @key, or -1. */
static long mismatch(const uint8_t *b, size_t len, uint64_t key)
{
	size_t i, k;

	for (i = 0; i < len; i += 8) {
		uint64_t w = mix64(key * 0x100000001b3ULL + i / 8);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(b + i, &w, n))
			for (k = 0; k < n; k++)
				if (b[i + k] != ((const uint8_t *)&w)[k])
					return (long)(i + k);
	}
	return -1;
}

/* The loss-recovery counters, for failure messages and logs. */
static const char *stats_str(const struct braid_rd *rd)
{
	static char bufs[8][640];
	static int k;
	const struct braid_rd_stats *s = braid_rd_get_stats(rd);
	char *b = bufs[k++ % 8];

	snprintf(b, sizeof(bufs[0]),
		 "tx_data %lu tx_acks %lu retx %lu rto_fires %lu (spurious %lu) tlp %lu rack_losses %lu "
		 "(per path %lu) path_deaths %lu redraws %lu rdv_probes %lu rx_data %lu rx_acks %lu "
		 "rdv_msgs %lu cts_tx %lu cts_rx %lu peers_failed %lu dups %lu challenges %lu "
		 "answered %lu proven %lu unverified %lu",
		 (unsigned long)s->tx_data, (unsigned long)s->tx_acks, (unsigned long)s->retx_pkts,
		 (unsigned long)s->rto_fires, (unsigned long)s->rto_spurious,
		 (unsigned long)s->tlp_probes,
		 (unsigned long)s->rack_losses, (unsigned long)s->rack_path_losses,
		 (unsigned long)s->path_deaths, (unsigned long)s->path_redraws,
		 (unsigned long)s->rdv_probes, (unsigned long)s->rx_data, (unsigned long)s->rx_acks,
		 (unsigned long)s->rdv_msgs, (unsigned long)s->cts_tx, (unsigned long)s->cts_rx,
		 (unsigned long)s->peers_failed, (unsigned long)s->drops[BRAID_DROP_DUPLICATE],
		 (unsigned long)s->chal_tx, (unsigned long)s->chal_rx, (unsigned long)s->resp_rx,
		 (unsigned long)s->drops[BRAID_DROP_UNVERIFIED]);
	return b;
}

static struct braid_rd_config scen_cfg(uint32_t paths, uint64_t seed)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.paths = paths;
	c.epoch = 1;
	c.seed = seed;
	return c;
}

/*
 * Hand what the test just queued (sends, receives that trigger a CTS) to the
 * sim before the next h_step/h_run: h_step reads the sim's next event before
 * its first pump, so packets that pump produces into an empty sim would not
 * count and time would jump to the next engine deadline (delivering them late).
 */
static void kick(struct harness *h)
{
	h_pump(h);
}

/* ---- a batch: n messages node 0 -> node 1, each receive sized to its message ---- */

#define BMAX	64
#define GUARD	64	/* bytes past each receive's message that must stay untouched */

struct batch {
	int n;
	uint64_t key;
	size_t size[BMAX];
	uint8_t *src[BMAX], *dst[BMAX];
	uint64_t bytes;
};

static void batch_alloc(struct batch *b)
{
	int i;

	b->bytes = 0;
	for (i = 0; i < b->n; i++) {
		b->src[i] = malloc(b->size[i] + 1);
		b->dst[i] = malloc(b->size[i] + GUARD);
		cr_assert(b->src[i] && b->dst[i]);
		fill(b->src[i], b->size[i], b->key + (uint64_t)i);
		memset(b->dst[i], 0xee, b->size[i] + GUARD);
		b->bytes += b->size[i];
	}
}

static void batch_free(struct batch *b)
{
	int i;

	for (i = 0; i < b->n; i++) {
		free(b->src[i]);
		free(b->dst[i]);
	}
}

/* Receive i (posted in order, so it gets message i: FI_ORDER_SAS) in two iovs. */
static void batch_post(struct harness *h, struct batch *b, int i)
{
	size_t cut = b->size[i] / 3;
	struct iovec iov[2] = { { b->dst[i], cut }, { b->dst[i] + cut, b->size[i] - cut + GUARD } };
	struct braid_rd_recv r = { .iov = iov, .iov_count = 2,
				   .context = (void *)(uintptr_t)(i + 1) };

	cr_assert_eq(braid_rd_post_recv(h->nodes[1].rd, &r, h->now), 0, "post receive %d", i);
}

static void batch_send(struct harness *h, struct batch *b, int i)
{
	struct iovec iov = { b->src[i], b->size[i] };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
				   .flags = BRAID_RD_CQ_DATA, .data = b->key ^ (uint64_t)i,
				   .context = (void *)(uintptr_t)(i + 1) };

	cr_assert_eq(braid_rd_send(h->nodes[0].rd, &s, h->now), 0, "send %d", i);
}

static bool batch_done(struct harness *h, void *arg)
{
	const struct batch *b = arg;

	return h->nodes[1].ncomps >= (size_t)b->n && h->nodes[0].ncomps >= (size_t)b->n;
}

/* Every message exactly once, no error, byte-identical, nothing written past it. */
static void batch_check(struct harness *h, const struct batch *b, const char *what)
{
	int seen[BMAX] = { 0 }, i;

	cr_assert_eq(h->nodes[1].ncomps, (size_t)b->n, "%s: %zu receive completions for %d messages",
		     what, h->nodes[1].ncomps, b->n);
	cr_assert_eq(h->nodes[0].ncomps, (size_t)b->n, "%s: %zu send completions for %d messages",
		     what, h->nodes[0].ncomps, b->n);
	for (i = 0; i < b->n; i++) {
		const struct braid_rd_comp *c = &h->nodes[1].comps[i];
		int k = (int)(uintptr_t)c->context - 1;
		long bad;

		cr_assert(c->flags & BRAID_RD_COMP_RECV, "%s: receive completion %d is one", what, i);
		cr_assert_eq(c->err, 0, "%s: receive %d failed: err %d prov_errno %d", what, k, c->err,
			     c->prov_errno);
		cr_assert(k >= 0 && k < b->n, "%s: receive context %d", what, k);
		cr_assert_eq(seen[k]++, 0, "%s: receive %d completed twice", what, k);
		cr_assert_eq(c->len, b->size[k], "%s: message %d length %zu, sent %zu", what, k, c->len,
			     b->size[k]);
		cr_assert_eq(c->data, b->key ^ (uint64_t)k, "%s: message %d cq data", what, k);
		bad = mismatch(b->dst[k], b->size[k], b->key + (uint64_t)k);
		cr_assert_eq(bad, -1, "%s: message %d (%zu bytes) differs at byte %ld", what, k,
			     b->size[k], bad);
		for (size_t g = 0; g < GUARD; g++)
			cr_assert_eq(b->dst[k][b->size[k] + g], 0xee,
				     "%s: receive %d written past its message (+%zu)", what, k, g);
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < b->n; i++) {
		const struct braid_rd_comp *c = &h->nodes[0].comps[i];
		int k = (int)(uintptr_t)c->context - 1;

		cr_assert(c->flags & BRAID_RD_COMP_SEND, "%s: send completion %d is one", what, i);
		cr_assert_eq(c->err, 0, "%s: send %d failed: err %d prov_errno %d", what, k, c->err,
			     c->prov_errno);
		cr_assert(k >= 0 && k < b->n && seen[k]++ == 0, "%s: send %d completed once", what, k);
	}
}

/* ---- a stream: a continuous flow of equal messages, refilled as they complete ---- */

#define S_SLOTS	64	/* sends outstanding at most (window <= S_SLOTS) */
#define S_RING	512	/* receive buffers: a receive is posted only within S_RING of the oldest open one */

struct stream {
	int src, dst;
	uint64_t key;
	size_t size;
	int window;		/* sends outstanding */
	int post_ahead;		/* receives posted beyond those completed */
	bool stop;		/* no new sends (draining) */
	uint64_t next_send, next_post, recv_low, sends_done, recvs_done, rx_bytes;
	uint8_t *sbuf, *rbuf;
	uint8_t rdone[S_RING];
	int free_slot[S_SLOTS], nfree;
	/* receive-completion gaps: those ending at or after @gap_from */
	uint64_t gap_from, last_comp, max_gap, max_gap_end;
};

static void stream_init(struct stream *s, int src, int dst, size_t size, int window, uint64_t key)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->src = src;
	s->dst = dst;
	s->size = size;
	s->window = window;
	s->post_ahead = 256;
	s->key = key;
	s->gap_from = UINT64_MAX;
	s->sbuf = malloc(S_SLOTS * size);
	s->rbuf = malloc(S_RING * size);
	cr_assert(s->sbuf && s->rbuf);
	for (i = 0; i < window; i++)
		s->free_slot[s->nfree++] = i;
}

static void stream_fini(struct stream *s)
{
	free(s->sbuf);
	free(s->rbuf);
}

static void stream_refill(struct harness *h, struct stream *s)
{
	while (s->next_post - s->recv_low < S_RING &&
	       s->next_post - s->recvs_done < (uint64_t)s->post_ahead) {
		struct iovec iov = { s->rbuf + (s->next_post % S_RING) * s->size, s->size };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .peer = h_key(s->src),
					   .context = (void *)(uintptr_t)(s->next_post + 1) };

		cr_assert_eq(braid_rd_post_recv(h->nodes[s->dst].rd, &r, h->now), 0,
			     "stream %d->%d: post receive %lu", s->src, s->dst,
			     (unsigned long)s->next_post);
		s->next_post++;
	}
	while (!s->stop && s->nfree > 0) {
		int slot = s->free_slot[--s->nfree];
		uint8_t *buf = s->sbuf + (size_t)slot * s->size;
		struct iovec iov = { buf, s->size };
		struct braid_rd_send m = { .iov = &iov, .iov_count = 1, .peer = h_key(s->dst),
					   .flags = BRAID_RD_CQ_DATA, .data = s->key + s->next_send,
					   .context = (void *)(uintptr_t)(s->next_send * S_SLOTS +
									  (uint64_t)slot + 1) };

		fill(buf, s->size, s->key + s->next_send);
		cr_assert_eq(braid_rd_send(h->nodes[s->src].rd, &m, h->now), 0,
			     "stream %d->%d: send %lu", s->src, s->dst, (unsigned long)s->next_send);
		s->next_send++;
	}
}

static struct stream *stream_of(struct stream **ss, int ns, int node, bool send)
{
	int i;

	for (i = 0; i < ns; i++)
		if ((send ? ss[i]->src : ss[i]->dst) == node)
			return ss[i];
	return NULL;
}

/* Take every node's completions: check them, free slots, record receive times. */
static void stream_collect(struct harness *h, struct stream **ss, int ns)
{
	int n;

	for (n = 0; n < h->n; n++) {
		struct h_node *nd = &h->nodes[n];
		size_t i;

		for (i = 0; i < nd->ncomps; i++) {
			const struct braid_rd_comp *c = &nd->comps[i];
			uint64_t ctx = (uint64_t)(uintptr_t)c->context - 1;
			struct stream *s;

			if (c->flags & BRAID_RD_COMP_SEND) {
				s = stream_of(ss, ns, n, true);
				cr_assert(s, "a send completion on node %d with no stream", n);
				cr_assert_eq(c->err, 0,
					     "stream %d->%d: send %lu failed at %.3f ms: err %d prov_errno %d (%s)",
					     s->src, s->dst, (unsigned long)(ctx / S_SLOTS),
					     (double)h->now / MS, c->err, c->prov_errno,
					     stats_str(h->nodes[s->src].rd));
				s->free_slot[s->nfree++] = (int)(ctx % S_SLOTS);
				s->sends_done++;
				continue;
			}
			s = stream_of(ss, ns, n, false);
			cr_assert(s && (c->flags & BRAID_RD_COMP_RECV),
				  "a completion on node %d with no stream (flags %#x)", n, c->flags);
			cr_assert_eq(c->err, 0,
				     "stream %d->%d: receive %lu failed at %.3f ms: err %d prov_errno %d",
				     s->src, s->dst, (unsigned long)ctx, (double)h->now / MS, c->err,
				     c->prov_errno);
			cr_assert(ctx >= s->recv_low && ctx < s->next_post && !s->rdone[ctx % S_RING],
				  "stream %d->%d: receive %lu completed twice (or never posted)", s->src,
				  s->dst, (unsigned long)ctx);
			cr_assert_eq(c->len, s->size, "stream %d->%d: message %lu length %zu", s->src,
				     s->dst, (unsigned long)ctx, c->len);
			cr_assert_eq(c->data, s->key + ctx, "stream %d->%d: receive %lu holds message %lu",
				     s->src, s->dst, (unsigned long)ctx,
				     (unsigned long)(c->data - s->key));
			{
				long bad = mismatch(s->rbuf + (ctx % S_RING) * s->size, s->size,
						    s->key + ctx);

				cr_assert_eq(bad, -1, "stream %d->%d: message %lu differs at byte %ld",
					     s->src, s->dst, (unsigned long)ctx, bad);
			}
			s->rdone[ctx % S_RING] = 1;
			while (s->recv_low < s->next_post && s->rdone[s->recv_low % S_RING]) {
				s->rdone[s->recv_low % S_RING] = 0;
				s->recv_low++;
			}
			s->recvs_done++;
			s->rx_bytes += c->len;
			if (h->now >= s->gap_from && s->last_comp && h->now - s->last_comp > s->max_gap) {
				s->max_gap = h->now - s->last_comp;
				s->max_gap_end = h->now;
			}
			s->last_comp = h->now;
		}
		nd->ncomps = 0;
	}
}

/* Run the streams to virtual time @until exactly. */
static void stream_run(struct harness *h, struct stream **ss, int ns, uint64_t until)
{
	int i;

	while (h->now < until) {
		for (i = 0; i < ns; i++)
			stream_refill(h, ss[i]);
		kick(h);
		h_step(h, until);
		stream_collect(h, ss, ns);
	}
}

/* The gap still open at @now (no completion since the last one) counts too. */
static void stream_close_gap(struct stream *s, uint64_t now)
{
	uint64_t from = s->last_comp ? s->last_comp : s->gap_from;

	if (now > from && now - from > s->max_gap) {
		s->max_gap = now - from;
		s->max_gap_end = now;
	}
}

/* Stop sending; run until every message sent was received (or @limit): exactly once. */
static void stream_drain(struct harness *h, struct stream **ss, int ns, uint64_t limit)
{
	int i;
	bool done;

	for (i = 0; i < ns; i++)
		ss[i]->stop = true;
	for (;;) {
		done = true;
		for (i = 0; i < ns; i++)
			done &= ss[i]->recvs_done == ss[i]->next_send &&
				ss[i]->sends_done == ss[i]->next_send;
		if (done || h->now >= limit)
			break;
		for (i = 0; i < ns; i++)
			stream_refill(h, ss[i]);
		kick(h);
		h_step(h, limit);
		stream_collect(h, ss, ns);
	}
	for (i = 0; i < ns; i++)
		cr_assert(ss[i]->recvs_done == ss[i]->next_send && ss[i]->sends_done == ss[i]->next_send,
			  "stream %d->%d: %lu messages sent, %lu received, %lu send completions by %.3f ms "
			  "(sender: %s)", ss[i]->src, ss[i]->dst, (unsigned long)ss[i]->next_send,
			  (unsigned long)ss[i]->recvs_done, (unsigned long)ss[i]->sends_done,
			  (double)h->now / MS, stats_str(h->nodes[ss[i]->src].rd));
}

/* ==== 1. any RTT ==== */

static size_t mixed_size(uint64_t seed, int i)
{
	uint64_t x = mix64(seed * 1000 + (uint64_t)i);

	switch (x % 4) {
	case 0: return x % 8;
	case 1: return x % 1400;
	case 2: return x % 16000;
	default: return x % 65536;
	}
}

static void any_rtt_run(uint64_t delay)
{
	struct braid_sim_path_cfg p = { .delay_ns = delay, .jitter_ns = delay / 10 };
	struct braid_rd_config c = scen_cfg(8, 3);
	struct batch b = { .n = 40, .key = delay * 7 + 1 };
	uint64_t rtt = 2 * delay, bound, tx, retx;
	struct harness h;
	bool ok;
	int i;

	for (i = 0; i < b.n; i++)
		b.size[i] = (i == 7 || i == 29) ? 600 * 1024 : mixed_size(delay, i);
	batch_alloc(&b);
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 17), 0);
	for (i = 0; i < b.n; i++)
		batch_post(&h, &b, i);
	for (i = 0; i < b.n; i++)
		batch_send(&h, &b, i);
	kick(&h);
	/*
	 * The bound: the bytes at 1 Gbit/s (8 ns a byte) + 200 RTTs. The batch is
	 * about 1.6 MB, some 1150-1350 packets; Swift starts at 32 packets a window
	 * and adds one per RTT, so a correct engine needs about 25 RTTs of data
	 * (32 + 33 + ... passes 1150 after ~25 rounds), plus one RTT for each
	 * rendezvous handshake and a few for the tail: about 30 RTTs (what a
	 * healthy run takes at every delay here). 200 RTTs is a >6x margin; the
	 * byte term covers the fastest fabric, where host-scale floors (rto_min,
	 * ACK delay) rather than the RTT may dominate.
	 */
	bound = b.bytes * 8 + 200 * rtt;
	ok = h_run(&h, 4 * bound + SEC, batch_done, &b);
	cr_assert(ok, "delay %lu us: not all completed by %.3f ms (recv comps %zu, send comps %zu of %d); "
		  "sender: %s", (unsigned long)(delay / US), (double)h.now / MS, h.nodes[1].ncomps,
		  h.nodes[0].ncomps, b.n, stats_str(h.nodes[0].rd));
	batch_check(&h, &b, "any_rtt");
	tx = braid_rd_get_stats(h.nodes[0].rd)->tx_data;
	retx = braid_rd_get_stats(h.nodes[0].rd)->retx_pkts;
	cr_log_info("any_rtt delay %lu us: %.3f ms (bound %.3f ms, %.1f RTTs), retx %lu of %lu; sender: %s",
		    (unsigned long)(delay / US), (double)h.now / MS, (double)bound / MS,
		    (double)h.now / (double)rtt, (unsigned long)retx, (unsigned long)tx,
		    stats_str(h.nodes[0].rd));
	cr_expect_leq(h.now, bound, "delay %lu us: the batch took %.3f ms = %.1f RTTs, bound %.3f ms "
		      "(bytes at 1 Gbit/s + 200 RTTs); sender: %s", (unsigned long)(delay / US),
		      (double)h.now / MS, (double)h.now / (double)rtt, (double)bound / MS,
		      stats_str(h.nodes[0].rd));
	cr_expect_leq(retx * 20, tx, "delay %lu us: %lu retransmissions of %lu data packets "
		      "(> 5%%) on a clean fabric; sender: %s", (unsigned long)(delay / US),
		      (unsigned long)retx, (unsigned long)tx, stats_str(h.nodes[0].rd));
	h_fini(&h);
	batch_free(&b);
}

/* named by RTT: one-way delays of 2.5 us, 100 us, 1 ms, 10 ms, 25 ms */
Test(braid_rd_scenario, any_rtt__5us, .timeout = 30)
{
	any_rtt_run(2500);
}

Test(braid_rd_scenario, any_rtt__200us, .timeout = 30)
{
	any_rtt_run(100 * US);
}

Test(braid_rd_scenario, any_rtt__2ms, .timeout = 30)
{
	any_rtt_run(1 * MS);
}

Test(braid_rd_scenario, any_rtt__20ms, .timeout = 30)
{
	any_rtt_run(10 * MS);
}

Test(braid_rd_scenario, any_rtt__50ms, .timeout = 30)
{
	any_rtt_run(25 * MS);
}

/* ==== 2. asymmetric paths ==== */

/*
 * Rates: 10 Gbit/s per sim path and a 25 Gbit/s link per node, so a healthy
 * fabric is bound by the node link (four paths offer 40 Gbit/s, three 30).
 * The fast baselines are rate-bound, not window-bound: at 5 us one way the
 * RTT is 10 us and the bandwidth-delay product at 25 Gbit/s is ~31 KB (22
 * packets of 1416 bytes); at 20 us, 40 us and ~125 KB (88 packets): both far
 * under the 256-packet window (and reached by Swift from its initial 32
 * packets in at most ~56 RTTs, under 3 ms of a ~6 ms run). The slow path
 * itself cannot be used at that rate without the window binding (a packet on
 * a 1 ms RTT path holds the window's left edge while the fast paths fill
 * 256 packets in ~120 us): keeping data off it is what is measured.
 */
#define ASYM_MSGS	16
#define ASYM_SIZE	(1024 * 1024)

static double goodput_run(const uint64_t delay[4], const char *label)
{
	struct braid_sim_path_cfg p = { 0 };
	struct braid_rd_config c = scen_cfg(8, 5);
	struct batch b = { .n = ASYM_MSGS, .key = 0xa5a5 };
	struct harness h;
	double gbps;
	bool ok;
	int i;

	for (i = 0; i < b.n; i++)
		b.size[i] = ASYM_SIZE;
	batch_alloc(&b);
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 23), 0);
	for (i = 0; i < 4; i++) {
		p.delay_ns = delay[i];
		p.jitter_ns = delay[i] / 10;
		p.rate_bps = 10 * GBPS;
		cr_assert_eq(braid_sim_set_path(h.sim, i, &p), 0);
	}
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 0, 25 * GBPS), 0);
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 1, 25 * GBPS), 0);
	for (i = 0; i < b.n; i++)
		batch_post(&h, &b, i);
	for (i = 0; i < b.n; i++)
		batch_send(&h, &b, i);
	kick(&h);
	ok = h_run(&h, 60 * SEC, batch_done, &b);
	cr_assert(ok, "%s: not all completed by %.3f ms (recv %zu, send %zu of %d); sender: %s", label,
		  (double)h.now / MS, h.nodes[1].ncomps, h.nodes[0].ncomps, b.n,
		  stats_str(h.nodes[0].rd));
	batch_check(&h, &b, label);
	gbps = (double)b.bytes * 8 / (double)h.now;
	cr_log_info("%s: %d x 1 MiB in %.3f ms = %.2f Gbit/s; sender: %s", label, b.n,
		    (double)h.now / MS, gbps, stats_str(h.nodes[0].rd));
	h_fini(&h);
	batch_free(&b);
	return gbps;
}

static void asymmetric_case(uint64_t fast, uint64_t slow)
{
	const uint64_t base[4] = { fast, fast, fast, fast }, asym[4] = { fast, fast, fast, slow };
	char l1[64], l2[64];
	double g_base, g_asym;

	snprintf(l1, sizeof(l1), "4 x %lu us", (unsigned long)(fast / US));
	snprintf(l2, sizeof(l2), "3 x %lu us + %lu us", (unsigned long)(fast / US),
		 (unsigned long)(slow / US));
	g_base = goodput_run(base, l1);
	g_asym = goodput_run(asym, l2);
	cr_expect_geq(g_asym, 0.7 * g_base,
		      "1 MiB goodput with paths %s: %.2f Gbit/s = %.2fx of %.2f Gbit/s with %s (want >= 0.7x)",
		      l2, g_asym, g_asym / g_base, g_base, l1);
}

Test(braid_rd_scenario, asymmetric_paths__100x_slow_path_keeps_goodput, .timeout = 60)
{
	asymmetric_case(5 * US, 500 * US);
}

Test(braid_rd_scenario, asymmetric_paths__10x_slow_path_keeps_goodput, .timeout = 60)
{
	asymmetric_case(20 * US, 200 * US);
}

/* ==== 3. a path dies under a stream ==== */

/*
 * 4 KiB messages, 32 outstanding, refilled as their sends complete; the same
 * rates as above (10 Gbit/s a path, 25 Gbit/s a node), so at 10 us the stream
 * is bound by the node link (which three paths still fill) and at 500 us and
 * 5 ms by its 32 messages a round trip: one dead path of four should cost
 * little either way. Phases: a warm-up (excluded), the "before" window, then
 * @ndead sim paths from path 1 on (two of the eight slots each) go down for
 * the rest, all at once. The stall is the longest gap
 * between consecutive receive completions that ends after the failure (so
 * the gap spanning the failure counts), or the gap still open at the end;
 * goodput after must be 0.7x what the paths left can carry.
 */

static void path_death_run(uint64_t delay, int ndead)
{
	struct braid_sim_path_cfg p = { .delay_ns = delay, .jitter_ns = delay / 10,
					.rate_bps = 10 * GBPS };
	struct braid_rd_config c = scen_cfg(8, 9);
	uint64_t rtt = 2 * delay, t_warm, t_fail, t_end, b0, b1, b2, bound;
	struct stream s, *ss[1] = { &s };
	double before, after, want;
	struct harness h;
	int i;

	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 29), 0);
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 0, 25 * GBPS), 0);
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 1, 25 * GBPS), 0);
	stream_init(&s, 0, 1, 4096, 32, delay * 131);
	/* warm-up (excluded), then the "before" window, then path 1 dies for the rest */
	t_warm = max_u64(20 * rtt, 1 * MS);
	t_fail = t_warm + max_u64(50 * rtt, 10 * MS);
	t_end = t_fail + max_u64(100 * rtt, 20 * MS);
	for (i = 0; i < ndead; i++)
		cr_assert_eq(braid_sim_schedule(h.sim, t_fail, BRAID_SIM_PATH_DOWN, 1 + i), 0);
	stream_run(&h, ss, 1, t_warm);
	b0 = s.rx_bytes;
	stream_run(&h, ss, 1, t_fail);
	b1 = s.rx_bytes;
	s.gap_from = t_fail;
	stream_run(&h, ss, 1, t_end);
	b2 = s.rx_bytes;
	stream_close_gap(&s, t_end);
	before = (double)(b1 - b0) * 8 / (double)(t_fail - t_warm);
	after = (double)(b2 - b1) * 8 / (double)(t_end - t_fail);
	bound = max_u64(3 * rtt, 5 * MS);
	cr_log_info("path_death (%d of 4 dead) delay %lu us: before %.3f Gbit/s, after %.3f Gbit/s (%.2fx), longest gap "
		    "%.3f ms (ending at %.3f ms, failure at %.3f ms), bound %.3f ms; sender: %s",
		    ndead, (unsigned long)(delay / US), before, after, after / before,
		    (double)s.max_gap / MS, (double)s.max_gap_end / MS, (double)t_fail / MS,
		    (double)bound / MS, stats_str(h.nodes[0].rd));
	cr_expect_leq(s.max_gap, bound,
		      "delay %lu us: the longest gap between receive completions after the path died "
		      "was %.3f ms (= %.1f RTTs, ending at %.3f ms, failure at %.3f ms), bound %.3f ms; "
		      "sender: %s", (unsigned long)(delay / US), (double)s.max_gap / MS,
		      (double)s.max_gap / (double)rtt, (double)s.max_gap_end / MS, (double)t_fail / MS,
		      (double)bound / MS, stats_str(h.nodes[0].rd));
	/* 0.7x of what the paths left could carry, at most what it was before */
	want = 0.7 * (4 - ndead) / 3;
	want = want < 0.7 ? want : 0.7;
	cr_expect_geq(after, want * before,
		      "delay %lu us: goodput after %d of 4 paths died %.3f Gbit/s = %.2fx of %.3f Gbit/s "
		      "before (want >= %.2fx); sender: %s", (unsigned long)(delay / US), ndead, after,
		      after / before, before, want, stats_str(h.nodes[0].rd));
	cr_expect_geq(braid_rd_get_stats(h.nodes[0].rd)->path_deaths, 1,
		      "delay %lu us: the dead path was never declared dead; sender: %s",
		      (unsigned long)(delay / US), stats_str(h.nodes[0].rd));
	/* the stream must not hide a retransmission storm: every retransmission is
	 * explained by a packet the dead path dropped, but for 5% spurious ones */
	{
		uint64_t drops = 0, tx = braid_rd_get_stats(h.nodes[0].rd)->tx_data;
		uint64_t retx = braid_rd_get_stats(h.nodes[0].rd)->retx_pkts;
		for (i = 0; i < 4; i++)
			drops += braid_sim_path_stats(h.sim, i)->down_drops;
		cr_expect_leq(retx, drops + tx / 20,
			      "delay %lu us: %lu retransmissions of %lu data packets, but the dead path "
			      "dropped only %lu packets (data and ACKs): %lu unexplained (> 5%%); sender: %s",
			      (unsigned long)(delay / US), (unsigned long)retx, (unsigned long)tx,
			      (unsigned long)drops, (unsigned long)(retx > drops ? retx - drops : 0),
			      stats_str(h.nodes[0].rd));
	}
	stream_drain(&h, ss, 1, h.now + 30 * SEC);
	h_fini(&h);
	stream_fini(&s);
}

Test(braid_rd_scenario, path_death_stall__10us, .timeout = 60)
{
	path_death_run(10 * US, 1);
}

Test(braid_rd_scenario, path_death_stall__500us, .timeout = 60)
{
	path_death_run(500 * US, 1);
}

Test(braid_rd_scenario, path_death_stall__5ms, .timeout = 60)
{
	path_death_run(5 * MS, 1);
}

Test(braid_rd_scenario, half_paths_death_stall__500us, .timeout = 60)
{
	path_death_run(500 * US, 2);
}

/*
 * A spine of two black-holed under a stream on a slow fabric, as tools/leafspine's spinedown
 * on 2 spines: the two nodes sit on leaves of their own (rd_harness.h @spines), 16 sim
 * paths of 50 us hashed onto 2 spines, the nodes' links 50 Mbit/s and 1500-byte packets (a
 * window of a few packets). Spine 0 dies both ways after a warm-up: half the routes die.
 * With one hash seed for both leaves a reply crosses its packet's spine; with a seed per
 * leaf (@asym) it may cross the other, so data on a quarter of the routes arrives while
 * the ACKs that echo it die. Every message must keep arriving: the longest gap between
 * receive completions from the failure on is at most 50 ms, and the stream keeps 0.35x
 * its rate (half the routes, 0.7x of that), both ways.
 */
static void spine_death_run(bool asym)
{
	struct braid_sim_path_cfg p = { .delay_ns = 50 * US, .jitter_ns = 5 * US };
	struct braid_rd_config c = scen_cfg(16, 61);
	struct stream s01, s10, *ss[2] = { &s01, &s10 };
	const uint64_t t_warm = 300 * MS, t_fail = 1300 * MS, t_end = 3300 * MS;
	uint64_t b0[2], b1[2], b2[2];
	struct harness h;
	int i;

	c.mtu = 1500;
	c.peer_timeout_ns = 5 * SEC;
	cr_assert_eq(h_init(&h, 2, 16, &p, &c, 67), 0);
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 0, 50 * 1000 * 1000), 0);
	cr_assert_eq(braid_sim_set_node_rate(h.sim, 1, 50 * 1000 * 1000), 0);
	h.spines = 2;
	h.leaf_seed[0] = 7;
	h.leaf_seed[1] = asym ? 8 : 7;
	stream_init(&s01, 0, 1, 65536, 32, 0x3000);
	stream_init(&s10, 1, 0, 65536, 32, 0x4000);
	stream_run(&h, ss, 2, t_warm);
	for (i = 0; i < 2; i++)
		b0[i] = ss[i]->rx_bytes;
	stream_run(&h, ss, 2, t_fail);
	h.spine_down = 1;
	for (i = 0; i < 2; i++) {
		b1[i] = ss[i]->rx_bytes;
		ss[i]->gap_from = t_fail;
	}
	stream_run(&h, ss, 2, t_end);
	for (i = 0; i < 2; i++) {
		double before, after;

		b2[i] = ss[i]->rx_bytes;
		stream_close_gap(ss[i], t_end);
		before = (double)(b1[i] - b0[i]) * 8 / (double)(t_fail - t_warm);
		after = (double)(b2[i] - b1[i]) * 8 / (double)(t_end - t_fail);
		cr_log_info("spine death (%s): node %d: before %.1f Mbit/s, after %.1f Mbit/s (%.2fx), "
			    "longest gap %.1f ms (ending at %.1f ms, failure at %.1f ms); spine drops "
			    "%lu; sender: %s", asym ? "a seed per leaf" : "one seed", i, before * 1e3,
			    after * 1e3, after / before, (double)ss[i]->max_gap / MS,
			    (double)ss[i]->max_gap_end / MS, (double)t_fail / MS,
			    (unsigned long)h.spine_drops, stats_str(h.nodes[i].rd));
		cr_expect_leq(ss[i]->max_gap, 50 * MS,
			      "%s: node %d's stream received nothing for %.1f ms (ending at %.1f ms, "
			      "spine down at %.1f ms), want <= 50 ms; sender: %s",
			      asym ? "a seed per leaf" : "one seed", i, (double)ss[i]->max_gap / MS,
			      (double)ss[i]->max_gap_end / MS, (double)t_fail / MS,
			      stats_str(h.nodes[i].rd));
		cr_expect_geq(after, 0.35 * before,
			      "%s: node %d's stream after the spine died %.1f Mbit/s = %.2fx of %.1f "
			      "before (want >= 0.35x); sender: %s", asym ? "a seed per leaf" : "one seed",
			      i, after * 1e3, after / before, before * 1e3, stats_str(h.nodes[i].rd));
	}
	cr_assert_gt(h.spine_drops, 0, "the spine swallowed packets");
	h.spine_down = 0;
	stream_drain(&h, ss, 2, h.now + 30 * SEC);
	h_fini(&h);
	stream_fini(&s01);
	stream_fini(&s10);
}

Test(braid_rd_scenario, spine_death__replies_cross_their_packets_spine, .timeout = 60)
{
	spine_death_run(false);
}

Test(braid_rd_scenario, spine_death__replies_hashed_on_their_own, .timeout = 60)
{
	spine_death_run(true);
}

/* ==== 4. half the packets lost, every path, both ways ==== */

Test(braid_rd_scenario, half_loss_completes, .timeout = 60)
{
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US, .jitter_ns = 1 * US, .loss = 0.5 };
	struct braid_rd_config c = scen_cfg(8, 11);
	struct batch b = { .n = 20, .key = 0x50 };
	struct harness h;
	bool ok;
	int i;

	c.peer_timeout_ns = 5 * SEC;
	for (i = 0; i < b.n; i++)
		b.size[i] = 64 * 1024;
	batch_alloc(&b);
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 31), 0);
	for (i = 0; i < b.n; i++)
		batch_post(&h, &b, i);
	for (i = 0; i < b.n; i++)
		batch_send(&h, &b, i);
	kick(&h);
	ok = h_run(&h, 600 * SEC, batch_done, &b);
	cr_log_info("half_loss: %zu/%d received, %zu sends completed in %.3f ms; sender: %s",
		    h.nodes[1].ncomps, b.n, h.nodes[0].ncomps, (double)h.now / MS,
		    stats_str(h.nodes[0].rd));
	cr_assert(ok, "50%% loss: not all completed by %.3f s (recv %zu, send %zu of %d); sender: %s",
		  (double)h.now / SEC, h.nodes[1].ncomps, h.nodes[0].ncomps, b.n,
		  stats_str(h.nodes[0].rd));
	batch_check(&h, &b, "half_loss");
	h_fini(&h);
	batch_free(&b);
}

/* ==== 5. rendezvous on long paths, receives posted before and after ==== */

static void rdv_delayed_run(uint64_t delay)
{
	struct braid_sim_path_cfg p = { .delay_ns = delay, .jitter_ns = delay / 10 };
	struct braid_rd_config c = scen_cfg(8, 13);
	struct batch b = { .n = 4, .key = delay + 0x77 };
	struct harness h;
	bool ok;
	int i;

	for (i = 0; i < b.n; i++)
		b.size[i] = 1024 * 1024;
	batch_alloc(&b);
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 37), 0);
	batch_post(&h, &b, 0);
	batch_post(&h, &b, 1);
	for (i = 0; i < b.n; i++)
		batch_send(&h, &b, i);
	kick(&h);
	/* the other two receives come three RTTs later: their messages wait for them */
	h_run(&h, 6 * delay, NULL, NULL);
	cr_assert_lt(h.nodes[1].ncomps, 3, "delay %lu us: messages 2, 3 had no receive yet",
		     (unsigned long)(delay / US));
	batch_post(&h, &b, 2);
	batch_post(&h, &b, 3);
	kick(&h);
	ok = h_run(&h, 120 * SEC, batch_done, &b);
	cr_assert(ok, "delay %lu us: not all completed by %.3f s (recv %zu, send %zu of %d); sender: %s",
		  (unsigned long)(delay / US), (double)h.now / SEC, h.nodes[1].ncomps,
		  h.nodes[0].ncomps, b.n, stats_str(h.nodes[0].rd));
	batch_check(&h, &b, "rdv_delayed");
	cr_assert_geq(braid_rd_get_stats(h.nodes[0].rd)->rdv_msgs, 4, "the messages went by rendezvous");
	/* a clean fabric: as in any_rtt, no retransmission storm on a long path */
	cr_expect_leq(braid_rd_get_stats(h.nodes[0].rd)->retx_pkts * 20,
		      braid_rd_get_stats(h.nodes[0].rd)->tx_data,
		      "delay %lu us: %lu retransmissions of %lu data packets (> 5%%) on a clean fabric; "
		      "sender: %s", (unsigned long)(delay / US),
		      (unsigned long)braid_rd_get_stats(h.nodes[0].rd)->retx_pkts,
		      (unsigned long)braid_rd_get_stats(h.nodes[0].rd)->tx_data, stats_str(h.nodes[0].rd));
	cr_log_info("rdv delay %lu us: %.3f ms = %.1f RTTs; sender: %s", (unsigned long)(delay / US),
		    (double)h.now / MS, (double)h.now / (2.0 * (double)delay), stats_str(h.nodes[0].rd));
	h_fini(&h);
	batch_free(&b);
}

Test(braid_rd_scenario, rendezvous_on_delayed_paths__1ms, .timeout = 60)
{
	rdv_delayed_run(1 * MS);
}

Test(braid_rd_scenario, rendezvous_on_delayed_paths__10ms, .timeout = 60)
{
	rdv_delayed_run(10 * MS);
}

/* ==== 6-8. a peer dies, or is only slow, in the middle of a message ==== */

#define PEER_TMO	(200 * MS)
#define TMO_SLACK	(20 * MS)	/* 10% of the peer timeout: the receiver's timer granularity */

struct rx_bytes_at_least { uint64_t n; };

static bool rx_bytes_reached(struct harness *h, void *arg)
{
	const struct rx_bytes_at_least *w = arg;

	/* and the receiver has proven the sender (§4.9): an unproven sender's
	 * message takes no receive until whole (test_rd_verify.c) */
	return braid_rd_get_stats(h->nodes[1].rd)->rx_bytes >= w->n &&
	       braid_rd_get_stats(h->nodes[1].rd)->peers_verified >= 1;
}

static bool node_has_comp(struct harness *h, void *arg)
{
	return h->nodes[(int)(uintptr_t)arg].ncomps > 0;
}

static void sender_killed_run(size_t size, uint64_t rdv_threshold, uint64_t kill_after,
			      const char *label)
{
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US, .jitter_ns = 1 * US };
	struct braid_rd_config c = scen_cfg(8, 19);
	struct batch b = { .n = 1, .key = 0x6666 };
	struct rx_bytes_at_least w = { kill_after };
	const struct braid_rd_comp *rc;
	uint64_t t_kill, took;
	struct harness h;
	bool ok;

	c.peer_timeout_ns = PEER_TMO;
	c.rdv_threshold = rdv_threshold;
	b.size[0] = size;
	batch_alloc(&b);
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 41), 0);
	batch_post(&h, &b, 0);
	batch_send(&h, &b, 0);
	kick(&h);
	ok = h_run(&h, 1 * SEC, rx_bytes_reached, &w);
	cr_assert(ok, "%s: the receiver never got %lu bytes (%lu)", label, (unsigned long)kill_after,
		  (unsigned long)braid_rd_get_stats(h.nodes[1].rd)->rx_bytes);
	cr_assert_eq(h.nodes[1].ncomps, 0, "%s: the message must still be incomplete when the sender dies",
		     label);
	t_kill = h.now;
	cr_assert_eq(braid_sim_node_up(h.sim, 0, false), 0);
	ok = h_run(&h, t_kill + 10 * PEER_TMO, node_has_comp, (void *)(uintptr_t)1);
	cr_assert(ok, "%s: the receive never completed (%.3f ms after the sender died, %lu of %zu bytes "
		  "in); receiver: %s", label, (double)(h.now - t_kill) / MS,
		  (unsigned long)braid_rd_get_stats(h.nodes[1].rd)->rx_bytes, size,
		  stats_str(h.nodes[1].rd));
	took = h.now - t_kill;
	rc = &h.nodes[1].comps[0];
	cr_assert(rc->flags & BRAID_RD_COMP_RECV, "%s: a receive completion", label);
	cr_assert_eq(rc->context, (void *)1, "%s: the posted receive's", label);
	cr_assert_eq(rc->err, FI_EHOSTUNREACH, "%s: the receive ends with FI_EHOSTUNREACH, got err %d "
		     "(len %zu) %.3f ms after the sender died", label, rc->err, rc->len,
		     (double)took / MS);
	cr_assert_eq(rc->prov_errno, BRAID_PERR_PEER_UNREACHABLE, "%s: prov_errno %d", label,
		     rc->prov_errno);
	cr_assert_leq(took, PEER_TMO + TMO_SLACK, "%s: the receive failed %.3f ms after the sender died; "
		      "the peer timeout is %.0f ms (+%.0f ms slack)", label, (double)took / MS,
		      (double)PEER_TMO / MS, (double)TMO_SLACK / MS);
	cr_assert_geq(took, PEER_TMO / 2, "%s: the receive failed only %.3f ms after the sender died, "
		      "well before the peer timeout of %.0f ms", label, (double)took / MS,
		      (double)PEER_TMO / MS);
	/* and nothing more: no second completion, nothing left pending */
	h_run(&h, h.now + 2 * PEER_TMO, NULL, NULL);
	cr_assert_eq(h.nodes[1].ncomps, 1, "%s: exactly one receive completion (%zu)", label,
		     h.nodes[1].ncomps);
	cr_assert(!braid_rd_pending(h.nodes[1].rd), "%s: the receiver has nothing pending; receiver: %s",
		  label, stats_str(h.nodes[1].rd));
	cr_log_info("%s: receive failed %.3f ms after the sender died; receiver: %s", label,
		    (double)took / MS, stats_str(h.nodes[1].rd));
	h_fini(&h);
	batch_free(&b);
}

Test(braid_rd_scenario, sender_killed_mid_message__rendezvous_after_first_packet, .timeout = 30)
{
	/* killed once the first (RDV) packet is in: the receiver has sent its CTS and waits for data */
	sender_killed_run(1024 * 1024, 256 * 1024, 1, "1 MiB rendezvous, first packet in");
}

Test(braid_rd_scenario, sender_killed_mid_message__rendezvous_mid_data, .timeout = 30)
{
	sender_killed_run(1024 * 1024, 256 * 1024, 400 * 1024, "1 MiB rendezvous, 400 KiB in");
}

Test(braid_rd_scenario, sender_killed_mid_message__eager, .timeout = 30)
{
	sender_killed_run(200 * 1024, 1024 * 1024, 64 * 1024, "200 KiB eager, 64 KiB in");
}

static bool first_ack_in(struct harness *h, void *arg)
{
	(void)arg;
	return braid_rd_get_stats(h->nodes[0].rd)->rx_acks > 0;
}

/* The receiver posts nothing; the 1 MiB send's first packet is acknowledged; the send waits for a CTS. */
static void rdv_waiting_setup(struct harness *h, struct batch *b, uint64_t seed)
{
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US, .jitter_ns = 1 * US };
	struct braid_rd_config c = scen_cfg(8, seed);

	c.peer_timeout_ns = PEER_TMO;
	b->n = 1;
	b->size[0] = 1024 * 1024;
	batch_alloc(b);
	cr_assert_eq(h_init(h, 2, 4, &p, &c, seed), 0);
	batch_send(h, b, 0);
	kick(h);
	cr_assert(h_run(h, 100 * MS, first_ack_in, NULL), "the first packet was acknowledged");
	cr_assert_eq(braid_rd_get_stats(h->nodes[0].rd)->rdv_msgs, 1, "the send goes by rendezvous");
	cr_assert_eq(braid_rd_get_stats(h->nodes[0].rd)->cts_rx, 0, "no CTS: nothing is posted");
	cr_assert_eq(h->nodes[0].ncomps, 0, "the send waits");
}

Test(braid_rd_scenario, dead_receiver_fails_waiting_rendezvous, .timeout = 30)
{
	struct batch b = { .key = 0x7777 };
	struct harness h;
	uint64_t t_kill, took;
	bool ok;

	rdv_waiting_setup(&h, &b, 43);
	t_kill = h.now;
	cr_assert_eq(braid_sim_node_up(h.sim, 1, false), 0);
	ok = h_run(&h, t_kill + 10 * PEER_TMO, node_has_comp, (void *)(uintptr_t)0);
	took = h.now - t_kill;
	cr_assert(ok, "the send to the dead receiver never completed (%.3f ms later); sender: %s",
		  (double)took / MS, stats_str(h.nodes[0].rd));
	cr_assert_eq(h.nodes[0].comps[0].err, FI_EHOSTUNREACH,
		     "the send ends with FI_EHOSTUNREACH, got err %d after %.3f ms", h.nodes[0].comps[0].err,
		     (double)took / MS);
	cr_assert_eq(h.nodes[0].comps[0].prov_errno, BRAID_PERR_PEER_UNREACHABLE);
	cr_assert_leq(took, PEER_TMO + TMO_SLACK, "the send failed %.3f ms after the receiver died; the "
		      "peer timeout is %.0f ms (+%.0f ms slack); sender: %s", (double)took / MS,
		      (double)PEER_TMO / MS, (double)TMO_SLACK / MS, stats_str(h.nodes[0].rd));
	cr_assert_geq(took, PEER_TMO / 2, "the send failed only %.3f ms after the receiver died, well "
		      "before the peer timeout of %.0f ms", (double)took / MS, (double)PEER_TMO / MS);
	h_run(&h, h.now + 2 * PEER_TMO, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 1, "exactly one send completion (%zu)", h.nodes[0].ncomps);
	cr_assert(!braid_rd_pending(h.nodes[0].rd), "the sender has nothing pending");
	cr_log_info("dead receiver: the send failed %.3f ms after; sender: %s", (double)took / MS,
		    stats_str(h.nodes[0].rd));
	h_fini(&h);
	batch_free(&b);
}

Test(braid_rd_scenario, slow_receiver_keeps_rendezvous_alive, .timeout = 30)
{
	struct batch b = { .key = 0x8888 };
	struct harness h;
	uint64_t probes;
	bool ok;

	rdv_waiting_setup(&h, &b, 47);
	/* three peer timeouts with nothing posted: the peer answers, it is only slow */
	h_run(&h, h.now + 3 * PEER_TMO + 10 * MS, NULL, NULL);
	probes = braid_rd_get_stats(h.nodes[0].rd)->rdv_probes;
	cr_assert_eq(h.nodes[0].ncomps, 0, "the send to a live, slow receiver must not complete "
		     "(err %d at %.3f ms); sender: %s", h.nodes[0].ncomps ? h.nodes[0].comps[0].err : 0,
		     (double)h.now / MS, stats_str(h.nodes[0].rd));
	cr_assert_eq(h.nodes[1].ncomps, 0, "nothing completes at the receiver");
	cr_assert_gt(probes, 0, "the sender probed its waiting peer; sender: %s",
		     stats_str(h.nodes[0].rd));
	batch_post(&h, &b, 0);
	kick(&h);
	ok = h_run(&h, h.now + 2 * SEC, batch_done, &b);
	cr_assert(ok, "posted at last, the message did not complete (recv %zu, send %zu); sender: %s",
		  h.nodes[1].ncomps, h.nodes[0].ncomps, stats_str(h.nodes[0].rd));
	batch_check(&h, &b, "slow_receiver");
	cr_log_info("slow receiver: %lu probes in %.0f ms; sender: %s", (unsigned long)probes,
		    (double)(3 * PEER_TMO) / MS, stats_str(h.nodes[0].rd));
	h_fini(&h);
	batch_free(&b);
}

/* ==== 9. the slots of a dead path move away and stay off ==== */

/*
 * Node 0 streams to node 1 (and, @bidir, node 1 to node 0) over 4 sim paths
 * with engine paths = 4 (slot i on sim path i at first); sim path 2 dies after
 * a warm-up. A few RTTs later, the dead path's share of all packets put on
 * the fabric during a long window must be under 5%.
 *
 * The sim's counters are per path, both directions together. One way, the
 * receiver only acknowledges: its ACKs go on its own slots, which never learn
 * of the dead path (no packet of its is acknowledged), so a quarter of them
 * would land there forever and be counted. In the one-way case the receiver
 * therefore runs with paths = 1 (its ACKs all on sim path 0): the count is the
 * data sender's slots alone. The bidirectional case has both engines learn.
 */
static void dead_path_share_run(bool bidir)
{
	struct braid_sim_path_cfg p = { .delay_ns = 20 * US, .jitter_ns = 2 * US };
	struct braid_rd_config c = scen_cfg(4, 53);
	struct stream s01, s10, *ss[2] = { &s01, &s10 };
	uint64_t rtt = 40 * US, t_fail = 2 * MS, t_a, t_b, before[4], dead = 0, total = 0;
	const int dpath = 2;
	struct harness h;
	int i, ns = bidir ? 2 : 1;

	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 59), 0);
	if (!bidir) {
		struct braid_rd_config c1 = c;

		c1.paths = 1;
		cr_assert_eq(h_restart(&h, 1, &c1), 0);
	}
	stream_init(&s01, 0, 1, 4096, 32, 0x1000);
	stream_init(&s10, 1, 0, 4096, 32, 0x2000);
	cr_assert_eq(braid_sim_schedule(h.sim, t_fail, BRAID_SIM_PATH_DOWN, dpath), 0);
	t_a = t_fail + max_u64(20 * rtt, 1 * MS);
	t_b = t_a + max_u64(200 * rtt, 10 * MS);
	stream_run(&h, ss, ns, t_a);
	for (i = 0; i < 4; i++)
		before[i] = braid_sim_path_stats(h.sim, i)->sent;
	stream_run(&h, ss, ns, t_b);
	for (i = 0; i < 4; i++) {
		uint64_t d = braid_sim_path_stats(h.sim, i)->sent - before[i];

		total += d;
		if (i == dpath)
			dead = d;
	}
	cr_log_info("dead path share (%s): %lu of %lu packets (%.2f%%) in [%.1f, %.1f] ms; node 0: %s; "
		    "node 1: %s", bidir ? "both ways" : "one way", (unsigned long)dead,
		    (unsigned long)total, 100.0 * (double)dead / (double)total, (double)t_a / MS,
		    (double)t_b / MS, stats_str(h.nodes[0].rd), stats_str(h.nodes[1].rd));
	cr_assert_gt(total, 1000, "traffic flowed in the window (%lu packets)", (unsigned long)total);
	cr_expect_lt(dead * 20, total, "%s: the dead sim path %d still got %lu of %lu packets (%.2f%%, "
		     "want < 5%%) from %.1f to %.1f ms (it died at %.1f ms); node 0: %s; node 1: %s",
		     bidir ? "both ways" : "one way", dpath, (unsigned long)dead, (unsigned long)total,
		     100.0 * (double)dead / (double)total, (double)t_a / MS, (double)t_b / MS,
		     (double)t_fail / MS, stats_str(h.nodes[0].rd), stats_str(h.nodes[1].rd));
	/* moved: by the silence rule (path_deaths) or by losses; either re-draws the entropy */
	cr_expect_geq(braid_rd_get_stats(h.nodes[0].rd)->path_redraws, 1,
		      "node 0 re-drew the dead path's slot; node 0: %s", stats_str(h.nodes[0].rd));
	if (bidir)
		cr_expect_geq(braid_rd_get_stats(h.nodes[1].rd)->path_redraws, 1,
			      "node 1 re-drew the dead path's slot; node 1: %s", stats_str(h.nodes[1].rd));
	stream_drain(&h, ss, ns, h.now + 30 * SEC);
	h_fini(&h);
	stream_fini(&s01);
	stream_fini(&s10);
}

Test(braid_rd_scenario, dead_path_slots_move__one_way, .timeout = 30)
{
	dead_path_share_run(false);
}

Test(braid_rd_scenario, dead_path_slots_move__both_ways, .timeout = 30)
{
	dead_path_share_run(true);
}

/* ==== 10. ECN: a CE mark cuts the window, so the queue that marks stays short ==== */

/* Stream 64 KiB messages over 4 rate-limited paths for 20 ms; delay never counts as
 * congestion here (a 1 s target), so only ECN can hold the window back. Returns the
 * goodput and the largest number of packets queued in the fabric. */
static double ecn_run(uint64_t ecn_threshold, size_t *max_queued, uint64_t *echoes)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5 * US, .rate_bps = GBPS,
					.ecn_threshold_ns = ecn_threshold };
	struct braid_rd_config c = scen_cfg(8, 41);
	struct stream s, *ss[1] = { &s };
	struct harness h;
	uint64_t t, end = 20 * MS;
	double gbps;

	c.cc_target_ns = 1 * SEC;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 43), 0);
	stream_init(&s, 0, 1, 64 * 1024, 16, 0xec);
	*max_queued = 0;
	for (t = 100 * US; t <= end; t += 100 * US) {
		size_t q;

		stream_run(&h, ss, 1, t);
		q = braid_sim_in_flight(h.sim);
		if (t > 2 * MS && q > *max_queued)
			*max_queued = q;
	}
	gbps = (double)s.rx_bytes * 8 / (double)end;
	*echoes = braid_rd_get_stats(h.nodes[0].rd)->ecn_echoes;
	if (ecn_threshold)
		cr_assert_gt(braid_rd_get_stats(h.nodes[1].rd)->rx_ce, 0, "the receiver saw CE marks");
	stream_drain(&h, ss, 1, h.now + 30 * SEC);
	h_fini(&h);
	stream_fini(&s);
	return gbps;
}

Test(braid_rd_scenario, ecn_marks_keep_the_queue_short, .timeout = 60)
{
	size_t q_plain, q_ecn;
	uint64_t e_plain, e_ecn;
	double g_plain = ecn_run(0, &q_plain, &e_plain);
	double g_ecn = ecn_run(20 * US, &q_ecn, &e_ecn);

	cr_log_info("ecn: without marks %.2f Gbit/s, up to %zu packets queued; with marks above "
		    "20 us of queue %.2f Gbit/s, up to %zu queued, %lu CE echoes", g_plain, q_plain,
		    g_ecn, q_ecn, (unsigned long)e_ecn);
	cr_assert_eq(e_plain, 0, "no marks, no echoes");
	cr_assert_gt(e_ecn, 0, "the sender heard the CE marks");
	cr_assert_lt(q_ecn * 2, q_plain, "the marks held the queue to under half (%zu vs %zu packets)",
		     q_ecn, q_plain);
	cr_assert_geq(g_ecn, 0.8 * g_plain, "at no great cost in goodput (%.2f vs %.2f Gbit/s)",
		      g_ecn, g_plain);
}

/* ---- hosts away: a sender and its receiver time-sharing one core (protocol.md §4.5) ---- */

/*
 * One poll of node @i at h->now, as the provider's progress does: read what
 * the sim delivered (told, when @arrivals, that it came after the node last
 * read its wire to empty: braid_rd_arrived()), run the timers, send.
 */
static void away_poll(struct harness *h, int i, bool arrivals, uint64_t *drained)
{
	struct braid_sim_pkt pkts[64];
	struct braid_rd_out out[64];
	struct h_node *nd = &h->nodes[i];
	int k, n;

	while ((n = braid_sim_recv(h->sim, h->now, i, pkts, 64)) > 0) {
		for (k = 0; k < n; k++) {
			if (arrivals)
				braid_rd_arrived(nd->rd, drained[i]);
			braid_rd_input_from(nd->rd, pkts[k].data, pkts[k].len, h_ip(pkts[k].src),
					    pkts[k].path, pkts[k].ecn_ce, h->now);
		}
	}
	drained[i] = h->now;
	if (braid_rd_next_deadline(nd->rd) <= h->now)
		braid_rd_timer(nd->rd, h->now);
	while ((n = braid_rd_output(nd->rd, h->now, out, 64)) > 0) {
		for (k = 0; k < n;) {
			uint8_t buf[65536];
			const struct braid_rd_out *o = &out[k];
			int dst = h_node_of_ip(h, o->dst_ip);
			size_t len = rd_dgram_copy(o, n - k, buf, &k);

			if (dst >= 0)
				braid_sim_send(h->sim, h->now, i, dst,
					       o->reply_route >= 0 ? o->reply_route % h->sim_paths :
					       o->entropy % h->sim_paths, buf, len);
		}
	}
	while (nd->ncomps < H_MAX_COMPS &&
	       (n = braid_rd_poll(nd->rd, nd->comps + nd->ncomps,
				  (int)(H_MAX_COMPS - nd->ncomps))) > 0)
		nd->ncomps += (size_t)n;
}

/*
 * A stream of 8-byte messages, 64 outstanding, between two busy-polling
 * hosts: 20 ms side by side, then 400 ms sharing one core in 4 ms slices
 * (each polls, every 5 us, only in its own slice; what comes for the other
 * waits in the sim), as two of four busy-polling threads on two cores do.
 * Every RTT sample then holds a slice or two of absence, no queueing. The
 * messages received while sharing are returned.
 */
static uint64_t away_run(bool arrivals)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5 * US };
	struct braid_rd_config c = scen_cfg(4, 13);
	struct stream s, *ss[1] = { &s };
	uint64_t drained[2] = { 0, 0 }, t, shared_from = 20 * MS, end = 420 * MS, before = 0;
	struct harness h;

	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 17), 0);
	stream_init(&s, 0, 1, 8, 64, 0xa4a7);
	for (t = 5 * US; t <= end; t += 5 * US) {
		/* side by side, then node 0's slices [8k, 8k + 4) ms, node 1's after */
		bool shared = t >= shared_from;
		int who = (int)(((t - shared_from) / (4 * MS)) % 2), i;

		if (t == shared_from)
			before = s.recvs_done;
		h.now = t;
		stream_refill(&h, &s);
		for (i = 0; i < 2; i++)
			if (!shared || i == who)
				away_poll(&h, i, arrivals, drained);
		stream_collect(&h, ss, 1);
	}
	cr_log_info("hosts away (%s arrival times): %lu messages in 400 ms of a shared core "
		    "(%lu before it, in 20 ms); sender: %s", arrivals ? "with" : "without",
		    (unsigned long)(s.recvs_done - before), (unsigned long)before,
		    stats_str(h.nodes[0].rd));
	before = s.recvs_done - before;
	h_fini(&h);
	stream_fini(&s);
	return before;
}

Test(braid_rd_scenario, hosts_away__shared_core_keeps_the_window, .timeout = 60)
{
	uint64_t n = away_run(true), blind = away_run(false);

	/* 50 rounds of slices, each able to carry the 64 outstanding messages: a flow
	 * whose window followed the hosts' absence down to one packet moves one a round */
	cr_assert_geq(n, 50 * 64 / 2, "a shared core still moves half the window per round of "
		      "slices: %lu messages in 50 rounds (without arrival times: %lu)",
		      (unsigned long)n, (unsigned long)blind);
	/* the scenario is the one the arrival times are for: blind, the window collapses */
	cr_assert_lt(blind * 4, n, "without arrival times the absences read as queueing "
		     "(%lu vs %lu messages)", (unsigned long)blind, (unsigned long)n);
}
