/* braid_wait.c: wait objects (epoll over the bound endpoints' wires + an eventfd) and endpoint sets. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "braid.h"

int braid_wait_construct(struct braid_wait *wait)
{
	struct epoll_event ev = { .events = EPOLLIN };

	wait->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (wait->epfd < 0)
		return -FI_ENOMEM;
	wait->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wait->evfd < 0) {
		close(wait->epfd);
		return -FI_ENOMEM;
	}
	ev.data.fd = wait->evfd;
	if (epoll_ctl(wait->epfd, EPOLL_CTL_ADD, wait->evfd, &ev)) {
		close(wait->evfd);
		close(wait->epfd);
		return -FI_ENOMEM;
	}
	atomic_init(&wait->waiters, 0);
	return 0;
}

void braid_wait_destruct(struct braid_wait *wait)
{
	close(wait->evfd);
	close(wait->epfd);
}

int braid_wait_add_fd(struct braid_wait *wait, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(wait->epfd, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		return -FI_ENOMEM;
	return 0;
}

void braid_wait_arm_fd(struct braid_wait *wait, int fd, bool armed)
{
	struct epoll_event ev = { .events = armed ? EPOLLIN : 0, .data.fd = fd };

	(void)epoll_ctl(wait->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void braid_wait_del_fd(struct braid_wait *wait, int fd)
{
	(void)epoll_ctl(wait->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void braid_wait_signal(struct braid_wait *wait)
{
	uint64_t one = 1;

	(void)!write(wait->evfd, &one, sizeof(one));
}

int braid_wait_block(struct braid_wait *wait, int timeout_ms)
{
	struct epoll_event evs[8];
	uint64_t val;
	int n, i;

	atomic_fetch_add(&wait->waiters, 1);
	n = epoll_wait(wait->epfd, evs, 8, timeout_ms);
	atomic_fetch_sub(&wait->waiters, 1);
	if (n < 0)
		return errno == EINTR ? -FI_EINTR : -FI_EOTHER;
	for (i = 0; i < n; i++) {
		if (evs[i].data.fd == wait->evfd)
			(void)!read(wait->evfd, &val, sizeof(val));
	}
	return 0;
}

int braid_epset_add(struct braid_epset *set, struct braid_ep *ep)
{
	int i;

	for (i = 0; i < set->n; i++) {
		if (set->eps[i] == ep) {
			set->refs[i]++;
			return 0;
		}
	}
	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 4;
		struct braid_ep **eps = realloc(set->eps, cap * sizeof(*eps));
		int *refs;

		if (!eps)
			return -FI_ENOMEM;
		set->eps = eps;
		refs = realloc(set->refs, cap * sizeof(*refs));
		if (!refs)
			return -FI_ENOMEM;
		set->refs = refs;
		set->cap = cap;
	}
	set->eps[set->n] = ep;
	set->refs[set->n] = 1;
	set->n++;
	return 0;
}

void braid_epset_remove(struct braid_epset *set, struct braid_ep *ep)
{
	int i;

	for (i = 0; i < set->n; i++) {
		if (set->eps[i] != ep)
			continue;
		if (--set->refs[i] == 0) {
			set->eps[i] = set->eps[set->n - 1];
			set->refs[i] = set->refs[set->n - 1];
			set->n--;
		}
		return;
	}
}

void braid_epset_destruct(struct braid_epset *set)
{
	free(set->eps);
	free(set->refs);
	set->eps = NULL;
	set->refs = NULL;
	set->n = set->cap = 0;
}

void braid_epset_progress_locked(struct braid_epset *set)
{
	int i;

	for (i = 0; i < set->n; i++)
		braid_ep_progress(set->eps[i]);
}
