/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_lent.c: lent payloads (protocol.md §4.2 "Lent payloads"): which packets a sender marks LENT, and a receiver that never takes a lent payload that waited too long. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "braid_hdr.h"

#define DROP(r) (-((int)(r) + 1))
#define IP0 0x7f020001u		/* rd_direct.h's engines: 127.2.0.1 and .2, port 9000 */
#define MSG (64 * 1024)
#define MS 1000000ULL

static uint8_t src[3][MSG], dst[3][MSG];

static struct braid_rd_config lcfg(uint64_t peer_timeout_ns)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.mtu = 9000;
	c.paths = 4;
	c.gso_segs = 0;
	c.bundle = false;
	c.lend_min = 4096;
	c.peer_timeout_ns = peer_timeout_ns;
	return c;
}

static void post(struct direct *d, int i)
{
	struct iovec iov = { dst[i], MSG };
	struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .peer = d->key[0],
				   .context = dst[i] };

	cr_assert_eq(braid_rd_post_recv(d->rd[1], &r, d->now), 0);
}

static void send_msg(struct direct *d, int i)
{
	struct iovec iov = { src[i], MSG };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d->key[1],
				   .context = src[i] };

	memset(src[i], 0x30 + i, MSG);
	cr_assert_eq(braid_rd_send(d->rd[0], &s, d->now), 0);
}

/* Is @out an RD_DATA packet, and is it marked LENT / RETX? */
static bool is_data(const struct braid_rd_out *out)
{
	return out->frame_len == 0 && out->hdr[2] == BRAID_PKT_RD_DATA;
}

static bool hdr_lent(const struct braid_rd_out *out)
{
	return out->hdr[3] & BRAID_RD_F_LENT;
}

/* A message each way done: the peers proven, and an ACK of new data just heard by engine 0. */
static void warm(struct direct *d)
{
	struct braid_rd_comp c[4];

	post(d, 0);
	send_msg(d, 0);
	direct_pump(d);
	cr_assert_eq(braid_rd_poll(d->rd[1], c, 4), 1, "the first message arrived");
	cr_assert_eq(c[0].err, 0);
	cr_assert_eq(braid_rd_poll(d->rd[0], c, 4), 1, "and its send completed");
}

/* Counts of engine 0's next output: data packets, those lent, their headers' LENT and RETX bits. */
struct tally {
	int data, lend, hdr_lent, retx, lend_retx, short_lent;
};

static struct tally out_tally(struct direct *d, struct braid_rd_out *out, int *n)
{
	struct tally t = { 0 };

	*n = braid_rd_output(d->rd[0], d->now, out, 64);
	for (int k = 0; k < *n; k++) {
		if (!is_data(&out[k]))
			continue;
		t.data++;
		t.lend += out[k].lend;
		t.hdr_lent += hdr_lent(&out[k]);
		t.retx += !!(out[k].hdr[3] & BRAID_RD_F_RETX);
		t.lend_retx += out[k].lend && (out[k].hdr[3] & BRAID_RD_F_RETX);
		t.short_lent += out[k].lend && out[k].payload_len < 4096;
		cr_assert_eq(out[k].lend, hdr_lent(&out[k]), "the flag and the header agree");
	}
	return t;
}

Test(rd_lent, first_sends_to_an_acknowledging_peer_are_lent_resends_never)
{
	struct braid_rd_config c = lcfg(1000 * MS);
	struct braid_rd_out out[64];
	struct braid_rd_comp comp[4];
	struct tally t;
	struct direct d;
	int n;

	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * MS;	/* a clock that is never 0 (braid_now_ns) */
	/* nothing heard yet: the first message is copied */
	post(&d, 0);
	send_msg(&d, 0);
	t = out_tally(&d, out, &n);
	cr_assert_gt(t.data, 0);
	cr_assert_eq(t.lend, 0, "no ACK heard from the peer: nothing lent");
	for (int k = 0; k < n;) {
		size_t len = rd_dgram_copy(out + k, n - k, d.buf, &k);

		braid_rd_input(d.rd[1], d.buf, len, IP0, false, d.now);
	}
	direct_pump(&d);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 4), 1);
	cr_assert_eq(braid_rd_poll(d.rd[0], comp, 4), 1);

	/* just acknowledged: the full packets of the next are lent, the short last one not */
	post(&d, 1);
	send_msg(&d, 1);
	t = out_tally(&d, out, &n);
	cr_assert_eq(t.data, 8, "64 KiB in 9000-byte packets");
	cr_assert_eq(t.lend, 7, "every full packet lent (%d, now %llu)", t.lend, (unsigned long long)d.now);
	cr_assert_eq(t.short_lent, 0, "not the 2,928-byte tail (below lend_min)");
	cr_assert_eq(t.retx, 0);
	/* all of it lost: what goes again after the RTO is copied */
	d.now += 300 * MS;
	braid_rd_timer(d.rd[0], d.now);
	t = out_tally(&d, out, &n);
	cr_assert_gt(t.retx, 0, "resends after the RTO");
	cr_assert_eq(t.lend_retx, 0, "a resend is never lent");
	direct_pump(&d);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 4), 1);
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(memcmp(dst[1], src[1], MSG), 0);
	while (braid_rd_poll(d.rd[0], comp, 4) > 0)
		;

	/* a peer not heard acknowledging for longer than the wait bound: copied */
	d.now += BRAID_RD_LENT_WAIT_NS + MS;
	post(&d, 2);
	send_msg(&d, 2);
	t = out_tally(&d, out, &n);
	cr_assert_gt(t.data, 0);
	cr_assert_eq(t.lend, 0, "the last ACK is older than the bound");
	direct_close(&d);
}

/* With @c, a message to a peer that just acknowledged is not lent at all. */
static void assert_never_lent(struct braid_rd_config c, const char *why)
{
	struct braid_rd_out out[64];
	struct tally t;
	struct direct d;
	int n;

	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * MS;
	warm(&d);
	post(&d, 1);
	send_msg(&d, 1);
	t = out_tally(&d, out, &n);
	cr_assert_gt(t.data, 0);
	cr_assert_eq(t.lend + t.hdr_lent, 0, "%s", why);
	direct_close(&d);
}

Test(rd_lent, never_lent_with_a_peer_timeout_below_the_minimum)
{
	assert_never_lent(lcfg(BRAID_RD_LENT_PEER_MIN - MS),
			  "an operation could fail while its payload may still be read");
}

Test(rd_lent, never_lent_where_the_wire_cannot)
{
	struct braid_rd_config c = lcfg(1000 * MS);

	c.lend_min = 0;
	assert_never_lent(c, "the wire lends nothing");
}

/*
 * A LENT packet that waited in the receiving host longer than the bound is
 * neither placed into the receive buffer nor taken: dropped (stale_lent),
 * not acknowledged. The same packet that waited less is placed and taken.
 */
Test(rd_lent, a_lent_payload_that_waited_too_long_is_not_placed_nor_taken)
{
	struct braid_rd_config c = lcfg(1000 * MS);
	static uint8_t dgrams[8][9000];
	size_t lens[8], hl = sizeof(struct braid_rd_data_hdr);
	const struct braid_rd_stats *st;
	struct braid_rd_out out[64];
	struct braid_rd_comp comp[4];
	struct iovec iov[BRAID_RD_IOV_MAX];
	struct direct d;
	int n, nd = 0, k;

	cr_assert_eq(direct_open(&d, &c), 0);
	d.now = 1000 * MS;	/* a clock that is never 0 (braid_now_ns) */
	warm(&d);
	st = braid_rd_get_stats(d.rd[1]);
	post(&d, 1);
	send_msg(&d, 1);
	n = braid_rd_output(d.rd[0], d.now, out, 64);
	for (k = 0; k < n && nd < 8; nd++)
		lens[nd] = rd_dgram_copy(out + k, n - k, dgrams[nd], &k);
	cr_assert_eq(nd, 8);
	cr_assert(dgrams[1][3] & BRAID_RD_F_LENT, "the second packet is lent");

	/* the first packet opens the message (never placed): taken as it comes */
	braid_rd_arrived(d.rd[1], d.now);
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[0], lens[0], IP0, false, d.now), 0);

	/* the second, 101 ms in this host: no place, and dropped */
	d.now += MS;
	braid_rd_arrived(d.rd[1], d.now - BRAID_RD_LENT_WAIT_NS - MS);
	cr_assert_eq(braid_rd_place(d.rd[1], dgrams[1], hl, lens[1], IP0, iov, BRAID_RD_IOV_MAX,
				    d.now), 0, "a stale lent payload is never placed");
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[1], lens[1], IP0, false, d.now),
		     DROP(BRAID_DROP_STALE_LENT));
	cr_assert_eq(st->drops[BRAID_DROP_STALE_LENT], 1, "counted");
	/* the same that waited less than the bound: placed and taken */
	braid_rd_arrived(d.rd[1], d.now - BRAID_RD_LENT_WAIT_NS + MS);
	cr_assert_gt(braid_rd_place(d.rd[1], dgrams[1], hl, lens[1], IP0, iov, BRAID_RD_IOV_MAX,
				    d.now), 0, "a fresh one is placed");
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[1], lens[1], IP0, false, d.now), 0);
	for (k = 2; k < nd; k++) {
		braid_rd_arrived(d.rd[1], d.now);
		cr_assert_eq(braid_rd_input(d.rd[1], dgrams[k], lens[k], IP0, false, d.now), 0);
	}
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 4), 1);
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(memcmp(dst[1], src[1], MSG), 0, "the message whole");
	cr_assert_eq(st->drops[BRAID_DROP_STALE_LENT], 1);
	direct_close(&d);
}
