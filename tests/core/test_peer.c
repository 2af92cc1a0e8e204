/* SPDX-License-Identifier: BSD-2-Clause */
/* test_peer.c: unit tests of core/braid_peer.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fi_errno.h>

#include "braid_peer.h"

#define PEER_REF_DEAD (1U << 31)	/* braid_peer.c's eviction mark */

static uint64_t key_of(uint32_t i)
{
	/* 10.0.0.0/8 addresses, all on the same port: keys differ in the low bits. */
	return braid_peer_key(0x0a000000u + i, 4791);
}

/*
 * Registration counting: the test binary interposes urcu-memb's
 * register/unregister calls (the executable's definitions win over the
 * shared library's) and forwards them to the real ones. Only calls made by
 * threads that set counted_thread are counted, so liburcu's own worker
 * threads do not disturb the numbers.
 */
static _Thread_local bool counted_thread;
static atomic_int registers, unregisters;

typedef void (*void_fn)(void);

static void_fn real_fn(const char *name)
{
	void_fn fn;
	void *sym = dlsym(RTLD_NEXT, name);

	/* Not cr_assert: this runs on any thread, liburcu's own included. */
	if (!sym)
		abort();
	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

void urcu_memb_register_thread(void)
{
	if (counted_thread)
		atomic_fetch_add(&registers, 1);
	real_fn("urcu_memb_register_thread")();
}

void urcu_memb_unregister_thread(void)
{
	if (counted_thread)
		atomic_fetch_add(&unregisters, 1);
	real_fn("urcu_memb_unregister_thread")();
}

/* release_active() bookkeeping: each token counts its own releases. */
struct token {
	atomic_int released;
};

static atomic_int releases;

static void release_token(void *active)
{
	struct token *t = active;

	atomic_fetch_add(&t->released, 1);
	atomic_fetch_add(&releases, 1);
}

Test(braid_peer_table_open, rejects_null_and_closes_empty)
{
	struct braid_peer_table *table;

	cr_assert_eq(braid_peer_table_open(NULL, 16, NULL), -FI_EINVAL);
	cr_assert_eq(braid_peer_table_open(&table, 0, NULL), 0);
	cr_assert_not_null(table);
	cr_assert_eq(braid_peer_count(table), 0);
	braid_peer_table_close(table);
	braid_peer_table_close(NULL);
	cr_assert_null(braid_peer_get(NULL, 1, 1, NULL));
	cr_assert_eq(braid_peer_evict_idle(NULL, 10, 1), 0);
	cr_assert_eq(braid_peer_count(NULL), 0);
}

Test(braid_peer_get, creates_once)
{
	struct braid_peer_table *table;
	struct braid_peer *a, *b;
	int created = -1;

	cr_assert_eq(braid_peer_table_open(&table, 4, NULL), 0);
	a = braid_peer_get(table, key_of(1), 1, &created);
	cr_assert_not_null(a);
	cr_assert_eq(created, 1, "the first get with create inserts");
	cr_assert_eq(a->key, key_of(1));
	cr_assert_eq(a->ref, 1);
	cr_assert_eq(a->last_active, 0);
	cr_assert_null(a->active);
	cr_assert_eq(a->table, table);

	b = braid_peer_get(table, key_of(1), 1, &created);
	cr_assert_eq(b, a, "a second get with create finds the same entry");
	cr_assert_eq(created, 0);
	cr_assert_eq(a->ref, 2);
	b = braid_peer_get(table, key_of(1), 0, &created);
	cr_assert_eq(b, a);
	cr_assert_eq(created, 0);
	cr_assert_eq(a->ref, 3);
	cr_assert_eq(braid_peer_count(table), 1);

	braid_peer_put(a);
	braid_peer_put(a);
	braid_peer_put(a);
	cr_assert_eq(a->ref, 0);
	cr_assert_eq(braid_peer_get(table, key_of(1), 0, NULL), a,
		     "an unreferenced entry stays until evicted");
	braid_peer_put(a);
	braid_peer_table_close(table);
}

Test(braid_peer_get, missing_without_create_is_null)
{
	struct braid_peer_table *table;
	struct braid_peer *a;
	int created = -1;

	cr_assert_eq(braid_peer_table_open(&table, 4, NULL), 0);
	cr_assert_null(braid_peer_get(table, key_of(7), 0, &created));
	cr_assert_eq(created, 0);
	cr_assert_eq(braid_peer_count(table), 0, "a lookup creates nothing");

	a = braid_peer_get(table, key_of(7), 1, NULL);
	cr_assert_not_null(a);
	cr_assert_null(braid_peer_get(table, key_of(8), 0, NULL), "a neighbouring key is absent");
	cr_assert_null(braid_peer_get(table, braid_peer_key(0x0a000007u, 4792), 0, NULL),
		       "the port is part of the key");
	braid_peer_put(a);
	braid_peer_table_close(table);
}

Test(braid_peer_evict_idle, keeps_referenced_active_and_recent)
{
	struct braid_peer_table *table;
	struct braid_peer *held, *busy, *recent, *idle, *future;
	struct token tok = { 0 };

	atomic_store(&releases, 0);
	cr_assert_eq(braid_peer_table_open(&table, 8, release_token), 0);
	held = braid_peer_get(table, key_of(1), 1, NULL);
	busy = braid_peer_get(table, key_of(2), 1, NULL);
	recent = braid_peer_get(table, key_of(3), 1, NULL);
	idle = braid_peer_get(table, key_of(4), 1, NULL);
	future = braid_peer_get(table, key_of(5), 1, NULL);
	held->last_active = 100;
	busy->last_active = 100;
	busy->active = &tok;
	recent->last_active = 950;
	idle->last_active = 900;
	future->last_active = 5000;
	braid_peer_put(busy);
	braid_peer_put(recent);
	braid_peer_put(idle);
	braid_peer_put(future);

	/* Idle means last_active < now - idle_ns: 900 is not older than 1000 - 100. */
	cr_assert_eq(braid_peer_evict_idle(table, 1000, 100), 0);
	cr_assert_eq(braid_peer_evict_idle(table, 1001, 100), 1, "only the idle entry goes");
	cr_assert_eq(braid_peer_count(table), 4);
	cr_assert_null(braid_peer_get(table, key_of(4), 0, NULL));
	cr_assert_eq(braid_peer_get(table, key_of(3), 0, NULL), recent);
	braid_peer_put(recent);
	cr_assert_eq(braid_peer_get(table, key_of(2), 0, NULL), busy);
	braid_peer_put(busy);
	cr_assert_eq(held->ref, 1);

	/* A put makes an entry evictable; idle_ns 0 with now far ahead. */
	braid_peer_put(held);
	cr_assert_eq(braid_peer_evict_idle(table, 2000, 0), 2, "held and recent go, busy stays");
	cr_assert_eq(braid_peer_count(table), 2);
	cr_assert_eq(atomic_load(&tok.released), 0, "eviction never frees active state");

	braid_peer_table_close(table);
	cr_assert_eq(atomic_load(&tok.released), 1, "close releases the active state");
	cr_assert_eq(atomic_load(&releases), 1);
}

Test(braid_peer_table_close, releases_active_state)
{
	enum { N = 64 };
	struct braid_peer_table *table;
	struct braid_peer *peers[N];
	static struct token tokens[N];
	int i;

	atomic_store(&releases, 0);
	cr_assert_eq(braid_peer_table_open(&table, N, release_token), 0);
	for (i = 0; i < N; i++) {
		peers[i] = braid_peer_get(table, key_of(i), 1, NULL);
		cr_assert_not_null(peers[i]);
		if (i % 4 == 0)
			peers[i]->active = &tokens[i];
		/* Keep a reference on a few idle ones: close frees those too. */
		if (i % 8 != 1)
			braid_peer_put(peers[i]);
	}
	cr_assert_eq(braid_peer_evict_idle(table, UINT64_MAX, 0), N - N / 4 - N / 8,
		     "all but the active and the referenced entries are idle");
	cr_assert_eq(braid_peer_count(table), N / 4 + N / 8);
	cr_assert_eq(atomic_load(&releases), 0);
	braid_peer_table_close(table);
	cr_assert_eq(atomic_load(&releases), N / 4, "one release per non-NULL active");
	for (i = 0; i < N; i++)
		cr_assert_eq(atomic_load(&tokens[i].released), i % 4 == 0 ? 1 : 0,
			     "token %d", i);
}

Test(braid_peer_get, hundred_thousand_peers, .timeout = 30)
{
	enum { N = 100000, NOW = 1000000, IDLE = 1000 };
	struct braid_peer_table *table;
	struct braid_peer **peers;
	static struct token busy;
	int created;
	size_t kept = 0;
	uint32_t i;

	atomic_store(&releases, 0);
	peers = calloc(N, sizeof(*peers));
	cr_assert_not_null(peers);
	cr_assert_eq(braid_peer_table_open(&table, 1024, release_token), 0);
	for (i = 0; i < N; i++) {
		peers[i] = braid_peer_get(table, key_of(i), 1, &created);
		cr_assert_not_null(peers[i]);
		cr_assert_eq(created, 1, "key %u is new", i);
		peers[i]->last_active = 1;
		braid_peer_put(peers[i]);
	}
	cr_assert_eq(braid_peer_count(table), N);

	for (i = 0; i < N; i++) {
		struct braid_peer *p = braid_peer_get(table, key_of(i), 0, NULL);

		cr_assert_eq(p, peers[i], "key %u", i);
		cr_assert_eq(p->key, key_of(i));
		/* Survivors: every 100th keeps a reference, ... */
		if (i % 100 == 0) {
			kept++;
			continue;
		}
		/* ... every 100th + 50 has traffic state, every 100th + 25 is recent. */
		if (i % 100 == 50)
			p->active = &busy;
		if (i % 100 == 25)
			p->last_active = NOW - IDLE;
		kept += (i % 100 == 50 || i % 100 == 25);
		braid_peer_put(p);
	}
	cr_assert_null(braid_peer_get(table, key_of(N), 0, NULL));
	cr_assert_eq(braid_peer_count(table), N);

	cr_assert_eq(braid_peer_evict_idle(table, NOW, IDLE), N - kept);
	cr_assert_eq(braid_peer_count(table), kept);
	cr_assert_eq(braid_peer_evict_idle(table, NOW, IDLE), 0, "a second pass finds nothing");
	for (i = 0; i < N; i++) {
		struct braid_peer *p = braid_peer_get(table, key_of(i), 0, NULL);
		bool survives = i % 100 == 0 || i % 100 == 50 || i % 100 == 25;

		if (!survives) {
			cr_assert_null(p, "key %u was evicted", i);
			continue;
		}
		cr_assert_eq(p, peers[i], "key %u survives", i);
		braid_peer_put(p);
		if (i % 100 == 0)
			braid_peer_put(p);
	}
	braid_peer_table_close(table);
	cr_assert_eq(atomic_load(&releases), N / 100);
	free(peers);
}

/* Heap bytes per idle peer, the hash table's buckets included. */
Test(braid_peer_get, idle_memory_per_peer, .timeout = 30)
{
	enum { N = 100000 };
	struct braid_peer_table *table;
	struct mallinfo2 before, after;
	size_t used;
	uint32_t i;
	bool ok = true;

	cr_assert_eq(braid_peer_table_open(&table, 1, NULL), 0);
	/* Warm up: liburcu's call_rcu thread and per-thread arenas. */
	braid_peer_put(braid_peer_get(table, key_of(N), 1, NULL));
	cr_assert_eq(braid_peer_evict_idle(table, 1, 0), 1);
	urcu_memb_barrier();

	before = mallinfo2();
	for (i = 0; i < N; i++) {
		struct braid_peer *p = braid_peer_get(table, key_of(i), 1, NULL);

		ok &= p != NULL;
		if (p)
			braid_peer_put(p);
	}
	after = mallinfo2();
	cr_assert(ok);
	used = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
	cr_log_info("sizeof(struct braid_peer) = %zu, heap per idle peer = %zu bytes",
		    sizeof(struct braid_peer), used / N);
	cr_assert_leq(used / N, 256, "idle peers cost %zu bytes each", used / N);
	cr_assert_leq(sizeof(struct braid_peer), 128);
	braid_peer_table_close(table);
}

/* ---- concurrency ---------------------------------------------------------- */

enum { RACE_THREADS = 4, RACE_KEYS = 10000 };

struct race_ctx {
	struct braid_peer_table *table;
	pthread_barrier_t start;
	struct braid_peer *got[RACE_THREADS][RACE_KEYS];
	unsigned char created[RACE_THREADS][RACE_KEYS];
};

struct race_arg {
	struct race_ctx *ctx;
	int id;
};

static void *race_creator(void *p)
{
	struct race_arg *arg = p;
	struct race_ctx *ctx = arg->ctx;
	int i, created;

	pthread_barrier_wait(&ctx->start);
	/* Every thread walks the keys in the same order: each key is contended. */
	for (i = 0; i < RACE_KEYS; i++) {
		ctx->got[arg->id][i] = braid_peer_get(ctx->table, key_of(i), 1, &created);
		ctx->created[arg->id][i] = (unsigned char)created;
	}
	return NULL;
}

Test(braid_peer_get, concurrent_creators_get_one_entry, .timeout = 30)
{
	struct race_ctx *ctx = calloc(1, sizeof(*ctx));
	struct race_arg args[RACE_THREADS];
	pthread_t threads[RACE_THREADS];
	int t, i, winners;

	cr_assert_not_null(ctx);
	cr_assert_eq(braid_peer_table_open(&ctx->table, 1, NULL), 0);
	pthread_barrier_init(&ctx->start, NULL, RACE_THREADS);
	for (t = 0; t < RACE_THREADS; t++) {
		args[t] = (struct race_arg){ .ctx = ctx, .id = t };
		cr_assert_eq(pthread_create(&threads[t], NULL, race_creator, &args[t]), 0);
	}
	for (t = 0; t < RACE_THREADS; t++)
		pthread_join(threads[t], NULL);
	pthread_barrier_destroy(&ctx->start);

	cr_assert_eq(braid_peer_count(ctx->table), RACE_KEYS);
	for (i = 0; i < RACE_KEYS; i++) {
		struct braid_peer *p = ctx->got[0][i];

		cr_assert_not_null(p, "key %d", i);
		cr_assert_eq(p->key, key_of(i));
		winners = 0;
		for (t = 0; t < RACE_THREADS; t++) {
			cr_assert_eq(ctx->got[t][i], p, "thread %d got another entry for key %d", t, i);
			winners += ctx->created[t][i];
		}
		cr_assert_eq(winners, 1, "key %d was created %d times", i, winners);
		cr_assert_eq(p->ref, RACE_THREADS);
		cr_assert_eq(braid_peer_get(ctx->table, key_of(i), 0, NULL), p);
		for (t = 0; t <= RACE_THREADS; t++)
			braid_peer_put(p);
	}
	cr_assert_eq(braid_peer_evict_idle(ctx->table, 1, 0), RACE_KEYS);
	cr_assert_eq(braid_peer_count(ctx->table), 0);
	braid_peer_table_close(ctx->table);
	free(ctx);
}

enum { CHURN_GETTERS = 3, CHURN_KEYS = 256, CHURN_ROUNDS = 300 };

struct churn_ctx {
	struct braid_peer_table *table;
	pthread_barrier_t start;
	atomic_int getters_left;
	atomic_long created;
	atomic_long bad;
	long evicted;
};

static void *churn_getter(void *p)
{
	struct churn_ctx *ctx = p;
	long created_here = 0, bad = 0;
	int r, i, created;

	pthread_barrier_wait(&ctx->start);
	for (r = 0; r < CHURN_ROUNDS; r++) {
		for (i = 0; i < CHURN_KEYS; i++) {
			struct braid_peer *peer, *again;

			peer = braid_peer_get(ctx->table, key_of(i), 1, &created);
			if (!peer || peer->key != key_of(i) ||
			    (atomic_load(&peer->ref) & PEER_REF_DEAD)) {
				bad++;
				continue;
			}
			created_here += created;
			/* Referenced, so still the table's entry for the key. */
			again = braid_peer_get(ctx->table, key_of(i), 0, NULL);
			bad += again != peer;
			if (again)
				braid_peer_put(again);
			braid_peer_put(peer);
		}
	}
	atomic_fetch_add(&ctx->created, created_here);
	atomic_fetch_add(&ctx->bad, bad);
	atomic_fetch_sub(&ctx->getters_left, 1);
	return NULL;
}

static void *churn_evictor(void *p)
{
	struct churn_ctx *ctx = p;

	pthread_barrier_wait(&ctx->start);
	/* last_active stays 0, so every unreferenced entry is idle at now = 1. */
	while (atomic_load(&ctx->getters_left) > 0)
		ctx->evicted += (long)braid_peer_evict_idle(ctx->table, 1, 0);
	return NULL;
}

/* Gets racing evictions: a reference is never taken on an evicted entry. */
Test(braid_peer_evict_idle, races_with_get, .timeout = 30)
{
	struct churn_ctx ctx = { 0 };
	pthread_t getters[CHURN_GETTERS], evictor;
	int t;

	cr_assert_eq(braid_peer_table_open(&ctx.table, 16, NULL), 0);
	atomic_init(&ctx.getters_left, CHURN_GETTERS);
	pthread_barrier_init(&ctx.start, NULL, CHURN_GETTERS + 1);
	cr_assert_eq(pthread_create(&evictor, NULL, churn_evictor, &ctx), 0);
	for (t = 0; t < CHURN_GETTERS; t++)
		cr_assert_eq(pthread_create(&getters[t], NULL, churn_getter, &ctx), 0);
	for (t = 0; t < CHURN_GETTERS; t++)
		pthread_join(getters[t], NULL);
	pthread_join(evictor, NULL);
	pthread_barrier_destroy(&ctx.start);

	cr_assert_eq(atomic_load(&ctx.bad), 0);
	cr_assert_leq(braid_peer_count(ctx.table), CHURN_KEYS);
	ctx.evicted += (long)braid_peer_evict_idle(ctx.table, 1, 0);
	cr_assert_eq(braid_peer_count(ctx.table), 0);
	cr_assert_eq(ctx.evicted, atomic_load(&ctx.created),
		     "every entry created was evicted exactly once (%ld vs %ld)",
		     ctx.evicted, atomic_load(&ctx.created));
	cr_log_info("churn: %ld entries created and evicted", ctx.evicted);
	braid_peer_table_close(ctx.table);
}

struct register_arg {
	struct braid_peer_table *table;
	struct braid_peer *peer;
	int failures;
};

/* No cr_assert off the test's own thread: results go back through @p. */
static void *register_thread(void *p)
{
	struct register_arg *arg = p;

	counted_thread = true;
	arg->failures += braid_rcu_register() != 0;
	arg->failures += braid_rcu_register() != 0;
	arg->peer = braid_peer_get(arg->table, key_of(1), 1, NULL);
	if (arg->peer)
		braid_peer_put(arg->peer);
	braid_peer_evict_idle(arg->table, 0, 0);
	arg->failures += braid_rcu_register() != 0;
	return NULL;
}

Test(braid_rcu_register, once_per_thread_and_unregistered_at_exit)
{
	enum { N = 8 };
	struct braid_peer_table *table;
	struct register_arg args[N] = { 0 };
	pthread_t threads[N];
	int t;

	atomic_store(&registers, 0);
	atomic_store(&unregisters, 0);
	cr_assert_eq(braid_peer_table_open(&table, 1, NULL), 0);
	for (t = 0; t < N; t++) {
		args[t].table = table;
		cr_assert_eq(pthread_create(&threads[t], NULL, register_thread, &args[t]), 0);
	}
	for (t = 0; t < N; t++)
		pthread_join(threads[t], NULL);
	cr_assert_eq(atomic_load(&registers), N, "one registration per thread");
	cr_assert_eq(atomic_load(&unregisters), N, "every thread unregistered at exit");
	for (t = 0; t < N; t++) {
		cr_assert_eq(args[t].failures, 0, "thread %d", t);
		cr_assert_not_null(args[t].peer);
		cr_assert_eq(args[t].peer, args[0].peer, "thread %d", t);
	}
	cr_assert_eq(braid_peer_count(table), 1);
	/* A grace period must not wait on the exited threads. */
	urcu_memb_synchronize_rcu();
	braid_peer_table_close(table);
}

static void *app_registered_thread(void *p)
{
	struct register_arg *arg = p;

	counted_thread = true;
	urcu_memb_register_thread();	/* the application's own registration */
	arg->failures += braid_rcu_register() != 0;
	arg->peer = braid_peer_get(arg->table, key_of(2), 1, NULL);
	if (arg->peer)
		braid_peer_put(arg->peer);
	urcu_memb_unregister_thread();
	return NULL;
}

Test(braid_rcu_register, leaves_application_registration_alone)
{
	struct braid_peer_table *table;
	struct register_arg arg = { 0 };
	pthread_t thread;

	atomic_store(&registers, 0);
	atomic_store(&unregisters, 0);
	cr_assert_eq(braid_peer_table_open(&table, 1, NULL), 0);
	arg.table = table;
	cr_assert_eq(pthread_create(&thread, NULL, app_registered_thread, &arg), 0);
	pthread_join(thread, NULL);
	cr_assert_eq(arg.failures, 0);
	cr_assert_not_null(arg.peer);
	cr_assert_eq(atomic_load(&registers), 1, "braid did not register the thread again");
	cr_assert_eq(atomic_load(&unregisters), 1, "nor unregister it at exit");
	braid_peer_table_close(table);
}

/* A process that forked after using the table can still close one in the child
 * (liburcu's call_rcu worker is re-created there by the fork hooks). */
Test(braid_peer_table_close, works_in_a_forked_child, .timeout = 20)
{
	struct braid_peer_table *t;
	struct braid_peer *p;
	int status;
	pid_t pid;

	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	p = braid_peer_get(t, 42, 1, NULL);
	cr_assert_not_null(p);
	braid_peer_put(p);
	cr_assert_eq(braid_peer_evict_idle(t, 1000000, 1), 1);	/* a call_rcu free in flight */
	braid_peer_table_close(t);
	pid = fork();
	if (pid == 0) {
		struct braid_peer_table *c;

		alarm(10);
		if (braid_peer_table_open(&c, 16, NULL))
			_exit(2);
		p = braid_peer_get(c, 7, 1, NULL);
		braid_peer_put(p);
		braid_peer_evict_idle(c, 1000000, 1);
		braid_peer_table_close(c);
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child closed its table (status 0x%x)", status);
}
