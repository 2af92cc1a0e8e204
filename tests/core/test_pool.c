/* SPDX-License-Identifier: BSD-2-Clause */
/* test_pool.c: unit tests of core/braid_pool.c. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "braid/braid_pool.h"

Test(braid_pool_construct, rejects_zero)
{
	struct braid_pool pool;

	cr_assert_eq(braid_pool_construct(&pool, 0, 8), -FI_EINVAL);
	cr_assert_eq(braid_pool_construct(&pool, 8, 0), -FI_EINVAL);
}

Test(braid_pool_alloc, exhausts_then_null)
{
	struct braid_pool pool;
	void *objs[4];
	int i;

	cr_assert_eq(braid_pool_construct(&pool, 24, 4), 0);
	for (i = 0; i < 4; i++) {
		objs[i] = braid_pool_alloc(&pool);
		cr_assert_not_null(objs[i]);
		cr_assert_eq((uintptr_t)objs[i] % 16, 0, "objects are 16-byte aligned");
	}
	cr_assert_null(braid_pool_alloc(&pool), "an empty pool returns NULL");
	cr_assert_eq(pool.in_use, 4);
	braid_pool_release(&pool, objs[2]);
	cr_assert_eq(braid_pool_alloc(&pool), objs[2], "a released object is reused");
	braid_pool_destruct(&pool);
}

Test(braid_pool_alloc, objects_are_distinct_and_zeroed)
{
	struct braid_pool pool;
	unsigned char *a, *b;

	cr_assert_eq(braid_pool_construct(&pool, 32, 2), 0);
	a = braid_pool_alloc(&pool);
	memset(a, 0xab, 32);
	braid_pool_release(&pool, a);
	a = braid_pool_alloc(&pool);
	b = braid_pool_alloc(&pool);
	cr_assert_neq(a, b);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(a[i], 0, "alloc zeroes the object");
	cr_assert_eq(braid_pool_at(&pool, braid_pool_index(&pool, b)), b, "index and object map back");
	cr_assert_neq(braid_pool_index(&pool, a), braid_pool_index(&pool, b));
	braid_pool_destruct(&pool);
}

/* alloc_raw: the same object accounting as alloc, without the zeroing */
Test(braid_pool, alloc_raw_counts_and_keeps_contents)
{
	struct braid_pool p;
	uint8_t *a, *b;

	cr_assert_eq(braid_pool_construct(&p, 64, 2), 0);
	a = braid_pool_alloc(&p);
	cr_assert_not_null(a);
	memset(a, 0x5a, 64);
	braid_pool_release(&p, a);
	b = braid_pool_alloc_raw(&p);
	cr_assert_eq(b, a, "the object just released comes back first");
	cr_assert_eq(b[63], 0x5a, "not zeroed");
	cr_assert_eq(p.in_use, 1);
	cr_assert_not_null(braid_pool_alloc_raw(&p));
	cr_assert_null(braid_pool_alloc_raw(&p), "empty");
	cr_assert_eq(p.in_use, 2);
	braid_pool_destruct(&p);
}

/* Chunks none of whose objects is in use go back to the system; the pool takes them again. */
Test(braid_pool_trim, gives_back_free_chunks_and_takes_them_again)
{
	enum { N = 64 };
	struct braid_pool pool;
	void *objs[N];
	size_t full, i, per;

	/* 20 KiB objects: 2 per 64 KiB chunk, 32 chunks */
	cr_assert_eq(braid_pool_construct(&pool, 20000, N), 0);
	per = pool.chunk_objs;
	cr_assert_eq(per, 2);
	cr_assert_eq(braid_pool_trim(&pool), 0, "nothing handed out: nothing to give");
	for (i = 0; i < N; i++) {
		objs[i] = braid_pool_alloc(&pool);
		cr_assert_not_null(objs[i]);
		memset(objs[i], (int)i, 20000);
	}
	full = braid_pool_bytes(&pool);
	cr_assert_geq(full, (size_t)N * 20000);
	/* free every object but the first chunk's two and one of the last chunk's */
	for (i = per; i < N - 1; i++)
		braid_pool_release(&pool, objs[i]);
	cr_assert_eq(braid_pool_trim(&pool), N / per - 2, "every chunk with nothing in use");
	cr_assert_eq(pool.in_use, per + 1);
	cr_assert_leq(braid_pool_bytes(&pool), 2 * per * pool.obj_size, "only two chunks kept");
	cr_assert_eq(((uint8_t *)objs[0])[19999], 0, "kept objects untouched");
	cr_assert_eq(((uint8_t *)objs[N - 1])[0], (uint8_t)(N - 1));
	cr_assert_eq(braid_pool_trim(&pool), 0, "trimming again gives nothing");
	/* the pool fills up again: the last chunk's free object, then the holes */
	for (i = per; i < N - 1; i++) {
		objs[i] = braid_pool_alloc(&pool);
		cr_assert_not_null(objs[i], "object %zu taken again", i);
		memset(objs[i], 0x5a, 20000);
	}
	cr_assert_null(braid_pool_alloc(&pool), "and no more than its count");
	for (i = 0; i < N; i++)
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(objs[i], objs[j], "distinct objects");
	cr_assert_eq(braid_pool_bytes(&pool), full);
	braid_pool_destruct(&pool);
}
