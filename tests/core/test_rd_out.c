/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_out.c: the RD engine's send side (core/braid_rd_out.c): SACK processing, time-based loss detection, retransmission on another path, RTO with backoff, zero window. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "braid_hdr.h"
#include "braid_rd_int.h"

#define US 1000ULL

struct cap {
	uint8_t data[64][2048];
	size_t len[64];
	uint16_t path[64];
	int n;
};

/* Take engine @i's output packets at time @now into @c. */
static void capture(struct direct *d, int i, struct cap *c)
{
	struct braid_rd_out out[64];
	int n = braid_rd_output(d->rd[i], d->now, out, 64);

	c->n = 0;
	for (int k = 0; k < n; k++) {
		size_t len = out[k].hdr_len;

		memcpy(c->data[k], out[k].hdr, len);
		for (int j = 0; j < out[k].payload_iovcnt; j++) {
			memcpy(c->data[k] + len, out[k].payload[j].iov_base, out[k].payload[j].iov_len);
			len += out[k].payload[j].iov_len;
		}
		c->len[k] = len;
		c->path[k] = out[k].path;
	}
	c->n = n;
}

static void deliver(struct direct *d, int to, struct cap *c, int k)
{
	braid_rd_input(d->rd[to], c->data[k], c->len[k], 0x7f020001u + (uint32_t)!to, false, d->now);
}

/* The receiver's ACK timer runs 20 us on, and what it owes goes back to the sender 10 us later. */
static void acks_back(struct direct *d)
{
	struct cap acks;

	d->now += 20 * US;
	braid_rd_timer(d->rd[1], d->now);
	capture(d, 1, &acks);
	cr_assert_geq(acks.n, 1, "the receiver acknowledges");
	d->now += 10 * US;
	for (int k = 0; k < acks.n; k++)
		deliver(d, 0, &acks, k);
}

static uint32_t psn_of(struct cap *c, int k)
{
	struct braid_rd_data_view v;

	cr_assert_eq(braid_rd_data_decode(c->data[k], c->len[k], &v), 0);
	return v.psn;
}

static void open_pair_bundling(struct direct *d, int nmsg, uint8_t (*bufs)[100], bool bundle)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.bundle = bundle;
	c.init_cwnd = 32;	/* all of the messages in the first burst (the CC is not tested here, */
	c.unsched_pkts = 0;	/* nor the unscheduled window, §4.10) */
	c.mtu = 1000;
	c.paths = 8;
	c.ack_delay_ns = 5 * US;
	cr_assert_eq(direct_open(d, &c), 0);
	d->now = 1000 * US;
	for (int i = 0; i < nmsg; i++) {
		struct iovec iov = { bufs[i], 100 };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .context = (void *)(uintptr_t)(i + 1) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d->key[1],
					   .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(d->rd[1], &r, d->now), 0);
		cr_assert_eq(braid_rd_send(d->rd[0], &s, d->now), 0);
	}
}

static void open_pair(struct direct *d, int nmsg, uint8_t (*bufs)[100])
{
	open_pair_bundling(d, nmsg, bufs, true);
}

/* A pair whose @nmsg messages go a datagram each (one path each), and the sender's flow. */
static struct rd_conn *open_pair_flow(struct direct *d, int nmsg, uint8_t (*bufs)[100],
				      const struct braid_rd_stats **st)
{
	struct rd_conn *conn;

	open_pair_bundling(d, nmsg, bufs, false);
	*st = braid_rd_get_stats(d->rd[0]);
	conn = rd_conn_get(d->rd[0], d->key[1], false, d->now);
	cr_assert(conn && conn->flow);
	return conn;
}

Test(rd_out_ack_input, sack_then_time_based_loss_resends_only_the_hole)
{
	static uint8_t bufs[10][100];
	struct direct d;
	struct cap data, acks, retx;
	const struct braid_rd_stats *st;
	uint16_t lost_path;
	int k;

	open_pair(&d, 10, bufs);
	st = braid_rd_get_stats(d.rd[0]);
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 10, "ten one-packet messages go out at once");
	/* spraying: more than one path used */
	for (k = 1; k < 10 && data.path[k] == data.path[0]; k++)
		;
	cr_assert_lt(k, 10, "packets are sprayed over several paths");
	lost_path = data.path[2];
	d.now += 10 * US;
	for (k = 0; k < 10; k++)
		if (k != 2)
			deliver(&d, 1, &data, k);
	d.now += 1 * US;
	capture(&d, 1, &acks);
	cr_assert_geq(acks.n, 1);
	d.now += 10 * US;
	for (k = 0; k < acks.n; k++)
		deliver(&d, 0, &acks, k);
	/* right after the ACK: 9 acknowledged, the hole not yet declared lost... */
	capture(&d, 0, &retx);
	cr_assert_eq(st->retx_pkts, 0, "no retransmission on a duplicate count: loss is decided by time");
	/* ...until rtt + reorder window have passed since it was sent */
	d.now = braid_rd_next_deadline(d.rd[0]);
	braid_rd_timer(d.rd[0], d.now);
	capture(&d, 0, &retx);
	cr_assert_eq(retx.n, 1, "exactly the lost packet is resent");
	cr_assert_eq(psn_of(&retx, 0), psn_of(&data, 2));
	cr_assert_neq(retx.path[0], lost_path, "on another path");
	cr_assert_eq(st->retx_pkts, 1);
	/* found by time (RACK across paths, or the tail probe two RTTs on), never by the RTO */
	cr_assert_eq(st->rack_losses + st->tlp_probes, 1);
	cr_assert_eq(st->rto_fires, 0);
	deliver(&d, 1, &retx, 0);
	direct_pump(&d);
	struct braid_rd_comp c[20];
	cr_assert_eq(braid_rd_poll(d.rd[1], c, 20), 10);
	cr_assert_eq(braid_rd_poll(d.rd[0], c, 20), 10);
	direct_close(&d);
}

Test(rd_out_ack_input, reordering_within_window_is_not_loss)
{
	static uint8_t bufs[4][100];
	struct direct d;
	struct cap data, acks;
	int k;

	open_pair(&d, 4, bufs);
	capture(&d, 0, &data);
	d.now += 10 * US;
	/* deliver 3,2,1,0: fully reversed, but all in one RTT */
	for (k = 3; k >= 0; k--)
		deliver(&d, 1, &data, k);
	capture(&d, 1, &acks);
	for (k = 0; k < acks.n; k++)
		deliver(&d, 0, &acks, k);
	direct_pump(&d);
	cr_assert_eq(braid_rd_get_stats(d.rd[0])->retx_pkts, 0);
	direct_close(&d);
}

/*
 * A path the chooser no longer uses keeps the statistics of its last samples
 * (under heavy loss or host jitter, many times the live paths'). Packets it does
 * not carry must be judged by the paths that carry them: with its stale RTT in
 * the RTO (and the cross-path RACK window), every timeout of a 50%-loss stream
 * on the emulated fabric took 20 ms and the stream crawled at a few messages a
 * second.
 */
Test(rd_out_timer, an_idle_path_with_a_stale_rtt_does_not_stretch_the_rto)
{
	static uint8_t bufs[4][100];
	struct direct d;
	struct cap data, retx;
	const struct braid_rd_stats *st;
	struct rd_conn *conn;
	struct rd_flow *f;
	uint64_t probed;
	uint32_t x;
	int k;

	conn = open_pair_flow(&d, 4, bufs, &st);
	f = conn->flow;
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 4);
	/* all but the first packet arrive, and their ACK comes back: RTT samples */
	d.now += 10 * US;
	for (k = 1; k < 4; k++)
		deliver(&d, 1, &data, k);
	acks_back(&d);
	cr_assert_eq(st->acked_pkts, 3);
	/* nothing more arrives: the first is found lost by time (RACK or the tail probe) */
	while (!st->retx_pkts && st->rto_fires == 0) {
		d.now = braid_rd_next_deadline(d.rd[0]);
		braid_rd_timer(d.rd[0], d.now);
		capture(&d, 0, &retx);
	}
	cr_assert_eq(st->rto_fires, 0);
	cr_assert_eq(st->retx_pkts, 1);
	probed = d.now;
	/* a path with nothing in flight, last measured at 5 ms +- 2.5 ms */
	for (x = 0; x < f->paths.n && !braid_dlist_empty(&f->prack[x].inflight); x++)
		;
	cr_assert_lt(x, f->paths.n);
	f->paths.p[x].srtt_ns = 5000 * US;
	f->paths.p[x].rttvar_ns = 2500 * US;
	/* the resent packet is lost too: the RTO fires */
	while (!st->rto_fires && d.now - probed < 100000 * US) {
		d.now = braid_rd_next_deadline(d.rd[0]);
		braid_rd_timer(d.rd[0], d.now);
		capture(&d, 0, &retx);
	}
	cr_assert_eq(st->rto_fires, 1);
	cr_assert_lt(d.now - probed, 1000 * US,
		     "the RTO follows the RTTs of the paths in use, not the idle one's (fired %lu us on)",
		     (unsigned long)((d.now - probed) / US));
	direct_close(&d);
}

/*
 * A flow with a window of a few packets finds most losses into a dead path by a
 * probe, which takes the lost packet off its path. When the probe's ACK echoes
 * the probe (the original never arrived), the path the original went by is sick
 * at once (protocol.md §4.5, the probe-answered rule): the next packets go by
 * the other paths. When the ACK echoes the original (late, not lost: it and
 * its copy were read together), nothing is judged.
 */
static void probe_answered_run(bool original_late)
{
	static uint8_t bufs[18][100];
	struct direct d;
	struct cap data, acks, retx, more;
	const struct braid_rd_stats *st;
	struct rd_conn *conn;
	uint16_t lost_path;
	int k, probe, sent = 0, on_lost = 0;

	conn = open_pair_flow(&d, 2, bufs, &st);
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 2);
	lost_path = data.path[1];
	cr_assert_neq(data.path[0], lost_path, "sprayed: the two packets go by two paths");
	/* the first arrives and is acknowledged: an RTT, and the path heard from both ways */
	d.now += 10 * US;
	deliver(&d, 1, &data, 0);
	acks_back(&d);
	/* the second never comes: the tail probe resends it by the path heard from */
	while (!st->retx_pkts) {
		d.now = braid_rd_next_deadline(d.rd[0]);
		braid_rd_timer(d.rd[0], d.now);
		capture(&d, 0, &retx);
	}
	cr_assert_eq(st->tlp_probes, 1);
	for (probe = -1, k = 0; k < retx.n; k++) {
		struct braid_rd_data_view v;

		if (!braid_rd_data_decode(retx.data[k], retx.len[k], &v)) {
			cr_assert_eq(probe, -1, "one packet resent");
			probe = k;
		}
	}
	cr_assert_geq(probe, 0, "the probe went out");
	cr_assert_eq(psn_of(&retx, probe), psn_of(&data, 1));
	cr_assert_neq(retx.path[probe], lost_path, "the probe goes by another path");
	d.now += 10 * US;
	if (original_late)
		deliver(&d, 1, &data, 1);	/* one receive pass: the original, then its copy */
	deliver(&d, 1, &retx, probe);
	capture(&d, 1, &acks);
	cr_assert_geq(acks.n, 1);
	d.now += 10 * US;
	for (k = 0; k < acks.n; k++)
		deliver(&d, 0, &acks, k);
	cr_assert_eq(st->acked_pkts, 2);
	cr_assert_eq(st->probe_suspects, original_late ? 0 : 1,
		     "%s: %lu paths suspect", original_late ? "the original came late" :
		     "the original never came", (unsigned long)st->probe_suspects);
	cr_assert_eq(braid_path_is_sick(&conn->flow->paths, lost_path), !original_late);
	/* sixteen more, two turns of the eight paths: the sick one gets at most a probe */
	for (k = 2; k < 18; k++) {
		struct iovec iov = { bufs[k], 100 };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1,
					   .context = (void *)(uintptr_t)(k + 1) };
		struct braid_rd_send sd = { .iov = &iov, .iov_count = 1, .peer = d.key[1],
					    .context = (void *)(uintptr_t)(k + 1) };

		cr_assert_eq(braid_rd_post_recv(d.rd[1], &r, d.now), 0);
		cr_assert_eq(braid_rd_send(d.rd[0], &sd, d.now), 0);
	}
	capture(&d, 0, &more);
	for (k = 0; k < more.n; k++) {
		struct braid_rd_data_view v;

		if (!braid_rd_data_decode(more.data[k], more.len[k], &v)) {
			sent++;
			on_lost += more.path[k] == lost_path;
		}
	}
	cr_assert_eq(sent, 16);
	if (original_late)
		cr_assert_eq(on_lost, 2, "a path that was only late keeps its turns (%d of 16)", on_lost);
	else
		cr_assert_leq(on_lost, 1, "the path the packet went missing on is skipped but for a "
			      "probe (%d of 16)", on_lost);
	direct_close(&d);
}

Test(rd_out_ack_input, a_probe_answered_first_makes_the_lost_packets_path_sick)
{
	probe_answered_run(false);
}

Test(rd_out_ack_input, a_probe_whose_original_came_too_judges_nothing)
{
	probe_answered_run(true);
}

/*
 * The tail loss probe waits two RTTs, or srtt + 4 rttvar where the RTT varies
 * more (protocol.md §4.5): ACKs that a host's scheduling or a shared link's
 * queue delays by more than an RTT do not fire probes whose originals arrive.
 */
Test(rd_out_timer, the_tail_probe_waits_srtt_plus_four_rttvar_when_the_rtt_varies)
{
	static uint8_t bufs[2][100];
	struct direct d;
	struct cap data, retx;
	const struct braid_rd_stats *st;
	struct rd_conn *conn;
	uint64_t sent;

	conn = open_pair_flow(&d, 2, bufs, &st);
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 2);
	sent = d.now;
	/* the first arrives and is acknowledged; the second never comes */
	d.now += 10 * US;
	deliver(&d, 1, &data, 0);
	acks_back(&d);
	cr_assert_eq(st->acked_pkts, 1);
	/* an RTT of 200 us that varies by 150: srtt + 4 rttvar = 800 us > 2 srtt */
	conn->flow->srtt = 200 * US;
	conn->flow->rttvar = 150 * US;
	while (!st->retx_pkts && d.now - sent < 100000 * US) {
		d.now = braid_rd_next_deadline(d.rd[0]);
		braid_rd_timer(d.rd[0], d.now);
		capture(&d, 0, &retx);
	}
	cr_assert_eq(st->tlp_probes, 1, "the lost packet is found by the tail probe");
	cr_assert_eq(st->rto_fires, 0);
	cr_assert_geq(d.now - sent, 800 * US, "not before srtt + 4 rttvar (fired %lu us on)",
		      (unsigned long)((d.now - sent) / US));
	cr_assert_lt(d.now - sent, 900 * US, "but then (fired %lu us on)",
		     (unsigned long)((d.now - sent) / US));
	direct_close(&d);
}

Test(rd_out_timer, rto_resends_tail_and_backs_off)
{
	static uint8_t bufs[1][100];
	struct direct d;
	struct cap data, again;
	uint64_t t0, d1, d2;

	open_pair(&d, 1, bufs);
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 1);
	t0 = d.now;
	d1 = braid_rd_next_deadline(d.rd[0]);
	cr_assert_gt(d1, t0);
	d.now = d1;
	braid_rd_timer(d.rd[0], d.now);
	capture(&d, 0, &again);
	cr_assert_eq(again.n, 1, "the tail packet is resent when the RTO fires");
	cr_assert_eq(braid_rd_get_stats(d.rd[0])->rto_fires, 1);
	d2 = braid_rd_next_deadline(d.rd[0]);
	cr_assert_geq(d2 - d.now, 2 * (d1 - t0) - 1, "the RTO doubles");
	/* the retransmission is flagged RETX */
	cr_assert(again.data[0][3] & BRAID_RD_F_RETX);
	deliver(&d, 1, &again, 0);
	direct_pump(&d);
	struct braid_rd_comp c;
	cr_assert_eq(braid_rd_poll(d.rd[0], &c, 1), 1);
	cr_assert_eq(c.err, 0);
	direct_close(&d);
}

/*
 * The receiver was away (descheduled) while a packet and, an RTO later, its copy
 * came: it reads both in one pass. Its ACK echoes the original, so the sender
 * finds the RTO spurious (Eifel) and undoes its cut; echoing the copy made every
 * such RTO look real, and a receiver away for a scheduler slice cut the window
 * each time (seen on the emulated fabric: 3 of 39 RTOs judged spurious).
 */
Test(rd_out_timer, original_and_copy_read_together_prove_the_rto_spurious)
{
	static uint8_t bufs[1][100];
	struct direct d;
	struct cap data, again, acks;
	const struct braid_rd_stats *st;
	struct braid_rd_comp c;

	open_pair(&d, 1, bufs);
	st = braid_rd_get_stats(d.rd[0]);
	capture(&d, 0, &data);
	cr_assert_eq(data.n, 1);
	again.n = 0;
	while (!st->rto_fires) {
		d.now = braid_rd_next_deadline(d.rd[0]);
		braid_rd_timer(d.rd[0], d.now);
		capture(&d, 0, &again);
	}
	cr_assert_eq(again.n, 1, "the RTO resends the packet");
	cr_assert_eq(psn_of(&again, 0), psn_of(&data, 0));
	d.now += 10 * US;
	/* one receive pass: the original, then its copy (a duplicate now) */
	deliver(&d, 1, &data, 0);
	deliver(&d, 1, &again, 0);
	capture(&d, 1, &acks);
	cr_assert_geq(acks.n, 1);
	d.now += 10 * US;
	for (int k = 0; k < acks.n; k++)
		deliver(&d, 0, &acks, k);
	cr_assert_eq(st->rto_fires, 1);
	cr_assert_eq(st->rto_spurious, 1, "the ACK echoes the original: the RTO was spurious");
	cr_assert_eq(braid_rd_poll(d.rd[0], &c, 1), 1);
	cr_assert_eq(c.err, 0);
	direct_close(&d);
}

Test(braid_rd_send, bad_arguments)
{
	struct braid_rd_config c;
	struct direct d;
	uint8_t b[10];
	struct iovec iov = { b, sizeof(b) }, null_iov = { NULL, 5 };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = 0 };

	braid_rd_config_default(&c);
	c.max_msg_size = 8;
	c.inject_size = 8;
	cr_assert_eq(direct_open(&d, &c), 0);
	cr_assert_eq(braid_rd_send(d.rd[0], &s, 0), -FI_EINVAL, "peer 0");
	s.peer = d.key[1];
	cr_assert_eq(braid_rd_send(d.rd[0], &s, 0), -FI_EMSGSIZE);
	s.iov = &null_iov;
	cr_assert_eq(braid_rd_send(d.rd[0], &s, 0), -FI_EINVAL);
	s.iov_count = BRAID_RD_IOV_MAX + 1;
	cr_assert_eq(braid_rd_send(d.rd[0], &s, 0), -FI_EINVAL);
	cr_assert_eq(braid_rd_post_recv(d.rd[0], NULL, 0), -FI_EINVAL);
	direct_close(&d);
}

Test(braid_rd_send, inject_copies_and_pools_bound_ops)
{
	struct braid_rd_config c;
	struct direct d;
	uint8_t b[64] = "inject me", r[64];
	struct iovec iov = { b, 10 }, riov = { r, sizeof(r) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1,
				   .flags = BRAID_RD_INJECT | BRAID_RD_NO_COMP };
	struct braid_rd_recv rv = { .iov = &riov, .iov_count = 1, .context = (void *)5 };
	struct braid_rd_comp comp;
	int i, ret = 0;

	braid_rd_config_default(&c);
	c.max_sends = 16;
	cr_assert_eq(direct_open(&d, &c), 0);
	s.peer = d.key[1];
	cr_assert_eq(braid_rd_post_recv(d.rd[1], &rv, 0), 0);
	cr_assert_eq(braid_rd_send(d.rd[0], &s, 0), 0);
	memset(b, 'X', sizeof(b));	/* the caller may reuse the buffer at once */
	direct_pump(&d);
	cr_assert_eq(braid_rd_poll(d.rd[1], &comp, 1), 1);
	cr_assert_eq(memcmp(r, "inject me", 10), 0);
	cr_assert_eq(braid_rd_poll(d.rd[0], &comp, 1), 1);
	cr_assert(comp.flags & BRAID_RD_COMP_SILENT, "a no-completion inject completes silently");
	/* the op pool is bounded: -FI_EAGAIN, never growth */
	s.flags = 0;
	for (i = 0; i < 100 && ret == 0; i++)
		ret = braid_rd_send(d.rd[0], &s, 0);
	cr_assert_eq(ret, -FI_EAGAIN);
	cr_assert_eq(i, 17, "16 ops, then -FI_EAGAIN (i = %d)", i);
	direct_close(&d);
}

/*
 * A new flow sends its unscheduled window (cfg.unsched_pkts, §4.10) before
 * the receiver's first ACK, whatever the application has queued, so that
 * many senders starting at once at one receiver fit its port in their first
 * round trip; the ACK that comes back lets out its congestion window
 * (cfg.init_cwnd, grown by the packet it acknowledged in slow start): a
 * sender alone is not limited by the receiver's grant.
 */
Test(braid_rd_output, a_new_flow_starts_with_its_unscheduled_window)
{
	static uint8_t src[64][100], dst[64][100];
	struct braid_rd_config c;
	struct braid_rd_out out[64], ack[64];
	struct braid_rd_ack_view a;
	struct direct d;
	int i, n, k;

	braid_rd_config_default(&c);
	cr_assert_eq(c.init_cwnd, 8, "the default initial window");
	cr_assert_eq(c.unsched_pkts, 1, "the default unscheduled window");
	c.mtu = 1000;
	c.bundle = false;
	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * US;
	for (i = 0; i < 64; i++) {
		struct iovec iov = { src[i], sizeof(src[i]) }, riov = { dst[i], sizeof(dst[i]) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d.key[1] };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };

		cr_assert_eq(braid_rd_post_recv(d.rd[1], &r, d.now), 0);
		cr_assert_eq(braid_rd_send(d.rd[0], &s, d.now), 0);
	}
	n = braid_rd_output(d.rd[0], d.now, out, 64);
	cr_assert_eq(n, 1, "the first burst of a new flow: %d packets", n);
	cr_assert_eq(braid_rd_output(d.rd[0], d.now, out, 64), 0, "nothing more before an ACK");
	d.now += 10 * US;
	k = 0;
	braid_rd_input(d.rd[1], d.buf, rd_dgram_copy(out, 1, d.buf, &k), 0x7f020001u, false,
		       d.now);
	n = braid_rd_output(d.rd[1], d.now, ack, 64);
	for (k = 0; k < n && braid_rd_ack_decode(ack[k].hdr, ack[k].hdr_len, &a); k++)
		;
	cr_assert_lt(k, n, "the message complete: an ACK at once");
	cr_assert_eq(a.rwnd, c.window, "a sender alone: no grant below the window");
	d.now += 10 * US;
	braid_rd_input(d.rd[0], ack[k].hdr, ack[k].hdr_len, 0x7f020002u, false, d.now);
	n = braid_rd_output(d.rd[0], d.now, out, 64);
	for (i = k = 0; k < n; k++) {
		struct braid_rd_data_view v;

		i += !braid_rd_data_decode(out[k].hdr, out[k].hdr_len + out[k].payload_len, &v);
	}
	cr_assert_eq(i, 9, "then the congestion window: %d packets of data", i);
	direct_close(&d);
}

/*
 * UDP GSO (cfg.gso_segs): full-size packets of a flow leave in runs, each
 * run by one path and at most gso_segs long, marked for one write
 * (gso_cont) and handed out whole by braid_rd_out_dgram() with the
 * segment length; everything else (the message's short tail) goes alone.
 * Cut as the kernel would, the runs deliver the message intact.
 */
Test(braid_rd_output, gso_runs_of_full_packets)
{
	static uint8_t src[20000], dst[20000];
	struct braid_rd_config c;
	struct braid_rd_out out[64];
	struct iovec iov = { src, sizeof(src) }, riov = { dst, sizeof(dst) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1 };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };
	struct braid_rd_comp comp;
	struct direct d;
	int n, i, run = 1, runs = 0, full = 0;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 8;
	c.gso_segs = 8;
	c.init_cwnd = 32;	/* a first burst longer than a GSO run (the CC is not tested here, */
	c.unsched_pkts = 0;	/* nor the unscheduled window, §4.10) */
	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * US;
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	s.peer = d.key[1];
	cr_assert_eq(braid_rd_post_recv(d.rd[1], &r, d.now), 0);
	cr_assert_eq(braid_rd_send(d.rd[0], &s, d.now), 0);
	n = braid_rd_output(d.rd[0], d.now, out, 64);
	cr_assert_gt(n, 8, "the first burst: %d packets", n);
	for (i = 0; i < n; i++) {
		size_t rec = out[i].hdr_len + out[i].payload_len;

		full += rec == c.mtu;
		if (!out[i].gso_cont) {
			if (i + 1 < n && out[i + 1].gso_cont) {
				struct iovec v[64 * (BRAID_RD_IOV_MAX + 2)];
				size_t len, seg;
				int cnt, took = braid_rd_out_dgram(out + i, n - i, v, 64 * 10, &cnt, &len,
								   &seg);

				cr_assert_eq(seg, c.mtu, "a run's segment is one full packet");
				cr_assert_geq(took, 2);
				cr_assert_leq(took, (int)c.gso_segs, "a run of %d", took);
				cr_assert_eq(len, (size_t)took * c.mtu, "every packet of a run is full");
				runs++;
			}
			run = 1;
			continue;
		}
		run++;
		cr_assert_leq(run, (int)c.gso_segs, "no run longer than gso_segs");
		cr_assert_eq(rec, c.mtu, "only full packets continue a run");
		cr_assert_eq(out[i - 1].hdr_len + out[i - 1].payload_len, c.mtu);
		cr_assert_eq(out[i].path, out[i - 1].path, "a run goes by one path");
		cr_assert_eq(out[i].entropy, out[i - 1].entropy);
		cr_assert_eq(out[i].dst_port, out[i - 1].dst_port);
	}
	cr_assert_geq(runs, 1, "full packets went in runs (%d full of %d)", full, n);
	braid_rd_unsent(d.rd[0], out, n);	/* the same again through the harness */
	direct_pump(&d);
	cr_assert_eq(braid_rd_poll(d.rd[1], &comp, 1), 1);
	cr_assert_eq(comp.err, 0);
	cr_assert_eq(comp.len, sizeof(src));
	cr_assert_eq(memcmp(dst, src, sizeof(src)), 0, "the message arrives intact");
	cr_assert_eq(braid_rd_poll(d.rd[0], &comp, 1), 1, "and its send completes");
	cr_assert_eq(comp.err, 0);
	direct_close(&d);
}

/*
 * A GSO run is one route: it carries at most half the congestion window, so
 * that a window of a few packets is still sprayed over two paths or more
 * (protocol.md §4.8, runs). With a window of 8, runs of four; with 3, every
 * full packet alone, each by its own path.
 */
static void gso_window_run(uint32_t cwnd, int want_pkts, int want_run)
{
	static uint8_t src[20000];
	struct braid_rd_config c;
	struct braid_rd_out out[64];
	struct iovec iov = { src, sizeof(src) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1 };
	struct direct d;
	bool used[8] = { false };
	int n, i, run = 1, longest = 1, paths = 0;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 8;
	c.gso_segs = 44;
	c.init_cwnd = cwnd;
	c.unsched_pkts = 0;	/* (the unscheduled window, §4.10, is not tested here) */
	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * US;
	s.peer = d.key[1];
	cr_assert_eq(braid_rd_send(d.rd[0], &s, d.now), 0);
	n = braid_rd_output(d.rd[0], d.now, out, 64);
	cr_assert_eq(n, want_pkts, "the window: %d packets", n);
	for (i = 0; i < n; i++) {
		cr_assert_eq(out[i].hdr_len + out[i].payload_len, c.mtu, "full packets");
		run = out[i].gso_cont ? run + 1 : 1;
		if (out[i].gso_cont)
			cr_assert_eq(out[i].path, out[i - 1].path, "a run goes by one path");
		longest = run > longest ? run : longest;
		paths += !used[out[i].path];
		used[out[i].path] = true;
	}
	cr_assert_eq(longest, want_run, "runs of %d at most (the longest: %d)", want_run, longest);
	cr_assert_geq(paths, want_pkts / want_run, "sprayed over %d paths", paths);
	braid_rd_unsent(d.rd[0], out, n);
	direct_close(&d);
}

Test(braid_rd_output, a_gso_run_carries_at_most_half_the_window)
{
	gso_window_run(8, 8, 4);
}

Test(braid_rd_output, a_window_of_three_goes_by_three_paths)
{
	gso_window_run(3, 3, 1);
}
