/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_list.h: intrusive doubly-linked lists, embedded in the caller's structs. */
#ifndef BRAID_LIST_H
#define BRAID_LIST_H

#include <stddef.h>
#include <stdbool.h>

/**
 * struct braid_dlist - a node of (or the head of) a circular doubly-linked
 * list. A head is an ordinary node whose next/prev point at itself when the
 * list is empty. Nodes are embedded in the owner's struct; recover the owner
 * with braid_container_of().
 */
struct braid_dlist {
	/** @next: the following node (the head again at the end). */
	struct braid_dlist *next;
	/** @prev: the preceding node (the head again at the start). */
	struct braid_dlist *prev;
};

#define braid_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void braid_dlist_init(struct braid_dlist *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool braid_dlist_empty(const struct braid_dlist *head)
{
	return head->next == head;
}

/* Insert @node before @pos (at the tail when @pos is the head). */
static inline void braid_dlist_insert_before(struct braid_dlist *node,
					     struct braid_dlist *pos)
{
	node->next = pos;
	node->prev = pos->prev;
	pos->prev->next = node;
	pos->prev = node;
}

static inline void braid_dlist_insert_tail(struct braid_dlist *node,
					   struct braid_dlist *head)
{
	braid_dlist_insert_before(node, head);
}

static inline void braid_dlist_insert_head(struct braid_dlist *node,
					   struct braid_dlist *head)
{
	braid_dlist_insert_before(node, head->next);
}

/* Unlink @node; it is left pointing at itself so a second remove is harmless. */
static inline void braid_dlist_remove(struct braid_dlist *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	braid_dlist_init(node);
}

/* Unlink and return the first node, or NULL when the list is empty. */
static inline struct braid_dlist *braid_dlist_pop_head(struct braid_dlist *head)
{
	struct braid_dlist *n;

	if (braid_dlist_empty(head))
		return NULL;
	n = head->next;
	braid_dlist_remove(n);
	return n;
}

#define braid_dlist_foreach(head, it) \
	for ((it) = (head)->next; (it) != (head); (it) = (it)->next)

/* Safe against removal of @it inside the loop body. */
#define braid_dlist_foreach_safe(head, it, tmp) \
	for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head); \
	     (it) = (tmp), (tmp) = (it)->next)

#endif /* BRAID_LIST_H */
