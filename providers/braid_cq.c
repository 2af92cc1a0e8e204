/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cq.c: completion queues (fi_cq(3)): every format, error entries, readfrom, blocking reads. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid.h"

static size_t cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

static void cq_lock(struct braid_cq *cq)
{
	if (cq->locking)
		pthread_mutex_lock(&cq->lock);
}

static void cq_unlock(struct braid_cq *cq)
{
	if (cq->locking)
		pthread_mutex_unlock(&cq->lock);
}

/* entries held and promised (the ring, its overflow, errors, reservations) */
static size_t cq_used(const struct braid_cq *cq)
{
	return __atomic_load_n(&cq->count, __ATOMIC_RELAXED) +
	       __atomic_load_n(&cq->over_count, __ATOMIC_RELAXED) +
	       __atomic_load_n(&cq->err_count, __ATOMIC_RELAXED) +
	       __atomic_load_n(&cq->reserved, __ATOMIC_RELAXED);
}


bool braid_cq_room(struct braid_cq *cq)
{
	return !cq || braid_cq_has_room(cq);
}

size_t braid_cq_free(struct braid_cq *cq)
{
	size_t used = cq_used(cq);

	return used < cq->size ? cq->size - used : 0;
}

bool braid_cq_has_room(struct braid_cq *cq)
{
	return braid_cq_free(cq) > 0;
}

bool braid_cq_reserve(struct braid_cq *cq)
{
	bool ok;

	cq_lock(cq);
	ok = braid_cq_has_room(cq);
	if (ok)
		cq->reserved++;
	cq_unlock(cq);
	return ok;
}

void braid_cq_unreserve(struct braid_cq *cq, size_t n)
{
	cq_lock(cq);
	cq->reserved -= n;
	cq_unlock(cq);
}

static void cq_wake(struct braid_cq *cq)
{
	braid_wait_wake(&cq->wait);
}

/* the slot a new completion goes to: the ring's next, or an overflow entry (CQ lock held) */
static struct braid_cq_slot *cq_slot_locked(struct braid_cq *cq)
{
	struct braid_cq_over *o;

	if (cq->count < cq->size && !cq->over_count) {
		cq->count++;
		return &cq->slots[(cq->head + cq->count - 1) % cq->size];
	}
	o = malloc(sizeof(*o));	/* a race for the last slot lost: rare, off the fast path */
	if (!o)
		return NULL;
	braid_dlist_insert_tail(&o->node, &cq->over);
	cq->over_count++;
	return &o->slot;
}

int braid_cq_write(struct braid_cq *cq, const struct braid_ep *ep, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct braid_cq_slot *slot;

	cq_lock(cq);
	slot = cq_slot_locked(cq);
	if (slot) {
		slot->entry.op_context = context;
		slot->entry.flags = flags;
		slot->entry.len = len;
		slot->entry.buf = buf;
		slot->entry.data = data;
		slot->entry.tag = tag;
		slot->src = src;
		slot->ep = ep;
	}
	cq_unlock(cq);
	if (!slot)
		return -FI_ENOMEM;
	cq_wake(cq);
	return 0;
}

int braid_cq_write_err(struct braid_cq *cq, const struct braid_ep *ep, void *context,
		       uint64_t flags, size_t len, void *buf, uint64_t data, uint64_t tag,
		       size_t olen, int err, int prov_errno, fi_addr_t src)
{
	struct braid_cq_err *e;

	e = calloc(1, sizeof(*e));	/* errors are rare: not on the fast path */
	if (!e)
		return -FI_ENOMEM;
	e->err.op_context = context;
	e->err.flags = flags;
	e->err.len = len;
	e->err.buf = buf;
	e->err.data = data;
	e->err.tag = tag;
	e->err.olen = olen;
	e->err.err = err;
	e->err.prov_errno = prov_errno;
	e->src = src;
	e->ep = ep;
	cq_lock(cq);
	braid_dlist_insert_tail(&e->node, &cq->errs);
	cq->err_count++;
	cq_unlock(cq);
	cq_wake(cq);
	return 0;
}

/* Move overflowed completions into the ring as it empties (CQ lock held). */
static void cq_refill_locked(struct braid_cq *cq)
{
	while (cq->over_count && cq->count < cq->size) {
		struct braid_cq_over *o = braid_container_of(braid_dlist_pop_head(&cq->over),
							     struct braid_cq_over, node);

		cq->slots[(cq->head + cq->count) % cq->size] = o->slot;
		cq->count++;
		cq->over_count--;
		free(o);
	}
}

/* @s, a receive completion of a closing endpoint, as an FI_ECANCELED error in @to (or dropped) */
static void cq_cancel_slot(const struct braid_cq_slot *s, struct braid_dlist *to)
{
	struct braid_cq_err *e = calloc(1, sizeof(*e));

	if (!e)
		return;	/* no memory: dropped, as fi_endpoint(3) allows */
	e->err.op_context = s->entry.op_context;
	e->err.flags = s->entry.flags;
	e->err.buf = s->entry.buf;
	e->err.tag = s->entry.tag;
	e->err.err = FI_ECANCELED;
	e->err.prov_errno = BRAID_PERR_SHUTDOWN;
	e->src = FI_ADDR_NOTAVAIL;
	e->ep = s->ep;
	braid_dlist_insert_tail(&e->node, to);
}

bool braid_cq_holds_recv(struct braid_cq *cq, const struct braid_ep *ep)
{
	struct braid_dlist *it;
	bool found = false;
	size_t i;

	cq_lock(cq);
	for (i = 0; i < cq->count && !found; i++) {
		const struct braid_cq_slot *s = &cq->slots[(cq->head + i) % cq->size];

		found = s->ep == ep && (s->entry.flags & FI_RECV);
	}
	braid_dlist_foreach(&cq->over, it) {
		const struct braid_cq_over *o = braid_container_of(it, struct braid_cq_over, node);

		if (found)
			break;
		found = o->slot.ep == ep && (o->slot.entry.flags & FI_RECV);
	}
	cq_unlock(cq);
	return found;
}

void braid_cq_ep_closed(struct braid_cq *cq, const struct braid_ep *ep)
{
	struct braid_dlist moved, *it, *tmp;
	size_t i, kept = 0;

	if (!cq)
		return;
	braid_dlist_init(&moved);
	cq_lock(cq);
	/* the ring, compacted in order; its receives of @ep leave it */
	for (i = 0; i < cq->count; i++) {
		struct braid_cq_slot *s = &cq->slots[(cq->head + i) % cq->size];

		if (s->ep != ep || !(s->entry.flags & FI_RECV))
			cq->slots[(cq->head + kept++) % cq->size] = *s;
		else
			cq_cancel_slot(s, &moved);
	}
	cq->count = kept;
	/* and the overflow behind it */
	braid_dlist_foreach_safe(&cq->over, it, tmp) {
		struct braid_cq_over *o = braid_container_of(it, struct braid_cq_over, node);

		if (o->slot.ep != ep || !(o->slot.entry.flags & FI_RECV))
			continue;
		cq_cancel_slot(&o->slot, &moved);
		braid_dlist_remove(&o->node);
		cq->over_count--;
		free(o);
	}
	cq_refill_locked(cq);
	while (!braid_dlist_empty(&moved)) {
		it = braid_dlist_pop_head(&moved);
		braid_dlist_insert_tail(it, &cq->errs);
		cq->err_count++;
	}
	cq_unlock(cq);
	if (cq->err_count)
		cq_wake(cq);
}

static void cq_copy_out(struct braid_cq *cq, const struct braid_cq_slot *slot, void *dst)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *e = dst;

		e->op_context = slot->entry.op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *e = dst;

		e->op_context = slot->entry.op_context;
		e->flags = slot->entry.flags;
		e->len = slot->entry.len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *e = dst;

		e->op_context = slot->entry.op_context;
		e->flags = slot->entry.flags;
		e->len = slot->entry.len;
		e->buf = slot->entry.buf;
		e->data = slot->entry.data;
		break;
	}
	default:
		memcpy(dst, &slot->entry, sizeof(slot->entry));
		break;
	}
}

bool braid_cq_poll(struct braid_cq *cq)
{
	braid_epset_progress(&cq->eps);
	braid_trig_pump(cq->domain);
	return __atomic_load_n(&cq->count, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&cq->over_count, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&cq->err_count, __ATOMIC_RELAXED);
}

/* Progress the CQ's endpoints, then take up to @count entries. */
static ssize_t cq_read_some(struct braid_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t n = 0;

	braid_epset_progress(&cq->eps);
	braid_trig_pump(cq->domain);	/* transfers triggered by counters of what completed */
	cq_lock(cq);
	if (cq->err_count) {
		cq_unlock(cq);
		return -FI_EAVAIL;
	}
	while (n < count && cq->count) {
		const struct braid_cq_slot *slot = &cq->slots[cq->head];

		cq_copy_out(cq, slot, (uint8_t *)buf + n * cq->entry_size);
		if (src)
			src[n] = slot->src;
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
		n++;
		if (!cq->count) {
			/* emptied: from the front again (a CQ read as fast as it fills
			 * touches its first pages only) */
			cq->head = 0;
			cq_refill_locked(cq);
		}
	}
	cq_refill_locked(cq);
	cq_unlock(cq);
	return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count, fi_addr_t *src)
{
	struct braid_cq *cq = braid_container_of(cq_fid, struct braid_cq, cq_fid);

	if (!buf && count)
		return -FI_EINVAL;
	return cq_read_some(cq, buf, count, src);
}

static ssize_t cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct braid_cq *cq = braid_container_of(cq_fid, struct braid_cq, cq_fid);
	struct braid_dlist *node;
	struct braid_cq_err *e;
	void *user_data;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	cq_lock(cq);
	node = braid_dlist_pop_head(&cq->errs);
	if (!node) {
		cq_unlock(cq);
		return -FI_EAGAIN;
	}
	cq->err_count--;
	cq_unlock(cq);
	e = braid_container_of(node, struct braid_cq_err, node);
	/*
	 * fi_cq(3), API >= 1.5: err_data/err_data_size are the caller's; braid
	 * has no err_data. The struct is the application's, as long as its API
	 * has it (braid_cq_err_entry_size).
	 */
	user_data = buf->err_data;
	braid_cq_err_set_src(&e->err, e->src);
	memcpy(buf, &e->err, braid_cq_err_entry_size(cq->domain->fabric->fabric_fid.api_version));
	buf->err_data = user_data;
	buf->err_data_size = 0;
	free(e);
	return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			    fi_addr_t *src, const void *cond, int timeout)
{
	struct braid_cq *cq = braid_container_of(cq_fid, struct braid_cq, cq_fid);
	struct timespec start;
	ssize_t ret;
	int cap;

	if (!braid_wait_enabled(&cq->wait))
		return -FI_EINVAL;
	if (!buf && count)
		return -FI_EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &start);
	braid_wait_enter(&cq->wait);
	for (;;) {
		ret = cq_read_some(cq, buf, count, src);
		if (ret != -FI_EAGAIN)
			break;
		if (atomic_exchange(&cq->signaled, 0))
			break;
		cap = braid_epset_timer_ms(&cq->eps);
		ret = braid_wait_step(&cq->wait, &start, timeout, cap);
		if (ret) {
			ret = ret == -FI_ETIMEDOUT ? -FI_EAGAIN : ret;
			break;
		}
	}
	braid_wait_leave(&cq->wait);
	return ret;
}

static ssize_t cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *cq_fid)
{
	struct braid_cq *cq = braid_container_of(cq_fid, struct braid_cq, cq_fid);

	atomic_store(&cq->signaled, 1);
	braid_wait_signal(&cq->wait);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return braid_prov_strerror_r(prov_errno, buf, len);
}

static int cq_close(struct fid *fid)
{
	struct braid_cq *cq = braid_container_of(fid, struct braid_cq, cq_fid.fid);
	struct braid_dlist *node;

	if (atomic_load(&cq->ref))
		return -FI_EBUSY;
	while ((node = braid_dlist_pop_head(&cq->errs)))
		free(braid_container_of(node, struct braid_cq_err, node));
	while ((node = braid_dlist_pop_head(&cq->over)))
		free(braid_container_of(node, struct braid_cq_over, node));
	pthread_mutex_destroy(&cq->lock);
	braid_waitset_del(&cq->wait, fid);
	braid_wait_close(&cq->wait);
	braid_epset_destruct(&cq->eps);
	atomic_fetch_sub(&cq->domain->ref, 1);
	free(cq->slots);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct braid_cq *cq = braid_container_of(fid, struct braid_cq, cq_fid.fid);

	return braid_wait_control(&cq->wait, command, arg);
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = braid_nosys_bind,
	.control = cq_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int braid_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq_out, void *context)
{
	struct braid_domain *dom;
	struct braid_cq *cq;
	enum fi_cq_format format;
	int ret;

	if (!domain || !attr || !cq_out)
		return -FI_EINVAL;
	dom = braid_container_of(domain, struct braid_domain, domain_fid);
	format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	if (!cq_entry_size(format))
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EBADFLAGS;
	if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->size = attr->size ? attr->size : braid_cfg.cq_size;
	cq->slots = calloc(cq->size, sizeof(*cq->slots));
	if (!cq->slots) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->format = format;
	cq->entry_size = cq_entry_size(format);
	ret = braid_wait_open(&cq->wait, attr->wait_obj, attr->wait_set);
	if (ret) {
		free(cq->slots);
		free(cq);
		return ret;
	}
	braid_dlist_init(&cq->errs);
	braid_dlist_init(&cq->over);
	pthread_mutex_init(&cq->lock, NULL);
	cq->locking = dom->locking;
	braid_epset_construct(&cq->eps);
	cq->domain = dom;
	atomic_init(&cq->ref, 0);
	atomic_init(&cq->signaled, 0);
	atomic_fetch_add(&dom->ref, 1);
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fi_ops;
	cq->cq_fid.ops = &cq_ops;
	ret = braid_waitset_add(&cq->wait, &cq->cq_fid.fid);
	if (ret) {
		atomic_fetch_sub(&dom->ref, 1);
		braid_epset_destruct(&cq->eps);
		pthread_mutex_destroy(&cq->lock);
		braid_wait_close(&cq->wait);
		free(cq->slots);
		free(cq);
		return ret;
	}
	*cq_out = &cq->cq_fid;
	return 0;
}
