/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_pool.c: bounded object pools for the data path: memory taken in chunks as objects are first used, never malloc per object. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rdma/fi_errno.h>

#include "braid/braid_pool.h"

/* a chunk holds about this many bytes of objects (at least one object) */
#define POOL_CHUNK_BYTES	(64 * 1024)

int braid_pool_construct(struct braid_pool *pool, size_t obj_size, size_t count)
{
	size_t per = 1;

	memset(pool, 0, sizeof(*pool));
	if (!obj_size || !count)
		return -FI_EINVAL;
	if (count > SIZE_MAX / 2 || obj_size > SIZE_MAX / 2 / count)
		return -FI_ENOMEM;
	pool->obj_size = (obj_size + 15) & ~(size_t)15;
	while (per * 2 * pool->obj_size <= POOL_CHUNK_BYTES && per < count)
		per *= 2;
	pool->chunk_objs = per;
	pool->count = count;
	pool->chunks_cap = (count + per - 1) / per < 8 ? (count + per - 1) / per : 8;
	pool->chunks = calloc(pool->chunks_cap, sizeof(*pool->chunks));
	if (!pool->chunks) {
		memset(pool, 0, sizeof(*pool));
		return -FI_ENOMEM;
	}
	return 0;
}

/* objects chunk @c holds */
static size_t chunk_len(const struct braid_pool *pool, size_t c)
{
	size_t first = c * pool->chunk_objs;

	return pool->count - first < pool->chunk_objs ? pool->count - first : pool->chunk_objs;
}

/* chunks this large are mapped on their own, not carved from malloc's heap: given back,
 * they leave no holes between small allocations (which kept whole pages resident) */
#define POOL_MAP_BYTES	(16 * 1024)

static size_t chunk_bytes(const struct braid_pool *pool, size_t c)
{
	return (chunk_len(pool, c) * pool->obj_size + 63) & ~(size_t)63;
}

static uint8_t *chunk_new(const struct braid_pool *pool, size_t c)
{
	size_t n = chunk_bytes(pool, c);
	void *p;

	if (n < POOL_MAP_BYTES)
		return aligned_alloc(64, n);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void chunk_free(const struct braid_pool *pool, size_t c)
{
	size_t n = chunk_bytes(pool, c);

	if (!pool->chunks[c])
		return;
	if (n < POOL_MAP_BYTES)
		free(pool->chunks[c]);
	else
		munmap(pool->chunks[c], n);
	pool->chunks[c] = NULL;
}

/* A hole (a trimmed chunk) filled again: its objects onto the free list. */
static bool hole_fill(struct braid_pool *pool)
{
	size_t c, i;

	for (c = 0; c < pool->nchunks && pool->chunks[c]; c++)
		;
	if (c == pool->nchunks)
		return false;
	pool->chunks[c] = chunk_new(pool, c);
	if (!pool->chunks[c])
		return false;
	pool->holes--;
	for (i = chunk_len(pool, c); i-- > 0;) {
		void *obj = pool->chunks[c] + i * pool->obj_size;

		memcpy(obj, &pool->free_list, sizeof(void *));
		pool->free_list = obj;
	}
	return true;
}

struct chunk_ref {
	const uint8_t *base;
	size_t c;
};

static int chunk_ref_cmp(const void *a, const void *b)
{
	const struct chunk_ref *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

/* the chunk @obj is in, by binary search over the chunks sorted by address */
static size_t chunk_of(const struct braid_pool *pool, const struct chunk_ref *refs, size_t n,
		       const uint8_t *obj)
{
	size_t lo = 0, hi = n, span = pool->chunk_objs * pool->obj_size;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (obj < refs[mid].base)
			hi = mid;
		else if (obj >= refs[mid].base + span)
			lo = mid + 1;
		else
			return refs[mid].c;
	}
	return SIZE_MAX;
}

size_t braid_pool_trim(struct braid_pool *pool)
{
	size_t *nfree, c, n = 0, given = 0, whole = pool->fresh / pool->chunk_objs;
	struct chunk_ref *refs;
	void *obj, *keep = NULL;

	if (!pool->chunks || !pool->nchunks)
		return 0;
	if (!pool->in_use) {
		/* nothing handed out: every chunk goes, the one being carved too */
		for (c = 0; c < pool->nchunks; c++) {
			given += pool->chunks[c] != NULL;
			chunk_free(pool, c);
		}
		pool->nchunks = 0;
		pool->holes = 0;
		pool->fresh = 0;
		pool->free_list = NULL;
		return given;
	}
	if (!pool->free_list || !whole)
		return 0;
	nfree = calloc(pool->nchunks, sizeof(*nfree));
	refs = malloc(pool->nchunks * sizeof(*refs));
	if (!nfree || !refs) {
		free(nfree);
		free(refs);
		return 0;
	}
	for (c = 0; c < pool->nchunks; c++)
		if (pool->chunks[c])
			refs[n++] = (struct chunk_ref){ pool->chunks[c], c };
	qsort(refs, n, sizeof(*refs), chunk_ref_cmp);
	for (obj = pool->free_list; obj; memcpy(&obj, obj, sizeof(void *))) {
		c = chunk_of(pool, refs, n, obj);
		if (c != SIZE_MAX)
			nfree[c]++;
	}
	/* chunks below the fresh mark whose every object is free go */
	for (c = 0; c < whole && c < pool->nchunks; c++)
		nfree[c] = pool->chunks[c] && nfree[c] == chunk_len(pool, c);
	obj = pool->free_list;
	while (obj) {
		void *next;

		memcpy(&next, obj, sizeof(void *));
		c = chunk_of(pool, refs, n, obj);
		if (c >= whole || !nfree[c]) {
			memcpy(obj, &keep, sizeof(void *));
			keep = obj;
		}
		obj = next;
	}
	pool->free_list = keep;
	for (c = 0; c < whole && c < pool->nchunks; c++) {
		if (nfree[c]) {
			chunk_free(pool, c);
			pool->holes++;
			given++;
		}
	}
	free(nfree);
	free(refs);
	return given;
}

size_t braid_pool_bytes(const struct braid_pool *pool)
{
	size_t c, n = 0;

	for (c = 0; c < pool->nchunks; c++)
		if (pool->chunks[c])
			n += chunk_len(pool, c) * pool->obj_size;
	return n;
}

void braid_pool_destruct(struct braid_pool *pool)
{
	for (size_t i = 0; i < pool->nchunks; i++)
		chunk_free(pool, i);
	free(pool->chunks);
	memset(pool, 0, sizeof(*pool));
}

void *braid_pool_alloc_fresh(struct braid_pool *pool)
{
	size_t c;
	void *obj;

	if (!pool->chunks)
		return NULL;
	if (pool->holes && hole_fill(pool) && pool->free_list)
		return braid_pool_alloc_raw(pool);
	if (pool->fresh < pool->count) {
		c = pool->fresh / pool->chunk_objs;
		if (c == pool->nchunks) {
			if (c == pool->chunks_cap) {
				size_t cap = 2 * pool->chunks_cap;
				uint8_t **t = realloc(pool->chunks, cap * sizeof(*t));

				if (!t)
					return NULL;
				pool->chunks = t;
				pool->chunks_cap = cap;
			}
			pool->chunks[c] = chunk_new(pool, c);
			if (!pool->chunks[c])
				return NULL;
			pool->nchunks++;
		}
		obj = braid_pool_at(pool, pool->fresh++);
	} else {
		return NULL;
	}
	pool->in_use++;
	return obj;
}

void *braid_pool_alloc(struct braid_pool *pool)
{
	void *obj = braid_pool_alloc_raw(pool);

	if (obj)
		memset(obj, 0, pool->obj_size);
	return obj;
}

size_t braid_pool_index(const struct braid_pool *pool, const void *obj)
{
	const uint8_t *o = obj;
	size_t span = pool->chunk_objs * pool->obj_size;

	for (size_t c = 0; c < pool->nchunks; c++)
		if (pool->chunks[c] && o >= pool->chunks[c] && o < pool->chunks[c] + span)
			return c * pool->chunk_objs + (size_t)(o - pool->chunks[c]) / pool->obj_size;
	return SIZE_MAX;
}
