/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_frame.c: the RD engine's frame as core/braid_rd.h documents it (open's checks, braid_rd_next_deadline and braid_rd_timer in virtual time, braid_rd_pending, braid_rd_room, the completion ring, close with operations outstanding, flows under max_flows). */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "rd_harness.h"

#define US 1000ULL
#define MS 1000000ULL

static struct braid_rd_config base_cfg(void)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.epoch = 1;
	return c;
}

/* Bad value @i (0, 1, ...) in @c: what it is, or NULL past the last. */
static const char *bad_value(int i, struct braid_rd_config *c)
{
	switch (i) {
	case 0: c->window = 0; return "window 0";
	case 1: c->mtu = 65536; return "mtu over 65535";
	case 2: c->mtu = 127; return "mtu under 128";
	case 3: c->paths = BRAID_RD_MAX_PATHS + 1; return "paths over the maximum";
	case 4: c->max_flows = 0; return "max_flows 0";
	case 5: c->max_sends = 0; return "max_sends 0";
	case 6: c->max_recvs = 0; return "max_recvs 0";
	case 7: c->max_msgs = 0; return "max_msgs 0";
	case 8: c->stage_pkts = 0; return "stage_pkts 0";
	case 9: c->max_msg_size = 1ULL << 32; return "max_msg_size of 4 GiB";
	case 10: c->max_msg_size = 100; c->inject_size = 101; return "inject_size over max_msg_size";
	case 11: c->rto_min_ns = 0; return "rto_min_ns 0";
	case 12: c->rto_min_ns = c->rto_max_ns + 1; return "rto_min_ns over rto_max_ns";
	default: return NULL;
	}
}

/* Every value braid_rd_open() refuses, each alone in an otherwise good config. */
Test(braid_rd_open, rejects_each_bad_value)
{
	struct braid_peer_table *t;
	struct braid_rd_config c;
	struct braid_rd *rd = NULL;
	int i;

	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	for (i = 0;; i++) {
		const char *what;

		c = base_cfg();
		what = bad_value(i, &c);
		if (!what)
			break;
		cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL, "%s", what);
	}
	cr_assert_eq(i, 13);
	c = base_cfg();
	cr_assert_eq(braid_rd_open(NULL, t, &rd), -FI_EINVAL);
	cr_assert_eq(braid_rd_open(&c, NULL, &rd), -FI_EINVAL);
	cr_assert_eq(braid_rd_open(&c, t, NULL), -FI_EINVAL);
	cr_assert_null(rd, "nothing opened");
	/* what may be left out: the congestion control (Swift) and the first RTO (rto_min) */
	c.cc = NULL;
	c.rto_init_ns = 0;
	c.mtu = 128;
	c.max_msg_size = 0;
	c.inject_size = 0;
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* A fresh engine: no deadline, nothing pending, to send or to report; all its room. */
Test(braid_rd_next_deadline, an_idle_engine_has_none)
{
	struct braid_rd_config c = base_cfg();
	struct braid_peer_table *t;
	struct braid_rd_out out[4];
	struct braid_rd_comp comp;
	struct braid_rd *rd;
	size_t s, r;

	c.max_sends = 5;
	c.max_recvs = 7;
	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	cr_assert_eq(braid_rd_next_deadline(rd), UINT64_MAX);
	cr_assert_not(braid_rd_pending(rd));
	cr_assert_eq(braid_rd_output(rd, 0, out, 4), 0);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 0);
	braid_rd_room(rd, &s, &r);
	cr_assert_eq(s, 5);
	cr_assert_eq(r, 7);
	braid_rd_timer(rd, 1000 * MS);	/* nothing due: nothing happens */
	cr_assert_eq(braid_rd_output(rd, 1000 * MS, out, 4), 0);
	cr_assert_eq(braid_rd_next_deadline(rd), UINT64_MAX);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/*
 * A send to a peer that never answers: the engine sends, then resends only
 * when braid_rd_timer() runs at (or after) braid_rd_next_deadline(); a timer
 * call before the deadline changes nothing. At the peer timeout (no RTT
 * known: the configured one) the send fails FI_EHOSTUNREACH, once, and the
 * engine is idle again: nothing pending, no deadline, nothing to send.
 */
Test(braid_rd_timer, a_silent_peer_is_retried_at_each_deadline_then_failed)
{
	struct braid_rd_config c = base_cfg();
	struct braid_peer_table *t;
	struct braid_rd_out out[64];
	struct braid_rd_comp comp;
	struct braid_rd *rd;
	uint8_t payload[200] = { 1 };
	struct iovec iov = { payload, sizeof(payload) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .context = (void *)0x5e,
				   .peer = braid_peer_key(0x7f030001u, 9000) };
	const struct braid_rd_stats *st;
	uint64_t now = 1000 * MS, t0 = now, failed = 0;
	int sends = 0, rounds;

	c.peer_timeout_ns = 50 * MS;
	c.rto_max_ns = 10 * MS;
	c.local_ip = 0x7f030002u;
	c.local_port = 9000;
	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	st = braid_rd_get_stats(rd);
	cr_assert_eq(braid_rd_send(rd, &s, now), 0);
	cr_assert(braid_rd_pending(rd), "a packet waits to go out");
	cr_assert_eq(braid_rd_output(rd, now, out, 64), 1, "the message goes at once");
	for (rounds = 0; rounds < 10000 && !failed; rounds++) {
		uint64_t d = braid_rd_next_deadline(rd);

		cr_assert(braid_rd_pending(rd), "unacknowledged");
		cr_assert_neq(d, UINT64_MAX, "a timer while the send is out");
		cr_assert_gt(d, now, "the deadline is ahead");
		/* halfway there: the timer has nothing to do yet */
		braid_rd_timer(rd, now + (d - now) / 2);
		cr_assert_eq(braid_rd_output(rd, now + (d - now) / 2, out, 64), 0,
			     "nothing resent before the deadline");
		now = d;
		braid_rd_timer(rd, now);
		sends += braid_rd_output(rd, now, out, 64);
		if (braid_rd_poll(rd, &comp, 1) == 1)
			failed = now;
	}
	cr_assert_neq(failed, 0, "the send failed");
	cr_assert_eq(comp.context, (void *)0x5e);
	cr_assert(comp.flags & BRAID_RD_COMP_SEND);
	cr_assert_eq(comp.err, FI_EHOSTUNREACH, "err %d", comp.err);
	cr_assert_geq(failed - t0, c.peer_timeout_ns, "not before the peer timeout (%lu ms)",
		      (unsigned long)((failed - t0) / MS));
	cr_assert_leq(failed - t0, c.peer_timeout_ns + c.rto_max_ns,
		      "within an RTO of it (%lu ms)", (unsigned long)((failed - t0) / MS));
	cr_assert_gt(sends, 0, "resent meanwhile");
	cr_assert_gt(st->retx_pkts, 0);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 0, "one completion");
	cr_assert_not(braid_rd_pending(rd));
	cr_assert_eq(braid_rd_next_deadline(rd), UINT64_MAX, "no timer left");
	cr_assert_eq(braid_rd_output(rd, now + 1000 * MS, out, 64), 0);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* A pair back to back that has exchanged (and proven itself with) one message each way. */
static void warm_pair(struct direct *d, const struct braid_rd_config *c)
{
	static uint8_t buf[2][64];
	struct braid_rd_comp comp[4];
	int i;

	cr_assert_eq(direct_open(d, c), 0);
	d->now = 1000 * MS;
	for (i = 0; i < 2; i++) {
		struct iovec iov = { buf[i], sizeof(buf[i]) };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1 };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d->key[!i] };

		cr_assert_eq(braid_rd_post_recv(d->rd[!i], &r, d->now), 0);
		cr_assert_eq(braid_rd_send(d->rd[i], &s, d->now), 0);
	}
	direct_pump(d);
	for (i = 0; i < 2; i++)
		cr_assert_eq(braid_rd_poll(d->rd[i], comp, 4), 2, "engine %d: its send and receive", i);
	cr_assert_not(braid_rd_pending(d->rd[0]));
	cr_assert_not(braid_rd_pending(d->rd[1]));
}

/* Engine @from's output at @d->now: up to @max packets taken into @out (not delivered). */
static int take_out(struct direct *d, int from, struct braid_rd_out *out, int max)
{
	return braid_rd_output(d->rd[from], d->now, out, max);
}

/* Deliver packet @k of @out (each its own datagram: no bundles) to engine !@from. */
static void deliver(struct direct *d, int from, const struct braid_rd_out *out, int k)
{
	int next = k;
	size_t len = rd_dgram_copy(out + k, 1, d->buf, &next);

	braid_rd_input(d->rd[!from], d->buf, len, 0x7f020001u + (uint32_t)from, false, d->now);
}

/*
 * A packet that neither completes its message nor fills a gap has its ACK
 * held at most ack_delay_ns: the receiver is pending meanwhile, its
 * deadline no later than that; at the deadline the ACK leaves (round 0), or
 * at once after braid_rd_flush_acks() (round 1). The message's last packet
 * is acknowledged at once, and the send completes.
 */
Test(braid_rd_timer, a_held_ack_leaves_by_its_deadline)
{
	struct braid_rd_config c = base_cfg();
	static uint8_t sbuf[2000], rbuf[2000];
	struct iovec siov = { sbuf, sizeof(sbuf) }, riov = { rbuf, sizeof(rbuf) };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1 };
	struct braid_rd_out data[8], ack[8];
	struct braid_rd_comp comp;
	struct direct d;
	uint64_t dl;
	int round;

	c.ack_delay_ns = 500 * US;
	c.bundle = false;
	/* both packets at once after the idle time, and the first one's ACK held:
	 * no unscheduled window nor grants (§4.10 is not tested here) */
	c.unsched_pkts = 0;
	c.grant_bytes = 0;
	warm_pair(&d, &c);
	s.peer = d.key[1];
	for (round = 0; round < 2; round++) {
		d.now += 10 * MS;
		cr_assert_eq(braid_rd_post_recv(d.rd[1], &r, d.now), 0);
		cr_assert_eq(braid_rd_send(d.rd[0], &s, d.now), 0);
		cr_assert_eq(take_out(&d, 0, data, 8), 2, "two packets");
		cr_assert(braid_rd_pending(d.rd[0]));
		deliver(&d, 0, data, 0);
		cr_assert_eq(take_out(&d, 1, ack, 8), 0, "the ACK of the first packet is held");
		cr_assert(braid_rd_pending(d.rd[1]), "an ACK owed is pending");
		dl = braid_rd_next_deadline(d.rd[1]);
		cr_assert_gt(dl, d.now);
		cr_assert_leq(dl, d.now + c.ack_delay_ns, "held at most ack_delay_ns");
		if (round == 0) {
			braid_rd_timer(d.rd[1], dl - 1);
			cr_assert_eq(take_out(&d, 1, ack, 8), 0, "not before its deadline");
			d.now = dl;
			braid_rd_timer(d.rd[1], d.now);
		} else {
			braid_rd_flush_acks(d.rd[1]);
		}
		cr_assert_eq(take_out(&d, 1, ack, 8), 1, "the ACK leaves");
		cr_assert_not(braid_rd_pending(d.rd[1]), "nothing owed");
		deliver(&d, 1, ack, 0);
		cr_assert_eq(braid_rd_poll(d.rd[0], &comp, 1), 0, "half acknowledged: not complete");
		cr_assert(braid_rd_pending(d.rd[0]));
		d.now += 10 * US;
		deliver(&d, 0, data, 1);
		cr_assert_eq(take_out(&d, 1, ack, 8), 1, "the last packet's ACK goes at once");
		cr_assert_eq(braid_rd_poll(d.rd[1], &comp, 1), 1, "received");
		cr_assert_eq(comp.err, 0);
		cr_assert_eq(comp.len, sizeof(sbuf));
		deliver(&d, 1, ack, 0);
		cr_assert_eq(braid_rd_poll(d.rd[0], &comp, 1), 1, "the send completes on it");
		cr_assert_eq(comp.err, 0);
		cr_assert_eq(take_out(&d, 0, data, 8), 0, "nothing more to send");
		cr_assert_not(braid_rd_pending(d.rd[0]), "nothing unacknowledged");
	}
	direct_close(&d);
}

/*
 * braid_rd_room() counts what can be queued before -FI_EAGAIN; operations
 * give their room back when they complete; braid_rd_poll() takes at most
 * @max, in order, and 0 takes none.
 */
Test(braid_rd_room, counts_what_can_be_queued_and_poll_takes_at_most_max)
{
	struct braid_rd_config c = base_cfg();
	static uint8_t sbuf[4][32], rbuf[3][32];
	struct braid_rd_comp comp[8];
	struct direct d;
	size_t s, r;
	int i;

	c.max_sends = 4;
	c.max_recvs = 3;
	cr_assert_eq(direct_open(&d, &c), 0);
	for (i = 0; i < 3; i++) {
		struct iovec iov = { rbuf[i], sizeof(rbuf[i]) };
		struct braid_rd_recv rv = { .iov = &iov, .iov_count = 1,
					    .context = (void *)(uintptr_t)(0x100 + i) };

		cr_assert_eq(braid_rd_post_recv(d.rd[1], &rv, d.now), 0);
		braid_rd_room(d.rd[1], &s, &r);
		cr_assert_eq(r, (size_t)(2 - i), "receive room after %d", i + 1);
		cr_assert_eq(s, 4);
		if (i == 2)
			cr_assert_eq(braid_rd_post_recv(d.rd[1], &rv, d.now), -FI_EAGAIN, "no room");
	}
	for (i = 0; i < 4; i++) {
		struct iovec iov = { sbuf[i], (size_t)(i + 1) };
		struct braid_rd_send sd = { .iov = &iov, .iov_count = 1, .peer = d.key[1],
					    .context = (void *)(uintptr_t)(0x200 + i) };

		cr_assert_eq(braid_rd_send(d.rd[0], &sd, d.now), 0);
		braid_rd_room(d.rd[0], &s, &r);
		cr_assert_eq(s, (size_t)(3 - i), "send room after %d", i + 1);
		if (i == 3)
			cr_assert_eq(braid_rd_send(d.rd[0], &sd, d.now), -FI_EAGAIN, "no room");
	}
	direct_pump(&d);
	/* three messages met receives; the fourth waits, unexpected, for one */
	braid_rd_room(d.rd[1], &s, &r);
	cr_assert_eq(r, 3, "the receives completed: their room is back");
	cr_assert_eq(braid_rd_poll(d.rd[0], comp, 0), 0, "max 0 takes none");
	for (i = 0; i < 4; i++) {
		cr_assert_eq(braid_rd_poll(d.rd[0], comp, 1), 1, "one at a time");
		cr_assert_eq(comp[0].context, (void *)(uintptr_t)(0x200 + i), "in order");
		cr_assert_eq(comp[0].len, (size_t)(i + 1));
	}
	cr_assert_eq(braid_rd_poll(d.rd[0], comp, 8), 0, "four sends, four completions");
	braid_rd_room(d.rd[0], &s, &r);
	cr_assert_eq(s, 4);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 2), 2);
	cr_assert_eq(comp[0].context, (void *)0x100);
	cr_assert_eq(comp[1].context, (void *)0x101);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 8), 1);
	cr_assert_eq(comp[0].context, (void *)0x102);
	direct_close(&d);
}

/*
 * braid_rd_poll(): "Every operation produces exactly one" completion. A
 * caller that reads them less often than it starts operations (the ring
 * holds twice the operation pools) still gets every one: the engine takes
 * no operation whose completion would find the ring full (-FI_EAGAIN).
 */
Test(braid_rd_poll, every_operation_completes_once_however_late_completions_are_read)
{
	struct braid_rd_config c = base_cfg();
	static uint8_t buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct braid_rd_comp comp[256];
	struct direct d;
	int i, started = 0, ret, n, got[2] = { 0, 0 }, k;

	c.max_sends = 4;
	c.max_recvs = 4;
	cr_assert_eq(direct_open(&d, &c), 0);
	for (i = 0; i < 200; i++) {
		struct braid_rd_recv rv = { .iov = &iov, .iov_count = 1,
					    .context = (void *)(uintptr_t)(i + 1) };
		struct braid_rd_send sd = { .iov = &iov, .iov_count = 1, .peer = d.key[1],
					    .context = (void *)(uintptr_t)(i + 1) };

		ret = braid_rd_post_recv(d.rd[1], &rv, d.now);
		if (ret == -FI_EAGAIN)
			break;
		cr_assert_eq(ret, 0);
		ret = braid_rd_send(d.rd[0], &sd, d.now);
		if (ret == -FI_EAGAIN)
			break;
		cr_assert_eq(ret, 0);
		started++;
		direct_pump(&d);	/* delivered and acknowledged; nobody reads completions */
	}
	cr_assert_lt(started, 200, "the engine stops taking operations at some point");
	for (k = 0; k < 2; k++) {
		while ((n = braid_rd_poll(d.rd[k], comp, 256)) > 0) {
			for (i = 0; i < n; i++) {
				cr_assert_eq(comp[i].err, 0);
				cr_assert_eq(comp[i].context, (void *)(uintptr_t)(got[k] + 1),
					     "engine %d: completion %d in order", k, got[k]);
				got[k]++;
			}
		}
	}
	cr_assert_eq(got[0], started, "every send completed once (%d of %d)", got[0], started);
	cr_assert_geq(got[1], started, "every receive too (%d of %d)", got[1], started);
	direct_close(&d);
}

/* ---- close with operations outstanding; flows under max_flows ---- */

/* How many of @nd's completions have @ctx (and, @err >= 0, that error). */
static size_t comps_of(const struct h_node *nd, uintptr_t ctx, int err)
{
	size_t i, n = 0;

	for (i = 0; i < nd->ncomps; i++)
		if (nd->comps[i].context == (void *)ctx && (err < 0 || nd->comps[i].err == err))
			n++;
	return n;
}

struct ctx_range { int node; uintptr_t first; int n; };

/* every context of the range has its completion (any error) */
static bool all_completed(struct harness *h, void *arg)
{
	const struct ctx_range *r = arg;
	int i;

	for (i = 0; i < r->n; i++)
		if (!comps_of(&h->nodes[r->node], r->first + (uintptr_t)i, -1))
			return false;
	return true;
}

static void post_tagged(struct harness *h, int node, void *buf, size_t len, uint64_t tag,
			uintptr_t ctx)
{
	struct iovec iov = { buf, len };
	struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .tag = tag, .flags = BRAID_RD_TAGGED,
				   .context = (void *)ctx };

	cr_assert_eq(braid_rd_post_recv(h->nodes[node].rd, &r, h->now), 0);
}

static void send_tagged(struct harness *h, int node, int to, const void *buf, size_t len,
			uint64_t tag, uintptr_t ctx)
{
	struct iovec iov = { (void *)buf, len };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(to), .tag = tag,
				   .flags = BRAID_RD_TAGGED, .context = (void *)ctx };

	cr_assert_eq(braid_rd_send(h->nodes[node].rd, &s, h->now), 0);
}

/*
 * braid_rd_close(): "pending operations are dropped without completions".
 * Node 0 closes with receives posted, sends in flight and sends its peer
 * has queued for it; a fresh engine takes its place (a later epoch). None
 * of the old operations ever completes there; the peer's sends to the old
 * engine each fail once, FI_ECONNRESET (protocol.md §4.9), in bounded time;
 * the pair then works afresh.
 */
Test(braid_rd_close, operations_outstanding_are_dropped_and_the_pair_starts_afresh,
     .timeout = 60)
{
	static uint8_t big[8][100000], rx0[4][64], rx1[2][64];
	struct braid_sim_path_cfg p = { .delay_ns = 20 * US };
	struct braid_rd_config c = base_cfg();
	struct ctx_range peer_sends = { 1, 0x200, 4 }, fresh = { 1, 0x300, 1 }, back = { 0, 0xC00, 1 };
	struct harness h;
	size_t i;
	int k;

	c.peer_timeout_ns = 100 * MS;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 3), 0);
	for (k = 0; k < 4; k++) {
		struct iovec iov = { rx0[k], sizeof(rx0[k]) };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1,
					   .context = (void *)(uintptr_t)(0xA00 + k) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[0].rd, &r, h.now), 0);
	}
	for (k = 0; k < 8; k++)
		send_tagged(&h, 0, 1, big[k], sizeof(big[k]), 1, 0xB00 + (uintptr_t)k);
	h_run(&h, h.now + 50 * US, NULL, NULL);	/* under way: nothing acknowledged yet */
	cr_assert_eq(h.nodes[0].ncomps, 0, "nothing completed before the close");
	for (k = 0; k < 4; k++)
		send_tagged(&h, 1, 0, "old", 4, 2, 0x200 + (uintptr_t)k);
	cr_assert_eq(h_restart(&h, 0, &c), 0);
	cr_assert(h_run(&h, h.now + 10000 * MS, all_completed, &peer_sends),
		  "the peer's sends to the closed engine completed");
	for (k = 0; k < 4; k++)
		cr_assert_eq(comps_of(&h.nodes[1], 0x200 + (uintptr_t)k, FI_ECONNRESET), 1,
			     "send %d: once, FI_ECONNRESET (the engine it was for is gone)", k);
	/* the fresh engine and its peer: a message each way */
	post_tagged(&h, 1, rx1[0], sizeof(rx1[0]), 0xF2, 0x300);
	send_tagged(&h, 0, 1, "fresh", 6, 0xF2, 0xD00);
	post_tagged(&h, 0, rx1[1], sizeof(rx1[1]), 0xB4, 0xC00);
	send_tagged(&h, 1, 0, "back", 5, 0xB4, 0x400);
	cr_assert(h_run(&h, h.now + 10000 * MS, all_completed, &fresh), "the fresh message came");
	cr_assert(h_run(&h, h.now + 10000 * MS, all_completed, &back), "and the answer");
	cr_assert_eq(comps_of(&h.nodes[1], 0x300, 0), 1);
	cr_assert_str_eq((char *)rx1[0], "fresh");
	cr_assert_eq(comps_of(&h.nodes[0], 0xC00, 0), 1);
	cr_assert_str_eq((char *)rx1[1], "back");
	h_run(&h, h.now + 1000 * MS, NULL, NULL);
	/* nothing of the closed engine's ever completes in its place */
	for (i = 0; i < h.nodes[0].ncomps; i++) {
		uintptr_t ctx = (uintptr_t)h.nodes[0].comps[i].context;

		cr_assert((ctx & ~(uintptr_t)0xff) != 0xA00 && (ctx & ~(uintptr_t)0xff) != 0xB00,
			  "completion of the closed engine's operation %#lx", (unsigned long)ctx);
	}
	h_fini(&h);
}

struct flows_seen { uint32_t most; struct ctx_range want; };

static bool flows_watch(struct harness *h, void *arg)
{
	struct flows_seen *fs = arg;
	uint32_t n = (uint32_t)braid_rd_get_stats(h->nodes[0].rd)->flows_active;

	if (n > fs->most)
		fs->most = n;
	return all_completed(h, &fs->want);
}

/*
 * max_flows: a send to a third peer while both flows carry data in flight
 * is refused (-FI_EAGAIN: flow state exhausted, retry after progress); once
 * they are idle, one is taken back for it. Flows never exceed max_flows,
 * and the peer whose flow was taken gets its next message all the same.
 */
Test(braid_rd_send, a_third_peer_waits_for_a_flow_under_max_flows, .timeout = 60)
{
	static uint8_t buf[4][64], rx[4][64];
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US };
	struct braid_rd_config c = base_cfg();
	struct flows_seen fs = { 0, { 0, 0x10, 2 } };
	struct iovec iov = { buf[2], 8 };
	struct braid_rd_send s3 = { .iov = &iov, .iov_count = 1, .peer = h_key(3), .tag = 7,
				    .flags = BRAID_RD_TAGGED, .context = (void *)0x12 };
	struct harness h;
	int k;

	c.max_flows = 2;
	cr_assert_eq(h_init(&h, 4, 4, &p, &c, 5), 0);
	for (k = 1; k <= 3; k++)
		post_tagged(&h, k, rx[k], sizeof(rx[k]), 7, 0x100 + (uintptr_t)k);
	memcpy(buf[0], "one", 4);
	memcpy(buf[1], "two", 4);
	memcpy(buf[2], "three", 6);
	send_tagged(&h, 0, 1, buf[0], 8, 7, 0x10);
	send_tagged(&h, 0, 2, buf[1], 8, 7, 0x11);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s3, h.now), -FI_EAGAIN, "both flows busy");
	cr_assert(h_run(&h, h.now + 1000 * MS, flows_watch, &fs), "the first two completed");
	h_run(&h, h.now + 10 * MS, NULL, NULL);	/* quiet: the flows idle */
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s3, h.now), 0, "an idle flow is taken back");
	fs.want = (struct ctx_range){ 0, 0x12, 1 };
	cr_assert(h_run(&h, h.now + 1000 * MS, flows_watch, &fs), "the third peer's send completed");
	cr_assert_str_eq((char *)rx[3], "three");
	/* peer 1 again (its flow may have been the one taken) */
	post_tagged(&h, 1, rx[0], sizeof(rx[0]), 8, 0x200);
	send_tagged(&h, 0, 1, "again", 6, 8, 0x13);
	fs.want = (struct ctx_range){ 1, 0x200, 1 };
	cr_assert(h_run(&h, h.now + 1000 * MS, flows_watch, &fs), "peer 1 got its next message");
	cr_assert_str_eq((char *)rx[0], "again");
	cr_assert_leq(fs.most, 2, "flows never above max_flows (%u)", fs.most);
	cr_assert_eq(comps_of(&h.nodes[0], 0x10, 0) + comps_of(&h.nodes[0], 0x11, 0) +
		     comps_of(&h.nodes[0], 0x12, 0), 3);
	h_fini(&h);
}
