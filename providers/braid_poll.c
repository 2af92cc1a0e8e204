/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_poll.c: wait sets (fi_wait_open: block until any of several CQs or counters has something) and poll sets (fi_poll_open: which of them have), fi_poll(3). */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

/*
 * A member is a CQ or a counter. It has something when a CQ holds a
 * completion or an error, or a counter's value or error count changed
 * since the set last reported it (what util's poll sets do). Asking
 * drives the member's progress first (progress is the application's).
 */
struct member {
	struct fid *fid;
	uint64_t value, err;
};

struct members {
	struct member *m;
	int n, cap;
};

static int members_add(struct members *ms, struct fid *fid)
{
	int i;

	if (fid->fclass != FI_CLASS_CQ && fid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	for (i = 0; i < ms->n; i++)
		if (ms->m[i].fid == fid)
			return -FI_EALREADY;
	if (ms->n == ms->cap) {
		int cap = ms->cap ? ms->cap * 2 : 4;
		struct member *m = realloc(ms->m, (size_t)cap * sizeof(*m));

		if (!m)
			return -FI_ENOMEM;
		ms->m = m;
		ms->cap = cap;
	}
	ms->m[ms->n++] = (struct member){ .fid = fid };
	return 0;
}

static int members_del(struct members *ms, struct fid *fid)
{
	int i;

	for (i = 0; i < ms->n; i++) {
		if (ms->m[i].fid == fid) {
			ms->m[i] = ms->m[--ms->n];
			return 0;
		}
	}
	return -FI_ENOENT;
}

/* what a set needs of a member (a CQ or a counter), whichever it is */
struct member_parts {
	struct braid_cq *cq;		/* NULL: a counter */
	struct braid_cntr *cntr;
	struct braid_domain *domain;
	atomic_int *ref;
	struct braid_wait *wait;
	struct braid_epset *eps;
};

static struct member_parts member_parts(struct fid *fid)
{
	struct member_parts p = { 0 };

	if (fid->fclass == FI_CLASS_CQ) {
		p.cq = braid_container_of(fid, struct braid_cq, cq_fid.fid);
		p.domain = p.cq->domain;
		p.ref = &p.cq->ref;
		p.wait = &p.cq->wait;
		p.eps = &p.cq->eps;
	} else {
		p.cntr = braid_container_of(fid, struct braid_cntr, cntr_fid.fid);
		p.domain = p.cntr->domain;
		p.ref = &p.cntr->ref;
		p.wait = &p.cntr->wait;
		p.eps = &p.cntr->eps;
	}
	return p;
}

/* progress @m; does it have something (and, @note, take note of it: reported once)? */
static bool member_has(struct member *m, bool note)
{
	struct member_parts p = member_parts(m->fid);
	uint64_t v, e;

	if (p.cq)
		return braid_cq_poll(p.cq);
	braid_cntr_poll(p.cntr, &v, &e);
	if (v == m->value && e == m->err)
		return false;
	if (note) {
		m->value = v;
		m->err = e;
	}
	return true;
}

static bool member_ready(struct member *m)
{
	return member_has(m, true);
}

/* ---- wait sets ---- */

struct braid_waitset {
	struct fid_wait wait_fid;
	struct braid_fabric *fabric;
	/**
	 * @wait: a FI_WAIT_FD wait object as a CQ's, its epoll set holding the
	 * members' own epoll sets (FI_GETWAIT gives it); its waiters are the
	 * threads in fi_wait.
	 */
	struct braid_wait wait;
	atomic_int ref;
	pthread_mutex_t lock;
	struct members ms;
};

bool braid_waitset_waiting(struct braid_waitset *set)
{
	return atomic_load(&set->wait.waiters) > 0;
}

static struct fi_ops waitset_fi_ops;

/* @set as braid's wait set, or NULL (another provider's) */
struct braid_waitset *braid_waitset_of(struct fid_wait *set)
{
	if (set->fid.ops != &waitset_fi_ops)
		return NULL;
	return braid_container_of(set, struct braid_waitset, wait_fid);
}

int braid_waitset_add(struct braid_wait *wait, struct fid *fid)
{
	struct braid_waitset *set = wait->set;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = fid };
	int ret;

	if (!set)
		return 0;
	pthread_mutex_lock(&set->lock);
	ret = members_add(&set->ms, fid);
	if (!ret && epoll_ctl(set->wait.epfd, EPOLL_CTL_ADD, wait->epfd, &ev)) {
		members_del(&set->ms, fid);
		ret = -FI_ENOMEM;
	}
	if (!ret)
		atomic_fetch_add(&set->ref, 1);
	pthread_mutex_unlock(&set->lock);
	return ret;
}

void braid_waitset_del(struct braid_wait *wait, struct fid *fid)
{
	struct braid_waitset *set = wait->set;

	if (!set)
		return;
	pthread_mutex_lock(&set->lock);
	if (!members_del(&set->ms, fid)) {
		(void)epoll_ctl(set->wait.epfd, EPOLL_CTL_DEL, wait->epfd, NULL);
		atomic_fetch_sub(&set->ref, 1);
	}
	pthread_mutex_unlock(&set->lock);
	wait->set = NULL;
}

/* any member with something? (each is progressed) */
static bool waitset_ready(struct braid_waitset *set)
{
	bool ready = false;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->ms.n; i++)
		ready |= member_ready(&set->ms.m[i]);
	pthread_mutex_unlock(&set->lock);
	return ready;
}

int braid_waitset_trywait(struct braid_waitset *set)
{
	bool ready = false;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->ms.n; i++)
		braid_wait_arm(member_parts(set->ms.m[i].fid).wait);
	for (i = 0; i < set->ms.n && !ready; i++)
		ready = member_has(&set->ms.m[i], false) ||
			braid_epset_arm(member_parts(set->ms.m[i].fid).eps);
	pthread_mutex_unlock(&set->lock);
	return ready ? -FI_EAGAIN : 0;
}

/* milliseconds until the members' endpoints' next engine timer, at most @cap */
static int waitset_timer_ms(struct braid_waitset *set, int cap)
{
	int i, t;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->ms.n; i++) {
		struct member_parts p = member_parts(set->ms.m[i].fid);

		t = braid_epset_timer_ms(p.eps);
		if (t >= 0 && (cap < 0 || t < cap))
			cap = t;
	}
	pthread_mutex_unlock(&set->lock);
	return cap;
}

/* the members' signals are read: the set's epoll would stay readable */
static void waitset_drain(struct braid_waitset *set)
{
	uint64_t val;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->ms.n; i++)
		(void)!read(member_parts(set->ms.m[i].fid).wait->evfd, &val, sizeof(val));
	pthread_mutex_unlock(&set->lock);
}

/*
 * fi_wait(3): 0 once a member has something (a CQ holds a completion or an
 * error, a counter changed since the set last said so), -FI_ETIMEDOUT
 * after @timeout ms (-1: none). It drives the members' progress, and sleeps
 * on their sockets and signals in between (braid_wait_step(), as a CQ's
 * fi_cq_sread does).
 */
static int waitset_wait(struct fid_wait *wait_fid, int timeout)
{
	struct braid_waitset *set = braid_waitset_of(wait_fid);
	struct timespec start;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	braid_wait_enter(&set->wait);
	while (!waitset_ready(set)) {
		ret = braid_wait_step(&set->wait, &start, timeout, waitset_timer_ms(set, -1));
		if (ret && ret != -FI_EINTR)
			break;
		ret = 0;
		waitset_drain(set);
	}
	braid_wait_leave(&set->wait);
	return ret;
}

static int waitset_close(struct fid *fid)
{
	struct braid_waitset *set = braid_container_of(fid, struct braid_waitset, wait_fid.fid);

	if (atomic_load(&set->ref))
		return -FI_EBUSY;
	braid_wait_close(&set->wait);
	pthread_mutex_destroy(&set->lock);
	free(set->ms.m);
	atomic_fetch_sub(&set->fabric->ref, 1);
	free(set);
	return 0;
}

static int waitset_control(struct fid *fid, int command, void *arg)
{
	struct braid_waitset *set = braid_container_of(fid, struct braid_waitset, wait_fid.fid);

	return braid_wait_control(&set->wait, command, arg);
}

static struct fi_ops waitset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = waitset_close,
	.bind = braid_nosys_bind,
	.control = waitset_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_wait waitset_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = waitset_wait,
};

int braid_waitset_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset)
{
	struct braid_waitset *set;
	int ret;

	if (!fabric || !attr || !waitset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	if (attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;	/* FI_WAIT_MUTEX_COND, FI_WAIT_YIELD: not as sets */
	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;
	ret = braid_wait_open(&set->wait, FI_WAIT_FD, NULL);
	if (ret) {
		free(set);
		return ret;
	}
	pthread_mutex_init(&set->lock, NULL);
	atomic_init(&set->ref, 0);
	set->fabric = braid_container_of(fabric, struct braid_fabric, fabric_fid);
	atomic_fetch_add(&set->fabric->ref, 1);
	set->wait_fid.fid.fclass = FI_CLASS_WAIT;
	set->wait_fid.fid.context = NULL;
	set->wait_fid.fid.ops = &waitset_fi_ops;
	set->wait_fid.ops = &waitset_ops;
	*waitset = &set->wait_fid;
	return 0;
}

/* ---- poll sets ---- */

struct braid_pollset {
	struct fid_poll poll_fid;
	struct braid_domain *domain;
	pthread_mutex_t lock;
	struct members ms;
};

/* fi_poll(3): the contexts of up to @count members with something; 0: none */
static int pollset_poll(struct fid_poll *poll_fid, void **context, int count)
{
	struct braid_pollset *ps = braid_container_of(poll_fid, struct braid_pollset, poll_fid);
	int i, n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	for (i = 0; i < ps->ms.n && n < count; i++)
		if (member_ready(&ps->ms.m[i]))
			context[n++] = ps->ms.m[i].fid->context;
	pthread_mutex_unlock(&ps->lock);
	return n;
}

static int pollset_add(struct fid_poll *poll_fid, struct fid *event_fid, uint64_t flags)
{
	struct braid_pollset *ps = braid_container_of(poll_fid, struct braid_pollset, poll_fid);
	int ret;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (event_fid->fclass != FI_CLASS_CQ && event_fid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	if (member_parts(event_fid).domain != ps->domain)
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	ret = members_add(&ps->ms, event_fid);
	if (!ret)
		atomic_fetch_add(member_parts(event_fid).ref, 1);	/* a member is not closed */
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

static int pollset_del(struct fid_poll *poll_fid, struct fid *event_fid, uint64_t flags)
{
	struct braid_pollset *ps = braid_container_of(poll_fid, struct braid_pollset, poll_fid);
	int ret;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ps->lock);
	ret = members_del(&ps->ms, event_fid);
	if (!ret)
		atomic_fetch_sub(member_parts(event_fid).ref, 1);
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

static int pollset_close(struct fid *fid)
{
	struct braid_pollset *ps = braid_container_of(fid, struct braid_pollset, poll_fid.fid);

	while (ps->ms.n)
		(void)pollset_del(&ps->poll_fid, ps->ms.m[0].fid, 0);
	pthread_mutex_destroy(&ps->lock);
	free(ps->ms.m);
	atomic_fetch_sub(&ps->domain->ref, 1);
	free(ps);
	return 0;
}

static struct fi_ops pollset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pollset_close,
	.bind = braid_nosys_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_poll pollset_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = pollset_poll,
	.poll_add = pollset_add,
	.poll_del = pollset_del,
};

int braid_pollset_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		       struct fid_poll **pollset)
{
	struct braid_pollset *ps;

	if (!domain || !attr || !pollset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->domain = braid_container_of(domain, struct braid_domain, domain_fid);
	atomic_fetch_add(&ps->domain->ref, 1);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = &pollset_fi_ops;
	ps->poll_fid.ops = &pollset_ops;
	*pollset = &ps->poll_fid;
	return 0;
}
