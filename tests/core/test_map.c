/* SPDX-License-Identifier: BSD-2-Clause */
/* test_map.c: unit tests of core/braid_map.c. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "braid/braid_map.h"

Test(braid_map_get, empty_map)
{
	struct braid_map map;

	braid_map_construct(&map);
	cr_assert_null(braid_map_get(&map, 42));
	cr_assert_null(braid_map_remove(&map, 42));
	braid_map_destruct(&map);
}

Test(braid_map_insert, duplicate_and_null)
{
	struct braid_map map;
	int a, b;

	braid_map_construct(&map);
	cr_assert_eq(braid_map_insert(&map, 7, &a), 0);
	cr_assert_eq(braid_map_insert(&map, 7, &b), -FI_EALREADY);
	cr_assert_eq(braid_map_get(&map, 7), &a, "a refused insert leaves the map unchanged");
	cr_assert_eq(braid_map_insert(&map, 8, NULL), -FI_EINVAL);
	braid_map_destruct(&map);
}

Test(braid_map_insert, many_keys_grow_and_remove)
{
	struct braid_map map;
	static int vals[20000];
	uint64_t k;

	braid_map_construct(&map);
	for (k = 0; k < 20000; k++)
		cr_assert_eq(braid_map_insert(&map, k * 65536 + 17, &vals[k]), 0);
	cr_assert_eq(map.used, 20000);
	for (k = 0; k < 20000; k += 2)
		cr_assert_eq(braid_map_remove(&map, k * 65536 + 17), &vals[k]);
	for (k = 0; k < 20000; k++) {
		void *v = braid_map_get(&map, k * 65536 + 17);

		if (k % 2)
			cr_assert_eq(v, &vals[k]);
		else
			cr_assert_null(v);
	}
	/* deleted slots are reused and lookups stay right */
	for (k = 0; k < 20000; k += 2)
		cr_assert_eq(braid_map_insert(&map, k * 65536 + 17, &vals[k]), 0);
	for (k = 0; k < 20000; k++)
		cr_assert_eq(braid_map_get(&map, k * 65536 + 17), &vals[k]);
	braid_map_destruct(&map);
}

/* braid_map_reserve: room for n entries at once; inserting them never resizes. */
Test(braid_map, reserve_means_no_resize)
{
	struct braid_map m;
	size_t cap;

	braid_map_construct(&m);
	cr_assert_eq(braid_map_reserve(&m, 1000), 0);
	cap = m.cap;
	cr_assert_geq(cap, 2000, "load at most 1/2 with 1000 entries (cap %zu)", cap);
	for (uint64_t k = 1; k <= 1000; k++)
		cr_assert_eq(braid_map_insert(&m, k * 7919, (void *)(uintptr_t)k), 0);
	cr_assert_eq(m.cap, cap, "no resize while inserting what was reserved");
	for (uint64_t k = 1; k <= 1000; k++)
		cr_assert_eq(braid_map_get(&m, k * 7919), (void *)(uintptr_t)k);
	cr_assert_eq(braid_map_reserve(&m, 10), 0, "a smaller reserve is a no-op");
	cr_assert_eq(m.cap, cap);
	braid_map_destruct(&m);
}

/* A walk over the slots may remove as it goes; a shrink then gives the slots back. */
Test(braid_map, walk_remove_and_shrink)
{
	struct braid_map map;
	static int vals[10000];
	size_t i, seen = 0, big;
	uint64_t k, key;

	braid_map_construct(&map);
	for (k = 0; k < 10000; k++)
		cr_assert_eq(braid_map_insert(&map, k * 4096 + 3, &vals[k]), 0);
	big = map.cap;
	cr_assert_geq(big, 20000);
	cr_assert_eq(braid_map_shrink(&map), 0);
	cr_assert_eq(map.cap, big, "a map more than an eighth full keeps its slots");
	for (i = 0; i < map.cap; i++) {
		int *v = braid_map_at(&map, i, &key);

		if (!v)
			continue;
		seen++;
		cr_assert_eq(v, &vals[(key - 3) / 4096], "slot %zu holds its own key's value", i);
		if ((key - 3) / 4096 >= 100)
			cr_assert_eq(braid_map_remove(&map, key), v);
	}
	cr_assert_eq(seen, 10000, "the walk saw every entry once");
	cr_assert_null(braid_map_at(&map, map.cap, &key), "no slot past the end");
	cr_assert_eq(map.used, 100);
	cr_assert_eq(braid_map_shrink(&map), 0);
	cr_assert_leq(map.cap, 512, "100 entries in %zu slots", map.cap);
	cr_assert_eq(map.tombs, 0);
	for (k = 0; k < 10000; k++)
		cr_assert_eq(braid_map_get(&map, k * 4096 + 3), k < 100 ? &vals[k] : NULL);
	for (k = 0; k < 100; k++)
		cr_assert_eq(braid_map_remove(&map, k * 4096 + 3), &vals[k]);
	cr_assert_eq(braid_map_shrink(&map), 0);
	cr_assert_eq(map.cap, 0, "an empty map keeps no slots");
	cr_assert_null(map.keys);
	cr_assert_eq(braid_map_insert(&map, 5, &vals[0]), 0, "and grows again");
	cr_assert_eq(braid_map_get(&map, 5), &vals[0]);
	braid_map_destruct(&map);
}
