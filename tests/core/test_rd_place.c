/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_place.c: receive placement's questions to the engine (core/braid_rd_in.c): where a payload goes (braid_rd_place) and whether a datagram is a copy of one received (braid_rd_is_dup). */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_direct.h"
#include "braid_hdr.h"

#define DROP(r) (-((int)(r) + 1))
#define IP0 0x7f020001u		/* rd_direct.h's engines: 127.2.0.1 and .2, port 9000 */
#define MSG (64 * 1024 + 1000)	/* full datagrams of a 9000-byte MTU and a short one */
#define MS 1000000ULL
#define HL sizeof(struct braid_rd_data_hdr)

static uint8_t src[MSG], dst[MSG];
static uint8_t dgrams[16][9000];
static size_t lens[16];

/* Engines 0 -> 1, a receive posted at 1 and a message of MSG bytes sent: its datagrams. */
static int open_msg(struct direct *d)
{
	struct braid_rd_config c;
	struct braid_rd_out out[64];
	struct iovec riov = { dst, MSG }, siov = { src, MSG };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .peer = 0, .context = dst };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .context = src };
	int n, k = 0, nd = 0;

	braid_rd_config_default(&c);
	c.mtu = 9000;
	c.paths = 4;
	c.gso_segs = 0;
	c.bundle = false;
	c.init_cwnd = 32;
	cr_assert_eq(direct_open(d, &c), 0);
	d->now = 1000 * MS;
	r.peer = d->key[0];
	s.peer = d->key[1];
	{
		/* a first message: the peers proven (until then a message matches
		 * its receive only once whole, and nothing is placed) */
		static uint8_t a[8], b[8];
		struct iovec ai = { a, 8 }, bi = { b, 8 };
		struct braid_rd_recv r0 = { .iov = &bi, .iov_count = 1, .peer = d->key[0] };
		struct braid_rd_send s0 = { .iov = &ai, .iov_count = 1, .peer = d->key[1] };
		struct braid_rd_comp c0[2];

		cr_assert_eq(braid_rd_post_recv(d->rd[1], &r0, d->now), 0);
		cr_assert_eq(braid_rd_send(d->rd[0], &s0, d->now), 0);
		direct_pump(d);
		cr_assert_eq(braid_rd_poll(d->rd[1], c0, 2), 1);
		cr_assert_eq(braid_rd_poll(d->rd[0], c0, 2), 1);
	}
	for (size_t i = 0; i < MSG; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	memset(dst, 0, sizeof(dst));
	cr_assert_eq(braid_rd_post_recv(d->rd[1], &r, d->now), 0);
	cr_assert_eq(braid_rd_send(d->rd[0], &s, d->now), 0);
	n = braid_rd_output(d->rd[0], d->now, out, 64);
	while (k < n && nd < 16) {
		lens[nd] = rd_dgram_copy(out + k, n - k, dgrams[nd], &k);
		nd++;
	}
	cr_assert_geq(nd, 4, "full datagrams and a short one (%d)", nd);
	cr_assert_lt(lens[nd - 1], lens[nd - 2], "the last is short");
	return nd;
}

Test(rd_place, each_packet_after_the_first_has_its_place_in_the_receive)
{
	struct iovec place[BRAID_RD_IOV_MAX];
	struct braid_rd_comp comp[2];
	struct direct d;
	int nd = open_msg(&d), k, np;

	/* the first packet opens the message: no place yet, taken whole */
	cr_assert_eq(braid_rd_place(d.rd[1], dgrams[0], HL, lens[0], IP0, place, BRAID_RD_IOV_MAX,
				    d.now), 0);
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[0], lens[0], IP0, false, d.now), 0);
	for (k = 1; k < nd; k++) {
		struct braid_rd_data_view v;

		cr_assert_eq(braid_rd_data_decode(dgrams[k], lens[k], &v), 0);
		np = braid_rd_place(d.rd[1], dgrams[k], HL, lens[k], IP0, place, BRAID_RD_IOV_MAX,
				    d.now);
		cr_assert_eq(np, 1, "packet %d has a place", k);
		cr_assert_eq(place[0].iov_base, dst + v.offset);
		cr_assert_eq(place[0].iov_len, lens[k] - HL);
		/* not from an address no peer has, nor with its header cut short */
		cr_assert_eq(braid_rd_place(d.rd[1], dgrams[k], HL, lens[k], IP0 + 7, place,
					    BRAID_RD_IOV_MAX, d.now), 0);
		cr_assert_eq(braid_rd_place(d.rd[1], dgrams[k], HL - 1, lens[k], IP0, place,
					    BRAID_RD_IOV_MAX, d.now), 0);
		cr_assert_eq(braid_rd_input(d.rd[1], dgrams[k], lens[k], IP0, false, d.now), 0);
		/* and once received, none (a copy is not placed) */
		cr_assert_eq(braid_rd_place(d.rd[1], dgrams[k], HL, lens[k], IP0, place,
					    BRAID_RD_IOV_MAX, d.now), 0);
	}
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 2), 1);
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(memcmp(dst, src, MSG), 0);
	direct_close(&d);
}

/*
 * A copy of a packet received already is known from its header alone: the
 * receiver takes the header, leaves the payload to the host, and the engine
 * takes it as the duplicate it is (counted, and the message still whole).
 */
Test(rd_place, a_copy_is_known_by_its_header_and_taken_without_its_payload)
{
	const struct braid_rd_stats *st;
	struct braid_rd_comp comp[2];
	struct direct d;
	int nd = open_msg(&d), k;

	st = braid_rd_get_stats(d.rd[1]);
	cr_assert_not(braid_rd_is_dup(d.rd[1], dgrams[1], HL, lens[1], IP0),
		      "nothing received yet: no copy");
	for (k = 0; k < 4; k++)
		cr_assert_eq(braid_rd_input(d.rd[1], dgrams[k], lens[k], IP0, false, d.now), 0);
	for (k = 0; k < 4; k++)
		cr_assert(braid_rd_is_dup(d.rd[1], dgrams[k], HL, lens[k], IP0), "packet %d", k);
	cr_assert_not(braid_rd_is_dup(d.rd[1], dgrams[4], HL, lens[4], IP0), "not received yet");
	cr_assert_not(braid_rd_is_dup(d.rd[1], dgrams[1], HL, lens[1], IP0 + 7),
		      "from an address no peer has");
	/* the copy as the receiver takes it: the header alone, its whole length said */
	memset(dgrams[2] + HL, 0xee, lens[2] - HL);
	cr_assert_eq(braid_rd_input_placed(d.rd[1], dgrams[2], lens[2], IP0, -1, false, d.now),
		     DROP(BRAID_DROP_DUPLICATE));
	cr_assert_eq(st->drops[BRAID_DROP_DUPLICATE], 1, "counted");
	for (k = 4; k < nd; k++)
		cr_assert_eq(braid_rd_input(d.rd[1], dgrams[k], lens[k], IP0, false, d.now), 0);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 2), 1);
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(memcmp(dst, src, MSG), 0, "the message whole, the copy's bytes nowhere");
	direct_close(&d);
}
