/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_wait.c: wait objects (epoll over the bound endpoints' wires + an eventfd) and endpoint sets. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

int braid_wait_open(struct braid_wait *wait, enum fi_wait_obj requested, struct fid_wait *set)
{
	struct epoll_event ev = { .events = EPOLLIN };

	wait->epfd = wait->evfd = -1;
	wait->set = NULL;
	atomic_init(&wait->waiters, 0);
	atomic_init(&wait->armed, false);
	if (requested == FI_WAIT_SET) {
		/* its own epoll set as FI_WAIT_FD's, which the wait set watches */
		if (!set || set->fid.fclass != FI_CLASS_WAIT || !braid_waitset_of(set))
			return -FI_EINVAL;
		wait->set = braid_waitset_of(set);
		requested = FI_WAIT_FD;
	}
	if (braid_wire_find(braid_cfg.wire)->polled) {
		/*
		 * A polled wire (DPDK) has no fd to sleep on: a blocking read
		 * yields between looks (FI_WAIT_UNSPEC becomes FI_WAIT_YIELD,
		 * FI_GETWAITOBJ says so); an fd to give the application there is not.
		 */
		if (requested == FI_WAIT_UNSPEC)
			requested = FI_WAIT_YIELD;
		else if (requested == FI_WAIT_FD)
			return -FI_ENOSYS;
	}
	switch (requested) {
	case FI_WAIT_NONE:
	case FI_WAIT_YIELD:
		wait->obj = requested;
		return 0;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		wait->obj = FI_WAIT_FD;
		break;
	case FI_WAIT_MUTEX_COND:
		return -FI_ENOSYS;
	default:
		return -FI_EINVAL;
	}
	wait->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (wait->epfd < 0)
		return -FI_ENOMEM;
	wait->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.fd = wait->evfd;
	if (wait->evfd < 0 || epoll_ctl(wait->epfd, EPOLL_CTL_ADD, wait->evfd, &ev)) {
		braid_wait_close(wait);
		return -FI_ENOMEM;
	}
	return 0;
}

void braid_wait_close(struct braid_wait *wait)
{
	if (wait->evfd >= 0)
		close(wait->evfd);
	if (wait->epfd >= 0)
		close(wait->epfd);
	wait->epfd = wait->evfd = -1;
}

int braid_wait_add_fd(struct braid_wait *wait, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (wait->obj != FI_WAIT_FD || fd < 0)
		return 0;
	if (epoll_ctl(wait->epfd, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		return -FI_ENOMEM;
	return 0;
}

void braid_wait_arm_fd(struct braid_wait *wait, int fd, bool armed)
{
	struct epoll_event ev = { .events = armed ? EPOLLIN : 0, .data.fd = fd };

	if (wait->obj == FI_WAIT_FD && fd >= 0)
		(void)epoll_ctl(wait->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void braid_wait_del_fd(struct braid_wait *wait, int fd)
{
	if (wait->obj == FI_WAIT_FD && fd >= 0)
		(void)epoll_ctl(wait->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void braid_wait_signal(struct braid_wait *wait)
{
	uint64_t one = 1;

	if (wait->obj == FI_WAIT_FD)
		(void)!write(wait->evfd, &one, sizeof(one));
}

void braid_wait_wake(struct braid_wait *wait)
{
	if (atomic_load(&wait->waiters) || (wait->set && braid_waitset_waiting(wait->set)) ||
	    (atomic_load(&wait->armed) && atomic_exchange(&wait->armed, false)))
		braid_wait_signal(wait);
}

/*
 * fi_poll(3): after fi_trywait returned 0 the application sleeps on the fd
 * itself (poll(2), epoll), with no thread of its in braid. The endpoints'
 * sockets in the epoll set wake it for packets still to be read, but a
 * completion made by whatever drives the endpoints meanwhile (the progress
 * thread, another thread reading the endpoint's other CQ or a counter) took
 * its packet off the socket: that completion must signal.
 */
void braid_wait_arm(struct braid_wait *wait)
{
	uint64_t val;

	if (wait->obj != FI_WAIT_FD)
		return;
	atomic_store(&wait->armed, true);
	/* the signals of what is read already (fi_trywait looks next); a thread
	 * blocked in braid reads its own */
	if (!atomic_load(&wait->waiters))
		(void)!read(wait->evfd, &val, sizeof(val));
}

int braid_wait_control(struct braid_wait *wait, int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (wait->obj != FI_WAIT_FD)
			return -FI_ENODATA;
		*(int *)arg = wait->epfd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = wait->obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

void braid_wait_enter(struct braid_wait *wait)
{
	atomic_fetch_add(&wait->waiters, 1);
}

void braid_wait_leave(struct braid_wait *wait)
{
	atomic_fetch_sub(&wait->waiters, 1);
}

int braid_wait_step(struct braid_wait *wait, const struct timespec *start, int timeout,
		    int cap_ms)
{
	struct epoll_event evs[8];
	struct timespec now;
	int left = -1, n, i;
	uint64_t val;

	if (timeout >= 0) {
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
		if (ms >= timeout)
			return -FI_ETIMEDOUT;
		left = (int)(timeout - ms);
	}
	/* wake for the endpoints' own timers (retransmissions, ACKs): progress is manual */
	if (cap_ms >= 0 && (left < 0 || cap_ms < left))
		left = cap_ms;
	if (wait->obj == FI_WAIT_YIELD || wait->obj == FI_WAIT_NONE) {
		sched_yield();
		return 0;
	}
	n = epoll_wait(wait->epfd, evs, 8, left);
	if (n < 0)
		return errno == EINTR ? -FI_EINTR : -FI_EOTHER;
	for (i = 0; i < n; i++) {
		if (evs[i].data.fd == wait->evfd)
			(void)!read(wait->evfd, &val, sizeof(val));
	}
	return 0;
}

void braid_epset_construct(struct braid_epset *set)
{
	memset(set, 0, sizeof(*set));
	pthread_mutex_init(&set->lock, NULL);
}

int braid_epset_add(struct braid_epset *set, struct braid_ep *ep)
{
	int i, ret = 0;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n; i++) {
		if (set->eps[i] == ep) {
			set->refs[i]++;
			goto out;
		}
	}
	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 4;
		struct braid_ep **eps = realloc(set->eps, cap * sizeof(*eps));
		int *refs;

		ret = -FI_ENOMEM;
		if (!eps)
			goto out;
		set->eps = eps;
		refs = realloc(set->refs, cap * sizeof(*refs));
		if (!refs)
			goto out;
		set->refs = refs;
		set->cap = cap;
		ret = 0;
	}
	set->eps[set->n] = ep;
	set->refs[set->n] = 1;
	set->n++;
out:
	pthread_mutex_unlock(&set->lock);
	return ret;
}

void braid_epset_remove(struct braid_epset *set, struct braid_ep *ep)
{
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n; i++) {
		if (set->eps[i] != ep)
			continue;
		if (--set->refs[i] == 0) {
			set->eps[i] = set->eps[set->n - 1];
			set->refs[i] = set->refs[set->n - 1];
			set->n--;
		}
		break;
	}
	pthread_mutex_unlock(&set->lock);
}

void braid_epset_destruct(struct braid_epset *set)
{
	free(set->eps);
	free(set->refs);
	set->eps = NULL;
	set->refs = NULL;
	set->n = set->cap = 0;
	pthread_mutex_destroy(&set->lock);
}

/*
 * Is this host oversubscribed: more runnable threads than online CPUs
 * (/proc/loadavg's fourth field counts them now, this one included)? Looked
 * at most once every 10 ms per process; false where it cannot be read.
 */
static bool host_oversubscribed(uint64_t now)
{
	static _Atomic uint64_t looked_at;
	static _Atomic bool over;
	static int ncpu;
	uint64_t last = atomic_load_explicit(&looked_at, memory_order_relaxed);

	if (now - last >= 10 * 1000 * 1000ULL &&
	    atomic_compare_exchange_strong(&looked_at, &last, now)) {
		char buf[128];
		unsigned long running = 0;
		int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		const char *p;

		if (fd >= 0)
			close(fd);
		if (!ncpu) {
			long c = sysconf(_SC_NPROCESSORS_ONLN);

			ncpu = c > 0 ? (int)c : 1;
		}
		if (n > 0) {
			buf[n] = 0;
			/* "0.52 0.58 0.59 3/245 4242": runnable/total is the fourth field */
			p = strchr(buf, '/');
			while (p && p > buf && p[-1] != ' ')
				p--;
			if (p)
				running = strtoul(p, NULL, 10);
		}
		atomic_store_explicit(&over, running > (unsigned long)ncpu, memory_order_relaxed);
	}
	return atomic_load_explicit(&over, memory_order_relaxed);
}

/* The quiet time after which a polling thread yields (µs; 0: never): FI_BRAID_YIELD_US, or
 * with -1 (the default) 50 while the host has more runnable threads than cores, else never. */
static uint64_t yield_ns(uint64_t now)
{
	if (braid_cfg.yield_us >= 0)
		return (uint64_t)braid_cfg.yield_us * 1000;
	return host_oversubscribed(now) ? BRAID_YIELD_AUTO_US * 1000ULL : 0;
}

void braid_epset_progress(struct braid_epset *set)
{
	uint64_t now, yield;
	bool quiet = true;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0, now = 0; i < set->n; i++) {
		struct braid_ep *ep = set->eps[i];

		if (braid_ep_trylock(ep))
			continue;	/* another thread drives it now */
		braid_ep_progress(ep);
		/* the clock its progress read, if it did (one read a poll: RDM's, MSG's) */
		now = ep->enabled && ep->kind->clocked ? ep->progress_ns : braid_now_ns();
		/* the progress thread stays away (braid_progress.c): it looks under the
		 * endpoint's lock, which was held from before @now */
		ep->app_ns = now;
		/* (RDM's wire notes its arrivals; the others never yield) */
		if (!ep->kind->rx_last || ep->kind->rx_last(ep) + yield_ns(now) > now)
			quiet = false;
		braid_ep_unlock(ep);
	}
	pthread_mutex_unlock(&set->lock);
	yield = now ? yield_ns(now) : 0;
	/*
	 * Nothing has come for a while: give the core away for a moment. Four
	 * busy-polling threads on two cores put a sender and its receiver on one
	 * core at times; spinning, the sender would keep it for the scheduler's
	 * whole slice while its packets wait for the receiver (measured: a few
	 * ms a round trip, 0.01-0.04 M msg/s instead of 0.2-0.5). Alone on its
	 * core, sched_yield() returns at once.
	 */
	if (quiet && now && yield)
		sched_yield();
}

bool braid_epset_arm(struct braid_epset *set)
{
	bool ready = false;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n && !ready; i++) {
		struct braid_ep *ep = set->eps[i];

		if (!ep->wire || !ep->wire->ops->arm || braid_ep_trylock(ep))
			continue;
		ready = ep->wire->ops->arm(ep->wire);
		braid_ep_unlock(ep);
	}
	pthread_mutex_unlock(&set->lock);
	return ready;
}

int braid_epset_timer_ms(struct braid_epset *set)
{
	uint64_t first = UINT64_MAX, now;
	bool busy = false;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n; i++) {
		struct braid_ep *ep = set->eps[i];
		uint64_t t;

		if (braid_ep_trylock(ep)) {
			busy = true;	/* another thread drives it: look again soon */
			continue;
		}
		if (ep->kind->next_deadline && (t = ep->kind->next_deadline(ep)) < first)
			first = t;
		/* what local peers write wakes the sleeper only when asked to */
		if (ep->wire && ep->wire->ops->arm && ep->wire->ops->arm(ep->wire))
			first = 0;
		braid_ep_unlock(ep);
	}
	pthread_mutex_unlock(&set->lock);
	now = braid_now_ns();
	if (busy && first > now + 1000000)
		first = now + 1000000;
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)((first - now + 999999) / 1000000);
}
