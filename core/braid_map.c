/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_map.c: an open-addressing hash map from 64-bit keys to pointers. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid/braid_map.h"
#include "braid/braid_hash.h"

/* A distinct non-NULL marker for deleted slots. */
static char map_tomb_marker;
#define MAP_TOMB ((void *)&map_tomb_marker)

static inline size_t map_hash(uint64_t key)
{
	/* splitmix64's finaliser: keys are often sequential or share high bits. */
	return (size_t)braid_mix64(key);
}

void braid_map_construct(struct braid_map *map)
{
	memset(map, 0, sizeof(*map));
}

void braid_map_destruct(struct braid_map *map)
{
	free(map->keys);
	free(map->vals);
	memset(map, 0, sizeof(*map));
}

static int map_resize(struct braid_map *map, size_t cap)
{
	struct braid_map bigger = { 0 };
	size_t i, j;

	bigger.keys = calloc(cap, sizeof(*bigger.keys));
	bigger.vals = calloc(cap, sizeof(*bigger.vals));
	if (!bigger.keys || !bigger.vals) {
		free(bigger.keys);
		free(bigger.vals);
		return -FI_ENOMEM;
	}
	bigger.cap = cap;
	for (i = 0; i < map->cap; i++) {
		if (!map->vals[i] || map->vals[i] == MAP_TOMB)
			continue;
		for (j = map_hash(map->keys[i]) & (cap - 1); bigger.vals[j];
		     j = (j + 1) & (cap - 1))
			;
		bigger.keys[j] = map->keys[i];
		bigger.vals[j] = map->vals[i];
		bigger.used++;
	}
	free(map->keys);
	free(map->vals);
	*map = bigger;
	return 0;
}

int braid_map_reserve(struct braid_map *map, size_t n)
{
	size_t cap = 16;
	int ret;

	/* the load stays at most 1/2 with @n entries: inserts up to them never rehash */
	while (cap < 2 * (n + 1))
		cap *= 2;
	if (cap <= map->cap)
		return 0;
	ret = map_resize(map, cap);
	if (!ret)
		map->tombs = 0;
	return ret;
}

int braid_map_insert(struct braid_map *map, uint64_t key, void *val)
{
	size_t i, tomb = SIZE_MAX;
	int ret;

	if (!val || val == MAP_TOMB)
		return -FI_EINVAL;
	if (braid_map_get(map, key))
		return -FI_EALREADY;
	/* keep the load (live + deleted) at most 1/2 */
	if ((map->used + map->tombs + 1) * 2 > map->cap) {
		ret = map_resize(map, map->cap ? (map->used + 1) * 4 > map->cap ?
				 map->cap * 2 : map->cap : 16);
		if (ret)
			return ret;
		map->tombs = 0;
	}
	for (i = map_hash(key) & (map->cap - 1); map->vals[i];
	     i = (i + 1) & (map->cap - 1)) {
		if (map->vals[i] == MAP_TOMB && tomb == SIZE_MAX)
			tomb = i;
	}
	if (tomb != SIZE_MAX) {
		i = tomb;
		map->tombs--;
	}
	map->keys[i] = key;
	map->vals[i] = val;
	map->used++;
	return 0;
}

static size_t map_find(const struct braid_map *map, uint64_t key)
{
	size_t i;

	if (!map->cap)
		return SIZE_MAX;
	for (i = map_hash(key) & (map->cap - 1); map->vals[i];
	     i = (i + 1) & (map->cap - 1)) {
		if (map->vals[i] != MAP_TOMB && map->keys[i] == key)
			return i;
	}
	return SIZE_MAX;
}

void *braid_map_get(const struct braid_map *map, uint64_t key)
{
	size_t i = map_find(map, key);

	return i == SIZE_MAX ? NULL : map->vals[i];
}

int braid_map_set(struct braid_map *map, uint64_t key, void *val)
{
	size_t i;

	if (!val || val == MAP_TOMB)
		return -FI_EINVAL;
	i = map_find(map, key);
	if (i == SIZE_MAX)
		return -FI_ENOENT;
	map->vals[i] = val;
	return 0;
}

void *braid_map_at(const struct braid_map *map, size_t i, uint64_t *key)
{
	if (i >= map->cap || !map->vals[i] || map->vals[i] == MAP_TOMB)
		return NULL;
	*key = map->keys[i];
	return map->vals[i];
}

int braid_map_shrink(struct braid_map *map)
{
	size_t cap = 16;
	int ret;

	if (!map->used) {
		braid_map_destruct(map);
		return 0;
	}
	if (map->used * 8 >= map->cap || map->cap <= 16)
		return 0;
	/* a quarter full at most: room to grow before the next rehash */
	while (cap < 4 * map->used)
		cap *= 2;
	ret = map_resize(map, cap);
	if (!ret)
		map->tombs = 0;
	return ret;
}

void *braid_map_remove(struct braid_map *map, uint64_t key)
{
	size_t i = map_find(map, key);
	void *val;

	if (i == SIZE_MAX)
		return NULL;
	val = map->vals[i];
	map->vals[i] = MAP_TOMB;
	map->used--;
	map->tombs++;
	return val;
}
