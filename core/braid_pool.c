/* braid_pool.c: fixed-size object pools, sized once at open, for the data path. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid/braid_pool.h"

int braid_pool_construct(struct braid_pool *pool, size_t obj_size, size_t count)
{

	memset(pool, 0, sizeof(*pool));
	if (!obj_size || !count)
		return -FI_EINVAL;
	if (count > SIZE_MAX / 2 || obj_size > SIZE_MAX / 2 / count)
		return -FI_ENOMEM;

	pool->obj_size = (obj_size + 15) & ~(size_t)15;
	pool->count = count;
	pool->base = aligned_alloc(64, ((pool->obj_size * count) + 63) & ~(size_t)63);
	pool->next_free = malloc(count * sizeof(*pool->next_free));
	if (!pool->base || !pool->next_free) {
		free(pool->base);
		free(pool->next_free);
		memset(pool, 0, sizeof(*pool));
		return -FI_ENOMEM;
	}
	pool->free_head = SIZE_MAX;
	pool->fresh = 0;
	return 0;
}

void braid_pool_destruct(struct braid_pool *pool)
{
	free(pool->base);
	free(pool->next_free);
	memset(pool, 0, sizeof(*pool));
}

void *braid_pool_alloc_raw(struct braid_pool *pool)
{
	size_t i = pool->free_head;

	if (!pool->base)
		return NULL;
	if (i != SIZE_MAX)
		pool->free_head = pool->next_free[i];
	else if (pool->fresh < pool->count)
		i = pool->fresh++;
	else
		return NULL;
	pool->next_free[i] = SIZE_MAX - 1;	/* marks "in use" */
	pool->in_use++;
	return braid_pool_at(pool, i);
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
	size_t i = braid_pool_index(pool, obj);

	pool->next_free[i] = pool->free_head;
	pool->free_head = i;
	pool->in_use--;
}
