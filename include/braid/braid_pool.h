/* braid_pool.h: fixed-size object pools, sized once at open, for the data path. */
#ifndef BRAID_POOL_H
#define BRAID_POOL_H

#include <stddef.h>
#include <stdint.h>

/**
 * struct braid_pool - a free list over one contiguous array of equally sized
 * objects. Allocation and release are O(1) and never call malloc; memory is
 * reserved at construction and touched only as objects are first used; an empty
 * pool makes braid_pool_alloc() return NULL (callers turn that into
 * -FI_EAGAIN). Not thread safe: the owner serialises access.
 */
struct braid_pool {
	/** @base: the object array, @count objects of @obj_size bytes. */
	uint8_t *base;
	/** @obj_size: size of one object, rounded up to 16-byte alignment. */
	size_t obj_size;
	/** @count: number of objects in the pool. */
	size_t count;
	/** @in_use: number of objects currently handed out. */
	size_t in_use;
	/** @free_head: index of the first object given back and free again, or SIZE_MAX. */
	size_t free_head;
	/**
	 * @fresh: objects from this index on were never handed out: they are
	 * taken in order once the free list is empty, so a pool touches the
	 * memory of only as many objects as were ever in use at once (a large
	 * pool reserved at open costs nothing until used).
	 */
	size_t fresh;
	/** @next_free: per object given back, the index of the next free one. */
	size_t *next_free;
};

/**
 * braid_pool_construct() - allocate the storage of @pool.
 * @pool: the pool to initialise.
 * @obj_size: the size of one object (>= 1).
 * @count: the number of objects (>= 1).
 *
 * Return: 0, -FI_EINVAL for a zero size or count, -FI_ENOMEM.
 * The caller must eventually call braid_pool_destruct().
 */
int braid_pool_construct(struct braid_pool *pool, size_t obj_size, size_t count);

/** braid_pool_destruct() - free the storage; objects must not be used after. */
void braid_pool_destruct(struct braid_pool *pool);

/** braid_pool_alloc() - take one zeroed object, or NULL when the pool is empty. */
void *braid_pool_alloc(struct braid_pool *pool);

/**
 * braid_pool_alloc_raw() - braid_pool_alloc() without the zeroing, for
 * buffers the caller fills at once (a packet's payload: zeroing a 64 KiB
 * staging buffer to copy 8 bytes into it cost more than the copy).
 */
void *braid_pool_alloc_raw(struct braid_pool *pool);

/** braid_pool_release() - give back an object taken from this pool. */
void braid_pool_release(struct braid_pool *pool, void *obj);

/** braid_pool_index() - the index of @obj within the pool's array. */
static inline size_t braid_pool_index(const struct braid_pool *pool, const void *obj)
{
	return (size_t)((const uint8_t *)obj - pool->base) / pool->obj_size;
}

/** braid_pool_at() - the object at @index (allocated or not). */
static inline void *braid_pool_at(const struct braid_pool *pool, size_t index)
{
	return pool->base + index * pool->obj_size;
}

#endif /* BRAID_POOL_H */
