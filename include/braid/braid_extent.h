/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_extent.h: first-fit allocation of byte ranges of an arena of fixed size, for buffers of differing sizes held for a while (a MSG endpoint's unexpected messages). */
#ifndef BRAID_EXTENT_H
#define BRAID_EXTENT_H

#include <stddef.h>
#include <stdint.h>

/** struct braid_extent - a free range [@off, @off + @len). */
struct braid_extent {
	uint64_t off, len;
};

/**
 * struct braid_extents - the ranges of [0, @size) not handed out, by offset,
 * none touching another (freeing merges neighbours). The allocator owns no
 * memory of the arena: it hands out offsets. With at most @max_ranges
 * ranges out at once there are at most @max_ranges + 1 free ones, so the
 * table is sized once. Not thread safe: the owner serialises access.
 */
struct braid_extents {
	/** @size: the arena's bytes; @align: every range starts and ends on a multiple of it. */
	uint64_t size, align;
	/** @free, @nfree: the free ranges, lowest offset first. */
	struct braid_extent *free;
	size_t nfree;
	/** @max_ranges, @nranges: ranges that may be out at once, and are. */
	size_t max_ranges, nranges;
	/** @used: bytes handed out (lengths rounded up to @align). */
	uint64_t used;
};

/**
 * braid_extents_construct() - an arena of @size bytes, all free, handing out
 * ranges aligned to @align (a power of two) of which at most @max_ranges are
 * out at once.
 * Return: 0, -FI_EINVAL (a zero size or count, @align not a power of two),
 * -FI_ENOMEM. The caller must eventually call braid_extents_destruct().
 */
int braid_extents_construct(struct braid_extents *x, uint64_t size, uint64_t align,
			    size_t max_ranges);

/** braid_extents_destruct() - free the table. */
void braid_extents_destruct(struct braid_extents *x);

/**
 * braid_extents_alloc() - the lowest free range of at least @len bytes (1 or
 * more, rounded up to the alignment): its offset, or -1 when no free range
 * is that long or @max_ranges are out already.
 */
int64_t braid_extents_alloc(struct braid_extents *x, uint64_t len);

/**
 * braid_extents_free() - give back the range at @off that braid_extents_alloc()
 * handed out for @len bytes (the same @len).
 */
void braid_extents_free(struct braid_extents *x, uint64_t off, uint64_t len);

#endif /* BRAID_EXTENT_H */
