/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_pool.h: fixed-size object pools, sized once at open, for the data path. */
#ifndef BRAID_POOL_H
#define BRAID_POOL_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>

/**
 * struct braid_pool - at most @count equally sized objects. Allocation and
 * release are O(1) and never call malloc per object: memory is taken in
 * chunks (about 64 KiB, at least one object) the first time the objects in
 * them are needed, so a pool sized for the worst case costs only what was
 * ever in use at once; it is kept until the pool is destructed. An empty
 * pool (or a chunk that cannot be had) makes braid_pool_alloc() return NULL
 * (callers turn that into -FI_EAGAIN). Not thread safe: the owner
 * serialises access.
 */
struct braid_pool {
	/** @chunks: the chunk table (@chunks_cap entries, grown as chunks are taken: a pool
	 * bounded high costs no table either); the first @nchunks are allocated. */
	uint8_t **chunks;
	size_t nchunks, chunks_cap;
	/** @holes: chunk slots below @nchunks given back by braid_pool_trim() (NULL), taken
	 * again before the pool grows. */
	size_t holes;
	/** @chunk_objs: objects per chunk (a power of two). */
	size_t chunk_objs;
	/** @obj_size: size of one object, rounded up to 16-byte alignment. */
	size_t obj_size;
	/** @count: number of objects in the pool. */
	size_t count;
	/** @in_use: number of objects currently handed out. */
	size_t in_use;
	/** @fresh: objects ever handed out (the next never-used one's index). */
	size_t fresh;
	/** @free_list: objects given back, each holding the next one's address in its first bytes. */
	void *free_list;
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
 * braid_pool_alloc_fresh() - braid_pool_alloc_raw() when no object given
 * back waits in the free list: one never used (a chunk taken if need be),
 * or one of a chunk braid_pool_trim() gave back; NULL when none is left.
 */
void *braid_pool_alloc_fresh(struct braid_pool *pool);

/**
 * braid_pool_alloc_raw() - braid_pool_alloc() without the zeroing, for
 * buffers the caller fills at once (a packet's payload: zeroing a 64 KiB
 * staging buffer to copy 8 bytes into it cost more than the copy). Inline:
 * the free list's head, else braid_pool_alloc_fresh().
 */
static inline void *braid_pool_alloc_raw(struct braid_pool *pool)
{
	void *obj = pool->free_list;

	if (!obj)
		return braid_pool_alloc_fresh(pool);
	memcpy(&pool->free_list, obj, sizeof(void *));
	pool->in_use++;
	return obj;
}

/**
 * braid_pool_alloc_head() - take one object with only its first @head bytes
 * zeroed: for records that end in arrays written up to their count before
 * any use (an operation's iovecs), which zeroing whole would cost on every
 * message. Inline, so that a constant @head zeroes with a few stores: one
 * 16-byte store after another, unrolled (a single memset of a hundred bytes
 * or more compiles to a string instruction that runs a step per 8 bytes).
 */
static inline void *braid_pool_alloc_head(struct braid_pool *pool, size_t head)
{
	uint8_t *obj = (uint8_t *)braid_pool_alloc_raw(pool);
	size_t i;

	if (!obj)
		return NULL;
#pragma GCC unroll 32
	for (i = 0; i + 16 <= head; i += 16)
		memset(obj + i, 0, 16);
	if (i < head)
		memset(obj + i, 0, head - i);
	return obj;
}

/** braid_pool_release() - give back an object taken from this pool (to the free list's head). */
static inline void braid_pool_release(struct braid_pool *pool, void *obj)
{
	memcpy(obj, &pool->free_list, sizeof(void *));
	pool->free_list = obj;
	pool->in_use--;
}

/**
 * braid_pool_trim() - give the memory of chunks none of whose objects is in
 * use back to the system (O(free objects)); the pool may take it again
 * later. A pool with no object in use gives back every chunk, the one it
 * was carving too. Return: the chunks given back.
 */
size_t braid_pool_trim(struct braid_pool *pool);

/** braid_pool_bytes() - the memory the pool holds now (its chunks). */
size_t braid_pool_bytes(const struct braid_pool *pool);

/** braid_pool_at() - the object at @index, which must have been handed out once and not trimmed. */
static inline void *braid_pool_at(const struct braid_pool *pool, size_t index)
{
	return pool->chunks[index / pool->chunk_objs] + (index % pool->chunk_objs) * pool->obj_size;
}

/** braid_pool_index() - the index of @obj in the pool (O(chunks): for tests), or SIZE_MAX. */
size_t braid_pool_index(const struct braid_pool *pool, const void *obj);

#endif /* BRAID_POOL_H */
