/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_alloc.c: the RD engine's steady state allocates no memory (malloc counted by interposition). */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include "rd_direct.h"

#include "malloc_count.h"

static void exchange(struct direct *d, int rounds, size_t size)
{
	static uint8_t sbuf[70000], rbuf[8][70000];
	struct braid_rd_comp comps[64];
	int r, k;

	for (r = 0; r < rounds; r++) {
		for (k = 0; k < 8; k++) {
			struct iovec riov = { rbuf[k], sizeof(rbuf[k]) };
			struct braid_rd_recv rv = { .iov = &riov, .iov_count = 1 };
			struct iovec siov = { sbuf, size };
			struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = d->key[1] };

			braid_rd_post_recv(d->rd[1], &rv, d->now);
			braid_rd_send(d->rd[0], &s, d->now);
		}
		direct_pump(d);
		while (braid_rd_poll(d->rd[0], comps, 64) > 0)
			;
		while (braid_rd_poll(d->rd[1], comps, 64) > 0)
			;
	}
}

Test(braid_rd_steady_state, allocates_nothing)
{
	struct braid_rd_config c;
	struct direct d;
	long n;

	braid_rd_config_default(&c);
	c.mtu = 9000;
	cr_assert_eq(direct_open(&d, &c), 0);
	/* warm up: first contact creates the peer records (the only allocation) */
	exchange(&d, 4, 64);
	atomic_store(&allocs, 0);
	atomic_store(&counting, 1);
	exchange(&d, 200, 64);		/* small messages */
	exchange(&d, 50, 40000);	/* multi-packet messages */
	atomic_store(&counting, 0);
	n = atomic_load(&allocs);
	cr_assert_eq(n, 0, "steady-state traffic called malloc %ld times", n);
	/* and the traffic really flowed */
	cr_assert_geq(braid_rd_get_stats(d.rd[1])->msgs_received, 8 * 254);
	direct_close(&d);
}

Test(braid_rd_steady_state, counter_sees_allocations)
{
	/* the interposition works: a malloc while counting is counted */
	void *(*volatile alloc)(size_t) = malloc;	/* not elided by the compiler */
	void *p;

	atomic_store(&allocs, 0);
	atomic_store(&counting, 1);
	p = alloc(32);
	atomic_store(&counting, 0);
	free(p);
	cr_assert_eq(atomic_load(&allocs), 1);
}
