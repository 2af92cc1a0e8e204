/* SPDX-License-Identifier: BSD-2-Clause */
/* test_iov.c: unit tests of core/braid_iov.c (iovec length, validity, slices, copies in and out). */
#include <criterion/criterion.h>
#include <string.h>

#include "braid_iov.h"

/* three buffers of 3, 0 and 5 bytes: bytes 0..7 of the whole */
static uint8_t b0[3], b2[5];
static struct iovec three[3] = {
	{ .iov_base = b0, .iov_len = sizeof(b0) },
	{ .iov_base = NULL, .iov_len = 0 },
	{ .iov_base = b2, .iov_len = sizeof(b2) },
};

Test(braid_iov_len, sums_every_entry)
{
	cr_assert_eq(braid_iov_len(three, 3), 8);
	cr_assert_eq(braid_iov_len(three, 0), 0);
	cr_assert_eq(braid_iov_len(NULL, 0), 0);
}

Test(braid_iov_valid, null_base_only_when_empty)
{
	struct iovec bad = { .iov_base = NULL, .iov_len = 1 };

	cr_assert(braid_iov_valid(three, 3), "a NULL base with no bytes is fine");
	cr_assert(!braid_iov_valid(&bad, 1));
	cr_assert(braid_iov_valid(NULL, 0));
}

Test(braid_iov_slice, across_entries_skipping_empty_ones)
{
	struct iovec out[3];
	int n;

	n = braid_iov_slice(three, 3, 1, 4, out, 3);
	cr_assert_eq(n, 2);
	cr_assert(out[0].iov_base == b0 + 1 && out[0].iov_len == 2);
	cr_assert(out[1].iov_base == b2 && out[1].iov_len == 2);
	n = braid_iov_slice(three, 3, 3, 5, out, 3);
	cr_assert_eq(n, 1, "starting at an entry boundary, past the empty one");
	cr_assert(out[0].iov_base == b2 && out[0].iov_len == 5);
	cr_assert_eq(braid_iov_slice(three, 3, 6, 10, out, 3), 1, "stops at the end");
	cr_assert_eq(out[0].iov_len, 2);
	cr_assert_eq(braid_iov_slice(three, 3, 8, 1, out, 3), 0, "past the end: nothing");
	cr_assert_eq(braid_iov_slice(three, 3, 0, 0, out, 3), 0, "no bytes: nothing");
}

Test(braid_iov_scatter, copies_at_offset_and_truncates_at_the_end)
{
	const uint8_t src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	memset(b0, 0, sizeof(b0));
	memset(b2, 0, sizeof(b2));
	cr_assert_eq(braid_iov_scatter(three, 3, 2, src, 3), 3);
	cr_assert(b0[2] == 1 && b2[0] == 2 && b2[1] == 3 && b2[2] == 0);
	cr_assert_eq(braid_iov_scatter(three, 3, 6, src, 8), 2, "only what fits");
	cr_assert(b2[3] == 1 && b2[4] == 2);
}

Test(braid_iov_gather, copies_every_byte_in_order)
{
	uint8_t dst[8];
	size_t i;

	for (i = 0; i < sizeof(b0); i++)
		b0[i] = (uint8_t)i;
	for (i = 0; i < sizeof(b2); i++)
		b2[i] = (uint8_t)(sizeof(b0) + i);
	cr_assert_eq(braid_iov_gather(three, 3, dst), 8);
	for (i = 0; i < sizeof(dst); i++)
		cr_assert_eq(dst[i], i);
}
