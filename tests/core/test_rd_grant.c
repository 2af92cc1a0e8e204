/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_grant.c: receiver grants (protocol.md §4.10) through the engine API: a sender alone is not limited, active senders share the budget, a joining sender is acknowledged at once, a lost grant costs a loss recovery and no more, and a hostile window from the wire is clamped. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "braid_hdr.h"
#include "braid_rd_int.h"

#define US 1000ULL
#define MS 1000000ULL

/* ---- one receiving engine fed by hand by three peers ---- */

#define PEER_PORT 5555
#define SEG	(1000 - 56)	/* the payload of a packet at MTU 1000 */
#define BUDGET	60		/* the grant budget, in packets */

static const uint32_t peer_ip[3] = { 0x7f090901u, 0x7f090902u, 0x7f090903u };

struct rx {
	struct braid_peer_table *t;
	struct braid_rd *rd;
	uint64_t now;
};

static void rx_open(struct rx *o)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 4;
	c.epoch = 1;
	c.local_ip = 0x7f000001u;
	c.local_port = 4000;
	c.bundle = false;
	c.grant_bytes = BUDGET * SEG;
	cr_assert_eq(braid_peer_table_open(&o->t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, o->t, &o->rd), 0);
	o->now = 1 * MS;
}

static void rx_close(struct rx *o)
{
	braid_rd_close(o->rd);
	braid_peer_table_close(o->t);
}

/* Packet @psn of peer @p's message @msg_id of @msg_len bytes, its part at @off. */
static void rx_data(struct rx *o, int p, uint32_t psn, uint32_t msg_id, uint32_t off,
		    uint32_t msg_len)
{
	static uint8_t buf[1000];
	uint32_t plen = msg_len - off < SEG ? msg_len - off : SEG;
	struct braid_rd_data_view v = {
		.src_port = PEER_PORT, .src_epoch = 50 + (uint32_t)p, .psn = psn,
		.msg_id = msg_id, .offset = off, .msg_len = msg_len, .tx_time = 1,
	};
	size_t n = braid_rd_data_write(buf, &v);

	memset(buf + n, p, plen);
	cr_assert_eq(braid_rd_input(o->rd, buf, n + plen, peer_ip[p], false, o->now), 0);
}

/*
 * What the engine sends now: challenges answered (§4.9); the rwnd of the
 * ACK to peer @p, or -1 when none goes to it.
 */
static int64_t rx_ack_rwnd(struct rx *o, int p)
{
	struct braid_rd_out out[16];
	struct braid_rd_ack_view a;
	int64_t rwnd = -1;
	int n, k, q;

	n = braid_rd_output(o->rd, o->now, out, 16);
	for (k = 0; k < n; k++) {
		for (q = 0; q < 3; q++)
			rd_answer_chal_out(o->rd, &out[k], peer_ip[q], o->now);
		if (out[k].dst_ip == peer_ip[p] &&
		    !braid_rd_ack_decode(out[k].hdr, out[k].hdr_len, &a))
			rwnd = a.rwnd;
	}
	return rwnd;
}

/*
 * A sender alone gets the whole window; once several senders have more to
 * send, each is granted an equal share of the budget, a sender that joins
 * while the first holds a larger grant only what is left until the first's
 * next ACK lowers it. A sender of one-packet messages is not counted, and
 * gets an equal share. Senders silent for their active time leave.
 */
Test(rd_grant, senders_share_the_budget_a_sender_alone_does_not)
{
	const struct braid_rd_stats *st;
	struct rx o;

	rx_open(&o);
	st = braid_rd_get_stats(o.rd);
	rx_data(&o, 0, 0, 0, 0, 10 * SEG);
	cr_assert_eq(rx_ack_rwnd(&o, 0), 256, "a sender alone: acknowledged at once, the window");
	cr_assert_eq(st->grant_senders, 1);
	o.now += 2 * US;
	rx_data(&o, 1, 0, 0, 0, 10 * SEG);
	cr_assert_eq(rx_ack_rwnd(&o, 1), 1, "the second: what the first's grant leaves, a packet");
	cr_assert_eq(st->grant_senders, 2);
	o.now += 2 * US;
	rx_data(&o, 0, 1, 0, SEG, 10 * SEG);
	rx_data(&o, 0, 2, 0, 2 * SEG, 10 * SEG);
	cr_assert_eq(rx_ack_rwnd(&o, 0), BUDGET / 2, "the first's next ACK: half the budget");
	rx_data(&o, 1, 1, 0, SEG, 10 * SEG);
	rx_data(&o, 1, 2, 0, 2 * SEG, 10 * SEG);
	{ int64_t w = rx_ack_rwnd(&o, 1); cr_assert_eq(w, BUDGET / 2, "and the second's: %ld", (long)w); }
	rx_data(&o, 2, 0, 0, 0, 100);
	cr_assert_eq(rx_ack_rwnd(&o, 2), BUDGET / 3,
		     "a one-packet message: not counted, an equal share of three");
	cr_assert_eq(st->grant_senders, 2);
	cr_assert_eq(st->grant_joins, 2);
	cr_assert_geq(st->grants_tx, 4);
	/* their active time over, the two leave: a sender alone again */
	o.now += 10 * MS;
	rx_data(&o, 2, 1, 1, 0, 100);
	cr_assert_eq(rx_ack_rwnd(&o, 2), 256, "alone again: the window");
	cr_assert_eq(st->grant_senders, 0);
	rx_close(&o);
}

/* The grant's budget off (grant_bytes 0): every ACK advertises the buffer's room only. */
Test(rd_grant, no_budget_no_grants)
{
	struct braid_rd_config c;
	struct rx o;

	braid_rd_config_default(&c);
	cr_assert_eq(c.grant_bytes, 256 << 10, "the default budget");
	rx_open(&o);
	rx_close(&o);
	c.mtu = 1000;
	c.epoch = 1;
	c.local_ip = 0x7f000001u;
	c.local_port = 4000;
	c.bundle = false;
	c.grant_bytes = 0;
	cr_assert_eq(braid_peer_table_open(&o.t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, o.t, &o.rd), 0);
	o.now = MS;
	rx_data(&o, 0, 0, 0, 0, 10 * SEG);
	rx_data(&o, 1, 0, 0, 0, 10 * SEG);
	rx_data(&o, 0, 1, 0, SEG, 10 * SEG);
	cr_assert_eq(rx_ack_rwnd(&o, 0), 256);
	cr_assert_eq(rx_ack_rwnd(&o, 1), -1, "no ACK at once for a sender's first packet");
	cr_assert_eq(braid_rd_get_stats(o.rd)->grant_senders, 0);
	cr_assert_eq(braid_rd_get_stats(o.rd)->grants_tx, 0);
	rx_close(&o);
}

/* ---- a pair of engines ---- */

static void pair_open(struct direct *d, uint8_t *src, uint8_t *dst, size_t len)
{
	struct braid_rd_config c;
	struct iovec iov = { src, len }, riov = { dst, len };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .context = (void *)1 };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)2 };

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 4;
	cr_assert_eq(direct_open(d, &c), 0);
	d->now = MS;
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 13 + 5);
	memset(dst, 0, len);
	s.peer = d->key[1];
	cr_assert_eq(braid_rd_post_recv(d->rd[1], &r, d->now), 0);
	cr_assert_eq(braid_rd_send(d->rd[0], &s, d->now), 0);
}

/*
 * Move what both engines send, as direct_pump() does, but lose the first
 * @lose ACKs the receiver sends; until the send completes or virtual time
 * @limit. Return: whether it completed.
 */
static bool pump_losing_acks(struct direct *d, int lose, uint64_t limit)
{
	struct braid_rd_out out[32];
	struct braid_rd_comp comp;
	bool done = false;

	while (!done && d->now < limit) {
		bool moved = false;

		for (int i = 0; i < 2; i++) {
			int n;

			if (braid_rd_next_deadline(d->rd[i]) <= d->now)
				braid_rd_timer(d->rd[i], d->now);
			while ((n = braid_rd_output(d->rd[i], d->now, out, 32)) > 0) {
				moved = true;
				for (int k = 0; k < n;) {
					bool ack = ((const struct braid_base_hdr *)out[k].hdr)->type ==
						   BRAID_PKT_RD_ACK && !out[k].frame_len;
					size_t len = rd_dgram_copy(out + k, n - k, d->buf, &k);

					if (i == 1 && ack && lose > 0) {
						lose--;
						continue;
					}
					braid_rd_input(d->rd[!i], d->buf, len, 0x7f020001u + (uint32_t)i,
						       false, d->now);
				}
			}
		}
		while (braid_rd_poll(d->rd[0], &comp, 1) == 1) {
			cr_assert_eq(comp.err, 0, "the send succeeded");
			done = true;
		}
		if (!moved) {
			uint64_t t0 = braid_rd_next_deadline(d->rd[0]);
			uint64_t t1 = braid_rd_next_deadline(d->rd[1]);
			uint64_t t = t0 < t1 ? t0 : t1;

			d->now = t > d->now && t != UINT64_MAX ? t : d->now + 5 * US;
		} else {
			d->now += 5 * US;
		}
	}
	return done;
}

/*
 * The ACKs that carry a new flow's first grant are lost: the sender, held at
 * its unscheduled window, recovers as from any loss (tail probe,
 * retransmission timeout), and the duplicate's ACK lets the rest out: the
 * message arrives intact long before the peer timeout.
 */
Test(rd_grant, a_lost_grant_costs_a_loss_recovery_not_the_flow)
{
	static uint8_t src[40000], dst[40000];
	const struct braid_rd_stats *st;
	struct direct d;
	uint64_t t0;
	int lose;

	for (lose = 1; lose <= 4; lose++) {
		pair_open(&d, src, dst, sizeof(src));
		st = braid_rd_get_stats(d.rd[0]);
		t0 = d.now;
		cr_assert(pump_losing_acks(&d, lose, t0 + 1000 * MS),
			  "%d ACKs lost: the send completed", lose);
		cr_assert_lt(d.now - t0, 100 * MS, "%d ACKs lost: within %.1f ms", lose,
			     (d.now - t0) / 1e6);
		cr_assert_eq(memcmp(src, dst, sizeof(src)), 0, "every byte intact");
		cr_assert_eq(st->unsched_waits, 1, "the flow waited for its first grant once (%lu)", (unsigned long)st->unsched_waits);
		cr_assert_gt(st->retx_pkts, 0, "the wait ended by a resend");
		direct_close(&d);
	}
}

/*
 * Every ACK's rwnd is untrusted: a window larger than ours is taken as ours
 * (the sender never has more than its congestion window in flight); a tiny
 * one holds the sender to it until an ACK says otherwise; and the message
 * still arrives intact.
 */
Test(rd_grant, a_hostile_window_is_clamped)
{
	static uint8_t src[100000], dst[100000];
	struct braid_rd_out out[256];
	struct braid_rd_ack_hdr h;
	struct braid_rd_ack_view a;
	struct rd_flow *f;
	struct direct d;
	int n;

	pair_open(&d, src, dst, sizeof(src));
	cr_assert_eq(braid_rd_output(d.rd[0], d.now, out, 256), 1, "the unscheduled window (lost)");
	f = rd_conn_get(d.rd[0], d.key[1], false, d.now)->flow;
	a = (struct braid_rd_ack_view){
		.src_port = 9000, .src_epoch = 101, .dst_epoch = 100, .cum_psn = f->snd_una,
		.echo_psn = f->snd_una - 1, .rwnd = UINT32_MAX,
	};
	braid_rd_ack_write(&h, &a);
	cr_assert_eq(braid_rd_input(d.rd[0], &h, sizeof(h), 0x7f020002u, false, d.now), 0);
	cr_assert_eq(f->peer_rwnd, 256, "at most our window");
	n = braid_rd_output(d.rd[0], d.now, out, 256);
	cr_assert_gt(n, 0, "granted: the congestion window");
	cr_assert_leq(f->inflight, d.rd[0]->cfg.cc->cwnd(&f->cc), "no more than the congestion window");
	a.rwnd = 1;
	braid_rd_ack_write(&h, &a);
	cr_assert_eq(braid_rd_input(d.rd[0], &h, sizeof(h), 0x7f020002u, false, d.now), 0);
	cr_assert_eq(f->peer_rwnd, 1);
	for (n = 0; n < 8; n++) {
		struct braid_rd_data_view v;
		int k, m = braid_rd_output(d.rd[0], d.now, out, 256);

		for (k = 0; k < m; k++)
			cr_assert(braid_rd_data_decode(out[k].hdr, out[k].hdr_len + out[k].payload_len,
						       &v), "a grant of one, all in flight: no new data");
		d.now += 2 * US;
	}
	/* the lost packets recovered, the real ACKs say what the receiver grants */
	cr_assert_gt(direct_pump(&d), 0);
	cr_assert_eq(memcmp(src, dst, sizeof(src)), 0, "every byte intact");
	direct_close(&d);
}
