/* test_rd_place.c: receive placement's questions to the engine (core/braid_rd_in.c): where a payload goes (braid_rd_place), where the next one will (braid_rd_place_next, the receive guess) and whether a datagram is a copy of one received (braid_rd_is_dup). */
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

static bool same_place(const struct iovec *a, int na, const struct iovec *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i].iov_base != b[i].iov_base || a[i].iov_len != b[i].iov_len)
			return false;
	return true;
}

Test(rd_place, the_guess_is_the_next_packet_of_the_message)
{
	struct iovec guess[BRAID_RD_IOV_MAX], place[BRAID_RD_IOV_MAX];
	struct braid_rd_comp comp[2];
	struct direct d;
	size_t next = 0;
	int nd = open_msg(&d), k, ng, np;

	/* the first packet opens the message: no place yet, taken whole */
	cr_assert_eq(braid_rd_place(d.rd[1], dgrams[0], HL, lens[0], IP0, place, BRAID_RD_IOV_MAX,
				    d.now), 0);
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[0], lens[0], IP0, false, d.now), 0);
	for (k = 0; k + 1 < nd; k++) {
		ng = braid_rd_place_next(d.rd[1], dgrams[k], HL, lens[k], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now);
		np = braid_rd_place(d.rd[1], dgrams[k + 1], HL, lens[k + 1], IP0, place,
				    BRAID_RD_IOV_MAX, d.now);
		cr_assert_gt(ng, 0, "a guess after packet %d", k);
		cr_assert(same_place(guess, ng, place, np), "the guess after packet %d is where "
			  "packet %d goes", k, k + 1);
		cr_assert_eq(next, lens[k + 1], "and as long (%zu, %zu)", next, lens[k + 1]);
		cr_assert_eq(braid_rd_input(d.rd[1], dgrams[k + 1], lens[k + 1], IP0, false, d.now), 0);
	}
	/* the message's last packet: nothing of it comes next */
	cr_assert_eq(braid_rd_place_next(d.rd[1], dgrams[nd - 1], HL, lens[nd - 1], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
	cr_assert_eq(braid_rd_poll(d.rd[1], comp, 2), 1);
	cr_assert_eq(comp[0].err, 0);
	cr_assert_eq(memcmp(dst, src, MSG), 0);
	direct_close(&d);
}

Test(rd_place, no_guess_where_a_packet_came_already_nor_from_another_source)
{
	struct iovec guess[BRAID_RD_IOV_MAX];
	struct direct d;
	size_t next = 0;

	open_msg(&d);
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[0], lens[0], IP0, false, d.now), 0);
	cr_assert_eq(braid_rd_input(d.rd[1], dgrams[2], lens[2], IP0, false, d.now), 0);
	/* packet 2 is here: after packet 1, nothing is guessed (its place is filled) */
	cr_assert_eq(braid_rd_place_next(d.rd[1], dgrams[1], HL, lens[1], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
	/* after packet 2, packet 3's place */
	cr_assert_gt(braid_rd_place_next(d.rd[1], dgrams[2], HL, lens[2], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
	/* the same header from an address no peer has: no place */
	cr_assert_eq(braid_rd_place_next(d.rd[1], dgrams[2], HL, lens[2], IP0 + 7, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
	/* a header cut short, or not a data packet: no guess */
	cr_assert_eq(braid_rd_place_next(d.rd[1], dgrams[2], HL - 1, lens[2], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
	dgrams[3][2] = BRAID_PKT_RD_ACK;
	cr_assert_eq(braid_rd_place_next(d.rd[1], dgrams[3], HL, lens[3], IP0, guess,
					 BRAID_RD_IOV_MAX, &next, d.now), 0);
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
