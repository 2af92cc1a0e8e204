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
	cr_assert_leq(braid_cc_swift.cwnd(&whole), 1, "taken whole, the same samples cut it (%u)",
		      braid_cc_swift.cwnd(&whole));
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
