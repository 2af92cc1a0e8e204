/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_map.h: an open-addressing hash map from 64-bit keys to pointers. */
#ifndef BRAID_MAP_H
#define BRAID_MAP_H

#include <stddef.h>
#include <stdint.h>

/**
 * struct braid_map - linear-probing hash map, uint64_t key -> non-NULL void *.
 * Used where lookups are on the data path and inserts are not (AV reverse
 * lookup, MR keys). Grows by doubling on insert; lookups never allocate.
 * Not thread safe: the owner serialises access.
 */
struct braid_map {
	/** @keys: slot keys. */
	uint64_t *keys;
	/** @vals: slot values; NULL marks an empty slot, @tomb a deleted one. */
	void **vals;
	/** @cap: number of slots, a power of two (0 before the first insert). */
	size_t cap;
	/** @used: live entries. */
	size_t used;
	/** @tombs: deleted slots not yet reclaimed. */
	size_t tombs;
};

/** braid_map_construct() - an empty map; no memory until the first insert. */
void braid_map_construct(struct braid_map *map);

/** braid_map_destruct() - free the slots (not the values). */
void braid_map_destruct(struct braid_map *map);

/**
 * braid_map_insert() - add @key -> @val.
 * Return: 0, -FI_EALREADY if @key is present (the map is unchanged),
 * -FI_EINVAL for a NULL @val, -FI_ENOMEM.
 */
int braid_map_insert(struct braid_map *map, uint64_t key, void *val);

/**
 * braid_map_reserve() - make room for @n entries at once, so that inserts up
 * to them never rehash. Return: 0 or -FI_ENOMEM (the map is unchanged).
 */
int braid_map_reserve(struct braid_map *map, size_t n);

/** braid_map_get() - the value of @key, or NULL. */
void *braid_map_get(const struct braid_map *map, uint64_t key);

/**
 * braid_map_set() - give the present @key the value @val, in place (no rehash).
 * Return: 0, -FI_ENOENT if @key is absent, -FI_EINVAL for a NULL @val.
 */
int braid_map_set(struct braid_map *map, uint64_t key, void *val);

/** braid_map_remove() - remove @key; returns its value, or NULL if absent. */
void *braid_map_remove(struct braid_map *map, uint64_t key);

/**
 * braid_map_at() - the value in slot @i (0 <= @i < cap), its key in *@key; NULL
 * for an empty or deleted slot. Slots stay where they are until an insert,
 * reserve or shrink rehashes (remove and set never move them): a walk over
 * 0..cap-1 may set and remove as it goes.
 */
void *braid_map_at(const struct braid_map *map, size_t i, uint64_t *key);

/**
 * braid_map_shrink() - give back slots once at most an eighth of them are
 * used: the map rehashes into the fewest slots that are at most a quarter
 * full (none at all when empty). Return: 0, or -FI_ENOMEM (the map is
 * unchanged).
 */
int braid_map_shrink(struct braid_map *map);

#endif /* BRAID_MAP_H */
