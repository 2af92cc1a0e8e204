/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_extent.c: first-fit allocation of byte ranges of a fixed arena (braid_extent.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid/braid_extent.h"

static uint64_t round_up(const struct braid_extents *x, uint64_t len)
{
	return (len + x->align - 1) & ~(x->align - 1);
}

int braid_extents_construct(struct braid_extents *x, uint64_t size, uint64_t align,
			    size_t max_ranges)
{
	memset(x, 0, sizeof(*x));
	if (!size || !max_ranges || !align || (align & (align - 1)))
		return -FI_EINVAL;
	x->free = calloc(max_ranges + 1, sizeof(*x->free));
	if (!x->free)
		return -FI_ENOMEM;
	x->size = size & ~(align - 1);
	x->align = align;
	x->max_ranges = max_ranges;
	if (x->size) {
		x->free[0] = (struct braid_extent){ 0, x->size };
		x->nfree = 1;
	}
	return 0;
}

void braid_extents_destruct(struct braid_extents *x)
{
	free(x->free);
	x->free = NULL;
	x->nfree = 0;
}

int64_t braid_extents_alloc(struct braid_extents *x, uint64_t len)
{
	size_t i;

	if (!len || len > x->size || x->nranges == x->max_ranges)
		return -1;
	len = round_up(x, len);
	for (i = 0; i < x->nfree; i++) {
		struct braid_extent *f = &x->free[i];
		uint64_t off = f->off;

		if (f->len < len)
			continue;
		f->off += len;
		f->len -= len;
		if (!f->len) {
			memmove(f, f + 1, (x->nfree - i - 1) * sizeof(*f));
			x->nfree--;
		}
		x->nranges++;
		x->used += len;
		return (int64_t)off;
	}
	return -1;
}

void braid_extents_free(struct braid_extents *x, uint64_t off, uint64_t len)
{
	size_t i;
	bool left, right;

	len = round_up(x, len);
	/* the first free range after it */
	for (i = 0; i < x->nfree && x->free[i].off < off; i++)
		;
	left = i > 0 && x->free[i - 1].off + x->free[i - 1].len == off;
	right = i < x->nfree && off + len == x->free[i].off;
	if (left && right) {
		x->free[i - 1].len += len + x->free[i].len;
		memmove(&x->free[i], &x->free[i + 1], (x->nfree - i - 1) * sizeof(x->free[0]));
		x->nfree--;
	} else if (left) {
		x->free[i - 1].len += len;
	} else if (right) {
		x->free[i].off = off;
		x->free[i].len += len;
	} else {
		/* at most max_ranges + 1 free ranges: room is there */
		memmove(&x->free[i + 1], &x->free[i], (x->nfree - i) * sizeof(x->free[0]));
		x->free[i] = (struct braid_extent){ off, len };
		x->nfree++;
	}
	x->nranges--;
	x->used -= len;
}
