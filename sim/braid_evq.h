/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_evq.h: a queue of timed events for virtual-time simulators: a binary min-heap by (time, insertion order). */
#ifndef BRAID_EVQ_H
#define BRAID_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Events with equal times come out in the order they were pushed, so a
 * simulation driven by the queue is deterministic. Each event carries one
 * 64-bit value (an index, a tagged number or a pointer cast to an integer)
 * that the queue never reads. The queue grows as events are pushed.
 */

/** struct braid_evq_ent - one queued event. */
struct braid_evq_ent {
	/** @at: the event's virtual time (ns). */
	uint64_t at;
	/** @seq: insertion order: breaks ties between equal times. */
	uint64_t seq;
	/** @val: the caller's value. */
	uint64_t val;
};

/** struct braid_evq - the queue. */
struct braid_evq {
	/** @heap: @len entries in heap order (the earliest at [0]), room for @cap. */
	struct braid_evq_ent *heap;
	size_t len, cap;
	/** @next_seq: the @seq the next pushed event gets. */
	uint64_t next_seq;
};

/** braid_evq_construct() - an empty queue in place (nothing allocated yet). */
void braid_evq_construct(struct braid_evq *q);

/** braid_evq_destruct() - free the queue's memory; the values are the caller's to free. */
void braid_evq_destruct(struct braid_evq *q);

/** braid_evq_push() - queue @val at time @at. Return: 0 or -FI_ENOMEM. */
int braid_evq_push(struct braid_evq *q, uint64_t at, uint64_t val);

/** braid_evq_next() - the earliest event's time, UINT64_MAX when the queue is empty. */
static inline uint64_t braid_evq_next(const struct braid_evq *q)
{
	return q->len ? q->heap[0].at : UINT64_MAX;
}

/** braid_evq_pop() - take the earliest event into *@ent. Return: false when the queue is empty. */
bool braid_evq_pop(struct braid_evq *q, struct braid_evq_ent *ent);

#endif /* BRAID_EVQ_H */
