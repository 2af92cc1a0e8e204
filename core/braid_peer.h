/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_peer.h: the domain-wide table of remote peers (liburcu cds_lfht, memb flavour). */
#ifndef BRAID_PEER_H
#define BRAID_PEER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

/*
 * One entry per remote endpoint (IPv4 address + home UDP port), shared by
 * every local endpoint of the domain that talks to it. Lookups run under
 * an RCU read-side critical section (memb flavour: application threads
 * never announce quiescent states; braid registers each calling thread on
 * first use). An entry is created by the first packet in either direction
 * (braid_peer_get with create). Idle entries are small; the engine hangs
 * its per-peer traffic state (windows, paths, congestion control) off
 * @active only while traffic flows. Entries are freed through call_rcu,
 * so a reader inside its read-side section never sees freed memory.
 *
 * @last_active is written and read with relaxed atomics by whichever
 * engine hears from the peer (endpoints of one domain run in different
 * threads, each under its own lock); mutation of @active is serialised by
 * the table's user, and braid_peer_evict_idle() runs under that same
 * serialisation; the table itself is safe for concurrent
 * lookup/insert/remove from any thread (each public call registers its
 * thread with urcu-memb on first use). The table resizes itself, from
 * braid_peer_get() and braid_peer_evict_idle(), not with liburcu's
 * CDS_LFHT_AUTO_RESIZE (a lost-resize race in liburcu <= 0.15; see
 * braid_peer.c); neither resizes when called inside the caller's own RCU
 * read-side section.
 */

/** braid_peer_key() - the table key of a remote endpoint (host byte order inputs). */
static inline uint64_t braid_peer_key(uint32_t ipv4, uint16_t port)
{
	return ((uint64_t)ipv4 << 16) | port;
}

struct braid_peer_table;

/**
 * struct braid_peer - one remote endpoint.
 */
struct braid_peer {
	/** @node: cds_lfht linkage (first: keeps the hot fields together). */
	struct cds_lfht_node node;
	/** @key: braid_peer_key() of the peer's home address. */
	uint64_t key;
	/**
	 * @ref: references held by users (braid_peer_get/put); evictable at 0.
	 * Eviction swaps 0 for a dead mark (the top bit), after which no new
	 * reference can be taken and the entry is being unlinked.
	 */
	atomic_uint ref;
	/**
	 * @last_active: time (ns, the caller's clock) of the last packet either
	 * way; 0 on creation (the caller stamps it). Relaxed atomic accesses only.
	 */
	uint64_t last_active;
	/**
	 * @active: state the table's user hangs off the entry, shared by every
	 * endpoint of the domain, NULL while none; an entry with it is never
	 * evicted and release_active() frees it with the entry. braid's RD
	 * engines do not use it: what one endpoint knows of a peer (its epoch,
	 * sequence numbers, traffic state) is that endpoint's own (its rd_conn),
	 * since endpoints sharing a peer see it restart each for itself.
	 */
	void *active;
	/** @table: the table holding it (for release). */
	struct braid_peer_table *table;
	/** @rcu: deferred free. */
	struct rcu_head rcu;
};

/**
 * braid_peer_table_open() - create an empty table.
 * @table: out.
 * @initial: expected number of peers. The table is sized for it up front
 *	and grows past it; a grow runs in the inserting thread and costs time
 *	linear in the table size, so size it generously.
 * @release_active: called (from the RCU callback) to free a peer's @active
 *	state when the entry is freed, or NULL.
 * Return: 0, -FI_EINVAL (NULL @table), -FI_ENOMEM.
 * The caller must eventually call braid_peer_table_close().
 */
int braid_peer_table_open(struct braid_peer_table **table, size_t initial,
			  void (*release_active)(void *active));

/**
 * braid_peer_table_close() - remove and free every entry, then the table.
 * No other thread may use the table any more; entries still referenced are
 * freed too. release_active() is called for each non-NULL @active. Waits
 * for pending RCU frees (urcu_memb_barrier()), so call it neither inside an
 * RCU read-side section nor from an RCU callback. NULL is a no-op.
 */
void braid_peer_table_close(struct braid_peer_table *table);

/**
 * braid_peer_get() - find the peer with @key, creating it if @create.
 * Concurrent creators of one key all get the same entry (cds_lfht_add_unique;
 * the losers' allocations are freed). The result carries a reference.
 * @created: if not NULL, set to 1 when this call inserted the entry.
 * Return: the peer, or NULL when absent (and !@create), out of memory, or
 * @table is NULL.
 * The caller must eventually call braid_peer_put().
 */
struct braid_peer *braid_peer_get(struct braid_peer_table *table, uint64_t key,
				  int create, int *created);

/**
 * braid_peer_put() - drop a reference taken by braid_peer_get().
 * The entry may be evicted (and freed after a grace period) once the last
 * reference is gone: do not touch @peer after this call.
 */
void braid_peer_put(struct braid_peer *peer);

/**
 * braid_peer_put_evict() - drop a reference; if it was the last one and the
 * entry has no @active state, remove the entry at once (freed after a grace
 * period) instead of leaving it for braid_peer_evict_idle(). A concurrent
 * braid_peer_get() either took its reference first (the entry stays) or
 * finds the key absent and creates a fresh entry. Do not touch @peer after.
 */
void braid_peer_put_evict(struct braid_peer *peer);

/**
 * braid_peer_evict_idle() - remove entries with no reference and no @active
 * state whose last_active is older than @now - @idle_ns (entries stamped
 * later than @now are kept). They are freed after an RCU grace period.
 * Concurrent braid_peer_get() is safe: an entry either keeps its new
 * reference and stays, or is evicted and the getter sees it absent.
 * Call with the serialisation that guards writes to @active/@last_active.
 * Return: how many entries were removed (0 for a NULL @table).
 */
size_t braid_peer_evict_idle(struct braid_peer_table *table, uint64_t now, uint64_t idle_ns);

/**
 * braid_peer_table_shrink() - give back buckets once the load has fallen
 * under 1 / PEER_LOAD_SHRINK (entries that went by braid_peer_put_evict()
 * leave the table as large as it grew). Waits for a grace period when it
 * shrinks; does nothing inside a read-side section or while another thread
 * resizes. Harmless on a NULL @table.
 */
void braid_peer_table_shrink(struct braid_peer_table *table);

/** braid_peer_count() - entries in the table (approximate under concurrency). */
size_t braid_peer_count(struct braid_peer_table *table);

/**
 * braid_rcu_register() - register the calling thread with urcu-memb once
 * (idempotent); it is unregistered automatically when it exits (a
 * pthread key destructor). Exiting the process without pthread_exit()
 * leaves the main thread registered, which is harmless.
 * A thread the application registered with urcu-memb itself is left
 * alone (it must then stay registered while it calls into braid).
 * Return: 0 once the thread is registered, -FI_ENOMEM when the thread-exit
 * hook cannot be installed (the thread is then left unregistered; braid's
 * own calls fall back to registering for the duration of each call).
 */
int braid_rcu_register(void);

#endif /* BRAID_PEER_H */
