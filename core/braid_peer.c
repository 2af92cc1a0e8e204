/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_peer.c: the domain-wide table of remote peers (liburcu cds_lfht, memb flavour). */
#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <rdma/fi_errno.h>

#include "braid_peer.h"
#include "braid/braid_hash.h"

/*
 * Lifetime of an entry
 *
 * An entry is created with @ref = 1 (the creator's reference) and inserted
 * with cds_lfht_add_unique(). Readers find it under urcu_memb_read_lock()
 * and take a reference with peer_tryget(), which refuses an entry whose
 * @ref carries PEER_REF_DEAD. Eviction turns @ref from exactly 0 into
 * PEER_REF_DEAD with one compare-and-swap: from then on nobody can take a
 * reference, so the entry is unlinked with cds_lfht_del() and freed by
 * urcu_memb_call_rcu() after a grace period. A getter that meets a dead
 * entry helps unlink it (cds_lfht_del() lets exactly one caller win; the
 * winner owns the free) and looks again, so it never waits on the evictor.
 *
 * Resizing
 *
 * The table sizes itself instead of using CDS_LFHT_AUTO_RESIZE. In every
 * liburcu release up to 0.15.6, __cds_lfht_resize_lazy_launch() queues the
 * resize work before it sets ht->resize_initiated; when the worker runs
 * and finishes first, the flag stays set and the table never resizes
 * again (the fix, commit 6f05e9b "fix resize problems", sits unmerged in
 * urcu/userspace-rcu pull request 26). On 0.13.2 one run in three of
 * 100,000 inserts stuck at a handful of buckets: 25-35 s instead of 0.1 s.
 * So an insert that takes the load past PEER_LOAD_GROW grows the table
 * itself with cds_lfht_resize() (outside any read-side section; one
 * resizer at a time, the others carry on), and braid_peer_evict_idle()
 * also shrinks it when the load falls under 1 / PEER_LOAD_SHRINK. A grow
 * costs the inserting thread time linear in the new bucket count (3-10 ms
 * for the grow to 64 Ki buckets on a 2-core VM): braid_peer_table_open()'s
 * @initial sizes the table up front to keep that off the data path.
 */

/* @ref's dead mark: the entry is being removed; no new reference. */
#define PEER_REF_DEAD (1U << 31)

/* Largest initial bucket count asked of cds_lfht (it grows past it). */
#define PEER_TABLE_MAX_INITIAL (1UL << 24)
/* Bucket count ceiling: far beyond any domain's peers. */
#define PEER_TABLE_MAX_BUCKETS (1UL << 32)
/* Grow when entries exceed this many per bucket ... */
#define PEER_LOAD_GROW 2
/* ... and shrink (at eviction) when buckets exceed this many per entry. */
#define PEER_LOAD_SHRINK 8

/* The idle state stays small: 72 bytes on LP64 (see the unit test). */
_Static_assert(sizeof(struct braid_peer) <= 128, "struct braid_peer grew past 128 bytes");

/**
 * struct braid_peer_table - the cds_lfht and what its RCU callbacks need.
 */
struct braid_peer_table {
	/** @ht: the RCU hash table (memb flavour, resized by peer_table_resize()). */
	struct cds_lfht *ht;
	/** @release_active: frees an entry's @active state, or NULL. */
	void (*release_active)(void *active);
	/** @count: entries linked in @ht (incremented before insert, so >= 0). */
	atomic_long count;
	/** @buckets: @ht's bucket count, a power of two; written by the resizer. */
	atomic_ulong buckets;
	/** @min_buckets: never shrink below this (the size asked at open). */
	unsigned long min_buckets;
	/** @resizing: a thread is in peer_table_resize(); others skip it. */
	atomic_bool resizing;
};

/* ---- thread registration ------------------------------------------------- */

/* Whether this thread is registered with urcu-memb for its lifetime. */
static _Thread_local bool rcu_registered;

static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t rcu_key;
static int rcu_key_err;

/* Runs at thread exit (pthread TSD destructor) for registered threads. */
static void rcu_thread_exit(void *unused)
{
	(void)unused;
	if (rcu_registered) {
		rcu_registered = false;
		urcu_memb_unregister_thread();
	}
}

static void rcu_key_create(void)
{
	rcu_key_err = pthread_key_create(&rcu_key, rcu_thread_exit);
}

int braid_rcu_register(void)
{
	if (rcu_registered)
		return 0;
	/* Registered by the application itself: its registration, not ours. */
	if (URCU_TLS(urcu_memb_reader).registered)
		return 0;
	pthread_once(&rcu_key_once, rcu_key_create);
	if (rcu_key_err)
		return -FI_ENOMEM;
	/* The hook first: a thread is never left registered without it. */
	if (pthread_setspecific(rcu_key, (void *)1))
		return -FI_ENOMEM;
	urcu_memb_register_thread();
	rcu_registered = true;
	return 0;
}

/*
 * peer_rcu_enter() - make the calling thread an RCU reader for one call.
 * Return: true when it had to register just for this call; pass the result
 * to peer_rcu_leave().
 */
static bool peer_rcu_enter(void)
{
	if (braid_rcu_register() == 0)
		return false;
	urcu_memb_register_thread();
	return true;
}

static void peer_rcu_leave(bool temporary)
{
	if (temporary)
		urcu_memb_unregister_thread();
}

/* ---- hashing and references ---------------------------------------------- */

/* splitmix64 finaliser: keys share their high (address) bits and differ low. */
static inline unsigned long peer_hash(uint64_t key)
{
	return (unsigned long)braid_mix64(key);
}

static int peer_match(struct cds_lfht_node *node, const void *key)
{
	const struct braid_peer *peer = caa_container_of(node, struct braid_peer, node);

	return peer->key == *(const uint64_t *)key;
}

/* Take a reference unless the entry is being evicted. */
static bool peer_tryget(struct braid_peer *peer)
{
	unsigned int ref = atomic_load_explicit(&peer->ref, memory_order_relaxed);

	do {
		if (ref & PEER_REF_DEAD)
			return false;
		assert(ref + 1 < PEER_REF_DEAD);
	} while (!atomic_compare_exchange_weak_explicit(&peer->ref, &ref, ref + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

/* RCU callback: no reader can see @head's entry any more. */
static void peer_free_rcu(struct rcu_head *head)
{
	struct braid_peer *peer = caa_container_of(head, struct braid_peer, rcu);
	struct braid_peer_table *table = peer->table;

	if (peer->active && table->release_active)
		table->release_active(peer->active);
	free(peer);
}

/*
 * Unlink @peer; the caller that wins cds_lfht_del() queues the free.
 * Call inside a read-side section, with @peer dead or the table closing.
 */
static void peer_unlink_locked(struct braid_peer_table *table, struct braid_peer *peer)
{
	assert(urcu_memb_read_ongoing());
	if (cds_lfht_del(table->ht, &peer->node) == 0) {
		atomic_fetch_sub_explicit(&table->count, 1, memory_order_relaxed);
		urcu_memb_call_rcu(&peer->rcu, peer_free_rcu);
	}
}

/* Look @key up and take a reference; NULL when absent. */
static struct braid_peer *peer_lookup_locked(struct braid_peer_table *table,
					     uint64_t key, unsigned long hash)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	struct braid_peer *peer;

	assert(urcu_memb_read_ongoing());
	for (;;) {
		cds_lfht_lookup(table->ht, hash, peer_match, &key, &iter);
		node = cds_lfht_iter_get_node(&iter);
		if (!node)
			return NULL;
		peer = caa_container_of(node, struct braid_peer, node);
		if (peer_tryget(peer))
			return peer;
		/* Being evicted: help unlink it, then it is absent. */
		peer_unlink_locked(table, peer);
	}
}

/* Insert @fresh (holding one reference) unless @key is present already. */
static struct braid_peer *peer_insert_locked(struct braid_peer_table *table,
					     struct braid_peer *fresh, unsigned long hash)
{
	struct cds_lfht_node *node;
	struct braid_peer *peer;

	assert(urcu_memb_read_ongoing());
	for (;;) {
		atomic_fetch_add_explicit(&table->count, 1, memory_order_relaxed);
		node = cds_lfht_add_unique(table->ht, hash, peer_match, &fresh->key,
					   &fresh->node);
		if (node == &fresh->node)
			return fresh;
		atomic_fetch_sub_explicit(&table->count, 1, memory_order_relaxed);
		peer = caa_container_of(node, struct braid_peer, node);
		if (peer_tryget(peer))
			return peer;
		peer_unlink_locked(table, peer);
	}
}

/* ---- sizing --------------------------------------------------------------- */

/* The smallest power of two >= @n, within [1, PEER_TABLE_MAX_BUCKETS]. */
static unsigned long pow2_ceil(unsigned long n)
{
	unsigned long p = 1;

	while (p < n && p < PEER_TABLE_MAX_BUCKETS)
		p <<= 1;
	return p;
}

/* The bucket count @table should move to, or 0 to stay. */
static unsigned long peer_table_want(struct braid_peer_table *table, bool may_shrink)
{
	long count = atomic_load(&table->count);
	unsigned long buckets = atomic_load(&table->buckets);
	unsigned long entries = count > 0 ? (unsigned long)count : 0;
	unsigned long want;

	if (entries / PEER_LOAD_GROW > buckets && buckets < PEER_TABLE_MAX_BUCKETS)
		return pow2_ceil(entries);
	if (may_shrink && buckets > table->min_buckets &&
	    entries < buckets / PEER_LOAD_SHRINK) {
		want = pow2_ceil(entries);
		return want > table->min_buckets ? want : table->min_buckets;
	}
	return 0;
}

/*
 * Resize @table if its load asks for it. Call outside any read-side
 * section (a shrink waits for a grace period). One thread resizes at a
 * time; a thread that finds another resizing returns at once, and the
 * resizer looks at the count again before it leaves.
 */
static void peer_table_resize(struct braid_peer_table *table, bool may_shrink)
{
	unsigned long want;

	/* Called from inside the caller's own read-side section: next time. */
	if (urcu_memb_read_ongoing())
		return;
	for (;;) {
		if (!peer_table_want(table, may_shrink))
			return;
		if (atomic_exchange(&table->resizing, true))
			return;
		want = peer_table_want(table, may_shrink);
		if (want) {
			cds_lfht_resize(table->ht, want);
			atomic_store(&table->buckets, want);
		}
		atomic_store(&table->resizing, false);
	}
}

/* ---- the API ------------------------------------------------------------- */

/*
 * liburcu's call_rcu worker thread does not survive fork(): a child that then
 * waits for an RCU barrier (closing a table) would wait forever. liburcu's
 * own fork hooks re-create the worker in the child; they are registered once,
 * from this shared object (glibc drops them again if it is unloaded).
 */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_hooks_register(void)
{
	(void)pthread_atfork(urcu_memb_call_rcu_before_fork, urcu_memb_call_rcu_after_fork_parent,
			     urcu_memb_call_rcu_after_fork_child);
}

int braid_peer_table_open(struct braid_peer_table **table, size_t initial,
			  void (*release_active)(void *active))
{
	struct braid_peer_table *t;
	unsigned long buckets = 1;

	pthread_once(&fork_once, fork_hooks_register);

	if (!table)
		return -FI_EINVAL;
	*table = NULL;
	while (buckets < initial && buckets < PEER_TABLE_MAX_INITIAL)
		buckets <<= 1;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -FI_ENOMEM;
	t->release_active = release_active;
	atomic_init(&t->count, 0);
	atomic_init(&t->buckets, buckets);
	t->min_buckets = buckets;
	atomic_init(&t->resizing, false);
	/*
	 * max_nr_buckets 0: unbounded, order-based bucket tables (memory
	 * follows the size). No AUTO_RESIZE (see "Resizing" above), so no
	 * ACCOUNTING either: liburcu only uses its counters to resize.
	 */
	t->ht = cds_lfht_new_flavor(buckets, 1, 0, 0, &urcu_memb_flavor, NULL);
	if (!t->ht) {
		free(t);
		return -FI_ENOMEM;
	}
	*table = t;
	return 0;
}

void braid_peer_table_close(struct braid_peer_table *table)
{
	struct cds_lfht_iter iter;
	struct braid_peer *peer;
	bool temporary;
	int ret;

	if (!table)
		return;
	temporary = peer_rcu_enter();
	urcu_memb_read_lock();
	cds_lfht_for_each_entry(table->ht, &iter, peer, node)
		peer_unlink_locked(table, peer);
	urcu_memb_read_unlock();
	/* Every free queued above, or by an earlier eviction, runs now. */
	urcu_memb_barrier();
	ret = cds_lfht_destroy(table->ht, NULL);
	assert(ret == 0);
	(void)ret;
	peer_rcu_leave(temporary);
	free(table);
}

struct braid_peer *braid_peer_get(struct braid_peer_table *table, uint64_t key,
				  int create, int *created)
{
	struct braid_peer *peer, *fresh;
	unsigned long hash = peer_hash(key);
	bool temporary;

	if (created)
		*created = 0;
	if (!table)
		return NULL;
	temporary = peer_rcu_enter();

	urcu_memb_read_lock();
	peer = peer_lookup_locked(table, key, hash);
	urcu_memb_read_unlock();
	if (peer || !create)
		goto out;

	/* Allocate outside the read-side section; insert unless someone won. */
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		goto out;
	cds_lfht_node_init(&fresh->node);
	fresh->key = key;
	atomic_init(&fresh->ref, 1);
	fresh->table = table;

	urcu_memb_read_lock();
	peer = peer_insert_locked(table, fresh, hash);
	urcu_memb_read_unlock();
	if (peer == fresh) {
		if (created)
			*created = 1;
		peer_table_resize(table, false);
	} else {
		/* Never published: no grace period needed. */
		free(fresh);
	}
out:
	peer_rcu_leave(temporary);
	return peer;
}

void braid_peer_put(struct braid_peer *peer)
{
	unsigned int old;

	/* release: the caller's writes happen before an evictor sees 0. */
	old = atomic_fetch_sub_explicit(&peer->ref, 1, memory_order_release);
	assert(old != 0 && !(old & PEER_REF_DEAD));
	(void)old;
}

void braid_peer_put_evict(struct braid_peer *peer)
{
	struct braid_peer_table *table = peer->table;
	unsigned int ref = 1;
	bool temporary;

	/* the last reference of an entry with no active state: dead at once */
	if (peer->active || !atomic_compare_exchange_strong_explicit(&peer->ref, &ref, PEER_REF_DEAD,
								     memory_order_acq_rel,
								     memory_order_relaxed)) {
		braid_peer_put(peer);
		return;
	}
	temporary = peer_rcu_enter();
	urcu_memb_read_lock();
	peer_unlink_locked(table, peer);
	urcu_memb_read_unlock();
	peer_rcu_leave(temporary);
}

size_t braid_peer_evict_idle(struct braid_peer_table *table, uint64_t now, uint64_t idle_ns)
{
	struct cds_lfht_iter iter;
	struct braid_peer *peer;
	unsigned int ref;
	size_t removed = 0;
	bool temporary;

	if (!table)
		return 0;
	temporary = peer_rcu_enter();
	urcu_memb_read_lock();
	cds_lfht_for_each_entry(table->ht, &iter, peer, node) {
		uint64_t last;

		/* acquire: pairs with braid_peer_put()'s release. */
		if (atomic_load_explicit(&peer->ref, memory_order_acquire) != 0)
			continue;
		last = __atomic_load_n(&peer->last_active, __ATOMIC_RELAXED);
		if (peer->active || last > now || now - last <= idle_ns)
			continue;
		ref = 0;
		if (!atomic_compare_exchange_strong_explicit(&peer->ref, &ref, PEER_REF_DEAD,
							     memory_order_acq_rel,
							     memory_order_relaxed))
			continue;	/* someone took a reference meanwhile */
		peer_unlink_locked(table, peer);
		removed++;
	}
	urcu_memb_read_unlock();
	if (removed)
		peer_table_resize(table, true);
	peer_rcu_leave(temporary);
	return removed;
}

void braid_peer_table_shrink(struct braid_peer_table *table)
{
	bool temporary;

	if (!table)
		return;
	temporary = peer_rcu_enter();
	peer_table_resize(table, true);
	peer_rcu_leave(temporary);
}

size_t braid_peer_count(struct braid_peer_table *table)
{
	long count;

	if (!table)
		return 0;
	count = atomic_load_explicit(&table->count, memory_order_relaxed);
	return count > 0 ? (size_t)count : 0;
}
