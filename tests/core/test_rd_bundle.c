/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_bundle.c: RD bundles (§4.8) and piggybacked ACKs through the engine API: a malformed bundle changes nothing, a good one delivers every record, a delayed ACK rides with data on its path, retransmissions avoid their lost path, small messages share datagrams, a ping-pong's ACKs ride on the answers, and bundles stay exactly-once under faults. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "rd_harness.h"
#include "braid_hdr.h"

#define DROP(r) (-((int)(r) + 1))
#define US 1000ULL
#define MS 1000000ULL

/* ---- one engine fed by hand (test_rd_in.c's set-up) ---- */

#define PEER_IP 0x7f090909u
#define PEER_PORT 5555

struct one {
	struct braid_peer_table *t;
	struct braid_rd *rd;
};

static void one_open(struct one *o)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 4;
	c.epoch = 1;
	c.local_ip = 0x7f000001u;
	c.local_port = 4000;
	cr_assert_eq(braid_peer_table_open(&o->t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, o->t, &o->rd), 0);
}

static void one_close(struct one *o)
{
	braid_rd_close(o->rd);
	braid_peer_table_close(o->t);
}

static void post(struct one *o, void *buf, size_t len, void *ctx)
{
	struct iovec iov = { buf, len };
	struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .context = ctx };

	cr_assert_eq(braid_rd_post_recv(o->rd, &r, 0), 0);
}

/* An RD_DATA packet from PEER_PORT: bytes [@off, @off + @plen) of message @msg_id of @msg_len. */
static size_t mkdata(uint8_t *buf, uint32_t psn, uint32_t msg_id, uint32_t off, uint32_t msg_len,
		     const void *payload, size_t plen)
{
	struct braid_rd_data_view v = {
		.src_port = PEER_PORT, .src_epoch = 50, .psn = psn, .msg_id = msg_id,
		.offset = off, .msg_len = msg_len, .tx_time = 1,
	};
	size_t n = braid_rd_data_write(buf, &v);

	memcpy(buf + n, payload, plen);
	return n + plen;
}

/* Append one record to the bundle of @len bytes in @b. */
static size_t rec_add(uint8_t *b, size_t len, const void *pkt, size_t pkt_len)
{
	b[len] = (uint8_t)(pkt_len >> 8);
	b[len + 1] = (uint8_t)pkt_len;
	memcpy(b + len + 2, pkt, pkt_len);
	return len + 2 + pkt_len;
}

/* Nothing at all happened in @o: no completion, no peer state, nothing to send, no timer. */
static void assert_untouched(struct one *o, const char *what)
{
	struct braid_rd_out out[4];
	struct braid_rd_comp c;

	cr_assert_eq(braid_rd_poll(o->rd, &c, 1), 0, "%s: nothing delivered", what);
	cr_assert_eq(braid_peer_count(o->t), 0, "%s: no conn was created for the peer", what);
	cr_assert_eq(braid_rd_get_stats(o->rd)->flows_active, 0, "%s: no flow", what);
	cr_assert_eq(braid_rd_next_deadline(o->rd), UINT64_MAX, "%s: no timer armed", what);
	cr_assert_not(braid_rd_pending(o->rd), "%s", what);
	cr_assert_eq(braid_rd_output(o->rd, 5, out, 4), 0, "%s: no ACK or anything else to send", what);
}

/*
 * A malformed bundle is refused whole: its first record is a valid RD_DATA
 * that alone would create message 0 and complete the posted receive, but
 * the bundle around it is bad, so the only trace is drops[BRAID_DROP_BUNDLE].
 */
Test(rd_bundle_in, malformed_bundle_changes_no_state)
{
	uint8_t good[256], pkt[256], b[8192], dst[64] = { 0 };
	struct braid_dgram_hdr dg;
	struct braid_rd_stats before, after;
	struct braid_rd_comp c;
	struct one o;
	size_t glen, dlen, len;
	int bad, i;

	one_open(&o);
	post(&o, dst, sizeof(dst), (void *)1);
	dlen = mkdata(pkt, 0, 0, 0, 5, "hello", 5);
	braid_rd_bundle_hdr_write(good, PEER_PORT);
	glen = rec_add(good, BRAID_RD_BUNDLE_HDR, pkt, dlen);

	for (bad = 0; bad < 9; bad++) {
		const char *what;

		memcpy(b, good, glen);
		len = glen;
		switch (bad) {
		case 0:
			what = "a DGRAM record";
			braid_dgram_hdr_write(&dg, PEER_PORT, 0, 0);
			len = rec_add(b, len, &dg, sizeof(dg));
			break;
		case 1:
			what = "a record from another port";
			len = rec_add(b, len, pkt, mkdata(pkt, 1, 1, 0, 3, "abc", 3));
			b[glen + 2 + 5] ^= 1;
			break;
		case 2:
			what = "a truncated last record";
			len = rec_add(b, len, pkt, mkdata(pkt, 1, 1, 0, 3, "abc", 3)) - 1;
			break;
		case 3:
			what = "a byte of trailing garbage";
			b[len++] = 0;
			break;
		case 4:
			what = "a nested bundle";
			len = rec_add(b, len, good, glen);
			break;
		case 5:
			what = "a 4-byte record";
			len = rec_add(b, len, pkt, 4);
			break;
		case 6:
			what = "65 valid records";
			for (i = 1; i < BRAID_RD_BUNDLE_MAX + 1; i++)
				len = rec_add(b, len, pkt,
					      mkdata(pkt, (uint32_t)i, (uint32_t)i, 0, 1, "x", 1));
			break;
		case 7:
			what = "a zero-length record";
			len = rec_add(b, len, pkt, 0);
			break;
		default:
			what = "no record";
			len = BRAID_RD_BUNDLE_HDR;
			break;
		}
		before = *braid_rd_get_stats(o.rd);
		cr_assert_eq(braid_rd_input_from(o.rd, b, len, PEER_IP, bad, false, 10 + bad),
			     DROP(BRAID_DROP_BUNDLE), "%s", what);
		after = *braid_rd_get_stats(o.rd);
		cr_assert_eq(after.drops[BRAID_DROP_BUNDLE], before.drops[BRAID_DROP_BUNDLE] + 1, "%s", what);
		after.drops[BRAID_DROP_BUNDLE]--;
		cr_assert_eq(memcmp(&after, &before, sizeof(after)), 0, "%s: another counter moved", what);
		cr_assert_eq(after.rx_data, 0, "%s", what);
		cr_assert_eq(after.rx_bundles, 0, "%s", what);
		assert_untouched(&o, what);
	}
	cr_assert_eq(dst[0], 0, "not a byte of the first record was placed");

	/* the same first record in a well-formed bundle is delivered: the refusals above were
	 * of the bundle, not of the record */
	cr_assert_eq(braid_rd_input(o.rd, good, glen, PEER_IP, false, 20), 0);
	cr_assert_eq(braid_rd_poll(o.rd, &c, 1), 1);
	cr_assert_eq(c.context, (void *)1);
	cr_assert_eq(c.len, 5);
	cr_assert_eq(memcmp(dst, "hello", 5), 0);
	cr_assert_eq(braid_rd_get_stats(o.rd)->rx_data, 1);
	cr_assert_eq(braid_rd_get_stats(o.rd)->rx_bundles, 1);
	cr_assert_eq(braid_peer_count(o.t), 1);
	one_close(&o);
}

/*
 * One bundle carrying five messages (one of two packets), its records in no
 * particular order: every receive gets its message, in send order, bytes
 * intact; the ACK covers them all. The same bundle again (a duplicated
 * datagram) delivers nothing twice.
 */
Test(rd_bundle_in, bundle_delivers_every_record_in_order_once)
{
	uint8_t b[4096], pkt[1024], big[300], two[200], dst[10][512];
	struct braid_rd_comp c[16];
	struct braid_rd_out out[8];
	struct braid_rd_ack_view a;
	const struct braid_rd_stats *st;
	struct one o;
	size_t len = BRAID_RD_BUNDLE_HDR;
	int i, n;

	for (i = 0; i < 300; i++)
		big[i] = (uint8_t)(i * 13 + 1);
	for (i = 0; i < 200; i++)
		two[i] = (uint8_t)(i * 7 + 3);
	one_open(&o);
	st = braid_rd_get_stats(o.rd);
	memset(dst, 0xee, sizeof(dst));
	for (i = 0; i < 5; i++)
		post(&o, dst[i], sizeof(dst[i]), (void *)(uintptr_t)(i + 1));
	/* message 0 "alpha" psn 0, 1 empty psn 1, 2 300 bytes psn 2, 3 two packets psn 3-4, 4 "omega" psn 5 */
	braid_rd_bundle_hdr_write(b, PEER_PORT);
	len = rec_add(b, len, pkt, mkdata(pkt, 2, 2, 0, 300, big, 300));
	len = rec_add(b, len, pkt, mkdata(pkt, 0, 0, 0, 5, "alpha", 5));
	len = rec_add(b, len, pkt, mkdata(pkt, 4, 3, 100, 200, two + 100, 100));
	len = rec_add(b, len, pkt, mkdata(pkt, 1, 1, 0, 0, "", 0));
	len = rec_add(b, len, pkt, mkdata(pkt, 3, 3, 0, 200, two, 100));
	len = rec_add(b, len, pkt, mkdata(pkt, 5, 4, 0, 5, "omega", 5));
	cr_assert_eq(braid_rd_bundle_check(b, len), 6);

	cr_assert_eq(braid_rd_input_from(o.rd, b, len, PEER_IP, 5, false, 10), 0);
	n = braid_rd_poll(o.rd, c, 16);
	cr_assert_eq(n, 5, "every message of the bundle completed");
	for (i = 0; i < 5; i++) {
		cr_assert_eq(c[i].err, 0);
		cr_assert_eq(c[i].context, (void *)(uintptr_t)(i + 1), "completion %d in send order", i);
	}
	cr_assert_eq(c[0].len, 5);
	cr_assert_eq(memcmp(dst[0], "alpha", 5), 0);
	cr_assert_eq(c[1].len, 0);
	cr_assert_eq(dst[1][0], 0xee, "an empty message writes nothing");
	cr_assert_eq(c[2].len, 300);
	cr_assert_eq(memcmp(dst[2], big, 300), 0);
	cr_assert_eq(c[3].len, 200);
	cr_assert_eq(memcmp(dst[3], two, 200), 0);
	cr_assert_eq(c[4].len, 5);
	cr_assert_eq(memcmp(dst[4], "omega", 5), 0);
	cr_assert_eq(dst[4][5], 0xee);
	cr_assert_eq(st->rx_bundles, 1);
	cr_assert_eq(st->rx_data, 6);
	cr_assert_eq(st->msgs_received, 5);
	/* the ACK that answers covers the six packets (after the challenge to the
	 * new peer, §4.9, which it answers) */
	cr_assert(rd_answer_challenge(o.rd, PEER_IP, 11));
	n = braid_rd_output(o.rd, 11, out, 8);
	cr_assert_eq(n, 1);
	cr_assert_eq(out[0].frame_len, 0, "an ACK with no data to ride on goes alone");
	cr_assert_eq(braid_rd_ack_decode(out[0].hdr, out[0].hdr_len, &a), 0);
	cr_assert_eq(a.cum_psn, 6);
	cr_assert_eq(out[0].reply_route, 5, "back by the route the bundle came by");

	/* the same datagram again: accepted as a bundle, every record a duplicate */
	for (i = 5; i < 10; i++)
		post(&o, dst[i], sizeof(dst[i]), (void *)(uintptr_t)(i + 1));
	cr_assert_eq(braid_rd_input(o.rd, b, len, PEER_IP, false, 12), 0);
	cr_assert_eq(braid_rd_poll(o.rd, c, 16), 0, "nothing delivered twice");
	cr_assert_eq(st->drops[BRAID_DROP_DUPLICATE], 6);
	cr_assert_eq(st->rx_bundles, 2);
	cr_assert_eq(st->msgs_received, 5);
	cr_assert_eq(dst[5][0], 0xee);
	one_close(&o);
}

/* A well-framed bundle whose records fail their own checks: each such record is dropped
 * alone, with its own reason, as if it came alone; the others are delivered. */
Test(rd_bundle_in, bad_record_in_good_bundle_is_dropped_alone)
{
	uint8_t b[4096], pkt[1024], dst[2][64];
	struct braid_rd_ack_view av = { .src_port = PEER_PORT, .src_epoch = 50, .dst_epoch = 77 };
	struct braid_rd_ack_hdr ack;
	struct braid_rd_comp c[4];
	const struct braid_rd_stats *st;
	struct one o;
	size_t len = BRAID_RD_BUNDLE_HDR, n;

	one_open(&o);
	st = braid_rd_get_stats(o.rd);
	post(&o, dst[0], sizeof(dst[0]), (void *)1);
	post(&o, dst[1], sizeof(dst[1]), (void *)2);
	braid_rd_bundle_hdr_write(b, PEER_PORT);
	len = rec_add(b, len, pkt, mkdata(pkt, 0, 0, 0, 4, "one!", 4));
	n = mkdata(pkt, 1, 1, 2, 4, "BAD!", 4);	/* its payload beyond the message */
	len = rec_add(b, len, pkt, n);
	braid_rd_ack_write(&ack, &av);	/* for another incarnation of this engine */
	len = rec_add(b, len, &ack, sizeof(ack));
	len = rec_add(b, len, pkt, mkdata(pkt, 1, 1, 0, 4, "two!", 4));

	cr_assert_eq(braid_rd_input(o.rd, b, len, PEER_IP, false, 10), 0);
	cr_assert_eq(braid_rd_poll(o.rd, c, 4), 2);
	cr_assert_eq(memcmp(dst[0], "one!", 4), 0);
	cr_assert_eq(memcmp(dst[1], "two!", 4), 0);
	cr_assert_eq(st->drops[BRAID_DROP_BAD_LEN], 1);
	cr_assert_eq(st->drops[BRAID_DROP_STALE_EPOCH], 1);
	cr_assert_eq(st->drops[BRAID_DROP_BUNDLE], 0);
	cr_assert_eq(st->rx_bundles, 1);
	one_close(&o);
}

/*
 * A delayed ACK rides with the data going back (§4.8): the first packet of a
 * two-packet message arms the ACK delay; a send to that peer then goes out
 * as one datagram, the ACK first, and the ACK leaves its reply route for
 * the data's path. Without bundles the data goes alone and the ACK waits.
 */
static void ack_rides_with_data(bool bundle)
{
	struct braid_rd_config c;
	struct braid_peer_table *t;
	struct braid_rd *rd;
	uint8_t pkt[1024], part[900] = { 0 }, dg[2048], ans[8] = "answer!";
	struct iovec iov = { ans, 8 }, div[BRAID_RD_BUNDLE_MAX * (BRAID_RD_IOV_MAX + 2)];
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1,
				   .peer = braid_peer_key(PEER_IP, PEER_PORT), .context = (void *)9 };
	struct braid_rd_out out[8];
	struct braid_rd_ack_view a;
	struct braid_rd_data_view d;
	size_t len, at = 0;
	int n, cnt;

	braid_rd_config_default(&c);
	c.mtu = 1000;
	c.paths = 4;
	c.epoch = 1;
	c.local_ip = 0x7f000001u;
	c.local_port = 4000;
	c.bundle = bundle;
	c.grant_bytes = 0;	/* no grants (§4.10): the ACK of the half message is held */
	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	cr_assert_eq(braid_rd_input_from(rd, pkt, mkdata(pkt, 0, 0, 0, 1800, part, 900), PEER_IP, 7,
					 false, 1000), 0);
	cr_assert(rd_answer_challenge(rd, PEER_IP, 1000), "a new peer is challenged (§4.9)");
	cr_assert_eq(braid_rd_output(rd, 1000, out, 8), 0, "the ACK of half a message is delayed");
	cr_assert_neq(braid_rd_next_deadline(rd), UINT64_MAX);
	cr_assert_eq(braid_rd_send(rd, &s, 1100), 0);
	n = braid_rd_output(rd, 1100, out, 8);
	if (!bundle) {
		cr_assert_eq(n, 1, "the data alone");
		cr_assert_eq(out[0].frame_len, 0);
		cr_assert_eq(braid_rd_data_decode(out[0].hdr, out[0].hdr_len + out[0].payload_len, &d), 0);
		cr_assert_eq(braid_rd_get_stats(rd)->tx_bundles, 0);
		braid_rd_timer(rd, braid_rd_next_deadline(rd));
		n = braid_rd_output(rd, braid_rd_next_deadline(rd), out, 8);
		cr_assert_geq(n, 1);
		cr_assert_eq(out[0].frame_len, 0, "the ACK alone, at its deadline");
		cr_assert_eq(braid_rd_ack_decode(out[0].hdr, out[0].hdr_len, &a), 0);
		cr_assert_eq(out[0].reply_route, 7, "by the reverse of the data's route");
		goto out;
	}
	cr_assert_eq(n, 2, "the ACK and the data");
	cr_assert_eq(braid_rd_ack_decode(out[0].hdr, out[0].hdr_len, &a), 0, "the ACK goes first");
	cr_assert_eq(a.cum_psn, 1);
	cr_assert_eq(out[0].frame_len, BRAID_RD_BUNDLE_HDR + BRAID_RD_BUNDLE_REC);
	cr_assert_eq(out[1].frame_len, BRAID_RD_BUNDLE_REC);
	cr_assert_lt(out[0].reply_route, 0, "the ACK left its reply route");
	cr_assert_lt(out[1].reply_route, 0);
	cr_assert_eq(out[0].path, out[1].path, "the ACK goes by the data's path");
	cr_assert_eq(out[0].entropy, out[1].entropy);
	cr_assert_eq(out[0].dst_ip, PEER_IP);
	cr_assert_eq(out[0].dst_port, PEER_PORT);
	/* one datagram: bundle header, [len][ACK], [len][DATA + payload] */
	cr_assert_eq(braid_rd_out_dgram(out, n, div, (int)(sizeof(div) / sizeof(div[0])), &cnt, &len,
					 NULL), 2);
	for (int j = 0; j < cnt; j++) {
		memcpy(dg + at, div[j].iov_base, div[j].iov_len);
		at += div[j].iov_len;
	}
	cr_assert_eq(at, len);
	cr_assert_eq(len, 8 + 2 + sizeof(struct braid_rd_ack_hdr) + 2 + sizeof(struct braid_rd_data_hdr) + 8);
	cr_assert_eq(braid_rd_bundle_check(dg, len), 2);
	cr_assert_eq(dg[4] << 8 | dg[5], 4000, "the bundle's port is the sender's");
	cr_assert_eq(braid_rd_data_decode(dg + 8 + 2 + 72 + 2, len - (8 + 2 + 72 + 2), &d), 0);
	cr_assert_eq(d.payload_len, 8);
	cr_assert_eq(memcmp(d.payload, "answer!", 8), 0);
	cr_assert_eq(braid_rd_get_stats(rd)->tx_bundles, 1);
	/* the ACK went: no ACK left to send at the old deadline */
	braid_rd_timer(rd, 1100 + c.ack_delay_ns);
	cr_assert_eq(braid_rd_output(rd, 1100 + c.ack_delay_ns, out, 8), 0);
out:
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

Test(rd_bundle_out, delayed_ack_rides_with_data)
{
	ack_rides_with_data(true);
}

Test(rd_bundle_out, no_bundle_ack_waits_alone)
{
	ack_rides_with_data(false);
}

/*
 * Packets lost on two paths: at the retransmission timeout each goes again
 * on another path than the one it was lost on, even where that means it
 * cannot share the datagram of the one before it (§4.8); the records of a
 * bundle share its path.
 */
Test(rd_bundle_out, retransmission_never_joins_its_lost_path)
{
	struct braid_rd_config c;
	struct braid_peer_table *t;
	struct braid_rd *rd;
	struct braid_rd_out out[16];
	struct braid_rd_data_view d;
	uint8_t msg[8] = "lost!!!";
	uint16_t path_of[64];
	bool on[2] = { false, false };
	uint64_t now = 1000;
	int sent = 0, retx = 0, n, i;

	braid_rd_config_default(&c);
	c.paths = 2;
	c.epoch = 1;
	c.local_ip = 0x7f000001u;
	c.local_port = 4000;
	c.unsched_pkts = 0;	/* never acknowledged, yet more than one packet (§4.10) */
	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	/* one message per output call until both paths carry some; none is delivered */
	while (!(on[0] && on[1]) && sent < 16) {
		struct iovec iov = { msg, 8 };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1,
					   .peer = braid_peer_key(PEER_IP, PEER_PORT),
					   .context = (void *)(uintptr_t)(sent + 1) };

		cr_assert_eq(braid_rd_send(rd, &s, now), 0);
		n = braid_rd_output(rd, now, out, 16);
		cr_assert_eq(n, 1);
		cr_assert_eq(braid_rd_data_decode(out[0].hdr, out[0].hdr_len + 8, &d), 0);
		cr_assert_lt(out[0].path, 2);
		path_of[d.psn] = out[0].path;
		on[out[0].path] = true;
		sent++;
		now += 1000;
	}
	cr_assert(on[0] && on[1], "the messages went by both paths");
	/* timeouts: every retransmission avoids its last path */
	while (retx < 2 * sent && now < 100 * MS) {
		now = braid_rd_next_deadline(rd);
		cr_assert_neq(now, UINT64_MAX);
		braid_rd_timer(rd, now);
		n = braid_rd_output(rd, now, out, 16);
		for (i = 0; i < n; i++) {
			cr_assert_eq(braid_rd_data_decode(out[i].hdr, out[i].hdr_len + out[i].payload_len, &d), 0);
			cr_assert_lt(d.psn, (uint32_t)sent);
			cr_assert(d.flags & BRAID_RD_F_RETX);
			cr_assert_neq(out[i].path, path_of[d.psn], "psn %u again on path %u, where it was lost",
				      d.psn, out[i].path);
			if (out[i].frame_len == BRAID_RD_BUNDLE_REC)
				cr_assert_eq(out[i].path, out[i - 1].path, "a bundle goes by one path");
			path_of[d.psn] = out[i].path;
			retx++;
		}
	}
	cr_assert_geq(retx, 2 * sent, "every message was resent twice (%d)", retx);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

/* ---- two engines back to back (rd_direct.h) ---- */

#define NSMALL 200

static uint8_t small_byte(int i, size_t k)
{
	return (uint8_t)(i * 29 + k * 3 + 1);
}

/*
 * NSMALL messages of 8 and 100 bytes queued before one pump: every one
 * arrives once, in order, with its bytes and data. Returns the datagrams
 * the pump moved (both directions); the stats of both ends in @st.
 */
static size_t small_burst(bool bundle, struct braid_rd_stats st[2])
{
	static uint8_t src[NSMALL][100], dst[NSMALL][128];
	static struct braid_rd_comp comps[2 * NSMALL];
	struct braid_rd_config c;
	struct direct d;
	size_t moved;
	int i, n;

	braid_rd_config_default(&c);
	c.bundle = bundle;
	cr_assert_eq(direct_open(&d, &c), 0);
	memset(dst, 0xee, sizeof(dst));
	for (i = 0; i < NSMALL; i++) {
		struct iovec riov = { dst[i], sizeof(dst[i]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1,
					   .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(d.rd[1], &r, d.now), 0);
	}
	for (i = 0; i < NSMALL; i++) {
		struct iovec iov = { src[i], i % 2 ? 100 : 8 };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d.key[1],
					   .flags = BRAID_RD_CQ_DATA, .data = (uint64_t)i,
					   .context = (void *)(uintptr_t)(i + 1) };

		for (size_t k = 0; k < iov.iov_len; k++)
			src[i][k] = small_byte(i, k);
		cr_assert_eq(braid_rd_send(d.rd[0], &s, d.now), 0);
	}
	moved = direct_pump(&d);

	n = braid_rd_poll(d.rd[1], comps, 2 * NSMALL);
	cr_assert_eq(n, NSMALL, "bundle %d: %d receives completed", bundle, n);
	for (i = 0; i < NSMALL; i++) {
		size_t want = i % 2 ? 100 : 8;

		cr_assert_eq(comps[i].err, 0);
		cr_assert_eq(comps[i].context, (void *)(uintptr_t)(i + 1), "message %d in order", i);
		cr_assert_eq(comps[i].data, (uint64_t)i);
		cr_assert_eq(comps[i].len, want);
		cr_assert_eq(memcmp(dst[i], src[i], want), 0, "message %d bytes", i);
		cr_assert_eq(dst[i][want], 0xee, "nothing past message %d", i);
	}
	n = braid_rd_poll(d.rd[0], comps, 2 * NSMALL);
	cr_assert_eq(n, NSMALL, "bundle %d: every send completed", bundle);
	for (i = 0; i < NSMALL; i++)
		cr_assert_eq(comps[i].err, 0);
	st[0] = *braid_rd_get_stats(d.rd[0]);
	st[1] = *braid_rd_get_stats(d.rd[1]);
	direct_close(&d);
	return moved;
}

Test(rd_bundle_direct, small_messages_share_datagrams)
{
	struct braid_rd_stats st[2];
	size_t dgrams = small_burst(true, st);

	/* 200 messages and their ACKs in a few dozen datagrams at most */
	cr_assert_lt(dgrams, NSMALL / 4, "%zu datagrams for %d messages", dgrams, NSMALL);
	cr_assert_gt(st[0].tx_bundles, 0);
	cr_assert_eq(st[1].rx_bundles, st[0].tx_bundles, "every bundle sent was taken whole");
	cr_assert_eq(st[0].tx_data, NSMALL, "one packet per message, none resent");
	cr_assert_eq(st[1].rx_data, NSMALL);
	cr_assert_eq(st[1].drops[BRAID_DROP_BUNDLE], 0);
}

Test(rd_bundle_direct, no_bundle_when_disabled)
{
	struct braid_rd_stats st[2];
	size_t dgrams = small_burst(false, st);

	cr_assert_geq(dgrams, NSMALL, "one datagram per packet: %zu", dgrams);
	cr_assert_eq(st[0].tx_bundles + st[1].tx_bundles, 0);
	cr_assert_eq(st[0].rx_bundles + st[1].rx_bundles, 0);
	/* and each side's challenge of the other and its answer (§4.9) */
	cr_assert_eq(dgrams, st[0].tx_data + st[0].tx_acks + st[1].tx_data + st[1].tx_acks +
		     st[0].chal_tx + st[0].chal_rx + st[1].chal_tx + st[1].chal_rx,
		     "every packet its own datagram");
}

/* ---- over the sim (rd_harness.h): what goes on the wire ---- */

struct wire {
	/** @lone_acks, @lone_data: datagrams of one RD_ACK or one data packet, per sender. */
	uint64_t lone_acks[2], lone_data[2];
	/** @bundles: RD_BUNDLE datagrams; @ack_rides: those carrying an ACK and data together. */
	uint64_t bundles[2], ack_rides[2];
	/** @multi_data: bundles of several data packets. */
	uint64_t multi_data[2];
};

static void wire_tap(struct harness *h, int src, int dst, const uint8_t *buf, size_t len, void *arg)
{
	struct wire *w = arg;
	const uint8_t *rec;
	size_t off = BRAID_RD_BUNDLE_HDR, rl;
	int acks = 0, data = 0;

	(void)dst;
	cr_assert(src >= 0 && src < 2 && len >= 8);
	cr_assert_leq(len, h->nodes[src].cfg.mtu, "a datagram of %zu bytes: over the MTU", len);
	switch (buf[2]) {
	case BRAID_PKT_RD_ACK:
		w->lone_acks[src]++;
		return;
	case BRAID_PKT_RD_DATA:
	case BRAID_PKT_RD_RMA:
		w->lone_data[src]++;
		return;
	case BRAID_PKT_RD_BUNDLE:
		break;
	default:
		return;
	}
	/* what the engine sends is always well framed, and of at least two records */
	cr_assert_geq(braid_rd_bundle_check(buf, len), 2, "a bundle sent has several records");
	w->bundles[src]++;
	while (braid_rd_bundle_next(buf, len, &off, &rec, &rl)) {
		acks += rec[2] == BRAID_PKT_RD_ACK;
		data += rec[2] == BRAID_PKT_RD_DATA || rec[2] == BRAID_PKT_RD_RMA;
	}
	cr_assert_leq(acks, 1, "one ACK per bundle at most");
	if (acks && data)
		w->ack_rides[src]++;
	if (data >= 2)
		w->multi_data[src]++;
}

static size_t ncomp(const struct harness *h, int node, uint32_t flag)
{
	size_t i, n = 0;

	for (i = 0; i < h->nodes[node].ncomps; i++)
		n += !!(h->nodes[node].comps[i].flags & flag);
	return n;
}

struct until {
	int node;
	uint32_t flag;
	size_t n;
};

static bool reached(struct harness *h, void *arg)
{
	const struct until *u = arg;

	return ncomp(h, u->node, u->flag) >= u->n;
}

/* Run until node @node has @n completions of kind @flag; false when 1 ms of virtual time passes first. */
static bool run_until(struct harness *h, int node, uint32_t flag, size_t n)
{
	struct until u = { node, flag, n };

	return h_run(h, h->now + MS, reached, &u);
}

static void send8(struct harness *h, int from, int seq)
{
	static uint8_t msg[2][8];
	struct iovec iov = { msg[from], 8 };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(!from),
				   .flags = BRAID_RD_CQ_DATA | BRAID_RD_INJECT, .data = (uint64_t)seq,
				   .context = (void *)(uintptr_t)(seq + 1) };

	memset(msg[from], seq, 8);
	cr_assert_eq(braid_rd_send(h->nodes[from].rd, &s, h->now), 0);
}

#define PP_DELAY	(5 * US)	/* one way, every path, no jitter */
#define PP_RTT		(2 * PP_DELAY)
#define PP_WARM		5
#define PP_ROUNDS	100

/*
 * A ping-pong of 8-byte messages: A (node 0) sends, B answers @answer_ns
 * after its receive completes, A answers B's answer the same way. Returns
 * the datagrams that were an ACK alone during the PP_ROUNDS round trips
 * after PP_WARM warm-up rounds, and checks that each round trip took one
 * RTT (and B's turnaround) and completed A's send.
 */
static uint64_t pingpong_after(struct harness *h, struct wire *w, int *seq, uint64_t answer_ns)
{
	uint64_t lone = 0;
	int r;

	for (r = 0; r < PP_WARM + PP_ROUNDS; r++) {
		uint64_t t0 = h->now, before = w->lone_acks[0] + w->lone_acks[1];
		int s = (*seq)++;

		send8(h, 0, s);
		cr_assert(run_until(h, 1, BRAID_RD_COMP_RECV, (size_t)s + 1), "round %d: B got it", r);
		if (answer_ns)
			h_run(h, h->now + answer_ns, NULL, NULL);	/* the application's turnaround */
		send8(h, 1, s);
		cr_assert(run_until(h, 0, BRAID_RD_COMP_RECV, (size_t)s + 1), "round %d: A got the answer", r);
		cr_assert_leq(h->now - t0, PP_RTT + answer_ns + US,
			      "round %d took %lu ns: nothing waited for an ACK delay", r,
			      (unsigned long)(h->now - t0));
		cr_assert_eq(ncomp(h, 0, BRAID_RD_COMP_SEND), (size_t)s + 1,
			     "round %d: A's send completed by the time the answer came", r);
		cr_assert_geq(ncomp(h, 1, BRAID_RD_COMP_SEND), (size_t)s, "round %d: B's sends complete", r);
		if (r >= PP_WARM)
			lone += w->lone_acks[0] + w->lone_acks[1] - before;
		if (answer_ns)
			h_run(h, h->now + answer_ns, NULL, NULL);	/* A's turnaround */
	}
	return lone;
}

/* B and A answer in the same virtual nanosecond their receive completes. */
static uint64_t pingpong(struct harness *h, struct wire *w, int *seq)
{
	return pingpong_after(h, w, seq, 0);
}

#define PP_MSGS		(PP_WARM + PP_ROUNDS + 8)

static uint8_t pp_rbuf[2][PP_MSGS][16];

/* Every message node @n received is there once, in order, 8 bytes of its number. */
static void pp_check_received(const struct harness *h, int n)
{
	size_t k, got = 0;

	for (k = 0; k < h->nodes[n].ncomps; k++) {
		const struct braid_rd_comp *cp = &h->nodes[n].comps[k];

		if (!(cp->flags & BRAID_RD_COMP_RECV))
			continue;
		cr_assert_eq(cp->err, 0);
		cr_assert_eq(cp->context, (void *)(uintptr_t)(got + 1), "node %d: receive %zu in order", n, got);
		cr_assert_eq(cp->data, got);
		cr_assert_eq(cp->len, 8);
		for (int j = 0; j < 8; j++)
			cr_assert_eq(pp_rbuf[n][got][j], (uint8_t)got, "node %d message %zu bytes", n, got);
		got++;
	}
}

static void pp_open(struct harness *h, struct wire *w, bool bundle)
{
	struct braid_sim_path_cfg p = { .delay_ns = PP_DELAY };
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.epoch = 1;
	c.bundle = bundle;
	cr_assert_eq(h_init(h, 2, 4, &p, &c, 3), 0);
	memset(w, 0, sizeof(*w));
	h->tap = wire_tap;
	h->tap_arg = w;
	for (int n = 0; n < 2; n++) {
		for (int i = 0; i < PP_MSGS; i++) {
			struct iovec iov = { pp_rbuf[n][i], sizeof(pp_rbuf[n][i]) };
			struct braid_rd_recv r = { .iov = &iov, .iov_count = 1,
						   .context = (void *)(uintptr_t)(i + 1) };

			cr_assert_eq(braid_rd_post_recv(h->nodes[n].rd, &r, 0), 0);
		}
	}
}

/*
 * In a ping-pong the ACK of each message rides on the answer: after the
 * warm-up, (almost) no ACK crosses the wire alone. When B stops answering,
 * its held ACK still goes alone at the ACK delay, so A's send completes in
 * about an RTT plus that delay; and the ping-pong is over: the next message
 * is acknowledged at once.
 */
Test(rd_bundle_pingpong, acks_ride_on_answers)
{
	struct harness h;
	struct wire w;
	uint64_t lone, t0, dt, b_lone;
	int seq = 0, i;

	pp_open(&h, &w, true);
	lone = pingpong(&h, &w, &seq);
	cr_assert_lt(lone * 10, PP_ROUNDS, "%lu ACKs alone in %d round trips", (unsigned long)lone,
		     PP_ROUNDS);
	cr_assert_geq(w.ack_rides[0] + w.ack_rides[1], 2 * PP_ROUNDS,
		      "every message after the warm-up carried the ACK of the one before (%lu)",
		      (unsigned long)(w.ack_rides[0] + w.ack_rides[1]));

	/* B does not answer: its held ACK must go alone by the ACK delay */
	t0 = h.now;
	b_lone = w.lone_acks[1];
	send8(&h, 0, seq++);
	cr_assert(run_until(&h, 0, BRAID_RD_COMP_SEND, (size_t)seq), "the unanswered send completes");
	dt = h.now - t0;
	cr_assert_leq(dt, PP_RTT + h.nodes[1].cfg.ack_delay_ns + US, "unanswered send took %lu ns",
		      (unsigned long)dt);
	cr_assert_gt(dt, PP_RTT + US, "the ACK was held (B was in a ping-pong): %lu ns", (unsigned long)dt);
	cr_assert_eq(w.lone_acks[1], b_lone + 1, "the held ACK went alone");
	cr_assert_eq(ncomp(&h, 1, BRAID_RD_COMP_RECV), (size_t)seq);

	/* the ping-pong ended: the next messages are acknowledged at once, an RTT each */
	for (i = 0; i < 3; i++) {
		t0 = h.now;
		send8(&h, 0, seq++);
		cr_assert(run_until(&h, 0, BRAID_RD_COMP_SEND, (size_t)seq));
		dt = h.now - t0;
		cr_assert_leq(dt, PP_RTT + US, "send %d after the ping-pong took %lu ns: its ACK waited", i,
			      (unsigned long)dt);
	}
	h_run(&h, h.now + MS, NULL, NULL);
	cr_assert_eq(ncomp(&h, 0, BRAID_RD_COMP_SEND), (size_t)seq, "every send of A completed");
	cr_assert_eq(ncomp(&h, 1, BRAID_RD_COMP_SEND), (size_t)(PP_WARM + PP_ROUNDS),
		     "every send of B completed");
	for (i = 0; i < 2; i++) {
		for (size_t k = 0; k < h.nodes[i].ncomps; k++)
			cr_assert_eq(h.nodes[i].comps[k].err, 0);
		pp_check_received(&h, i);
	}
	cr_assert_eq(ncomp(&h, 1, BRAID_RD_COMP_RECV), (size_t)seq);
	h_fini(&h);
}

/*
 * An application that takes a while to answer (6 us here: more than a
 * quarter of this 10 us RTT, less than the 10 us ACK delay; a loopback
 * ping-pong's turnaround on a slow host): the held ACK waits for the answer
 * the whole ACK delay and rides on it, rather than going alone at a quarter
 * of the RTT (2 datagrams each way instead of 1: 15% of a loopback 8-byte
 * round trip, docs/benchmarks.md, *RDM: braid against tcp;ofi_rxm and braid;ofi_rxd*).
 */
Test(rd_bundle_pingpong, acks_wait_for_a_slower_answer_within_the_ack_delay)
{
	struct harness h;
	struct wire w;
	uint64_t lone;
	int seq = 0;

	pp_open(&h, &w, true);
	cr_assert_gt(6 * US, PP_RTT / 4);
	cr_assert_lt(6 * US, h.nodes[0].cfg.ack_delay_ns);
	lone = pingpong_after(&h, &w, &seq, 6 * US);
	cr_assert_lt(lone * 10, PP_ROUNDS, "%lu ACKs alone in %d round trips", (unsigned long)lone,
		     PP_ROUNDS);
	h_run(&h, h.now + MS, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < h.nodes[i].ncomps; k++)
			cr_assert_eq(h.nodes[i].comps[k].err, 0);
		pp_check_received(&h, i);
	}
	h_fini(&h);
}

/* The control: without bundles every message's ACK crosses alone (what the test above would see
 * if ACKs stopped riding on answers). */
Test(rd_bundle_pingpong, acks_alone_without_bundles)
{
	struct harness h;
	struct wire w;
	uint64_t lone;
	int seq = 0;

	pp_open(&h, &w, false);
	lone = pingpong(&h, &w, &seq);
	cr_assert_geq(lone, PP_ROUNDS, "%lu ACKs alone in %d round trips", (unsigned long)lone, PP_ROUNDS);
	cr_assert_eq(w.bundles[0] + w.bundles[1], 0);
	h_fini(&h);
}

/* ---- property: both ways at once, under faults ---- */

#define BN	300
#define BMAX	3000

static size_t bidir_size(uint64_t seed, int node, int i)
{
	uint64_t x = (seed + 7) * 0x9e3779b97f4a7c15ULL + (uint64_t)(i * 2 + node) * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	/* mostly small enough to share a datagram; now and then one or several whole packets */
	switch (x % 16) {
	case 0: return x % BMAX;
	case 1: return 1000 + x % 400;
	case 2: case 3: case 4: return x % 9;
	default: return x % 300;
	}
}

static uint8_t bidir_byte(uint64_t seed, int node, int i, size_t k)
{
	return (uint8_t)(seed * 71 + (uint64_t)node * 101 + (uint64_t)i * 37 + k * 5 + (k >> 8));
}

static uint8_t bsrc[2][BN][BMAX];

/* Both ends' traffic: each sends its next message whenever it has received enough of the
 * other's that it is at most @ahead messages ahead: sending while receiving. */
struct bidir {
	uint64_t seed;
	int ahead;
	int sent[2];
};

static void bidir_send(struct harness *h, struct bidir *bd, int node)
{
	int i = bd->sent[node]++;
	size_t len = bidir_size(bd->seed, node, i);
	struct iovec iov = { bsrc[node][i], len };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(!node),
				   .flags = BRAID_RD_CQ_DATA, .data = (uint64_t)i,
				   .context = (void *)(uintptr_t)(i + 1) };

	for (size_t k = 0; k < len; k++)
		bsrc[node][i][k] = bidir_byte(bd->seed, node, i, k);
	cr_assert_eq(braid_rd_send(h->nodes[node].rd, &s, h->now), 0);
}

static bool bidir_step(struct harness *h, void *arg)
{
	struct bidir *bd = arg;

	for (int node = 0; node < 2; node++) {
		size_t got = ncomp(h, node, BRAID_RD_COMP_RECV);

		while (bd->sent[node] < BN && (size_t)bd->sent[node] < got + (size_t)bd->ahead)
			bidir_send(h, bd, node);
	}
	return ncomp(h, 0, BRAID_RD_COMP_RECV) >= BN && ncomp(h, 1, BRAID_RD_COMP_RECV) >= BN &&
	       ncomp(h, 0, BRAID_RD_COMP_SEND) >= BN && ncomp(h, 1, BRAID_RD_COMP_SEND) >= BN;
}

static void run_bidir(uint64_t seed, int ahead, double loss, double dup, double reorder, struct wire *w)
{
	static uint8_t dst[2][BN][BMAX];
	struct bidir bd = { .seed = seed, .ahead = ahead };
	struct braid_sim_path_cfg p = {
		.delay_ns = 4000, .jitter_ns = 3000, .loss = loss, .dup = dup,
		.dup_gap_ns = 1500, .reorder = reorder, .reorder_ns = 20000,
	};
	struct braid_rd_config c;
	struct harness h;
	int node, i;

	braid_rd_config_default(&c);
	c.paths = 8;
	c.epoch = 1;
	c.seed = seed;
	c.peer_timeout_ns = 10000 * MS;	/* no peer is dead here */
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, seed), 0);
	h.tap = wire_tap;
	h.tap_arg = w;
	for (node = 0; node < 2; node++) {
		for (i = 0; i < BN; i++) {
			struct iovec riov = { dst[node][i], BMAX };
			struct braid_rd_recv r = { .iov = &riov, .iov_count = 1,
						   .context = (void *)(uintptr_t)(i + 1) };

			memset(dst[node][i], 0xee, BMAX);
			cr_assert_eq(braid_rd_post_recv(h.nodes[node].rd, &r, 0), 0);
		}
	}
	cr_assert(h_run(&h, h.now + 60000 * MS, bidir_step, &bd),
		  "seed %lu loss %.2f dup %.2f reorder %.2f: not all completed (comps %zu %zu)",
		  (unsigned long)seed, loss, dup, reorder, h.nodes[0].ncomps, h.nodes[1].ncomps);
	/* late copies land: still nothing twice */
	h_run(&h, h.now + 10 * MS, NULL, NULL);

	for (node = 0; node < 2; node++) {
		const struct h_node *nd = &h.nodes[node];
		int from = !node, seen_r[BN] = { 0 }, seen_s[BN] = { 0 };
		size_t k;

		cr_assert_eq(nd->ncomps, 2 * BN, "node %d: no extra completions", node);
		for (k = 0; k < nd->ncomps; k++) {
			const struct braid_rd_comp *cp = &nd->comps[k];
			int j = (int)(uintptr_t)cp->context - 1;

			cr_assert_eq(cp->err, 0, "seed %lu node %d: error %d", (unsigned long)seed, node, cp->err);
			cr_assert(j >= 0 && j < BN);
			if (cp->flags & BRAID_RD_COMP_SEND) {
				cr_assert_eq(seen_s[j]++, 0, "node %d: send %d completed twice", node, j);
				continue;
			}
			size_t want = bidir_size(seed, from, j);

			/* SAS: the j-th receive posted holds the j-th message sent */
			cr_assert_eq(seen_r[j]++, 0, "node %d: receive %d completed twice", node, j);
			cr_assert_eq(cp->data, (uint64_t)j, "node %d: receive %d holds message %lu",
				     node, j, (unsigned long)cp->data);
			cr_assert_eq(cp->len, want, "node %d message %d length", node, j);
			cr_assert_eq(memcmp(dst[node][j], bsrc[from][j], want), 0,
				     "seed %lu node %d message %d bytes", (unsigned long)seed, node, j);
			if (want < BMAX)
				cr_assert_eq(dst[node][j][want], 0xee, "nothing past message %d", j);
		}
		for (i = 0; i < BN; i++)
			cr_assert(seen_r[i] == 1 && seen_s[i] == 1, "node %d: message %d", node, i);
		/* the test exercised bundles in both directions */
		cr_assert_gt(braid_rd_get_stats(nd->rd)->tx_bundles, 0, "seed %lu node %d sent no bundle",
			     (unsigned long)seed, node);
		cr_assert_gt(braid_rd_get_stats(nd->rd)->rx_bundles, 0, "seed %lu node %d took no bundle",
			     (unsigned long)seed, node);
		cr_assert_eq(braid_rd_get_stats(nd->rd)->drops[BRAID_DROP_BUNDLE], 0);
		cr_assert_eq(braid_rd_get_stats(nd->rd)->tx_bundles, w->bundles[node],
			     "tx_bundles counts the bundles that went on the wire");
		if (!loss && !dup)
			cr_assert_eq(braid_rd_get_stats(nd->rd)->rx_bundles, w->bundles[from],
				     "a clean fabric: every bundle sent was taken");
	}
	h_fini(&h);
}

/*
 * Both ends send small messages to each other at once under loss,
 * duplication and reordering, several seeds: each message arrives exactly
 * once, in send order, bytes intact, and every send completes. Close
 * (@ahead 1: each end sends as it receives, so ACKs ride on the answers)
 * and loose (@ahead 64: bursts, so data shares datagrams) coupling.
 */
Test(rd_bundle_property, bidirectional_exactly_once_under_faults, .timeout = 240)
{
	static const struct { double loss, dup, reorder; } sc[] = {
		{ 0, 0, 0 },
		{ 0.05, 0, 0 },
		{ 0.05, 0.05, 0.05 },
		{ 0.05, 0.05, 0.20 },
	};
	static const int aheads[] = { 1, 4, 64 };
	uint64_t seed;
	size_t s, a;

	for (a = 0; a < sizeof(aheads) / sizeof(aheads[0]); a++) {
		for (seed = 1; seed <= 8; seed++) {
			for (s = 0; s < sizeof(sc) / sizeof(sc[0]); s++) {
				struct wire w = { 0 };

				run_bidir(seed, aheads[a], sc[s].loss, sc[s].dup, sc[s].reorder, &w);
				for (int n = 0; n < 2; n++) {
					/* small messages shared datagrams both ways */
					cr_assert_gt(w.multi_data[n], 0, "ahead %d seed %lu sc %zu node %d: "
						     "no data shared a datagram", aheads[a],
						     (unsigned long)seed, s, n);
					/* sending while receiving: ACKs rode on the data going back */
					if (aheads[a] == 1)
						cr_assert_gt(w.ack_rides[n], 0, "seed %lu sc %zu node %d: "
							     "no ACK rode on data", (unsigned long)seed, s, n);
				}
			}
		}
	}
}
