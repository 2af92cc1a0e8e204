/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_evq.c: the timed event queue of the simulators (a binary min-heap by time, then insertion order). */
#include <stdlib.h>
#include <rdma/fi_errno.h>

#include "braid_evq.h"

static bool ent_before(const struct braid_evq_ent *a, const struct braid_evq_ent *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

void braid_evq_construct(struct braid_evq *q)
{
	q->heap = NULL;
	q->len = q->cap = 0;
	q->next_seq = 0;
}

void braid_evq_destruct(struct braid_evq *q)
{
	free(q->heap);
	braid_evq_construct(q);
}

int braid_evq_push(struct braid_evq *q, uint64_t at, uint64_t val)
{
	struct braid_evq_ent e = { at, q->next_seq++, val };
	size_t i;

	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct braid_evq_ent *h = realloc(q->heap, cap * sizeof(*h));

		if (!h)
			return -FI_ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	/* sift up: move parents down until @e's place is found */
	for (i = q->len++; i > 0; i = (i - 1) / 2) {
		struct braid_evq_ent *parent = &q->heap[(i - 1) / 2];

		if (!ent_before(&e, parent))
			break;
		q->heap[i] = *parent;
	}
	q->heap[i] = e;
	return 0;
}

bool braid_evq_pop(struct braid_evq *q, struct braid_evq_ent *ent)
{
	struct braid_evq_ent last;
	size_t i = 0;

	if (!q->len)
		return false;
	*ent = q->heap[0];
	last = q->heap[--q->len];
	/* sift down: the last entry finds its place from the root */
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->len)
			break;
		if (c + 1 < q->len && ent_before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!ent_before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (q->len)
		q->heap[i] = last;
	return true;
}
