/* SPDX-License-Identifier: BSD-2-Clause */
/* test_path.c: unit tests of core/braid_path.c (spraying and path health). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "braid_path.h"

static struct braid_pathset *mk(uint32_t n)
{
	struct braid_pathset *ps = calloc(1, sizeof(*ps) + n * sizeof(struct braid_path));

	braid_pathset_init(ps, n, 0, 42);
	return ps;
}

Test(braid_pathset_pick, round_robin_spreads_evenly)
{
	struct braid_pathset *ps = mk(16);
	int count[16] = { 0 };

	for (int i = 0; i < 16000; i++)
		count[braid_pathset_pick(ps, true, -1)]++;
	for (int i = 0; i < 16; i++)
		cr_assert_eq(count[i], 1000, "healthy paths share the load exactly");
	for (uint32_t i = 0; i < 16; i++)
		cr_assert_eq(ps->p[i].entropy, i, "distinct initial entropies");
	free(ps);
}

Test(braid_pathset_pick, avoids_the_given_path)
{
	struct braid_pathset *ps = mk(4);

	for (int i = 0; i < 1000; i++)
		cr_assert_neq(braid_pathset_pick(ps, true, 2), 2);
	for (int i = 0; i < 1000; i++)
		cr_assert_neq(braid_pathset_pick(ps, false, 1), 1);
	free(ps);
}

Test(braid_path_lost, sick_path_gets_little_traffic_and_is_redrawn)
{
	struct braid_pathset *ps = mk(8);
	int count[8] = { 0 };
	bool redrawn = false;

	for (int i = 0; i < 8; i++)
		braid_path_rtt(&ps->p[i], 20000, 0);
	/* path 5 loses three in a row: sick */
	for (int i = 0; i < 3; i++)
		redrawn |= braid_path_lost(ps, 5, false);
	cr_assert(!redrawn, "no redraw when not asked");
	for (int i = 0; i < 8000; i++)
		count[braid_pathset_pick(ps, true, -1)]++;
	cr_assert_lt(count[5], 200, "a sick path gets only probes (%d)", count[5]);
	cr_assert_gt(count[5], 0, "but it is still probed");
	/* a fourth loss with redraw on moves it to a new route */
	cr_assert(braid_path_lost(ps, 5, true));
	cr_assert_eq(ps->p[5].consec_losses, 0, "statistics restart");
	cr_assert_eq(ps->redraws, 1);
	free(ps);
}

Test(braid_path_lost, uniform_loss_makes_no_path_sick)
{
	struct braid_pathset *ps = mk(8);
	int count[8] = { 0 };
	unsigned seed = 3;

	for (int i = 0; i < 8; i++)
		braid_path_rtt(&ps->p[i], 20000, 0);
	/* 5% random loss on every path */
	for (int i = 0; i < 20000; i++) {
		uint32_t p = (uint32_t)(i % 8);

		if (rand_r(&seed) % 100 < 5)
			braid_path_lost(ps, p, true);
		else
			braid_path_acked(&ps->p[p], false);
	}
	for (int i = 0; i < 8000; i++)
		count[braid_pathset_pick(ps, true, -1)]++;
	for (int i = 0; i < 8; i++)
		cr_assert_gt(count[i], 800, "path %d keeps its share under uniform loss (%d)", i, count[i]);
	free(ps);
}

Test(braid_path_rtt, smoothing_and_spread)
{
	struct braid_pathset *ps = mk(2);

	braid_path_rtt(&ps->p[0], 10000, 0);
	cr_assert_eq(ps->p[0].srtt_ns, 10000);
	cr_assert_eq(ps->p[0].rttvar_ns, 5000);
	for (int i = 0; i < 100; i++)
		braid_path_rtt(&ps->p[0], 20000, 0);
	cr_assert_gt(ps->p[0].srtt_ns, 19000);
	cr_assert_leq(ps->p[0].srtt_ns, 20000);
	braid_path_rtt(&ps->p[1], 50000, 0);
	cr_assert_gt(braid_pathset_rtt_spread(ps), 29000);
	free(ps);
}

/* A re-drawn route may lead into the same dead link: one packet until one is acknowledged. */
Test(braid_path_redraw, a_fresh_route_carries_one_packet_until_acknowledged)
{
	struct braid_pathset *ps = mk(4);
	int on1 = 0, i;

	braid_path_redraw(ps, 1);
	cr_assert(ps->p[1].trial);
	for (i = 0; i < 400; i++) {
		uint32_t a = braid_pathset_pick(ps, true, -1);

		ps->p[a].sent++;
		on1 += a == 1;
	}
	/* its first packet, then only the sick paths' probe turns (1 in 16) */
	cr_assert_geq(on1, 1, "the fresh route got its packet");
	cr_assert_leq(on1, 20, "while on trial it got %d of 400 packets", on1);
	braid_path_acked(&ps->p[1], false);
	cr_assert(!ps->p[1].trial, "an acknowledgement ends the trial");
	for (i = 0, on1 = 0; i < 400; i++)
		on1 += braid_pathset_pick(ps, true, -1) == 1;
	cr_assert_geq(on1, 80, "acknowledged, it takes its share again (%d of 400)", on1);
	free(ps);
}
