/* SPDX-License-Identifier: BSD-2-Clause */
/* test_seq.c: unit tests of core/braid_seq.h (wrap-safe sequence arithmetic). */
#include <criterion/criterion.h>

#include "braid_seq.h"

Test(braid_seq_lt, across_the_wrap)
{
	cr_assert(braid_seq_lt(0xfffffff0u, 0x10u), "just before the wrap precedes just after");
	cr_assert(braid_seq_gt(0x10u, 0xfffffff0u));
	cr_assert(braid_seq_le(5, 5) && braid_seq_ge(5, 5) && !braid_seq_lt(5, 5));
	cr_assert_eq(braid_seq_diff(3, 0xfffffffeu), 5);
	cr_assert_eq(braid_seq_diff(0xfffffffeu, 3), -5);
	cr_assert_eq(braid_seq_max(0xffffffffu, 1), 1);
}

Test(braid_seq_in, window_membership)
{
	cr_assert(braid_seq_in(0xffffffffu, 0xfffffff0u, 256));
	cr_assert(braid_seq_in(0x20u, 0xfffffff0u, 256), "a window spanning the wrap");
	cr_assert(!braid_seq_in(0xffffffefu, 0xfffffff0u, 256), "just before the window");
	cr_assert(!braid_seq_in(0xf0u, 0xfffffff0u, 256), "just past the window");
}

Test(braid_seq_lt, exhaustive_small_distances)
{
	for (uint32_t base = 0xffffff00u; base != 0x100u; base++)
		for (int32_t d = -300; d <= 300; d++) {
			uint32_t b = base + (uint32_t)d;

			cr_assert_eq(braid_seq_lt(base, b), d > 0);
			cr_assert_eq(braid_seq_diff(b, base), d);
		}
}
