/* SPDX-License-Identifier: BSD-2-Clause */
/* test_extent.c: unit tests of core/braid_extent.c (first-fit ranges of an arena). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <rdma/fi_errno.h>

#include "braid/braid_extent.h"

Test(braid_extents_construct, rejects_bad_arguments)
{
	struct braid_extents x;

	cr_assert_eq(braid_extents_construct(&x, 0, 64, 4), -FI_EINVAL);
	cr_assert_eq(braid_extents_construct(&x, 4096, 64, 0), -FI_EINVAL);
	cr_assert_eq(braid_extents_construct(&x, 4096, 48, 4), -FI_EINVAL, "alignment a power of 2");
	cr_assert_eq(braid_extents_construct(&x, 4096, 0, 4), -FI_EINVAL);
}

Test(braid_extents_alloc, first_fit_rounded_to_the_alignment)
{
	struct braid_extents x;

	cr_assert_eq(braid_extents_construct(&x, 1024, 64, 8), 0);
	cr_assert_eq(braid_extents_alloc(&x, 1), 0);
	cr_assert_eq(braid_extents_alloc(&x, 100), 64, "the first took 64 bytes");
	cr_assert_eq(braid_extents_alloc(&x, 64), 192, "the second took 128");
	cr_assert_eq(x.used, 256);
	cr_assert_eq(braid_extents_alloc(&x, 0), -1, "nothing for no bytes");
	cr_assert_eq(braid_extents_alloc(&x, 2048), -1, "larger than the arena");
	cr_assert_eq(braid_extents_alloc(&x, 768), 256, "exactly what is left");
	cr_assert_eq(braid_extents_alloc(&x, 1), -1, "full");
	braid_extents_destruct(&x);
}

/* A freed range is reused; neighbours merge, so a big range fits again once all is back. */
Test(braid_extents_free, merges_neighbours_and_reuses_holes)
{
	struct braid_extents x;
	int64_t a, b, c;

	cr_assert_eq(braid_extents_construct(&x, 3 * 256, 256, 3), 0);
	a = braid_extents_alloc(&x, 256);
	b = braid_extents_alloc(&x, 256);
	c = braid_extents_alloc(&x, 256);
	cr_assert(a == 0 && b == 256 && c == 512);
	braid_extents_free(&x, (uint64_t)b, 256);
	cr_assert_eq(x.nfree, 1);
	cr_assert_eq(braid_extents_alloc(&x, 512), -1, "one hole of 256 only");
	cr_assert_eq(braid_extents_alloc(&x, 200), 256, "the hole in the middle is reused");
	braid_extents_free(&x, 256, 200);
	braid_extents_free(&x, (uint64_t)a, 256);
	cr_assert_eq(x.nfree, 1, "left and middle merged");
	braid_extents_free(&x, (uint64_t)c, 256);
	cr_assert_eq(x.nfree, 1, "all of it one range again");
	cr_assert_eq(x.used, 0);
	cr_assert_eq(braid_extents_alloc(&x, 768), 0);
	braid_extents_destruct(&x);
}

Test(braid_extents_alloc, at_most_max_ranges_out)
{
	struct braid_extents x;

	cr_assert_eq(braid_extents_construct(&x, 1 << 20, 64, 2), 0);
	cr_assert_geq(braid_extents_alloc(&x, 64), 0);
	cr_assert_geq(braid_extents_alloc(&x, 64), 0);
	cr_assert_eq(braid_extents_alloc(&x, 64), -1, "a third range is refused");
	braid_extents_free(&x, 0, 64);
	cr_assert_eq(braid_extents_alloc(&x, 64), 0);
	braid_extents_destruct(&x);
}

/* Random allocations and frees against a byte map: no range overlaps another or passes the end. */
Test(braid_extents, random_traffic_never_overlaps)
{
	enum { SIZE = 1 << 14, ALIGN = 16, MAXR = 64 };
	static uint8_t owner[SIZE];
	struct { int64_t off; uint64_t len; } out[MAXR];
	struct braid_extents x;
	int nout = 0, step, i;

	srand(7);
	cr_assert_eq(braid_extents_construct(&x, SIZE, ALIGN, MAXR), 0);
	for (step = 0; step < 20000; step++) {
		if (nout < MAXR && (rand() & 1)) {
			uint64_t len = 1 + (uint64_t)(rand() % 900);
			int64_t off = braid_extents_alloc(&x, len);
			uint64_t r = (len + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);

			if (off < 0)
				continue;
			cr_assert_eq(off % ALIGN, 0);
			cr_assert_leq((uint64_t)off + r, SIZE);
			for (uint64_t k = 0; k < r; k++) {
				cr_assert_eq(owner[off + k], 0, "range %ld+%lu overlaps", (long)off,
					     (unsigned long)r);
				owner[off + k] = 1;
			}
			out[nout].off = off;
			out[nout++].len = len;
		} else if (nout) {
			int j = rand() % nout;
			uint64_t r = (out[j].len + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);

			for (uint64_t k = 0; k < r; k++)
				owner[out[j].off + k] = 0;
			braid_extents_free(&x, (uint64_t)out[j].off, out[j].len);
			out[j] = out[--nout];
		}
		cr_assert_leq(x.nfree, (size_t)MAXR + 1);
	}
	for (i = 0; i < nout; i++)
		braid_extents_free(&x, (uint64_t)out[i].off, out[i].len);
	cr_assert_eq(x.nfree, 1, "everything back merges into one range");
	cr_assert_eq(x.free[0].len, SIZE);
	braid_extents_destruct(&x);
}
