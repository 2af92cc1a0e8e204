/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_progress.c: the domain's progress thread: while the application does not call in, it drives the endpoints (ACKs, retransmissions, RC responses, queued sends), as a NIC does without the host. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

/* The process clock every timer of the provider reads (CLOCK_MONOTONIC, in ns). */
uint64_t braid_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * braid's data progress is manual: its reliability (RD ACKs and
 * retransmissions, the RC responder's ACKs and READ responses) runs inside
 * the application's calls. An application that computes, sleeps or waits
 * on something else stops it, and its peers' operations fail: an RC QP
 * after its retries (0.54 s by default), an RDM peer after
 * FI_BRAID_PEER_TIMEOUT_MS. A NIC acknowledges in hardware; this thread
 * stands in for it, and stays out of the application's way:
 *
 * - It looks when each enabled endpoint was last driven by the application
 *   (a read of a CQ or counter it is bound to, braid_epset_progress())
 *   and drives, itself, those left alone for FI_BRAID_PROGRESS_US, again
 *   every FI_BRAID_PROGRESS_US while they stay alone.
 * - While every endpoint is driven by its application it backs off: its
 *   sleep doubles after each look that found nothing to do, up to
 *   PT_BACKOFF_MAX periods (64 ms by default), so a busy application is
 *   woken into about 16 times a second, not 1000 (a wake-up every 1 ms
 *   cost a busy-polling ping-pong's p99 3x on 2 cores: docs/benchmarks.md,
 *   *The progress thread's cost*). An endpoint left alone is found within that sleep plus a period.
 * - It sleeps on a lock of its own and only tries each endpoint's: held,
 *   the application (or another of its threads) is in that endpoint now,
 *   driving it. It never waits for one: an endpoint's lock may be the
 *   domain's (MSG), which control calls hold while they take the set's.
 */

/* the longest back-off, in periods */
#define PT_BACKOFF_MAX	64

static void ts_at(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

/* Drive the endpoints of @dom left alone for @period; true when one was. */
static bool progress_pass(struct braid_domain *dom, uint64_t period)
{
	uint64_t now = braid_now_ns();
	bool served = false;
	int i;

	pthread_mutex_lock(&dom->eps.lock);
	for (i = 0; i < dom->eps.n; i++) {
		struct braid_ep *ep = dom->eps.eps[i];

		if (now - ep->app_ns < period || braid_ep_trylock(ep))
			continue;
		/* looked again under its lock: the application may have just driven it */
		if (now - ep->app_ns >= period) {
			braid_ep_progress(ep);
			dom->pt_passes++;
			served = true;
		}
		braid_ep_unlock(ep);
	}
	pthread_mutex_unlock(&dom->eps.lock);
	return served;
}

static void *progress_main(void *arg)
{
	struct braid_domain *dom = arg;
	uint64_t period = (uint64_t)braid_cfg.progress_us * 1000, sleep = period;

	pthread_mutex_lock(&dom->pt_lock);
	while (!dom->pt_stop) {
		struct timespec ts;

		if (progress_pass(dom, period))
			sleep = period;
		else if (sleep < PT_BACKOFF_MAX * period)
			sleep *= 2;
		ts_at(&ts, braid_now_ns() + sleep);
		(void)pthread_cond_timedwait(&dom->pt_cond, &dom->pt_lock, &ts);
	}
	pthread_mutex_unlock(&dom->pt_lock);
	return NULL;
}

/*
 * The domains whose thread runs: an application may exit with a domain
 * open, and libfabric then unloads the provider (braid_cleanup) while the
 * thread would still run its code.
 */
static pthread_mutex_t pt_all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct braid_dlist pt_all = { &pt_all, &pt_all };

/*
 * fork(2) copies the locks a thread holds, and the child has no thread to
 * release them: were a thread in a pass at the fork (holding its domain's
 * endpoint set), the child's endpoint closes would wait for ever. Around a
 * fork each thread is held between passes (its pt_lock, which it holds
 * except while it sleeps); the fork's parent and child both let go.
 */
static void progress_fork_prepare(void)
{
	struct braid_dlist *it;

	pthread_mutex_lock(&pt_all_lock);
	braid_dlist_foreach(&pt_all, it)
		pthread_mutex_lock(&braid_container_of(it, struct braid_domain, pt_node)->pt_lock);
}

static void progress_fork_release(void)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&pt_all, it)
		pthread_mutex_unlock(&braid_container_of(it, struct braid_domain, pt_node)->pt_lock);
	pthread_mutex_unlock(&pt_all_lock);
}

static void progress_fork_register(void)
{
	/* (from a shared object: glibc forgets the handlers when it is unloaded) */
	(void)pthread_atfork(progress_fork_prepare, progress_fork_release, progress_fork_release);
}

int braid_progress_start(struct braid_domain *dom)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	pthread_condattr_t attr;
	int ret;

	if (braid_cfg.progress_us <= 0)
		return 0;
	(void)pthread_once(&fork_once, progress_fork_register);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);	/* braid_now_ns()'s clock */
	ret = pthread_cond_init(&dom->pt_cond, &attr);
	pthread_condattr_destroy(&attr);
	if (ret)
		return -FI_ENOMEM;
	pthread_mutex_init(&dom->pt_lock, NULL);
	dom->pt_stop = false;
	ret = pthread_create(&dom->pt, NULL, progress_main, dom);
	if (ret) {
		pthread_cond_destroy(&dom->pt_cond);
		pthread_mutex_destroy(&dom->pt_lock);
		BRAID_WARN(FI_LOG_DOMAIN, "no progress thread: %s\n", strerror(ret));
		return -FI_ENOMEM;
	}
	dom->pt_pid = getpid();
	dom->pt_running = true;
	pthread_mutex_lock(&pt_all_lock);
	braid_dlist_insert_tail(&dom->pt_node, &pt_all);
	pthread_mutex_unlock(&pt_all_lock);
	return 0;
}

/* Stop the domain's thread, if it runs (the caller holds pt_all_lock). */
static void progress_halt(struct braid_domain *dom)
{
	if (dom->pt_running) {
		braid_dlist_remove(&dom->pt_node);
		/*
		 * A forked child has the domain but not the thread: nothing to
		 * stop, and the thread's lock and condition are as the fork found
		 * them (the condition waited on: destroying it would wait for a
		 * waiter that is not in this process, for ever).
		 */
		if (getpid() == dom->pt_pid) {
			pthread_mutex_lock(&dom->pt_lock);
			dom->pt_stop = true;
			pthread_cond_signal(&dom->pt_cond);
			pthread_mutex_unlock(&dom->pt_lock);
			pthread_join(dom->pt, NULL);
			pthread_cond_destroy(&dom->pt_cond);
			pthread_mutex_destroy(&dom->pt_lock);
		}
		BRAID_INFO(FI_LOG_DOMAIN, "progress thread: %lu endpoint progress calls while "
			   "the application was away\n", (unsigned long)dom->pt_passes);
		dom->pt_running = false;
	}
}

void braid_progress_stop(struct braid_domain *dom)
{
	pthread_mutex_lock(&pt_all_lock);
	progress_halt(dom);
	pthread_mutex_unlock(&pt_all_lock);
}

void braid_progress_halt_all(void)
{
	pthread_mutex_lock(&pt_all_lock);
	while (!braid_dlist_empty(&pt_all))
		progress_halt(braid_container_of(pt_all.next, struct braid_domain, pt_node));
	pthread_mutex_unlock(&pt_all_lock);
}
