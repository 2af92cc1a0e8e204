/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cc.c: unit tests of core/braid_cc.c (Swift-like delay-based congestion control). */
#include <criterion/criterion.h>

#include "braid_cc.h"

#define US 1000ULL

Test(braid_cc_swift, slow_start_until_the_first_signal)
{
	struct braid_cc_state s;
	uint32_t w0, w1;

	braid_cc_swift.init(&s, 32, 256, 25 * US);
	w0 = braid_cc_swift.cwnd(&s);
	/* one window of ACKs below the target: it doubles */
	for (uint32_t i = 0; i < w0; i++)
		braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, false, (uint64_t)i * 100);
	cr_assert_eq(braid_cc_swift.cwnd(&s), 2 * w0, "slow start doubles per window");
	/* an ECN echo ends it: afterwards, one packet per RTT */
	braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, true, 10 * US);
	w1 = braid_cc_swift.cwnd(&s);
	for (uint32_t i = 0; i < w1; i++)
		braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, false, 20 * US + (uint64_t)i * 100);
	cr_assert_leq(braid_cc_swift.cwnd(&s), w1 + 1, "additive increase after the first signal");
}

Test(braid_cc_swift, grows_below_target)
{
	struct braid_cc_state s;
	uint32_t w0;

	braid_cc_swift.init(&s, 32, 256, 25 * US);
	w0 = braid_cc_swift.cwnd(&s);
	for (int i = 0; i < 2000; i++)
		braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, false, (uint64_t)i * US);
	cr_assert_gt(braid_cc_swift.cwnd(&s), w0, "additive increase while RTT < base + target");
	cr_assert_leq(braid_cc_swift.cwnd(&s), 256, "never above the flow window");
}

Test(braid_cc_swift, shrinks_above_target_once_per_rtt)
{
	struct braid_cc_state s;
	uint32_t w0, w1;
	uint64_t t = 0;

	braid_cc_swift.init(&s, 32, 256, 25 * US);
	w0 = braid_cc_swift.cwnd(&s);
	/* a standing queue: every sample 90 us above the 10 us base, one RTT (100 us) long */
	for (; t <= 100 * US; t += 10 * US)
		braid_cc_swift.on_ack(&s, 1, 100 * US, 0, 10 * US, false, 1000 * US + t);
	w1 = braid_cc_swift.cwnd(&s);
	cr_assert_lt(w1, w0, "multiplicative decrease over the target");
	cr_assert_geq(w1, w0 / 2, "at most by the max decrease factor");
	braid_cc_swift.on_ack(&s, 1, 100 * US, 0, 10 * US, false, 1000 * US + t);
	cr_assert_eq(braid_cc_swift.cwnd(&s), w1, "not again within one RTT");
	for (; t <= 220 * US; t += 10 * US)
		braid_cc_swift.on_ack(&s, 1, 100 * US, 0, 10 * US, false, 1000 * US + t);
	cr_assert_lt(braid_cc_swift.cwnd(&s), w1, "again after an RTT");
}

Test(braid_cc_swift, jitter_is_not_congestion)
{
	struct braid_cc_state s;
	uint32_t w0;

	braid_cc_swift.init(&s, 32, 256, 25 * US);
	w0 = braid_cc_swift.cwnd(&s);
	/* one sample in four is delayed 5x by the host (a scheduling hiccup), the
	 * rest sit at the base: the smallest delay of each round shows no queue */
	for (int i = 0; i < 4000; i++)
		braid_cc_swift.on_ack(&s, 1, i % 4 ? 12 * US : 60 * US, 0, 10 * US, false,
				      (uint64_t)i * 5 * US);
	cr_assert_gt(braid_cc_swift.cwnd(&s), w0, "the window grows through jitter");
}

Test(braid_cc_swift, target_scales_with_the_base_rtt)
{
	struct braid_cc_state s;
	uint32_t w0;

	/* a 2 ms path with 0.5 ms of queueing: under half its base RTT, not congestion */
	braid_cc_swift.init(&s, 32, 256, 25 * US);
	w0 = braid_cc_swift.cwnd(&s);
	for (int i = 0; i < 2000; i++)
		braid_cc_swift.on_ack(&s, 1, 2500 * US, 0, 2000 * US, false, (uint64_t)i * 100 * US);
	cr_assert_gt(braid_cc_swift.cwnd(&s), w0, "queueing under base / 2 leaves the window growing");
	w0 = braid_cc_swift.cwnd(&s);
	/* 3 ms of queueing on it is */
	for (int i = 0; i < 200; i++)
		braid_cc_swift.on_ack(&s, 1, 5000 * US, 0, 2000 * US, false,
				      (uint64_t)(2000 + i) * 100 * US);
	cr_assert_lt(braid_cc_swift.cwnd(&s), w0, "queueing above it shrinks the window");
}

Test(braid_cc_swift, ecn_and_rto_reduce_loss_alone_does_not)
{
	struct braid_cc_state s;
	uint32_t w0;

	braid_cc_swift.init(&s, 32, 256, 25 * US);
	braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, false, 1 * US);
	w0 = braid_cc_swift.cwnd(&s);
	braid_cc_swift.on_loss(&s, 12 * US, 2 * US);
	cr_assert_eq(braid_cc_swift.cwnd(&s), w0, "random loss at low delay is not congestion");
	braid_cc_swift.on_ack(&s, 1, 12 * US, 0, 10 * US, true, 100 * US);
	cr_assert_lt(braid_cc_swift.cwnd(&s), w0, "an ECN echo is");
	w0 = braid_cc_swift.cwnd(&s);
	braid_cc_swift.on_rto(&s, 500 * US);
	cr_assert_eq(braid_cc_swift.cwnd(&s), w0 / 2 > 4 ? w0 / 2 : 4);
	for (int i = 0; i < 20; i++)
		braid_cc_swift.on_rto(&s, (uint64_t)(600 + i) * US);
	cr_assert_eq(braid_cc_swift.cwnd(&s), 4, "an RTO leaves a few packets going");
	/* a spurious RTO (Eifel): the window before the timeout episode comes back */
	braid_cc_swift.rto_verdict(&s, true);
	cr_assert_eq(braid_cc_swift.cwnd(&s), w0, "a spurious RTO's cut is undone");
	braid_cc_swift.on_rto(&s, 700 * US);
	braid_cc_swift.rto_verdict(&s, false);
	cr_assert_eq(braid_cc_swift.cwnd(&s), w0 / 2 > 4 ? w0 / 2 : 4, "a real one's stays");
}

/* Samples that were all the hosts' absence (protocol.md §4.5: a sender and its receiver
 * sharing a core, 4 ms each) are no queueing: the window keeps growing; the same
 * samples taken whole cut it down. */
Test(braid_cc_swift, hosts_absence_is_not_congestion)
{
	struct braid_cc_state away, whole;
	uint64_t t = 0;

	braid_cc_swift.init(&away, 32, 256, 25 * US);
	braid_cc_swift.init(&whole, 32, 256, 25 * US);
	braid_cc_swift.on_ack(&away, 1, 12 * US, 0, 10 * US, false, 1 * US);
	braid_cc_swift.on_ack(&whole, 1, 12 * US, 0, 10 * US, false, 1 * US);
	for (int i = 0; i < 4000; i++) {
		t += 100 * US;
		braid_cc_swift.on_ack(&away, 1, 8010 * US, 8000 * US, 10 * US, false, t);
		braid_cc_swift.on_ack(&whole, 1, 8010 * US, 0, 10 * US, false, t);
	}
	cr_assert_geq(braid_cc_swift.cwnd(&away), 64, "absence left out: the window grew (%u)",
		      braid_cc_swift.cwnd(&away));
	cr_assert_leq(braid_cc_swift.cwnd(&whole), 2,
		      "taken whole, the same samples cut it to the two packets a flow may keep "
		      "queued (%u)", braid_cc_swift.cwnd(&whole));
}

/*
 * One flow alone on a slow link, closed loop: a 1500-byte packet takes
 * 240 us (50 Mbit/s) and the base RTT is 60 us (a rate limiter with a burst
 * lets a lone packet through at once), far under one packet's time. With W
 * packets in flight the link is busy when W packets outlast a round trip
 * with one packet on the link (W * 240 >= 240 + 60); then the RTT is W * 240
 * us and the queueing delay W * 240 - 60. A 25 us target alone would hold
 * the flow to one packet (the link 80% busy); the target of two of the
 * flow's own packets keeps it busy, with no more than four packets out.
 */
Test(braid_cc_swift, a_slow_link_stays_busy)
{
	const uint64_t pkt = 240 * US, base = 60 * US;
	struct braid_cc_state s;
	uint64_t t = 0, busy = 0, rounds = 0;
	uint32_t w, wmax = 0;

	braid_cc_swift.init(&s, 8, 256, 25 * US);
	for (int r = 0; r < 400; r++) {
		uint64_t rtt;

		w = braid_cc_swift.cwnd(&s);
		rtt = w * pkt > pkt + base ? w * pkt : pkt + base;
		/* a round: w ACKs spread over the RTT */
		for (uint32_t i = 0; i < w; i++) {
			t += rtt / w;
			braid_cc_swift.on_ack(&s, 1, rtt, 0, base, false, t);
		}
		if (r >= 100) {
			rounds++;
			busy += w * pkt >= pkt + base;
			wmax = w > wmax ? w : wmax;
		}
	}
	cr_assert_geq(busy * 100, rounds * 95, "the link busy in %lu of %lu rounds",
		      (unsigned long)busy, (unsigned long)rounds);
	cr_assert_leq(wmax, 4, "the queue stays short: at most %u packets out", wmax);
}

Test(braid_cc_none, always_the_window)
{
	struct braid_cc_state s;

	braid_cc_none.init(&s, 4, 77, 0);
	braid_cc_none.on_rto(&s, 1);
	braid_cc_none.on_ack(&s, 1, 1000000, 0, 1, true, 2);
	cr_assert_eq(braid_cc_none.cwnd(&s), 77);
}

Test(braid_cc_swift, starts_at_the_initial_window_within_the_flow_window)
{
	struct braid_cc_state s;

	braid_cc_swift.init(&s, 8, 256, 25 * US);
	cr_assert_eq(braid_cc_swift.cwnd(&s), 8);
	braid_cc_swift.init(&s, 8, 4, 25 * US);
	cr_assert_eq(braid_cc_swift.cwnd(&s), 4, "never above the flow window");
}
