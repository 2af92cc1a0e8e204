/* braid_pool.c: bounded object pools for the data path: memory taken in chunks as objects are first used, never malloc per object. */
#include <stdlib.h>
#include <string.h>
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

void braid_pool_destruct(struct braid_pool *pool)
{
	for (size_t i = 0; i < pool->nchunks; i++)
		free(pool->chunks[i]);
	free(pool->chunks);
	memset(pool, 0, sizeof(*pool));
}

void *braid_pool_alloc_raw(struct braid_pool *pool)
{
	size_t c;
	void *obj;

	if (!pool->chunks)
		return NULL;
	if (pool->free_list) {
		obj = pool->free_list;
		memcpy(&pool->free_list, obj, sizeof(void *));
	} else if (pool->fresh < pool->count) {
		c = pool->fresh / pool->chunk_objs;
		if (c == pool->nchunks) {
			size_t n = pool->count - pool->fresh < pool->chunk_objs ?
				   pool->count - pool->fresh : pool->chunk_objs;

			if (c == pool->chunks_cap) {
				size_t cap = 2 * pool->chunks_cap;
				uint8_t **t = realloc(pool->chunks, cap * sizeof(*t));

				if (!t)
					return NULL;
				pool->chunks = t;
				pool->chunks_cap = cap;
			}
			pool->chunks[c] = aligned_alloc(64, (n * pool->obj_size + 63) & ~(size_t)63);
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

void braid_pool_release(struct braid_pool *pool, void *obj)
{
	memcpy(obj, &pool->free_list, sizeof(void *));
	pool->free_list = obj;
	pool->in_use--;
}

size_t braid_pool_index(const struct braid_pool *pool, const void *obj)
{
	const uint8_t *o = obj;
	size_t span = pool->chunk_objs * pool->obj_size;

	for (size_t c = 0; c < pool->nchunks; c++)
		if (o >= pool->chunks[c] && o < pool->chunks[c] + span)
			return c * pool->chunk_objs + (size_t)(o - pool->chunks[c]) / pool->obj_size;
	return SIZE_MAX;
}
