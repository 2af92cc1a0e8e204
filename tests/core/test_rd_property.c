/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_property.c: property tests of the RD engine over the sim: every message exactly once, byte-identical, under loss, duplication, reordering, path death, peer death and restart, and with several senders sharing a receiver's grants. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_harness.h"
#include "braid/braid_errno.h"

#define MS 1000000ULL
#define NMSG 120
#define MAXSZ 12000

struct scenario {
	double loss, dup, reorder;
	bool kill_path;
	/** @rdv: rendezvous threshold (0: the default, above every message here). */
	uint64_t rdv;
	/**
	 * @window: the flow window (0: the default, 256); one that is not a power
	 * of two leaves ring slots no PSN in the window uses at the moment.
	 */
	uint32_t window;
};

static uint8_t pattern(uint64_t seed, int msg, size_t off)
{
	return (uint8_t)((seed * 131 + (uint64_t)msg * 31 + off * 7 + (off >> 8)) & 0xff);
}

static size_t msg_size(uint64_t seed, int i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 29;
	/* a mix of empty, single-packet and many-packet messages */
	switch (x % 4) {
	case 0: return x % 8;
	case 1: return x % 1400;
	default: return x % MAXSZ;
	}
}

struct ctx { int node; size_t want_recv, want_send; };

static bool all_done(struct harness *h, void *arg)
{
	struct ctx *c = arg;
	size_t r = 0, s = 0, i;

	for (i = 0; i < h->nodes[1].ncomps; i++)
		r += !!(h->nodes[1].comps[i].flags & BRAID_RD_COMP_RECV);
	for (i = 0; i < h->nodes[0].ncomps; i++)
		s += !!(h->nodes[0].comps[i].flags & BRAID_RD_COMP_SEND);
	return r >= c->want_recv && s >= c->want_send;
}

static void run_scenario(uint64_t seed, const struct scenario *sc)
{
	static uint8_t src[NMSG][MAXSZ], dst[NMSG][MAXSZ];
	static size_t sizes[NMSG];
	struct braid_sim_path_cfg p = {
		.delay_ns = 4000, .jitter_ns = 3000, .loss = sc->loss, .dup = sc->dup,
		.dup_gap_ns = 1500, .reorder = sc->reorder, .reorder_ns = 20000,
	};
	struct braid_rd_config c;
	struct harness h;
	int seen[NMSG] = { 0 };
	int i;

	braid_rd_config_default(&c);
	c.paths = 8;
	c.epoch = 1;
	c.seed = seed;
	c.peer_timeout_ns = 10000 * MS;	/* no peer is dead here */
	if (sc->rdv)
		c.rdv_threshold = sc->rdv;
	if (sc->window) {
		c.window = sc->window;
		if (c.init_cwnd > c.window)
			c.init_cwnd = c.window;
	}
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, seed), 0);
	if (sc->kill_path)
		braid_sim_schedule(h.sim, 200 * 1000, BRAID_SIM_PATH_DOWN, 1);

	for (i = 0; i < NMSG; i++) {
		struct iovec riov[2] = { { dst[i], 100 }, { dst[i] + 100, MAXSZ - 100 } };
		struct braid_rd_recv r = { .iov = riov, .iov_count = 2,
					   .context = (void *)(uintptr_t)(i + 1) };

		memset(dst[i], 0xee, MAXSZ);
		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, 0), 0);
	}
	for (i = 0; i < NMSG; i++) {
		struct iovec siov;
		struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1),
					   .flags = BRAID_RD_CQ_DATA, .data = (uint64_t)i * 3,
					   .context = (void *)(uintptr_t)(i + 1) };

		sizes[i] = msg_size(seed, i);
		for (size_t k = 0; k < sizes[i]; k++)
			src[i][k] = pattern(seed, i, k);
		siov.iov_base = src[i];
		siov.iov_len = sizes[i];
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
		/* let some go before the rest: traffic in flight while more is queued */
		if (i % 16 == 15)
			h_run(&h, h.now + 30000, NULL, NULL);
	}
	struct ctx want = { 1, NMSG, NMSG };
	cr_assert(h_run(&h, 60000 * MS, all_done, &want),
		  "seed %lu loss %.2f dup %.2f reorder %.2f kill %d rdv %lu window %u: not all "
		  "completed (recv comps %zu send comps %zu)", (unsigned long)seed, sc->loss, sc->dup,
		  sc->reorder, sc->kill_path, (unsigned long)sc->rdv, sc->window, h.nodes[1].ncomps,
		  h.nodes[0].ncomps);

	/* exactly once, byte-identical, in send order (receive i holds message i) */
	cr_assert_eq(h.nodes[1].ncomps, NMSG, "no extra receive completions");
	cr_assert_eq(h.nodes[0].ncomps, NMSG, "no extra send completions");
	for (i = 0; i < NMSG; i++) {
		struct braid_rd_comp *cp = &h.nodes[1].comps[i];
		int k = (int)(uintptr_t)cp->context - 1;

		cr_assert_eq(cp->err, 0);
		cr_assert(k >= 0 && k < NMSG);
		cr_assert_eq(seen[k]++, 0, "receive %d completed twice", k);
		cr_assert_eq(cp->len, sizes[k], "message %d length", k);
		cr_assert_eq(cp->data, (uint64_t)k * 3, "message %d cq data", k);
		cr_assert(cp->flags & BRAID_RD_COMP_CQ_DATA);
		cr_assert_eq(memcmp(dst[k], src[k], sizes[k]), 0, "message %d bytes", k);
		cr_assert_eq(dst[k][sizes[k] < MAXSZ ? sizes[k] : 0] , sizes[k] < MAXSZ ? 0xee : dst[k][0],
			     "nothing written past message %d", k);
		cr_assert_eq(h.nodes[0].comps[i].err, 0, "send %d succeeded", i);
	}
	/* a fabric that loses and duplicates nothing: every retransmission was spurious and
	 * reaches the receiver as exactly one duplicate (once the last copies in flight land) */
	h_run(&h, h.now + 10 * MS, NULL, NULL);
	if (sc->loss == 0 && sc->dup == 0 && !sc->kill_path)
		cr_assert_eq(braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_DUPLICATE],
			     braid_rd_get_stats(h.nodes[0].rd)->retx_pkts,
			     "duplicates at the receiver = retransmissions (seed %lu: %lu dups, %lu retx, "
			     "%lu no_buffer, %lu out_of_window)", (unsigned long)seed,
			     (unsigned long)braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_DUPLICATE],
			     (unsigned long)braid_rd_get_stats(h.nodes[0].rd)->retx_pkts,
			     (unsigned long)braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_NO_BUFFER],
			     (unsigned long)braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_OUT_OF_WINDOW]);
	h_fini(&h);
}

static const struct scenario scenarios[] = {
	{ 0, 0, 0, false },
	{ 0.01, 0, 0, false },
	{ 0.05, 0, 0, false },
	{ 0.20, 0, 0, false },
	{ 0.01, 0.05, 0.10, false },
	{ 0.05, 0.05, 0.20, false },
	{ 0.20, 0.10, 0.20, false },
	{ 0, 0, 0, true },
	{ 0.05, 0.02, 0.10, true },
	/* rendezvous for everything above 3000 bytes: CTS lost, duplicated, late */
	{ 0, 0, 0, false, 3000 },
	{ 0.05, 0.05, 0.10, false, 3000 },
	{ 0.20, 0.10, 0.20, true, 3000 },
	/* windows that are not powers of two (the rings are: slots a window leaves unused) */
	{ 0.05, 0.05, 0.20, false, 0, 100 },
	{ 0.20, 0.10, 0.20, true, 3000, 37 },
};

Test(braid_rd_property, exactly_once_under_faults, .timeout = 240)
{
	uint64_t seed;
	size_t s;

	for (seed = 1; seed <= 6; seed++)
		for (s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++)
			run_scenario(seed, &scenarios[s]);
}

/*
 * A rendezvous message no receive has been posted for yet, then more small
 * messages than the window: the ones a window or more past it wait at the
 * sender (they would find no slot at the receiver, and their dropped packets
 * would hold the PSN window shut for the rendezvous message's rest, until the
 * peer timeout failed everything). Once the receives come, all complete.
 */
Test(braid_rd_property, a_waiting_rendezvous_message_holds_the_message_window_not_the_peer)
{
	enum { NSMALL = 300, BIG = 10000 };
	static uint8_t big[BIG], bigdst[BIG], small[NSMALL][8], smalldst[NSMALL][8];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct braid_rd_config c;
	struct harness h;
	size_t i;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.epoch = 1;
	c.rdv_threshold = 3000;
	c.peer_timeout_ns = 200 * MS;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 7), 0);
	for (i = 0; i < BIG; i++)
		big[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i <= NSMALL; i++) {
		struct iovec iov = { i ? small[i - 1] : big, i ? 8 : BIG };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(uintptr_t)(i + 1) };

		if (i)
			memset(small[i - 1], (int)i, 8);
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	/* five peer timeouts with no receive posted: the sender waits, alive */
	h_run(&h, h.now + 1000 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, c.window - 1,
		     "the small messages within the window completed, no more (%zu)",
		     h.nodes[0].ncomps);
	for (i = 0; i < h.nodes[0].ncomps; i++)
		cr_assert_eq(h.nodes[0].comps[i].err, 0, "send %zu: no peer death", i);
	cr_assert_eq(braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_OUT_OF_WINDOW], 0,
		     "no packet beyond the receiver's message window was sent");
	for (i = 0; i <= NSMALL; i++) {
		struct iovec iov = { i ? smalldst[i - 1] : bigdst, i ? 8 : BIG };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1,
					   .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	}
	h_run(&h, h.now + 100 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, NSMALL + 1, "every send completed (%zu)", h.nodes[0].ncomps);
	cr_assert_eq(h.nodes[1].ncomps, NSMALL + 1, "every receive completed (%zu)", h.nodes[1].ncomps);
	for (i = 0; i <= NSMALL; i++) {
		size_t k = (size_t)(uintptr_t)h.nodes[1].comps[i].context - 1;

		cr_assert_eq(h.nodes[0].comps[i].err, 0, "send %zu succeeded", i);
		cr_assert_eq(h.nodes[1].comps[i].err, 0, "receive %zu succeeded", i);
		cr_assert(k <= NSMALL);
		cr_assert_eq(h.nodes[1].comps[i].len, k ? 8 : BIG, "receive %zu's length", k);
	}
	cr_assert_eq(memcmp(big, bigdst, BIG), 0, "the rendezvous message's bytes");
	for (i = 0; i < NSMALL; i++)
		cr_assert_eq(memcmp(small[i], smalldst[i], 8), 0, "message %zu's bytes", i + 1);
	h_fini(&h);
}

/* A receiver that goes away: every send fails with FI_EHOSTUNREACH within the peer timeout. */
Test(braid_rd_property, dead_peer_fails_sends_in_bounded_time)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct braid_rd_config c;
	static uint8_t buf[4000];
	struct harness h;
	int i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.peer_timeout_ns = 50 * MS;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 3), 0);
	braid_sim_node_up(h.sim, 1, false);
	for (i = 0; i < 10; i++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	h_run(&h, 200 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 10, "every send completed");
	for (i = 0; i < 10; i++) {
		cr_assert_eq(h.nodes[0].comps[i].err, FI_EHOSTUNREACH);
		cr_assert_eq(h.nodes[0].comps[i].prov_errno, BRAID_PERR_PEER_UNREACHABLE);
	}
	cr_assert_eq(braid_rd_get_stats(h.nodes[0].rd)->peers_failed, 1);
	cr_assert(!braid_rd_pending(h.nodes[0].rd), "nothing left in flight");
	/* the endpoint keeps working for others: the peer comes back and traffic flows again */
	braid_sim_node_up(h.sim, 1, true);
	{
		struct iovec iov = { buf, 100 }, riov = { buf + 2000, 100 };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)7 };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1), .context = (void *)8 };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
		h_run(&h, h.now + 100 * MS, NULL, NULL);
		cr_assert_eq(h.nodes[1].ncomps, 1);
		cr_assert_eq(h.nodes[1].comps[0].err, 0);
		cr_assert_eq(h.nodes[0].comps[10].err, 0);
	}
	h_fini(&h);
}

/* The receiver restarts (a new incarnation): old-incarnation packets are dropped, sends to it fail with FI_ECONNRESET or succeed, each exactly once, and new traffic flows. */
Test(braid_rd_property, peer_restart)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 2000 };
	struct braid_rd_config c;
	static uint8_t buf[20000], rbuf[64][20000];
	struct harness h;
	size_t ok = 0, reset = 0, i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.peer_timeout_ns = 1000 * MS;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 11), 0);
	for (i = 0; i < 64; i++) {
		struct iovec riov = { rbuf[i], sizeof(rbuf[i]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, 0), 0);
	}
	for (i = 0; i < 32; i++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(i + 1) };

		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	/* some in flight: the first send completed, not all */
	{
		struct ctx one = { 1, 0, 1 };

		cr_assert(h_run(&h, 100 * MS, all_done, &one));
		cr_assert_lt(h.nodes[0].ncomps, 32, "sends still in flight at the restart");
	}
	cr_assert_eq(h_restart(&h, 1, &c), 0);
	for (i = 0; i < 64; i++) {
		struct iovec riov = { rbuf[i], sizeof(rbuf[i]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	}
	h_run(&h, h.now + 3000 * MS, NULL, NULL);
	for (i = 0; i < h.nodes[0].ncomps; i++) {
		if (h.nodes[0].comps[i].err == 0)
			ok++;
		else if (h.nodes[0].comps[i].err == FI_ECONNRESET)
			reset++;
		else
			cr_assert_fail("unexpected error %d", h.nodes[0].comps[i].err);
	}
	cr_assert_eq(ok + reset, 32, "every send completed exactly once (%zu ok, %zu reset)", ok, reset);
	cr_assert_gt(reset, 0, "sends in flight to the old incarnation failed");
	cr_assert_eq(h.nodes[1].ncomps, 0, "the new incarnation got nothing of the old conversation");
	cr_assert_geq(braid_rd_get_stats(h.nodes[0].rd)->peers_restarted, 1);
	/* and a new conversation works */
	{
		struct iovec iov = { buf, 5000 };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1), .context = (void *)99 };

		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
		h_run(&h, h.now + 100 * MS, NULL, NULL);
		cr_assert_eq(h.nodes[1].ncomps, 1);
		cr_assert_eq(h.nodes[1].comps[0].err, 0);
		cr_assert_eq(h.nodes[1].comps[0].len, 5000);
	}
	h_fini(&h);
}

/* A slow receiver: no receive posted for longer than the peer timeout. Memory stays bounded
 * (staging is refused with rwnd 0), the sender keeps waiting (the peer answers), and when the
 * receives are finally posted every message arrives intact. */
Test(braid_rd_property, slow_receiver_back_pressure)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 1000 };
	struct braid_rd_config c;
	static uint8_t src[8][50000], dst[8][50000];
	struct harness h;
	int i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.stage_pkts = 16;
	c.peer_timeout_ns = 20 * MS;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 5), 0);
	for (i = 0; i < 8; i++) {
		struct iovec iov = { src[i], sizeof(src[i]) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(uintptr_t)(i + 1) };

		memset(src[i], 'a' + i, sizeof(src[i]));
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	h_run(&h, 100 * MS, NULL, NULL);	/* five peer timeouts with nothing posted */
	cr_assert_eq(h.nodes[0].ncomps, 0, "no send failed or completed while the receiver is slow");
	cr_assert_gt(braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_NO_BUFFER], 0,
		     "the receiver refused what it could not stage");
	for (i = 0; i < 8; i++) {
		struct iovec iov = { dst[i], sizeof(dst[i]) };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	}
	h_run(&h, h.now + 2000 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[1].ncomps, 8);
	cr_assert_eq(h.nodes[0].ncomps, 8);
	for (i = 0; i < 8; i++) {
		cr_assert_eq(h.nodes[0].comps[i].err, 0);
		cr_assert_eq(memcmp(dst[i], src[i], sizeof(src[i])), 0);
	}
	h_fini(&h);
}

struct consumer { size_t want; };

static bool received(struct harness *h, void *arg)
{
	return h->nodes[1].ncomps >= ((struct consumer *)arg)->want;
}

/*
 * Messages to a receiver that posts its receives slower than they come, with
 * room to stage only 64 packets (the staging collapse: staging full, data
 * refused, and the sender learning of room only at its next retransmission
 * timeout). The receiver's window update (§4.3) brings the refused data back
 * at once: delivery keeps the consumer's pace, and refused packets stay a
 * fraction of the messages. Returns the refused packets.
 */
static uint64_t consumer_paced(size_t size)
{
	enum { N = 2000 };
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 1000 };
	static uint8_t src[N][300], dst[N][300];
	struct consumer want = { N };
	struct braid_rd_config c;
	struct harness h;
	int i, posted = 0;
	uint64_t t0, refused;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.stage_pkts = 64;
	c.max_sends = 4096;
	c.max_recvs = 4096;
	c.max_msgs = 8192;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 5), 0);
	for (i = 0; i < N; i++) {
		struct iovec iov = { src[i], size };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(uintptr_t)(i + 1) };

		memset(src[i], i, size);
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	t0 = h.now;
	/* the consumer: 100 receives every 100 us, 1 M messages a second */
	while (!received(&h, &want) && h.now < t0 + 10000 * MS) {
		for (i = 0; i < 100 && posted < N; i++, posted++) {
			struct iovec iov = { dst[posted], size };
			struct braid_rd_recv r = { .iov = &iov, .iov_count = 1 };

			cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
		}
		h_run(&h, h.now + 100000, received, &want);
	}
	cr_assert_eq(h.nodes[1].ncomps, N);
	/* the last receives were posted at 1.9 ms: the messages follow within a few RTTs
	 * (they took 236 ms, paced by retransmission timeouts, before the window update) */
	cr_assert_lt(h.now - t0, 3 * MS, "%zu B: delivered in %.3f ms", size, (h.now - t0) / 1e6);
	refused = braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_NO_BUFFER];
	cr_assert_lt(refused, N, "%zu B: %lu refused packets for %d messages", size,
		     (unsigned long)refused, N);
	cr_assert_eq(braid_rd_get_stats(h.nodes[0].rd)->rto_fires, 0);
	for (i = 0; i < N; i++) {
		cr_assert_eq(h.nodes[1].comps[i].err, 0);
		cr_assert_eq(dst[i][size - 1], (uint8_t)i, "message %d in order", i);
	}
	h_fini(&h);
	return refused;
}

Test(braid_rd_property, a_full_receiver_tells_the_sender_when_it_has_room)
{
	/* 300 B: each needs a packet's staging; the 64 fill and the rest are refused */
	cr_assert_gt(consumer_paced(300), 0, "staging never filled: the test tests nothing");
}

/* Small payloads have small staging buffers of their own: 8-byte messages no longer take a
 * packet's buffer each, so many more of them wait unexpected before any is refused. */
Test(braid_rd_property, small_messages_take_small_staging)
{
	cr_assert_lt(consumer_paced(8), 100);
}

/*
 * Receiver grants (protocol.md §4.10) under faults: four senders stream
 * multi-packet messages into one receiver whose grant budget (4 packets) is
 * smaller than their windows, over paths that lose, duplicate and reorder.
 * Every message arrives exactly once and intact, every send completes, in
 * bounded (virtual) time, and the receiver did grant: the shares, a lost or
 * late grant, a duplicated or reordered ACK never stall a sender for good.
 */
#define GSEND	4
#define GMSG	30

static bool grant_all_done(struct harness *h, void *arg);

static void run_grant_scenario(uint64_t seed, double loss, double dup, double reorder)
{
	static uint8_t src[GSEND][GMSG][MAXSZ], dst[GSEND * GMSG][MAXSZ];
	static size_t sizes[GSEND][GMSG];
	struct braid_sim_path_cfg p = {
		.delay_ns = 4000, .jitter_ns = 3000, .loss = loss, .dup = dup,
		.dup_gap_ns = 1500, .reorder = reorder, .reorder_ns = 20000,
	};
	int seen[GSEND][GMSG] = { { 0 } };
	struct braid_rd_config c;
	struct harness h;
	size_t i, r = 0, s = 0;
	int n, k;

	braid_rd_config_default(&c);
	c.paths = 8;
	c.epoch = 1;
	c.seed = seed;
	c.peer_timeout_ns = 10000 * MS;
	c.grant_bytes = 4 * 1400;
	cr_assert_eq(h_init(&h, 1 + GSEND, 4, &p, &c, seed), 0);
	for (i = 0; i < GSEND * GMSG; i++) {
		struct iovec riov = { dst[i], MAXSZ };
		struct braid_rd_recv rv = { .iov = &riov, .iov_count = 1,
					    .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[0].rd, &rv, 0), 0);
	}
	for (k = 0; k < GMSG; k++)
		for (n = 0; n < GSEND; n++) {
			struct iovec siov;
			struct braid_rd_send sd = { .iov = &siov, .iov_count = 1, .peer = h_key(0),
						    .flags = BRAID_RD_CQ_DATA,
						    .data = ((uint64_t)n << 32) | (uint64_t)k };

			sizes[n][k] = 1500 + msg_size(seed + (uint64_t)n, k) % (MAXSZ - 1500);
			for (size_t b = 0; b < sizes[n][k]; b++)
				src[n][k][b] = pattern(seed + (uint64_t)n, k, b);
			siov.iov_base = src[n][k];
			siov.iov_len = sizes[n][k];
			cr_assert_eq(braid_rd_send(h.nodes[1 + n].rd, &sd, h.now), 0);
		}
	h_run(&h, h.now + 60000 * MS, grant_all_done, NULL);
	for (n = 0; n < GSEND; n++)
		for (i = 0; i < h.nodes[1 + n].ncomps; i++) {
			cr_assert_eq(h.nodes[1 + n].comps[i].err, 0, "seed %lu: a send of sender %d failed",
				     (unsigned long)seed, n);
			s++;
		}
	cr_assert_eq(s, GSEND * GMSG, "seed %lu loss %.2f dup %.2f reorder %.2f: %zu of %d sends "
		     "completed", (unsigned long)seed, loss, dup, reorder, s, GSEND * GMSG);
	for (i = 0; i < h.nodes[0].ncomps; i++) {
		struct braid_rd_comp *cp = &h.nodes[0].comps[i];
		int from = (int)(cp->data >> 32), m = (int)(cp->data & 0xffffffffu);

		cr_assert_eq(cp->err, 0);
		cr_assert(from >= 0 && from < GSEND && m >= 0 && m < GMSG, "a message no one sent");
		cr_assert_eq(seen[from][m]++, 0, "sender %d's message %d arrived twice", from, m);
		cr_assert_eq(cp->len, sizes[from][m], "sender %d's message %d length", from, m);
		cr_assert_eq(memcmp(cp->buf, src[from][m], sizes[from][m]), 0,
			     "sender %d's message %d bytes", from, m);
		r++;
	}
	cr_assert_eq(r, GSEND * GMSG, "%zu of %d messages received", r, GSEND * GMSG);
	cr_assert_gt(braid_rd_get_stats(h.nodes[0].rd)->grants_tx, 0, "the receiver granted shares");
	h_fini(&h);
}

static bool grant_all_done(struct harness *h, void *arg)
{
	size_t n, s = 0;

	(void)arg;
	for (n = 1; n <= GSEND; n++)
		s += h->nodes[n].ncomps;
	return h->nodes[0].ncomps >= GSEND * GMSG && s >= GSEND * GMSG;
}

Test(braid_rd_property, grants_under_loss_duplication_and_reordering, .timeout = 120)
{
	uint64_t seed;

	for (seed = 1; seed <= 4; seed++) {
		run_grant_scenario(seed, 0, 0, 0);
		run_grant_scenario(seed, 0.05, 0.05, 0.20);
		run_grant_scenario(seed, 0.20, 0.10, 0.20);
	}
}
