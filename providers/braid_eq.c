/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_eq.c: event queues (fi_eq(3)): control events, AV completions, user events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

static int eq_close(struct fid *fid)
{
	struct braid_eq *eq = braid_container_of(fid, struct braid_eq, eq_fid.fid);
	struct braid_dlist *it;

	if (atomic_load(&eq->ref))
		return -FI_EBUSY;
	while ((it = braid_dlist_pop_head(&eq->entries)))
		free(braid_container_of(it, struct braid_eq_entry, node));
	if (eq->epfd >= 0)
		close(eq->epfd);
	if (eq->evfd >= 0)
		close(eq->evfd);
	pthread_mutex_destroy(&eq->cm_lock);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fabric->ref, 1);
	free(eq);
	return 0;
}

static void eq_update_fd_locked(struct braid_eq *eq);

void braid_eq_remove_fid(struct braid_eq *eq, const struct fid *fid)
{
	struct braid_dlist *it, *next;

	pthread_mutex_lock(&eq->lock);
	for (it = eq->entries.next; it != &eq->entries; it = next) {
		struct braid_eq_entry *e = braid_container_of(it, struct braid_eq_entry, node);
		const struct fid *owner = NULL;

		next = it->next;
		/* both entry kinds start with the fid */
		if (e->len >= sizeof(owner))
			memcpy(&owner, e->data, sizeof(owner));
		if (owner != fid)
			continue;
		braid_dlist_remove(&e->node);
		eq->count--;
		free(e);
	}
	eq_update_fd_locked(eq);
	pthread_mutex_unlock(&eq->lock);
}

void braid_eq_add_cm(struct braid_eq *eq, struct braid_cm_obj *obj)
{
	pthread_mutex_lock(&eq->cm_lock);
	braid_dlist_insert_tail(&obj->node, &eq->cm_objs);
	if (eq->epfd >= 0 && obj->fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = obj->fd };

		(void)epoll_ctl(eq->epfd, EPOLL_CTL_ADD, obj->fd, &ev);
	}
	pthread_mutex_unlock(&eq->cm_lock);
}

void braid_eq_del_cm(struct braid_eq *eq, struct braid_cm_obj *obj)
{
	pthread_mutex_lock(&eq->cm_lock);
	braid_dlist_remove(&obj->node);
	if (eq->epfd >= 0 && obj->fd >= 0)
		(void)epoll_ctl(eq->epfd, EPOLL_CTL_DEL, obj->fd, NULL);
	pthread_mutex_unlock(&eq->cm_lock);
}

/*
 * Connection management progresses when the EQ is read (control progress is
 * manual): every passive endpoint and MSG endpoint bound to the EQ takes its
 * CM messages and runs its retransmission timers. Called without eq->lock.
 */
void braid_eq_progress(struct braid_eq *eq)
{
	struct braid_dlist *it;
	int listeners;

	/*
	 * Endpoints first, listeners second: a peer that connects several
	 * endpoints one after another sends the first one's RTU before the next
	 * one's REQ, and the events come in that order (FI_CONNECTED, then
	 * FI_CONNREQ), as fabtests' fi_multi_ep -e msg expects.
	 */
	pthread_mutex_lock(&eq->cm_lock);
	for (listeners = 0; listeners < 2; listeners++) {
		for (it = eq->cm_objs.next; it != &eq->cm_objs; it = it->next) {
			struct braid_cm_obj *obj = braid_container_of(it, struct braid_cm_obj, node);

			if (obj->listener == (listeners == 1))
				obj->progress(obj);
		}
	}
	pthread_mutex_unlock(&eq->cm_lock);
}

/* Sleep until a CM socket or the EQ's own fd is readable, at most @ms. */
static void eq_wait_fds(struct braid_eq *eq, int ms)
{
	struct pollfd fds[64];
	struct braid_dlist *it;
	nfds_t n = 0;

	if (eq->evfd >= 0)
		fds[n++] = (struct pollfd){ .fd = eq->evfd, .events = POLLIN };
	pthread_mutex_lock(&eq->cm_lock);
	for (it = eq->cm_objs.next; it != &eq->cm_objs && n < 64; it = it->next) {
		struct braid_cm_obj *obj = braid_container_of(it, struct braid_cm_obj, node);

		if (obj->fd >= 0)
			fds[n++] = (struct pollfd){ .fd = obj->fd, .events = POLLIN };
	}
	pthread_mutex_unlock(&eq->cm_lock);
	(void)poll(fds, n, ms);
}

/* Keep the eventfd readable exactly while entries are queued (caller holds the lock). */
static void eq_update_fd_locked(struct braid_eq *eq)
{
	uint64_t val = 1;

	if (eq->evfd < 0)
		return;
	if (eq->count)
		(void)!write(eq->evfd, &val, sizeof(val));
	else
		(void)!read(eq->evfd, &val, sizeof(val));
}

int braid_eq_report(struct braid_eq *eq, uint32_t event, const void *buf, size_t len,
		    uint64_t flags, bool is_err)
{
	struct braid_eq_entry *e;

	pthread_mutex_lock(&eq->lock);
	if (eq->count >= eq->size) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	e = malloc(sizeof(*e) + len);
	if (!e) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_ENOMEM;
	}
	e->event = event;
	e->flags = flags;
	e->len = len;
	e->is_err = is_err;
	if (len)
		memcpy(e->data, buf, len);
	braid_dlist_insert_tail(&e->node, &eq->entries);
	eq->count++;
	eq_update_fd_locked(eq);
	pthread_cond_broadcast(&eq->cond);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

static ssize_t eq_read_locked(struct braid_eq *eq, uint32_t *event, void *buf,
			      size_t len, uint64_t flags)
{
	struct braid_eq_entry *e;

	if (braid_dlist_empty(&eq->entries))
		return -FI_EAGAIN;
	e = braid_container_of(eq->entries.next, struct braid_eq_entry, node);
	if (e->is_err)
		return -FI_EAVAIL;
	if (e->len && (!buf || len < e->len))
		return -FI_ETOOSMALL;
	if (event)
		*event = e->event;
	if (e->len)
		memcpy(buf, e->data, e->len);
	len = e->len;
	if (!(flags & FI_PEEK)) {
		braid_dlist_remove(&e->node);
		eq->count--;
		eq_update_fd_locked(eq);
		free(e);
	}
	return (ssize_t)len;
}

static ssize_t eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	struct braid_eq *eq = braid_container_of(eq_fid, struct braid_eq, eq_fid);
	ssize_t ret;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	braid_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	ret = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct braid_eq *eq = braid_container_of(eq_fid, struct braid_eq, eq_fid);
	struct braid_eq_entry *e;
	struct fi_eq_err_entry err;
	size_t user_data_size;
	void *user_data;

	if (!buf)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	braid_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	if (braid_dlist_empty(&eq->entries)) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	e = braid_container_of(eq->entries.next, struct braid_eq_entry, node);
	if (!e->is_err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	memcpy(&err, e->data, sizeof(err));
	/* fi_eq(3): from API 1.5 the caller supplies err_data/err_data_size;
	 * the entry's own error data (a reject's private data) follows it */
	user_data = buf->err_data;
	user_data_size = buf->err_data_size;
	*buf = err;
	buf->err_data = user_data;
	buf->err_data_size = 0;
	if (e->len > sizeof(err) && user_data && user_data_size) {
		size_t n = e->len - sizeof(err);

		if (n > user_data_size)
			n = user_data_size;
		memcpy(user_data, e->data + sizeof(err), n);
		buf->err_data_size = n;
	}
	if (!(flags & FI_PEEK)) {
		braid_dlist_remove(&e->node);
		eq->count--;
		eq_update_fd_locked(eq);
		free(e);
	}
	pthread_mutex_unlock(&eq->lock);
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *eq_fid, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct braid_eq *eq = braid_container_of(eq_fid, struct braid_eq, eq_fid);
	int ret;

	if (len && !buf)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	ret = braid_eq_report(eq, event, buf, len, 0, false);
	return ret ? ret : (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
			int timeout, uint64_t flags)
{
	struct braid_eq *eq = braid_container_of(eq_fid, struct braid_eq, eq_fid);
	uint64_t start = braid_now_ns();
	ssize_t ret;

	if (!eq->has_wait)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	for (;;) {
		/* a polled wire (DPDK) has no fd to wake us: look again every millisecond */
		int slice = braid_wire_find(braid_cfg.wire)->polled ? 1 : 10;

		braid_eq_progress(eq);
		pthread_mutex_lock(&eq->lock);
		ret = eq_read_locked(eq, event, buf, len, flags);
		pthread_mutex_unlock(&eq->lock);
		if (ret != -FI_EAGAIN || timeout == 0)
			return ret;
		if (timeout > 0) {
			uint64_t spent = (braid_now_ns() - start) / 1000000;

			if (spent >= (uint64_t)timeout)
				return -FI_EAGAIN;
			if ((uint64_t)slice > timeout - spent)
				slice = (int)(timeout - spent);
		}
		/* CM retransmissions run on progress: wake at least every 10 ms */
		eq_wait_fds(eq, slice);
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return braid_prov_strerror_r(prov_errno, buf, len);
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct braid_eq *eq = braid_container_of(fid, struct braid_eq, eq_fid.fid);

	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (eq->wait_obj == FI_WAIT_FD) {
			*(int *)arg = eq->epfd;
			return 0;
		}
		if (eq->wait_obj == FI_WAIT_MUTEX_COND) {
			struct fi_mutex_cond *mc = arg;

			mc->mutex = &eq->lock;
			mc->cond = &eq->cond;
			return 0;
		}
		return -FI_ENODATA;
	case FI_GETWAITOBJ:	/* ofi_rxm asks it of the EQ it waits on with its CQ */
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = eq->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = braid_nosys_bind,
	.control = eq_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int braid_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq_out, void *context)
{
	struct braid_fabric *fab;
	struct braid_eq *eq;

	if (!fabric || !attr || !eq_out)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)FI_WRITE)
		return -FI_EBADFLAGS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:	/* fi_eq_sread looks again in slices, as for a mutex/cond */
		break;
	case FI_WAIT_SET:
		return -FI_ENOSYS;	/* wait sets are not supported */
	default:
		return -FI_EINVAL;
	}
	if (attr->signaling_vector)
		return -FI_EINVAL;
	fab = braid_container_of(fabric, struct braid_fabric, fabric_fid);
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->evfd = -1;
	eq->epfd = -1;
	eq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
	eq->has_wait = eq->wait_obj != FI_WAIT_NONE;
	if (eq->wait_obj == FI_WAIT_FD) {
		struct epoll_event ev = { .events = EPOLLIN };

		eq->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		eq->epfd = epoll_create1(EPOLL_CLOEXEC);
		ev.data.fd = eq->evfd;
		if (eq->evfd < 0 || eq->epfd < 0 ||
		    epoll_ctl(eq->epfd, EPOLL_CTL_ADD, eq->evfd, &ev)) {
			if (eq->evfd >= 0)
				close(eq->evfd);
			if (eq->epfd >= 0)
				close(eq->epfd);
			free(eq);
			return -FI_ENOMEM;
		}
	}
	eq->size = attr->size ? attr->size : braid_cfg.eq_size;
	eq->fabric = fab;
	pthread_mutex_init(&eq->lock, NULL);
	pthread_cond_init(&eq->cond, NULL);
	pthread_mutex_init(&eq->cm_lock, NULL);
	braid_dlist_init(&eq->entries);
	braid_dlist_init(&eq->cm_objs);
	atomic_init(&eq->ref, 0);
	atomic_fetch_add(&fab->ref, 1);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fi_ops;
	eq->eq_fid.ops = &eq_ops;
	*eq_out = &eq->eq_fid;
	return 0;
}
