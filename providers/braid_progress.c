/* braid_progress.c: the domain's progress thread: while the application does not call in, it drives the endpoints (ACKs, retransmissions, RC responses, queued sends), as a NIC does without the host. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

/*
 * braid's data progress is manual: its reliability (RD ACKs and
 * retransmissions, the RC responder's ACKs and READ responses) runs inside
 * the application's calls. An application that computes, sleeps or waits
 * on something else stops it, and its peers' operations fail: an RC QP
 * after its retries (0.54 s by default), an RDM peer after
 * FI_BRAID_PEER_TIMEOUT_MS. A NIC acknowledges in hardware; this thread
 * stands in for it. It stays out of the way of the application: every
 * FI_BRAID_PROGRESS_US it takes the domain lock and looks when each
 * enabled endpoint was last driven by the application (a read of a CQ or
 * counter it is bound to, braid_epset_progress_locked()); an endpoint left
 * alone that long it drives itself. So an endpoint whose application is
 * away answers within about one period, and a busy application pays one
 * short lock hold per period.
 */

static void ts_at(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

static void *progress_main(void *arg)
{
	struct braid_domain *dom = arg;
	uint64_t period = (uint64_t)braid_cfg.progress_us * 1000;

	braid_domain_lock(dom);
	while (!dom->pt_stop) {
		uint64_t now = braid_now_ns();
		struct timespec ts;
		int i;

		for (i = 0; i < dom->eps.n; i++) {
			struct braid_ep *ep = dom->eps.eps[i];

			if (now - ep->app_ns < period)
				continue;
			braid_ep_progress(ep);
			dom->pt_passes++;
		}
		ts_at(&ts, braid_now_ns() + period);
		(void)pthread_cond_timedwait(&dom->pt_cond, &dom->lock, &ts);
	}
	braid_domain_unlock(dom);
	return NULL;
}

int braid_progress_start(struct braid_domain *dom)
{
	pthread_condattr_t attr;
	int ret;

	if (braid_cfg.progress_us <= 0)
		return 0;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);	/* braid_now_ns()'s clock */
	ret = pthread_cond_init(&dom->pt_cond, &attr);
	pthread_condattr_destroy(&attr);
	if (ret)
		return -FI_ENOMEM;
	dom->pt_stop = false;
	ret = pthread_create(&dom->pt, NULL, progress_main, dom);
	if (ret) {
		pthread_cond_destroy(&dom->pt_cond);
		BRAID_WARN(FI_LOG_DOMAIN, "no progress thread: %s\n", strerror(ret));
		return -FI_ENOMEM;
	}
	dom->pt_pid = getpid();
	dom->pt_running = true;
	return 0;
}

void braid_progress_stop(struct braid_domain *dom)
{
	if (dom->pt_running) {
		braid_domain_lock(dom);
		dom->pt_stop = true;
		pthread_cond_signal(&dom->pt_cond);
		braid_domain_unlock(dom);
		/* a forked child has the domain but not the thread */
		if (getpid() == dom->pt_pid)
			pthread_join(dom->pt, NULL);
		pthread_cond_destroy(&dom->pt_cond);
		BRAID_INFO(FI_LOG_DOMAIN, "progress thread: %lu endpoint progress calls while "
			   "the application was away\n", (unsigned long)dom->pt_passes);
		dom->pt_running = false;
	}
	braid_epset_destruct(&dom->eps);
}
