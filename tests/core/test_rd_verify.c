/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_verify.c: the RD engine against strangers (protocol.md §4.9): incarnations believed only with proof, unproven peers' messages, the peer cap. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "braid_seq.h"
#include "braid_hdr.h"
#include "braid/braid_errno.h"

#define DROP(r) (-((int)(r) + 1))
#define IP0 0x7f020001u		/* rd_direct.h's engines: 127.2.0.1 and .2, port 9000 */
#define IP1 0x7f020002u
#define PORT 9000

static struct braid_rd_config cfg(void)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 4;
	return c;
}

/* An RD_DATA packet of @plen payload bytes as if from port @port. */
static size_t mkdata(uint8_t *buf, uint16_t port, uint32_t src_epoch, uint32_t dst_epoch,
		     uint32_t psn, uint32_t msg_id, uint32_t off, uint32_t msg_len, size_t plen,
		     uint8_t fill)
{
	struct braid_rd_data_view v = {
		.src_port = port, .src_epoch = src_epoch, .dst_epoch = dst_epoch, .psn = psn,
		.msg_id = msg_id, .offset = off, .msg_len = msg_len, .tx_time = 1,
	};

	braid_rd_data_write(buf, &v);
	memset(buf + sizeof(struct braid_rd_data_hdr), fill, plen);
	return sizeof(struct braid_rd_data_hdr) + plen;
}

static void post(struct braid_rd *rd, void *buf, size_t len, uint64_t peer, void *ctx, uint64_t now)
{
	struct iovec iov = { buf, len };
	struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .peer = peer, .context = ctx };

	cr_assert_eq(braid_rd_post_recv(rd, &r, now), 0);
}

static void send_msg(struct braid_rd *rd, uint64_t peer, const void *buf, size_t len, void *ctx,
		     uint64_t now)
{
	struct iovec iov = { (void *)buf, len };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = peer, .context = ctx };

	cr_assert_eq(braid_rd_send(rd, &s, now), 0);
}

/* One engine at 127.0.0.1:4000 with @c (its epoch 1 unless set), over a table of its own. */
static struct braid_rd *one_open(struct braid_rd_config *c, struct braid_peer_table **t)
{
	struct braid_rd *rd;

	c->local_ip = 0x7f000001u;
	c->local_port = 4000;
	if (!c->epoch)
		c->epoch = 1;
	cr_assert_eq(braid_peer_table_open(t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(c, *t, &rd), 0);
	return rd;
}

/* Everything @rd wants to send now, dropped (a peer that never answers). */
static int drain(struct braid_rd *rd, uint64_t now)
{
	struct braid_rd_out out[64];
	int n, total = 0;

	while ((n = braid_rd_output(rd, now, out, 64)) > 0)
		total += n;
	return total;
}

/* The first message of a genuine peer is delivered as it arrives (0-RTT); the
 * proof of its address follows, one challenge and one answer each way. */
Test(rd_verify, first_message_is_0rtt_and_then_proven)
{
	struct braid_rd_config c = cfg();
	struct braid_rd_out out[8];
	struct braid_rd_comp comp;
	struct direct d;
	char dst[64] = { 0 };
	int n, k = 0;

	cr_assert_eq(direct_open(&d, &c), 0);
	post(d.rd[1], dst, sizeof(dst), 0, (void *)1, 0);
	send_msg(d.rd[0], d.key[1], "hello", 6, (void *)2, 0);
	n = braid_rd_output(d.rd[0], 0, out, 8);
	cr_assert_eq(n, 1, "one packet, no handshake before it");
	braid_rd_input(d.rd[1], d.buf, rd_dgram_copy(out, n, d.buf, &k), IP0, false, 0);
	cr_assert_eq(braid_rd_poll(d.rd[1], &comp, 1), 1, "delivered on arrival");
	cr_assert_eq(comp.err, 0);
	cr_assert_str_eq(dst, "hello");
	cr_assert_eq(braid_rd_get_stats(d.rd[1])->chal_tx, 1, "and its sender challenged");
	direct_pump(&d);
	for (int i = 0; i < 2; i++) {
		const struct braid_rd_stats *st = braid_rd_get_stats(d.rd[i]);

		cr_assert_eq(st->peers, 1);
		cr_assert_eq(st->peers_verified, 1, "engine %d proved its peer", i);
		cr_assert_eq(st->resp_rx, 1);
		cr_assert_eq(st->chal_rx, 1, "engine %d answered one challenge", i);
		cr_assert_eq(st->drops[BRAID_DROP_UNVERIFIED], 0);
	}
	direct_close(&d);
}

/* Two engines that proved each other; @n messages from @from to the other, every one checked. */
static void exchange_from(struct direct *d, int from, int n, uint8_t base)
{
	struct braid_rd *tx = d->rd[from], *rx = d->rd[!from];
	struct braid_rd_comp comp[64];
	uint8_t src[64][100], dst[64][100];
	int got0 = 0, got1 = 0, i;

	cr_assert_leq(n, 64);
	for (i = 0; i < n; i++) {
		memset(src[i], base + i, sizeof(src[i]));
		memset(dst[i], 0, sizeof(dst[i]));
		post(rx, dst[i], sizeof(dst[i]), 0, (void *)(uintptr_t)(100 + i), d->now);
		send_msg(tx, d->key[!from], src[i], sizeof(src[i]), (void *)(uintptr_t)(200 + i), d->now);
	}
	direct_pump(d);
	while ((i = braid_rd_poll(tx, comp, 64)) > 0) {
		for (int j = 0; j < i; j++)
			cr_assert_eq(comp[j].err, 0, "a send failed: %d", comp[j].err);
		got0 += i;
	}
	while ((i = braid_rd_poll(rx, comp, 64)) > 0) {
		for (int j = 0; j < i; j++)
			cr_assert_eq(comp[j].err, 0, "a receive failed: %d", comp[j].err);
		got1 += i;
	}
	cr_assert_eq(got0, n, "every send completed");
	cr_assert_eq(got1, n, "every message arrived");
	for (i = 0; i < n; i++)
		cr_assert_eq(memcmp(src[i], dst[i], sizeof(src[i])), 0, "message %d intact", i);
}

/* Two engines that proved each other; @n messages from 0 to 1, every one checked. */
static void exchange(struct direct *d, int n, uint8_t base)
{
	exchange_from(d, 0, n, base);
}

/* The forged-restart attack (protocol.md §4.9): one datagram from the sender's address with a
 * "later" incarnation made the receiver drop the real sender for good. Now it
 * is held back and its incarnation challenged; the real sender, which is not
 * that incarnation, does not answer; nothing changes. */
Test(rd_verify, forged_epoch_cannot_take_a_peer)
{
	struct braid_rd_config c = cfg();
	const struct braid_rd_stats *s0, *s1;
	struct direct d;
	uint8_t pkt[256];
	size_t len;

	cr_assert_eq(direct_open(&d, &c), 0);
	s0 = braid_rd_get_stats(d.rd[0]);
	s1 = braid_rd_get_stats(d.rd[1]);
	exchange(&d, 4, 1);
	cr_assert_eq(s1->peers_verified, 1);

	/* RD_DATA "from" engine 0, a much later epoch, dst_epoch 0, PSN 0 */
	len = mkdata(pkt, PORT, 100 + 86400000u, 0, 0, 0, 0, 8, 8, 0x66);
	cr_assert_eq(braid_rd_input(d.rd[1], pkt, len, IP0, false, d.now),
		     DROP(BRAID_DROP_UNVERIFIED));
	/* the same with dst_epoch earlier than engine 1's (§4.2 rule 2's path) */
	len = mkdata(pkt, PORT, 100 + 86400001u, 1, 0, 0, 0, 8, 8, 0x66);
	cr_assert_eq(braid_rd_input(d.rd[1], pkt, len, IP0, false, d.now),
		     DROP(BRAID_DROP_UNVERIFIED));
	/* an RD_ACK "from" engine 1 to engine 0 with a later epoch */
	{
		struct braid_rd_ack_view a = { .src_port = PORT, .src_epoch = 101 + 5000,
					       .dst_epoch = 100, .cum_psn = 1000, .rwnd = 0 };
		struct braid_rd_ack_hdr h;

		braid_rd_ack_write(&h, &a);
		cr_assert_eq(braid_rd_input(d.rd[0], &h, sizeof(h), IP1, false, d.now),
			     DROP(BRAID_DROP_UNVERIFIED));
	}
	cr_assert_eq(s1->peers_restarted + s0->peers_restarted, 0, "no restart believed");
	/* the challenges go to the real engines, which are not those incarnations */
	direct_pump(&d);
	cr_assert_geq(s1->chal_tx, 2);
	cr_assert_eq(s1->resp_rx, 1, "no answer but the first (the real peer's)");
	cr_assert_eq(s0->resp_rx, 1);
	cr_assert_geq(s0->drops[BRAID_DROP_STALE_EPOCH], 1, "engine 0 ignores a challenge of another incarnation");
	/* and the real traffic goes on, both ways */
	exchange(&d, 16, 50);
	cr_assert_eq(s0->peers_failed + s1->peers_failed, 0);
	cr_assert_eq(s1->peers_restarted + s0->peers_restarted, 0);
	direct_close(&d);
}

/* A genuine restart is believed once the new incarnation answers at the address:
 * what was pending with the old one fails with FI_ECONNRESET, the new one's
 * message arrives. */
Test(rd_verify, genuine_restart_is_believed_after_proof)
{
	struct braid_rd_config c = cfg();
	struct braid_rd_comp comp[8];
	char lost[8] = "lost", fresh[16] = "fresh start", dst[32] = { 0 };
	bool failed = false, delivered = false;
	struct direct d;
	int n;

	cr_assert_eq(direct_open(&d, &c), 0);
	exchange(&d, 2, 1);
	/* engine 0 sends to engine 1, which dies before it arrives */
	send_msg(d.rd[0], d.key[1], lost, sizeof(lost), (void *)7, d.now);
	drain(d.rd[0], d.now);
	braid_rd_close(d.rd[1]);
	c.local_ip = IP1;
	c.local_port = PORT;
	c.epoch = 101 + 1000;
	cr_assert_eq(braid_rd_open(&c, d.t[1], &d.rd[1]), 0);
	post(d.rd[0], dst, sizeof(dst), 0, (void *)8, d.now);
	send_msg(d.rd[1], d.key[0], fresh, sizeof(fresh), (void *)9, d.now);
	direct_pump(&d);
	while ((n = braid_rd_poll(d.rd[0], comp, 8)) > 0) {
		for (int i = 0; i < n; i++) {
			if (comp[i].context == (void *)7) {
				cr_assert_eq(comp[i].err, FI_ECONNRESET);
				failed = true;
			} else if (comp[i].context == (void *)8) {
				cr_assert_eq(comp[i].err, 0);
				delivered = true;
			}
		}
	}
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 8), 1);
	cr_assert_eq(comp[0].context, (void *)9);
	cr_assert_eq(comp[0].err, 0, "the new incarnation's send completed");
	cr_assert(failed, "the send to the old incarnation failed");
	cr_assert(delivered, "the new incarnation's message arrived");
	cr_assert_str_eq(dst, "fresh start");
	cr_assert_eq(braid_rd_get_stats(d.rd[0])->peers_restarted, 1);
	cr_assert_geq(braid_rd_get_stats(d.rd[0])->drops[BRAID_DROP_UNVERIFIED], 1,
		      "its first packets waited for the proof");
	exchange(&d, 8, 30);
	direct_close(&d);
}

/* A stranger that never proves its address: its half-sent message takes no
 * receive and, when it goes silent, fails none; a proven peer's takes it. */
Test(rd_verify, stranger_cannot_hold_or_fail_a_receive)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_comp comp[4];
	uint8_t pkt[1100], dst[2][4096];
	uint32_t stranger = 0x0a000005u, friend_ip = 0x0a000009u;
	size_t len;

	c.epoch = 1;
	c.peer_timeout_ns = 50 * 1000 * 1000ULL;
	rd = one_open(&c, &t);
	post(rd, dst[0], sizeof(dst[0]), 0, (void *)1, 0);
	/* the stranger: the first half of an 1800-byte message */
	len = mkdata(pkt, 7777, 555, 0, 0, 0, 0, 1800, 900, 0xbb);
	cr_assert_eq(braid_rd_input(rd, pkt, len, stranger, false, 10), 0);
	cr_assert_eq(braid_rd_poll(rd, comp, 4), 0);
	drain(rd, 10);	/* its challenge goes unanswered */
	/* a peer that proves itself sends its own 1800 bytes */
	len = mkdata(pkt, 8888, 777, 0, 0, 0, 0, 1800, 900, 0xcc);
	cr_assert_eq(braid_rd_input(rd, pkt, len, friend_ip, false, 20), 0);
	cr_assert(rd_answer_challenge(rd, friend_ip, 20));
	len = mkdata(pkt, 8888, 777, 1, 1, 0, 900, 1800, 900, 0xcc);
	cr_assert_eq(braid_rd_input(rd, pkt, len, friend_ip, false, 30), 0);
	cr_assert_eq(braid_rd_poll(rd, comp, 4), 1);
	cr_assert_eq(comp[0].context, (void *)1, "the proven peer's message took the receive");
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(comp[0].len, 1800);
	cr_assert_eq(comp[0].peer, braid_peer_key(friend_ip, 8888));
	for (int i = 0; i < 1800; i++)
		cr_assert_eq(dst[0][i], 0xcc, "byte %d is the proven peer's", i);
	/* the stranger goes silent past the peer timeout: a receive posted meanwhile stays */
	post(rd, dst[1], sizeof(dst[1]), 0, (void *)2, 40);
	braid_rd_timer(rd, 1000 * 1000 * 1000ULL);
	drain(rd, 1000 * 1000 * 1000ULL);
	cr_assert_eq(braid_rd_poll(rd, comp, 4), 0, "no receive failed by the stranger");
	/* and the stranger's message that does complete is delivered (0-RTT, §4.9) */
	len = mkdata(pkt, 7777, 555, 2, 1, 0, 0, 5, 5, 0xdd);
	braid_rd_input(rd, pkt, len, stranger, false, 1000 * 1000 * 1000ULL + 1);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* Answer the challenge to @ip among what @rd sends now (the rest is dropped): 1 when believed. */
static int answer_challenge_among(struct braid_rd *rd, uint32_t ip, uint64_t now)
{
	struct braid_rd_out out[64];
	int n = braid_rd_output(rd, now, out, 64);

	for (int i = 0; i < n; i++)
		if (rd_answer_chal_out(rd, &out[i], ip, now))
			return 1;
	return 0;
}

/*
 * An unproven peer's half-received message waits for its proof; its sender (a
 * rendezvous sender whose RTS we acknowledged, in the field) sends nothing more
 * for a while. A lost challenge is repeated on our own timer, backing off, so the
 * proof does not wait for the peer's next packet; a peer that never answers gets
 * a bounded number of repeats (at 50% loss on the one path of a simulated flow,
 * the wait was the sender's keepalive, an eighth of the peer timeout: 0 bytes in
 * 20 ms before, 5.6 Gbit/s after).
 */
Test(rd_verify, a_lost_challenge_is_repeated_while_the_peer_waits_for_its_proof)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	const struct braid_rd_stats *st;
	uint8_t pkt[1100], dst[4096];
	uint32_t ip = 0x0a000007u, mute = 0x0a000008u;
	uint64_t now = 10, first;
	size_t len;
	int k;

	c.epoch = 1;
	rd = one_open(&c, &t);
	st = braid_rd_get_stats(rd);
	post(rd, dst, sizeof(dst), 0, (void *)1, 0);
	len = mkdata(pkt, 7777, 555, 0, 0, 0, 0, 1800, 900, 0xbb);
	cr_assert_eq(braid_rd_input(rd, pkt, len, ip, false, now), 0);
	drain(rd, now);		/* the challenge and the ACK: lost */
	cr_assert_eq(st->chal_tx, 1);
	/* no packet from the peer: the repeat comes on our timer, within the challenge's wait */
	first = now;
	while (st->chal_tx == 1 && now - first <= 2 * c.rto_init_ns) {
		now = braid_rd_next_deadline(rd);
		braid_rd_timer(rd, now);
		if (st->chal_tx == 1)
			drain(rd, now);
	}
	cr_assert_eq(st->chal_tx, 2, "the challenge is repeated, unprompted");
	cr_assert_leq(now - first, 2 * c.rto_init_ns);
	cr_assert(answer_challenge_among(rd, ip, now), "and its answer is believed");
	cr_assert_eq(st->peers_verified, 1, "its answer proves the peer");
	drain(rd, now);
	/* a peer that never answers: a bounded number of repeats, then only its packets prompt one */
	len = mkdata(pkt, 7777, 556, 0, 0, 0, 0, 1800, 900, 0xcc);
	cr_assert_eq(braid_rd_input(rd, pkt, len, mute, false, now), 0);
	drain(rd, now);
	for (k = 0; k < 100 && braid_rd_next_deadline(rd) < now + 1000ULL * 1000 * 1000; k++) {
		now = braid_rd_next_deadline(rd);
		braid_rd_timer(rd, now);
		drain(rd, now);
	}
	cr_assert_eq(st->chal_tx, 2 + 1 + 6, "one challenge and six repeats to the peer that never answers (%lu)",
		     (unsigned long)st->chal_tx);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* Challenges and answers that do not fit are dropped and counted, never believed. */
Test(rd_verify, answers_must_answer_our_challenge)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_out out[4];
	struct braid_rd_chal_view v;
	struct braid_rd_cts_hdr h;
	uint8_t pkt[1100];
	uint32_t peer = 0x0a000007u;
	size_t len;

	c.epoch = 50;
	rd = one_open(&c, &t);
	/* an answer from an address we never heard from */
	v = (struct braid_rd_chal_view){ .src_port = 1234, .flags = BRAID_RD_CHAL_F_RESPONSE,
					 .src_epoch = 9, .dst_epoch = 50, .cookie = 1 };
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 1), DROP(BRAID_DROP_NO_STATE));
	/* the peer speaks; we challenge it */
	len = mkdata(pkt, 1234, 9, 0, 0, 0, 0, 2000, 900, 1);
	cr_assert_eq(braid_rd_input(rd, pkt, len, peer, false, 2), 0);
	cr_assert_eq(braid_rd_output(rd, 2, out, 1), 1);
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &v), 0);
	cr_assert_eq(v.flags, 0);
	cr_assert_eq(v.dst_epoch, 9, "it asks about the epoch the peer claimed");
	cr_assert_eq(v.src_epoch, 50);
	cr_assert_eq(out[0].dst_ip, peer);
	cr_assert_eq(out[0].dst_port, 1234);
	cr_assert_eq(out[0].reply_route, 1234, "to the peer's home port");
	/* a guessed cookie, and the right cookie for another epoch: no */
	{
		struct braid_rd_chal_view bad = { .src_port = 1234, .flags = BRAID_RD_CHAL_F_RESPONSE,
						  .src_epoch = 9, .dst_epoch = 50, .cookie = v.cookie + 1 };

		braid_rd_chal_write(&h, &bad);
		cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 3), DROP(BRAID_DROP_UNVERIFIED));
		bad.cookie = v.cookie;
		bad.src_epoch = 10;
		braid_rd_chal_write(&h, &bad);
		cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 3), DROP(BRAID_DROP_UNVERIFIED));
		bad.src_epoch = 9;
		bad.dst_epoch = 49;
		braid_rd_chal_write(&h, &bad);
		cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 3), DROP(BRAID_DROP_STALE_EPOCH));
	}
	cr_assert_eq(braid_rd_get_stats(rd)->peers_verified, 0);
	/* the right answer */
	{
		struct braid_rd_chal_view ok = { .src_port = 1234, .flags = BRAID_RD_CHAL_F_RESPONSE,
						 .src_epoch = 9, .dst_epoch = 50, .cookie = v.cookie };

		braid_rd_chal_write(&h, &ok);
		cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 4), 0);
		cr_assert_eq(braid_rd_get_stats(rd)->peers_verified, 1);
		cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), peer, false, 5), DROP(BRAID_DROP_UNVERIFIED),
			     "an answer counts once");
	}
	/* a challenge to us is answered statelessly, and only for our own epoch */
	drain(rd, 6);
	v = (struct braid_rd_chal_view){ .src_port = 4321, .src_epoch = 77, .dst_epoch = 51, .cookie = 99 };
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), 0x0a000008u, false, 7), DROP(BRAID_DROP_STALE_EPOCH));
	cr_assert_eq(braid_rd_output(rd, 7, out, 4), 0);
	v.dst_epoch = 50;
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), 0x0a000008u, false, 8), 0);
	cr_assert_eq(braid_rd_output(rd, 8, out, 4), 1);
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &v), 0);
	cr_assert_eq(v.flags, BRAID_RD_CHAL_F_RESPONSE);
	cr_assert_eq(v.cookie, 99);
	cr_assert_eq(v.src_epoch, 50);
	cr_assert_eq(v.dst_epoch, 77);
	cr_assert_eq(out[0].dst_port, 4321);
	cr_assert_eq(braid_rd_get_stats(rd)->peers, 1, "a challenge creates no state");
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* max_peers: strangers from 20,000 addresses leave at most that many peers'
 * state; a proven peer keeps its state and its traffic through the flood.
 * A stranger's whole message waiting for a receive keeps its sender's state
 * (it is delivered later, 0-RTT): at most max_msgs of them, here fewer than
 * the cap, so every first contact finds a place. */
Test(rd_verify, peer_cap_bounds_strangers)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_comp comp[4];
	const struct braid_rd_stats *st;
	uint8_t pkt[1100], dst[2000];
	uint32_t friend_ip = 0x0a000009u, i;
	size_t len;

	c.epoch = 1;
	c.max_peers = 64;
	c.max_msgs = 32;
	rd = one_open(&c, &t);
	st = braid_rd_get_stats(rd);
	/* the friend proves itself with its first packet */
	len = mkdata(pkt, 8888, 777, 0, 0, 0, 0, 1800, 900, 0xcc);
	cr_assert_eq(braid_rd_input(rd, pkt, len, friend_ip, false, 1), 0);
	cr_assert(rd_answer_challenge(rd, friend_ip, 1));
	drain(rd, 1);
	for (i = 0; i < 20000; i++) {
		uint64_t now = 10 + i;

		/* half-messages and whole ones (delivered nowhere: no receive), never proven */
		len = mkdata(pkt, (uint16_t)(1000 + i % 7), 3 + i, 0, 0, 0, 0, i % 2 ? 1800 : 8,
			     i % 2 ? 900 : 8, 0xee);
		(void)braid_rd_input(rd, pkt, len, 0x0b000000u + i, false, now);
		drain(rd, now);
		cr_assert_leq(st->peers, 64, "after %u strangers", i + 1);
		cr_assert_leq(braid_peer_count(t), 64, "the domain's table too, after %u", i + 1);
	}
	cr_assert_eq(st->peers_evicted, 20000 + 1 - 64, "strangers' state was evicted: %lu",
		     (unsigned long)st->peers_evicted);
	cr_assert_eq(st->peers_verified, 1);
	cr_assert_eq(st->drops[BRAID_DROP_PEER_CAP], 0, "every first contact found a place");
	/* the friend's message completes, every byte its own */
	post(rd, dst, sizeof(dst), braid_peer_key(friend_ip, 8888), (void *)5, 30000);
	len = mkdata(pkt, 8888, 777, 1, 1, 0, 900, 1800, 900, 0xcc);
	cr_assert_eq(braid_rd_input(rd, pkt, len, friend_ip, false, 30001), 0);
	cr_assert_eq(braid_rd_poll(rd, comp, 4), 1);
	cr_assert_eq(comp[0].context, (void *)5);
	cr_assert_eq(comp[0].err, 0);
	for (i = 0; i < 1800; i++)
		cr_assert_eq(dst[i], 0xcc);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* An unproven peer whose message was delivered is not forgotten at once: a
 * resend of it (its ACK lost) would reach a fresh state and be delivered
 * twice. Its state stays until it has been silent for the peer timeout. */
Test(rd_verify, delivered_message_pins_its_peer_for_the_peer_timeout)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_comp comp[8];
	const struct braid_rd_stats *st;
	uint8_t pkt[256], dst[8][16];
	uint64_t tmo = 100 * 1000 * 1000ULL;
	uint32_t i;
	size_t len;

	c.epoch = 1;
	c.max_peers = 4;
	c.peer_timeout_ns = tmo;
	rd = one_open(&c, &t);
	st = braid_rd_get_stats(rd);
	for (i = 0; i < 8; i++)
		post(rd, dst[i], sizeof(dst[i]), 0, (void *)(uintptr_t)(i + 1), 0);
	for (i = 0; i < 4; i++) {
		len = mkdata(pkt, 5000, 10 + i, 0, 0, 0, 0, 8, 8, (uint8_t)i);
		cr_assert_eq(braid_rd_input(rd, pkt, len, 0x0c000000u + i, false, 10 + i), 0);
	}
	cr_assert_eq(braid_rd_poll(rd, comp, 8), 4, "four whole messages, delivered 0-RTT");
	drain(rd, 20);
	/* a fifth stranger: every slot holds a peer whose message we took */
	len = mkdata(pkt, 5000, 99, 0, 0, 0, 0, 8, 8, 9);
	cr_assert_eq(braid_rd_input(rd, pkt, len, 0x0c0000ffu, false, 30), DROP(BRAID_DROP_NO_STATE));
	cr_assert_eq(st->drops[BRAID_DROP_PEER_CAP], 1);
	/* the first one's message again (our ACK lost): a duplicate, not a new message */
	len = mkdata(pkt, 5000, 10, 0, 0, 0, 0, 8, 8, 0);
	cr_assert_eq(braid_rd_input(rd, pkt, len, 0x0c000000u, false, 40), DROP(BRAID_DROP_DUPLICATE));
	cr_assert_eq(braid_rd_poll(rd, comp, 8), 0);
	/* silent for the peer timeout: then they may go */
	len = mkdata(pkt, 5000, 99, 0, 0, 0, 0, 8, 8, 9);
	cr_assert_eq(braid_rd_input(rd, pkt, len, 0x0c0000ffu, false, 40 + tmo), 0);
	cr_assert_eq(st->peers_evicted, 1);
	cr_assert_eq(braid_rd_poll(rd, comp, 8), 1);
	cr_assert_eq(dst[4][0], 9);
	/*
	 * The evicted peer (the second: the first was heard from again at 40) comes back with
	 * its next message, numbered after the one we took (PSN 1, message 1) and
	 * addressed to the incarnation of us it knows (1, from our ACK). A fresh
	 * state would take it and wait for message 0 for ever, while its SACK
	 * completed the send: silent loss. We are a later incarnation to it now:
	 * the packet is dropped as meant for an earlier one and the peer told
	 * (an ACK from incarnation 2), so that both start afresh on proof.
	 */
	len = mkdata(pkt, 5000, 11, 1, 1, 1, 0, 8, 8, 7);
	{
		int r = braid_rd_input(rd, pkt, len, 0x0c000001u, false, 50 + tmo);

		cr_assert_eq(r, DROP(BRAID_DROP_STALE_EPOCH), "dropped as stale (%d; evicted %lu)", r,
			     (unsigned long)st->peers_evicted);
	}
	cr_assert_eq(braid_rd_poll(rd, comp, 8), 0);
	{
		struct braid_rd_out out[8];
		struct braid_rd_ack_view a;
		int n = braid_rd_output(rd, 50 + tmo, out, 8), k, acks = 0;

		for (k = 0; k < n; k++) {
			if (out[k].dst_ip != 0x0c000001u ||
			    braid_rd_ack_decode(out[k].hdr, out[k].hdr_len, &a))
				continue;
			acks++;
			cr_assert_eq(a.src_epoch, 2, "a later incarnation of us (%u)", a.src_epoch);
			cr_assert_eq(a.dst_epoch, 11);
		}
		cr_assert_eq(acks, 1, "the peer is told");
	}
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* A partition longer than the peer timeout: the sender's operations fail; once
 * the network heals, new ones go through (both sides start afresh). */
Test(rd_verify, traffic_resumes_after_a_partition)
{
	struct braid_rd_config c = cfg();
	struct braid_rd_comp comp[8];
	struct direct d;
	uint64_t end;
	int n, failed = 0;

	c.peer_timeout_ns = 100 * 1000 * 1000ULL;
	cr_assert_eq(direct_open(&d, &c), 0);
	exchange(&d, 4, 1);
	send_msg(d.rd[0], d.key[1], "cut off", 8, (void *)77, d.now);
	/* the partition: everything either sends is lost, for twice the peer timeout */
	for (end = d.now + 2 * c.peer_timeout_ns; d.now < end; d.now += 1000 * 1000) {
		for (int i = 0; i < 2; i++) {
			braid_rd_timer(d.rd[i], d.now);
			drain(d.rd[i], d.now);
		}
	}
	while ((n = braid_rd_poll(d.rd[0], comp, 8)) > 0)
		for (int i = 0; i < n; i++)
			if (comp[i].context == (void *)77 && comp[i].err == FI_EHOSTUNREACH)
				failed++;
	cr_assert_eq(failed, 1, "the send failed with FI_EHOSTUNREACH");
	exchange(&d, 8, 40);
	direct_close(&d);
}

/*
 * Unreachable peers cost only themselves (protocol.md §4.5). Flows this
 * engine makes to send are bounded by max_flows, not by the strangers' share
 * (RD_STRANGER_FLOWS): 2,000 sends to peers that never answer are all taken.
 * Together they resend at most RD_SILENT_RTX_PER_S (10,000) times a second,
 * a lone silent peer on its own RTO; each fails FI_EHOSTUNREACH at the peer
 * timeout, which the resend budget does not stretch.
 */
static uint64_t silent_run(int npeers, uint64_t until, int *failed)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_comp comp[64];
	uint64_t now = 0, retx;
	int i, n;

	c.max_flows = 4000;
	c.max_sends = 4096;
	c.peer_timeout_ns = 2000 * 1000000ULL;
	rd = one_open(&c, &t);
	for (i = 0; i < npeers; i++)
		send_msg(rd, braid_peer_key(0x7f4e0000u + (uint32_t)i, 9), "x", 1,
			 (void *)(uintptr_t)(i + 1), now);
	drain(rd, now);
	*failed = 0;
	while (now < until) {
		uint64_t d = braid_rd_next_deadline(rd);

		now = d < until ? d : until;
		braid_rd_timer(rd, now);
		drain(rd, now);
		while ((n = braid_rd_poll(rd, comp, 64)) > 0)
			for (i = 0; i < n; i++) {
				cr_assert_eq(comp[i].err, FI_EHOSTUNREACH, "a silent peer's send fails unreachable");
				cr_assert_geq(now, c.peer_timeout_ns, "not before the peer timeout");
				(*failed)++;
			}
	}
	retx = braid_rd_get_stats(rd)->retx_pkts;
	braid_rd_close(rd);
	braid_peer_table_close(t);
	return retx;
}

Test(rd_verify, silent_peers_cost_only_themselves)
{
	uint64_t retx;
	int failed;

	/* 2,000 silent peers for one second: at most 10,000 resends a second together (on
	 * their own RTOs, capped at the peer timeout / 16, they would make about 28,000) */
	retx = silent_run(2000, 1000 * 1000000ULL, &failed);
	cr_assert_eq(failed, 0, "none failed before the peer timeout");
	cr_assert_leq(retx, 10000 + 2000, "2,000 silent peers resent %lu times in 1 s",
		      (unsigned long)retx);
	cr_assert_geq(retx, 2000, "each resent at least once (%lu)", (unsigned long)retx);
	/* and until the peer timeout has passed: every send failed, within about it */
	retx = silent_run(2000, 2600 * 1000000ULL, &failed);
	cr_assert_eq(failed, 2000, "every send to a silent peer failed by 1.3x the peer timeout (%d)",
		     failed);
	/* one silent peer: its own RTO, doubling from the initial one */
	retx = silent_run(1, 300 * 1000000ULL, &failed);
	cr_assert_geq(retx, 6, "a lone silent peer is probed on its RTO (%lu resends in 300 ms)",
		      (unsigned long)retx);
}

/*
 * Idle flows go (FI_BRAID_IDLE_MS): 100 peers each send one message; once
 * they have been quiet for cfg.idle_ns their traffic state is freed and the
 * flow pool's memory given back, while what their sequence numbers need
 * stays: each peer's next message is delivered as usual.
 */
Test(rd_verify, idle_flows_are_freed_and_their_memory_given_back)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_comp comp[64];
	uint8_t pkt[2048], buf[64];
	uint64_t now = 1000, busy, idle;
	int i, got = 0, n;

	c.idle_ns = 1000 * 1000000ULL;
	c.max_recvs = 512;
	rd = one_open(&c, &t);
	for (i = 0; i < 200; i++)
		post(rd, buf, sizeof(buf), 0, NULL, now);
	for (i = 0; i < 100; i++) {
		size_t len = mkdata(pkt, (uint16_t)(5000 + i), 77, 0, 0, 0, 0, 8, 8, (uint8_t)i);

		cr_assert_eq(braid_rd_input(rd, pkt, len, 0x7f030001u, false, now), 0);
	}
	drain(rd, now);
	while ((n = braid_rd_poll(rd, comp, 64)) > 0)
		got += n;
	cr_assert_eq(got, 100, "each peer's message delivered");
	cr_assert_eq(braid_rd_get_stats(rd)->flows_active, 100);
	busy = braid_rd_pool_bytes(rd);
	cr_assert_leq(braid_rd_next_deadline(rd), now + c.idle_ns, "a sweep is due");
	/* quiet for the idle time: the timer frees them all */
	while ((now = braid_rd_next_deadline(rd)) <= 3000 * 1000000ULL) {
		braid_rd_timer(rd, now);
		drain(rd, now);
	}
	idle = braid_rd_pool_bytes(rd);
	cr_assert_eq(braid_rd_get_stats(rd)->flows_active, 0, "every idle flow freed");
	cr_assert_eq(braid_rd_get_stats(rd)->peers_idle, 100,
		     "every peer (none proven: the test does not answer challenges) kept in 32 bytes");
	cr_assert_eq(braid_rd_next_deadline(rd), UINT64_MAX, "and nothing left to sweep");
	cr_assert_lt(idle, busy / 4, "pools gave their memory back: %zu -> %zu bytes", busy, idle);
	/* the peers' sequence state stayed: their second messages are delivered too */
	now += 1000;
	for (i = 0; i < 100; i++) {
		size_t len = mkdata(pkt, (uint16_t)(5000 + i), 77, 0, 1, 1, 0, 8, 8, (uint8_t)i);

		cr_assert_eq(braid_rd_input(rd, pkt, len, 0x7f030001u, false, now), 0,
			     "peer %d's second message taken", i);
	}
	drain(rd, now);
	got = 0;
	while ((n = braid_rd_poll(rd, comp, 64)) > 0)
		got += n;
	cr_assert_eq(got, 100, "each peer's second message delivered");
	cr_assert_eq(braid_rd_get_stats(rd)->peers_idle, 0, "every peer woke");
	cr_assert_eq(braid_rd_get_stats(rd)->peers_verified, 0, "none proven by waking");
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* Both engines' timers and packets, quiet, until @until (nothing posted meanwhile). */
static void direct_quiet(struct direct *d, uint64_t until)
{
	for (;;) {
		uint64_t t0 = braid_rd_next_deadline(d->rd[0]), t1 = braid_rd_next_deadline(d->rd[1]);
		uint64_t t = t0 < t1 ? t0 : t1;

		if (t > until)
			break;
		d->now = t;
		direct_pump(d);
	}
	d->now = until;
}

/* Two engines that exchanged messages both ways, then were quiet for two idle
 * times (idle 100 ms, forget 300 ms): each keeps the other as an idle record. */
static void idle_pair_open(struct direct *d, struct braid_rd_config *c,
			   const struct braid_rd_stats *st[2])
{
	c->idle_ns = 100 * 1000000ULL;
	c->forget_ns = 300 * 1000000ULL;
	cr_assert_eq(direct_open(d, c), 0);
	exchange_from(d, 0, 8, 1);
	exchange_from(d, 1, 8, 50);
	for (int i = 0; i < 2; i++)
		st[i] = braid_rd_get_stats(d->rd[i]);
	direct_quiet(d, d->now + 2 * c->idle_ns);
}

/*
 * protocol.md §4.9, forgetting: a pair quiet for the idle time keeps
 * 32-byte records of its numbering; once those have rested for forget_ns, one
 * side asks the other to forget, it agrees, and both give the pair up: no
 * state, no timer, no shared entry. Met again, they start afresh without an
 * error, a restart or anything taken for old.
 */
Test(rd_verify, an_idle_pair_forgets_itself_by_agreement_and_meets_again_afresh)
{
	struct braid_rd_config c = cfg();
	const struct braid_rd_stats *st[2];
	struct direct d;
	int i;

	idle_pair_open(&d, &c, st);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(st[i]->peers_idle, 1, "engine %d: a record first", i);
		cr_assert_neq(braid_rd_next_deadline(d.rd[i]), UINT64_MAX,
			      "engine %d: a timer for the record", i);
	}
	direct_quiet(&d, d.now + 3 * c.forget_ns);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(st[i]->peers, 0, "engine %d: the peer forgotten", i);
		cr_assert_eq(st[i]->peers_idle, 0);
		cr_assert_eq(st[i]->peers_verified, 0);
		cr_assert_eq(st[i]->peers_forgotten, 1, "engine %d", i);
		cr_assert_eq(braid_peer_count(d.t[i]), 0);
		cr_assert_eq(braid_rd_next_deadline(d.rd[i]), UINT64_MAX, "engine %d: no timer left", i);
	}
	cr_assert_geq(st[0]->forget_tx + st[1]->forget_tx, 1, "asked");
	cr_assert_geq(st[0]->forget_rx + st[1]->forget_rx, 1, "and agreed to");
	cr_assert_eq(st[0]->forget_refused + st[1]->forget_refused, 0);
	/* met again, both ways, more than a window: afresh, no error, nothing old */
	for (i = 0; i < 6; i++) {
		exchange_from(&d, 1, 64, (uint8_t)(100 + i));
		exchange_from(&d, 0, 64, (uint8_t)(150 + i));
	}
	for (i = 0; i < 2; i++) {
		cr_assert_eq(st[i]->peers, 1);
		cr_assert_eq(st[i]->peers_verified, 1, "engine %d: proven afresh", i);
		cr_assert_eq(st[i]->peers_restarted, 0, "engine %d: no restart", i);
		cr_assert_eq(st[i]->peers_failed, 0);
		cr_assert_eq(st[i]->drops[BRAID_DROP_DUPLICATE], 0, "engine %d: nothing taken as old", i);
	}
	direct_close(&d);
}

/*
 * §4.9: a peer that sent once and is gone (its endpoint closed) never answers:
 * its record goes alone after two asks, a forget time apart, and the memory
 * with it (records, the peer map's slots). Should it come back still
 * numbering, its packets are for an earlier incarnation of us: refused and
 * told (never taken for old ones, nor made to wait for ones taken long ago).
 */
Test(rd_verify, peers_gone_for_good_are_forgotten_alone_after_two_asks)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	const struct braid_rd_stats *st;
	struct braid_rd_comp comp[64];
	struct braid_rd_out out[8];
	uint8_t pkt[2048], buf[64];
	uint64_t now = 1000;
	size_t start, busy, len;
	int i, got = 0, n, k;

	c.idle_ns = 100 * 1000000ULL;
	c.forget_ns = 300 * 1000000ULL;
	c.max_recvs = 2048;
	rd = one_open(&c, &t);
	st = braid_rd_get_stats(rd);
	start = braid_rd_pool_bytes(rd);
	for (i = 0; i < 1001; i++)
		post(rd, buf, sizeof(buf), 0, NULL, now);
	for (i = 0; i < 1000; i++) {
		len = mkdata(pkt, (uint16_t)(5000 + i), 77, 0, 0, 0, 0, 8, 8, (uint8_t)i);
		cr_assert_eq(braid_rd_input(rd, pkt, len, 0x7f030001u, false, now), 0);
		drain(rd, now);
	}
	while ((n = braid_rd_poll(rd, comp, 64)) > 0)
		got += n;
	cr_assert_eq(got, 1000);
	busy = braid_rd_pool_bytes(rd);
	while ((now = braid_rd_next_deadline(rd)) <= 5000 * 1000000ULL) {
		braid_rd_timer(rd, now);
		drain(rd, now);	/* the asks go nowhere */
	}
	cr_assert_eq(st->peers, 0, "every peer forgotten (%lu left)", (unsigned long)st->peers);
	cr_assert_eq(st->peers_idle, 0);
	cr_assert_eq(st->peers_forgotten, 1000);
	cr_assert_eq(st->forget_tx, 2000, "each asked twice (%lu)", (unsigned long)st->forget_tx);
	cr_assert_eq(braid_rd_next_deadline(rd), UINT64_MAX, "no timer left");
	/* what stays: the one posted receive, and the chunk each pool is carving */
	cr_assert_lt(braid_rd_pool_bytes(rd), busy / 10, "given back: %zu -> %zu -> %zu bytes",
		     start, busy, braid_rd_pool_bytes(rd));
	/* peer 0 comes back numbering where it was, to our incarnation then (1) */
	now += 1000;
	len = mkdata(pkt, 5000, 77, 1, 1, 1, 0, 8, 8, 0xaa);
	cr_assert_eq(braid_rd_input(rd, pkt, len, 0x7f030001u, false, now), DROP(BRAID_DROP_STALE_EPOCH),
		     "for an earlier incarnation of us");
	n = braid_rd_output(rd, now, out, 8);
	cr_assert_geq(n, 1, "and told so");
	for (k = 0; k < n; k++) {
		struct braid_rd_ack_view a;

		if (braid_rd_ack_decode(out[k].hdr, out[k].hdr_len, &a))
			continue;	/* (and challenged: we know nothing of it) */
		cr_assert(braid_seq_gt(a.src_epoch, 1), "carrying a later incarnation (%u)", a.src_epoch);
		break;
	}
	cr_assert_lt(k, n, "by an ACK");
	cr_assert_eq(braid_rd_poll(rd, comp, 64), 0, "nothing taken");
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* One engine (idle 100 ms, forget 300 ms) that took one message from @ip:5000 (epoch 77). */
static struct braid_rd *heard_once(struct braid_rd_config *c, struct braid_peer_table **t,
				   uint32_t ip, uint64_t now)
{
	static uint8_t buf[64];
	struct braid_rd_comp comp;
	struct braid_rd *rd;
	uint8_t pkt[2048];
	size_t len;

	c->idle_ns = 100 * 1000000ULL;
	c->forget_ns = 300 * 1000000ULL;
	rd = one_open(c, t);
	post(rd, buf, sizeof(buf), 0, NULL, now);
	len = mkdata(pkt, 5000, 77, 0, 0, 0, 0, 8, 8, 1);
	cr_assert_eq(braid_rd_input(rd, pkt, len, ip, false, now), 0);
	drain(rd, now);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 1);
	return rd;
}

/*
 * §4.9: only the peer asked can make us forget it. The ask's cookie is a
 * keyed hash of the record: an answer with another cookie, from another port,
 * about another incarnation, or a second copy, changes nothing. Asked
 * ourselves, we agree but forget only when the cookie we added comes back (a
 * forged ask's answer goes to the real peer); while traffic is under way we
 * say we are busy; by a pair we are not, refused; by an address we know
 * nothing of, agreed (there is nothing to forget).
 */
Test(rd_verify, only_the_asked_peer_can_make_us_forget_it)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	const struct braid_rd_stats *st;
	struct braid_rd_out out[8];
	struct braid_rd_chal_view ask = { 0 }, r;
	struct braid_rd_cts_hdr h;
	uint8_t pkt[2048];
	uint32_t ip = 0x7f030001u;
	uint64_t now = 1000;
	size_t len;
	int n, k;

	rd = heard_once(&c, &t, ip, now);
	st = braid_rd_get_stats(rd);
	/* quiet until the first ask goes */
	while (!st->forget_tx) {
		now = braid_rd_next_deadline(rd);
		cr_assert_lt(now, 2000 * 1000000ULL, "an ask within two forget times");
		braid_rd_timer(rd, now);
		n = braid_rd_output(rd, now, out, 8);
		for (k = 0; k < n; k++)
			if (!braid_rd_chal_decode(out[k].hdr, out[k].hdr_len, &ask) &&
			    (ask.flags & BRAID_RD_CHAL_F_FORGET))
				break;
	}
	cr_assert_eq(ask.flags, BRAID_RD_CHAL_F_FORGET, "the ask");
	cr_assert_eq(ask.dst_epoch, 77, "about the peer's incarnation");
	cr_assert_eq(ask.src_epoch, 1, "as the peer knows us");
	r = (struct braid_rd_chal_view){ .src_port = 5000, .src_epoch = 77, .dst_epoch = 1,
		.flags = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE, .cookie = ask.cookie ^ 1 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_UNVERIFIED),
		     "another cookie");
	r.cookie = ask.cookie;
	r.dst_epoch = 2;
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_UNVERIFIED),
		     "another incarnation of us");
	r.dst_epoch = 1;
	r.src_port = 5001;
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_NO_STATE),
		     "another port");
	cr_assert_eq(st->peers_idle, 1, "the record stays");
	/* an ask as if from the peer (forged: its answer goes to the peer's address):
	 * agreed with a cookie of ours added, but nothing forgotten before it comes back */
	r = (struct braid_rd_chal_view){ .src_port = 5000, .src_epoch = 77, .dst_epoch = 1,
		.flags = BRAID_RD_CHAL_F_FORGET, .cookie = 42 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), 0);
	cr_assert_eq(braid_rd_output(rd, now, out, 8), 1, "answered");
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &ask), 0);
	cr_assert_eq(ask.flags, BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE);
	cr_assert_eq(ask.cookie, 42, "its cookie echoed");
	cr_assert_neq(ask.confirm, 0, "and one of ours to echo back");
	cr_assert_eq(out[0].dst_ip, ip);
	cr_assert_eq(out[0].dst_port, 5000);
	cr_assert_eq(st->peers_idle, 1, "the record stays until it is echoed");
	r = (struct braid_rd_chal_view){ .src_port = 5000, .src_epoch = 77, .dst_epoch = 1,
		.flags = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE, .cookie = ask.confirm ^ 1 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_UNVERIFIED),
		     "a guessed echo");
	cr_assert_eq(st->peers_idle, 1);
	r.cookie = ask.confirm;
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), 0, "the echo");
	cr_assert_eq(st->peers, 0, "forgotten");
	cr_assert_eq(st->peers_forgotten, 1);
	cr_assert_eq(braid_rd_output(rd, now, out, 8), 0, "nothing more to say");
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_NO_STATE),
		     "a second copy");

	/* asked: a peer with a message under way refuses */
	len = mkdata(pkt, 6000, 88, 0, 0, 0, 0, 2000, 900, 2);	/* half of a message */
	n = braid_rd_input(rd, pkt, len, ip, false, now);
	cr_assert_eq(n, 0, "%d", n);
	drain(rd, now);
	/* (having forgotten a peer, we are a later incarnation to those we meet: 2) */
	r = (struct braid_rd_chal_view){ .src_port = 6000, .src_epoch = 88, .dst_epoch = 2,
		.flags = BRAID_RD_CHAL_F_FORGET, .cookie = 42 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), 0);
	cr_assert_eq(st->forget_refused, 1, "refused while a message is under way");
	cr_assert_eq(braid_rd_output(rd, now, out, 8), 1, "and said so");
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &ask), 0);
	cr_assert_eq(ask.cookie, 42);
	cr_assert_eq(ask.confirm, 0xffffffffu, "busy");
	cr_assert_eq(st->peers, 1);
	r.src_epoch = 89;
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), DROP(BRAID_DROP_STALE_EPOCH),
		     "another incarnation of the asker");
	cr_assert_eq(st->forget_refused, 2);
	/* asked by an address we know nothing of: agreed, the cookie echoed */
	r = (struct braid_rd_chal_view){ .src_port = 7000, .src_epoch = 99, .dst_epoch = 5,
		.flags = BRAID_RD_CHAL_F_FORGET, .cookie = 4242 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), 0);
	cr_assert_eq(braid_rd_output(rd, now, out, 8), 1);
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &r), 0);
	cr_assert_eq(r.flags, BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE);
	cr_assert_eq(r.cookie, 4242);
	cr_assert_eq(r.confirm, 0, "nothing of ours to forget");
	cr_assert_eq(r.dst_epoch, 99);
	cr_assert_eq(out[0].dst_port, 7000);
	cr_assert_eq(st->peers, 1, "and nothing made for it");
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/*
 * §4.9: a peer that answers "busy" (it has traffic under way with us that we
 * do not know of: data we dropped, which it will resend) is asked again
 * later, and never forgotten alone however long that lasts.
 */
Test(rd_verify, a_peer_that_says_it_is_busy_is_never_forgotten_alone)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	const struct braid_rd_stats *st;
	struct braid_rd_out out[8];
	struct braid_rd_chal_view ask, r;
	struct braid_rd_cts_hdr h;
	uint32_t ip = 0x7f030001u;
	uint64_t now = 1000;
	int n, k, busy = 0;

	rd = heard_once(&c, &t, ip, now);
	st = braid_rd_get_stats(rd);
	/* twenty forget times, every ask answered "busy" */
	while ((now = braid_rd_next_deadline(rd)) < 20 * c.forget_ns) {
		braid_rd_timer(rd, now);
		n = braid_rd_output(rd, now, out, 8);
		for (k = 0; k < n; k++) {
			if (braid_rd_chal_decode(out[k].hdr, out[k].hdr_len, &ask) ||
			    ask.flags != BRAID_RD_CHAL_F_FORGET)
				continue;
			r = (struct braid_rd_chal_view){ .src_port = 5000, .src_epoch = 77,
				.dst_epoch = 1, .cookie = ask.cookie, .confirm = 0xffffffffu,
				.flags = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE };
			braid_rd_chal_write(&h, &r);
			cr_assert_eq(braid_rd_input(rd, &h, sizeof(h), ip, false, now), 0);
			busy++;
		}
	}
	cr_assert_geq(busy, 8, "asked again and again (%d)", busy);
	cr_assert_eq(st->peers_idle, 1, "still remembered");
	cr_assert_eq(st->peers_forgotten, 0);
	/* and when it stops answering, forgotten alone two asks later */
	while ((now = braid_rd_next_deadline(rd)) != UINT64_MAX) {
		cr_assert_lt(now, 40 * c.forget_ns);
		braid_rd_timer(rd, now);
		drain(rd, now);
	}
	cr_assert_eq(st->peers, 0);
	cr_assert_eq(st->peers_forgotten, 1);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/*
 * §4.9: asked while it still holds the pair's conn (its own idle time is
 * longer), an endpoint with nothing under way rests it as a record at once
 * and answers with that record's cookie; the echo forgets it.
 */
Test(rd_verify, a_quiet_conn_rests_at_once_when_asked_to_forget)
{
	struct braid_rd_config c = cfg();
	const struct braid_rd_stats *st;
	struct braid_rd_chal_view r, a;
	struct braid_rd_cts_hdr h;
	struct braid_rd_out out[8];
	struct direct d;

	c.forget_ns = 300 * 1000000ULL;
	cr_assert_eq(direct_open(&d, &c), 0);
	exchange_from(&d, 0, 8, 1);
	exchange_from(&d, 1, 8, 50);
	direct_quiet(&d, d.now + 50 * 1000000ULL);	/* ACKs settled; no idle time set */
	st = braid_rd_get_stats(d.rd[1]);
	cr_assert_eq(st->flows_active, 1);
	cr_assert_eq(st->peers_idle, 0);
	/* engine 0's ask, by hand: its epoch 100, engine 1's 101 */
	r = (struct braid_rd_chal_view){ .src_port = PORT, .src_epoch = 100, .dst_epoch = 101,
		.flags = BRAID_RD_CHAL_F_FORGET, .cookie = 7 };
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(d.rd[1], &h, sizeof(h), IP0, false, d.now), 0);
	cr_assert_eq(st->flows_active, 0, "its traffic state went");
	cr_assert_eq(st->peers_idle, 1, "a record now");
	cr_assert_eq(braid_rd_output(d.rd[1], d.now, out, 8), 1);
	cr_assert_eq(braid_rd_chal_decode(out[0].hdr, out[0].hdr_len, &a), 0);
	cr_assert_eq(a.cookie, 7);
	cr_assert_neq(a.confirm, 0);
	cr_assert_eq(a.src_epoch, 101);
	cr_assert_eq(a.dst_epoch, 100);
	r.flags |= BRAID_RD_CHAL_F_RESPONSE;
	r.cookie = a.confirm;
	braid_rd_chal_write(&h, &r);
	cr_assert_eq(braid_rd_input(d.rd[1], &h, sizeof(h), IP0, false, d.now), 0);
	cr_assert_eq(st->peers, 0, "forgotten on the echo");
	cr_assert_eq(st->peers_forgotten, 1);
	direct_close(&d);
}

/*
 * §4.9: one side forgot alone (the other was cut off through both asks). The
 * other, still numbering, sends again: its packets are refused and it is told
 * of a later incarnation; the message it had under way fails with
 * FI_ECONNRESET within a round trip or two, not the peer timeout, and the
 * next one is delivered afresh.
 */
Test(rd_verify, a_peer_forgotten_alone_learns_it_at_once_and_starts_afresh)
{
	struct braid_rd_config c = cfg();
	const struct braid_rd_stats *st[2];
	struct braid_rd_comp comp[8];
	struct direct d;
	uint8_t src[100], dst[2][100];
	uint64_t t0;
	int i, n, sent = 0, err = 0;

	idle_pair_open(&d, &c, st);
	cr_assert_eq(st[1]->peers_idle, 1);
	/* engine 0 alone runs; what it sends is lost */
	while ((d.now = braid_rd_next_deadline(d.rd[0])) != UINT64_MAX) {
		braid_rd_timer(d.rd[0], d.now);
		drain(d.rd[0], d.now);
	}
	cr_assert_eq(st[0]->peers, 0, "engine 0 forgot alone");
	cr_assert_eq(st[0]->forget_tx, 2);
	cr_assert_eq(st[1]->peers_idle, 1, "engine 1 did not");
	d.now += 1000;
	memset(src, 7, sizeof(src));
	post(d.rd[0], dst[0], sizeof(dst[0]), 0, NULL, d.now);
	post(d.rd[0], dst[1], sizeof(dst[1]), 0, NULL, d.now);
	send_msg(d.rd[1], d.key[0], src, sizeof(src), (void *)1, d.now);
	t0 = d.now;
	while (!sent) {
		direct_pump(&d);
		while ((n = braid_rd_poll(d.rd[1], comp, 8)) > 0)
			for (i = 0; i < n; i++, sent++)
				err = comp[i].err;
		cr_assert_lt(d.now - t0, c.peer_timeout_ns / 4, "an answer long before the peer timeout");
	}
	cr_assert_eq(err, FI_ECONNRESET, "the send under way failed: %d", err);
	cr_assert_eq(st[1]->peers_restarted, 1);
	cr_assert_eq(braid_rd_poll(d.rd[0], comp, 8), 0, "nothing delivered of it");
	send_msg(d.rd[1], d.key[0], src, sizeof(src), (void *)2, d.now);
	direct_pump(&d);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 8), 1);
	cr_assert_eq(comp[0].err, 0, "the next one went");
	cr_assert_eq(braid_rd_poll(d.rd[0], comp, 8), 1, "and was delivered");
	cr_assert_eq(memcmp(dst[0], src, sizeof(src)), 0);
	direct_close(&d);
}

/*
 * A proven peer quiet for the idle time is remembered
 * in 32 bytes (its numbering and incarnations); its conn, its traffic state
 * and its entry in the domain's shared peer table are given back. Traffic
 * either way brings it back where it left off: no new proof, no restart, and
 * its numbering continues (a conn started afresh would take the next
 * messages as old, or wait for ones that were delivered long ago).
 */
Test(rd_verify, an_idle_proven_peer_is_kept_in_32_bytes_and_resumes_where_it_left_off)
{
	struct braid_rd_config c = cfg();
	const struct braid_rd_stats *st[2];
	uint64_t chal[2], quiet;
	struct direct d;
	int i;

	c.idle_ns = 100 * 1000000ULL;
	cr_assert_eq(direct_open(&d, &c), 0);
	exchange_from(&d, 0, 8, 1);
	exchange_from(&d, 1, 8, 50);
	for (i = 0; i < 2; i++) {
		st[i] = braid_rd_get_stats(d.rd[i]);
		cr_assert_eq(st[i]->peers_verified, 1);
		cr_assert_eq(st[i]->flows_active, 1);
		cr_assert_eq(st[i]->peers_idle, 0);
		cr_assert_eq(braid_peer_count(d.t[i]), 1, "the domain's shared entry");
		chal[i] = st[i]->chal_tx;
	}
	/* quiet for three idle times: both sides' sweeps run */
	quiet = d.now + 3 * c.idle_ns;
	for (;;) {
		uint64_t t0 = braid_rd_next_deadline(d.rd[0]), t1 = braid_rd_next_deadline(d.rd[1]);
		uint64_t t = t0 < t1 ? t0 : t1;

		if (t > quiet)
			break;
		d.now = t;
		direct_pump(&d);
	}
	d.now = quiet;
	for (i = 0; i < 2; i++) {
		cr_assert_eq(st[i]->flows_active, 0, "engine %d: its traffic state gone", i);
		cr_assert_eq(st[i]->peers, 1, "engine %d: the peer still known", i);
		cr_assert_eq(st[i]->peers_verified, 1, "engine %d: and proven", i);
		cr_assert_eq(st[i]->peers_idle, 1, "engine %d: remembered in 32 bytes", i);
		cr_assert_eq(braid_peer_count(d.t[i]), 0, "engine %d: the shared entry given back", i);
		cr_assert_eq(braid_rd_next_deadline(d.rd[i]), UINT64_MAX, "engine %d: no timer left", i);
	}
	/* an ACK is traffic state's business: it does not wake the peer */
	{
		struct braid_rd_ack_view a = { .src_port = PORT, .src_epoch = 101, .dst_epoch = 100 };
		struct braid_rd_ack_hdr ack;

		braid_rd_ack_write(&ack, &a);
		cr_assert_eq(braid_rd_input(d.rd[0], &ack, sizeof(ack), IP1, false, d.now),
			     DROP(BRAID_DROP_NO_STATE));
		cr_assert_eq(st[0]->peers_idle, 1);
	}
	/* traffic again, both ways, more than a window of packets: numbering resumed
	 * (sender and receiver alike), nothing old, no new proof */
	cr_assert_leq(c.window, 6 * 64);
	for (i = 0; i < 6; i++) {
		exchange_from(&d, 0, 64, (uint8_t)(100 + i));
		exchange_from(&d, 1, 64, (uint8_t)(150 + i));
	}
	for (i = 0; i < 2; i++) {
		cr_assert_eq(st[i]->peers_idle, 0, "engine %d: the peer woke", i);
		cr_assert_eq(st[i]->peers, 1);
		cr_assert_eq(st[i]->peers_verified, 1);
		cr_assert_eq(st[i]->peers_restarted, 0, "engine %d: no restart", i);
		cr_assert_eq(st[i]->chal_tx, chal[i], "engine %d: no new challenge", i);
		cr_assert_eq(st[i]->drops[BRAID_DROP_DUPLICATE], 0, "engine %d: nothing taken as old", i);
		cr_assert_eq(braid_peer_count(d.t[i]), 1);
	}
	direct_close(&d);
}

/* An ACK from the hand-made peer at @ip:6000 in incarnation @epoch to engine epoch 1. */
static int peer_ack(struct braid_rd *rd, uint32_t ip, uint32_t epoch, uint32_t cum, uint32_t rwnd,
		    uint64_t now)
{
	struct braid_rd_ack_view a = { .src_port = 6000, .src_epoch = epoch, .dst_epoch = 1,
				       .cum_psn = cum, .echo_psn = 0, .rwnd = rwnd };
	struct braid_rd_ack_hdr ack;

	braid_rd_ack_write(&ack, &a);
	return braid_rd_input(rd, &ack, sizeof(ack), ip, false, now);
}

/*
 * §4.9 rule 6: a peer that took nothing of ours (it refused our first packets,
 * rwnd 0) and then met us as a new incarnation (it had dropped the state it
 * made for us, and forgotten others meanwhile) kept no numbering of ours:
 * our send goes on to the new incarnation from PSN 0 and completes, no
 * FI_ECONNRESET. One that had acknowledged a packet of ours fails it.
 */
Test(rd_verify, a_peer_that_took_nothing_of_ours_restarts_without_failing_our_send)
{
	struct braid_rd_config c = cfg();
	struct braid_peer_table *t;
	struct braid_rd *rd;
	const struct braid_rd_stats *st;
	struct braid_rd_comp comp;
	struct braid_rd_out out[16];
	struct braid_rd_data_view dv;
	uint32_t ip = 0x7f030009u;
	uint64_t peer = braid_peer_key(ip, 6000), now = 1000;
	char msg[100] = "hello";
	int n, k, seen;

	rd = one_open(&c, &t);
	st = braid_rd_get_stats(rd);
	send_msg(rd, peer, msg, sizeof(msg), (void *)1, now);
	drain(rd, now);
	cr_assert_eq(peer_ack(rd, ip, 500, 0, 0, now), 0, "refused: nothing acknowledged, rwnd 0");
	drain(rd, now);
	/* an initial RTO later, it is another incarnation: challenged, and it answers */
	now += 2 * c.rto_init_ns;
	cr_assert_eq(peer_ack(rd, ip, 501, 0, 64, now), DROP(BRAID_DROP_UNVERIFIED));
	n = braid_rd_output(rd, now, out, 16);
	for (k = 0, seen = 0; k < n; k++)
		seen += rd_answer_chal_out(rd, &out[k], ip, now);
	cr_assert_eq(seen, 1, "proven in its new incarnation");
	cr_assert_eq(st->peers_restarted, 1);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 0, "the send did not fail");
	/* it goes to the new incarnation, from PSN 0 */
	now += 2 * c.rto_init_ns;
	braid_rd_timer(rd, now);
	n = braid_rd_output(rd, now, out, 16);
	for (k = 0, seen = 0; k < n; k++) {
		if (braid_rd_data_decode(out[k].hdr, out[k].hdr_len + out[k].payload_len, &dv))
			continue;
		cr_assert_eq(dv.dst_epoch, 501);
		cr_assert_eq(dv.psn, 0);
		seen++;
	}
	cr_assert_eq(seen, 1, "resent to the new incarnation");
	cr_assert_eq(peer_ack(rd, ip, 501, 1, 64, now), 0);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 1);
	cr_assert_eq(comp.err, 0, "and completed");

	/* now it acknowledged something: another restart fails what is under way */
	send_msg(rd, peer, msg, sizeof(msg), (void *)2, now);
	drain(rd, now);
	now += 2 * c.rto_init_ns;
	cr_assert_eq(peer_ack(rd, ip, 502, 1, 64, now), DROP(BRAID_DROP_UNVERIFIED));
	n = braid_rd_output(rd, now, out, 16);
	for (k = 0, seen = 0; k < n; k++)
		seen += rd_answer_chal_out(rd, &out[k], ip, now);
	cr_assert_eq(seen, 1);
	cr_assert_eq(braid_rd_poll(rd, &comp, 1), 1);
	cr_assert_eq(comp.err, FI_ECONNRESET, "%d", comp.err);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}
