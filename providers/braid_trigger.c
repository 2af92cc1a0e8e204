/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_trigger.c: triggered operations (fi_trigger(3)): RDM transfers held until a counter reaches a threshold, then posted in threshold order. */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_trigger.h>

#include "braid.h"

/*
 * A transfer posted with FI_TRIGGER (an explicit flag, or the default flags
 * of an alias, fi_ep_alias) names a struct fi_triggered_context as its
 * context: FI_TRIGGER_THRESHOLD, a counter of the same domain and a value.
 * braid copies the call (its iovs and descriptors; the buffers stay the
 * application's, as for any posted transfer) into a record on the
 * domain's list, which is kept in threshold order, and in order of
 * submission among equal thresholds (fi_trigger(3)). Whenever the domain
 * is progressed by the application (a read or wait of one of its CQs or
 * counters, fi_cntr_add and fi_cntr_set, or another triggered call) the
 * records whose counter has reached their threshold are posted, first to
 * last, as the call they copy without FI_TRIGGER; their completions carry
 * the triggered context. A post the endpoint cannot take now (-FI_EAGAIN)
 * stays first and is tried again at the next progress; one that fails
 * otherwise completes with that error. fi_cancel removes a held one
 * (FI_ECANCELED); closing the endpoint drops its held ones; a counter
 * with held transfers is busy (fi_close: -FI_EBUSY).
 */

enum trig_kind {
	TRIG_MSG,
	TRIG_TAGGED,
	TRIG_READ,
	TRIG_WRITE,
	TRIG_ATOMIC,
	TRIG_FETCH,
	TRIG_COMPARE,
};

struct braid_trig {
	struct braid_dlist node;
	struct braid_ep *ep;
	struct braid_cntr *cntr;
	uint64_t threshold;
	enum trig_kind kind;
	/** @flags: the call's flags without FI_TRIGGER. */
	uint64_t flags;
	/** @context: the application's struct fi_triggered_context. */
	void *context;
	struct iovec iov[BRAID_IOV_LIMIT];
	struct fi_ioc ioc[BRAID_IOV_LIMIT], cmp[BRAID_IOV_LIMIT], res[BRAID_IOV_LIMIT];
	void *desc[BRAID_IOV_LIMIT], *cmp_desc[BRAID_IOV_LIMIT], *res_desc[BRAID_IOV_LIMIT];
	size_t cmp_count, res_count;
	struct fi_rma_iov rma_iov;
	struct fi_rma_ioc rma_ioc;
	union {
		struct fi_msg_tagged tagged;	/* TRIG_MSG and TRIG_TAGGED */
		struct fi_msg_rma rma;
		struct fi_msg_atomic atomic;
	} m;
};

/* the counter a triggered context names, if it is one of @ep's domain */
static int trig_cntr(const struct braid_ep *ep, void *context, struct braid_cntr **cntr,
		     uint64_t *threshold)
{
	struct fi_triggered_context *tc = context;
	struct fid_cntr *f;

	if (!tc || tc->event_type != FI_TRIGGER_THRESHOLD)
		return -FI_EINVAL;
	f = tc->trigger.threshold.cntr;
	*cntr = f ? braid_cntr_of(f) : NULL;
	if (!*cntr || (*cntr)->domain != ep->domain)
		return -FI_EINVAL;
	*threshold = tc->trigger.threshold.threshold;
	return 0;
}

static struct braid_trig *trig_new(struct braid_ep *ep, enum trig_kind kind, uint64_t flags,
				   void *context, size_t iov_count)
{
	struct braid_trig *t;

	if (iov_count > BRAID_IOV_LIMIT)
		return NULL;
	t = calloc(1, sizeof(*t));	/* held transfers: a control path, not the data path */
	if (!t)
		return NULL;
	t->ep = ep;
	t->kind = kind;
	t->flags = flags & ~FI_TRIGGER;
	t->context = context;
	return t;
}

/* Queue @t behind every record of an equal or lower threshold, then post what is due. */
static ssize_t trig_hold(struct braid_trig *t)
{
	struct braid_domain *dom = t->ep->domain;
	struct braid_dlist *it;
	int ret;

	ret = trig_cntr(t->ep, t->context, &t->cntr, &t->threshold);
	if (ret) {
		free(t);
		return ret;
	}
	atomic_fetch_add(&t->cntr->ref, 1);
	atomic_fetch_add(&t->ep->trig_held, 1);
	pthread_mutex_lock(&dom->trig_lock);
	for (it = dom->trigs.prev; it != &dom->trigs; it = it->prev)
		if (braid_container_of(it, struct braid_trig, node)->threshold <= t->threshold)
			break;
	braid_dlist_insert_before(&t->node, it->next);
	atomic_fetch_add(&dom->trig_count, 1);
	pthread_mutex_unlock(&dom->trig_lock);
	braid_trig_pump(dom);
	return 0;
}

static void trig_free(struct braid_domain *dom, struct braid_trig *t)
{
	atomic_fetch_sub(&dom->trig_count, 1);
	atomic_fetch_sub(&t->cntr->ref, 1);
	atomic_fetch_sub(&t->ep->trig_held, 1);
	free(t);
}

ssize_t braid_trig_msg(struct braid_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t dest, void *context, uint64_t tag, uint64_t data, uint64_t flags,
		       bool tagged)
{
	struct braid_trig *t;

	if (flags & FI_INJECT)
		return -FI_EINVAL;	/* an inject has no context to name the trigger */
	if (count && !iov)
		return -FI_EINVAL;
	t = trig_new(ep, tagged ? TRIG_TAGGED : TRIG_MSG, flags, context, count);
	if (!t)
		return count > BRAID_IOV_LIMIT ? -FI_EINVAL : -FI_ENOMEM;
	memcpy(t->iov, iov, count * sizeof(*iov));
	t->m.tagged = (struct fi_msg_tagged){
		.msg_iov = t->iov, .desc = t->desc, .iov_count = count, .addr = dest,
		.tag = tag, .context = context, .data = data,
	};
	return trig_hold(t);
}

ssize_t braid_trig_rma(struct braid_ep *ep, bool read, const struct iovec *iov, size_t count,
		       fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
		       uint64_t flags, void *context)
{
	struct braid_trig *t;
	size_t i;

	if (flags & FI_INJECT)
		return -FI_EINVAL;
	if (count && !iov)
		return -FI_EINVAL;
	t = trig_new(ep, read ? TRIG_READ : TRIG_WRITE, flags, context, count);
	if (!t)
		return count > BRAID_IOV_LIMIT ? -FI_EINVAL : -FI_ENOMEM;
	memcpy(t->iov, iov, count * sizeof(*iov));
	t->rma_iov = (struct fi_rma_iov){ .addr = addr, .key = key };
	for (i = 0; i < count; i++)
		t->rma_iov.len += iov[i].iov_len;
	t->m.rma = (struct fi_msg_rma){
		.msg_iov = t->iov, .desc = t->desc, .iov_count = count, .addr = peer,
		.rma_iov = &t->rma_iov, .rma_iov_count = 1, .context = context, .data = data,
	};
	return trig_hold(t);
}

ssize_t braid_trig_atomic(struct braid_ep *ep, const struct fi_msg_atomic *msg,
			  const struct fi_ioc *cmp, size_t cmp_count, const struct fi_ioc *res,
			  size_t res_count, uint64_t flags, bool fetch)
{
	enum trig_kind kind = cmp ? TRIG_COMPARE : fetch ? TRIG_FETCH : TRIG_ATOMIC;
	struct braid_trig *t;

	if (flags & FI_INJECT)
		return -FI_EINVAL;
	if (msg->rma_iov_count != 1 || !msg->rma_iov || (msg->iov_count && !msg->msg_iov) ||
	    cmp_count > BRAID_IOV_LIMIT || res_count > BRAID_IOV_LIMIT ||
	    (cmp_count && !cmp) || (res_count && !res))
		return -FI_EINVAL;
	t = trig_new(ep, kind, flags, msg->context, msg->iov_count);
	if (!t)
		return msg->iov_count > BRAID_IOV_LIMIT ? -FI_EINVAL : -FI_ENOMEM;
	memcpy(t->ioc, msg->msg_iov, msg->iov_count * sizeof(*t->ioc));
	if (cmp_count)
		memcpy(t->cmp, cmp, cmp_count * sizeof(*cmp));
	if (res_count)
		memcpy(t->res, res, res_count * sizeof(*res));
	t->cmp_count = cmp_count;
	t->res_count = res_count;
	t->rma_ioc = msg->rma_iov[0];
	t->m.atomic = *msg;
	t->m.atomic.msg_iov = t->ioc;
	t->m.atomic.desc = t->desc;
	t->m.atomic.rma_iov = &t->rma_ioc;
	return trig_hold(t);
}

/* Post @t as the call it copies (no lock held). */
static ssize_t trig_post(struct braid_trig *t)
{
	struct fid_ep *ep = &t->ep->ep_fid;

	switch (t->kind) {
	case TRIG_MSG: {
		struct fi_msg m = {
			.msg_iov = t->m.tagged.msg_iov, .desc = t->m.tagged.desc,
			.iov_count = t->m.tagged.iov_count, .addr = t->m.tagged.addr,
			.context = t->context, .data = t->m.tagged.data,
		};

		return fi_sendmsg(ep, &m, t->flags);
	}
	case TRIG_TAGGED:
		return fi_tsendmsg(ep, &t->m.tagged, t->flags);
	case TRIG_READ:
		return fi_readmsg(ep, &t->m.rma, t->flags);
	case TRIG_WRITE:
		return fi_writemsg(ep, &t->m.rma, t->flags);
	case TRIG_ATOMIC:
		return fi_atomicmsg(ep, &t->m.atomic, t->flags);
	case TRIG_FETCH:
		return fi_fetch_atomicmsg(ep, &t->m.atomic, t->res, t->res_desc, t->res_count,
					  t->flags);
	case TRIG_COMPARE:
		return fi_compare_atomicmsg(ep, &t->m.atomic, t->cmp, t->cmp_desc, t->cmp_count,
					    t->res, t->res_desc, t->res_count, t->flags);
	}
	return -FI_EINVAL;
}

/* the counter of @t's endpoint that counts its kind of transfer (fi_cntr(3)) */
static struct braid_cntr *trig_tx_cntr(const struct braid_trig *t)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(t->ep);

	switch (t->kind) {
	case TRIG_MSG:
	case TRIG_TAGGED:
		return t->ep->send_cntr;
	case TRIG_WRITE:
	case TRIG_ATOMIC:
		return r->rma_cntr[1];	/* FI_WRITE */
	default:
		return r->rma_cntr[0];	/* FI_READ: reads and fetching atomics */
	}
}

/* the completion flags of @t's kind of transfer (fi_cq(3)) */
static uint64_t trig_comp_flags(const struct braid_trig *t)
{
	static const uint64_t flags[] = {
		[TRIG_MSG] = FI_MSG | FI_SEND,		[TRIG_TAGGED] = FI_TAGGED | FI_SEND,
		[TRIG_READ] = FI_RMA | FI_READ,		[TRIG_WRITE] = FI_RMA | FI_WRITE,
		[TRIG_ATOMIC] = FI_ATOMIC | FI_WRITE,	[TRIG_FETCH] = FI_ATOMIC | FI_READ,
		[TRIG_COMPARE] = FI_ATOMIC | FI_READ,
	};

	return flags[t->kind];
}

/* @t ends without being posted: an error completion, as its post would have had */
static void trig_fail(struct braid_trig *t, int err, int prov_errno)
{
	struct braid_cntr *c = trig_tx_cntr(t);

	if (t->ep->tx_cq)
		(void)braid_cq_write_err(t->ep->tx_cq, t->ep, t->context, trig_comp_flags(t), 0,
					 NULL, 0, 0, 0, err, prov_errno, FI_ADDR_NOTAVAIL);
	if (c)
		braid_cntr_inc_err(c);
}

/* The first held record whose counter has reached its threshold, taken off the list. */
static struct braid_trig *trig_due(struct braid_domain *dom)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&dom->trigs, it) {
		struct braid_trig *t = braid_container_of(it, struct braid_trig, node);

		if (atomic_load(&t->cntr->value) >= t->threshold) {
			braid_dlist_remove(&t->node);
			return t;
		}
	}
	return NULL;
}

void braid_trig_pump(struct braid_domain *dom)
{
	struct braid_trig *t;

	if (!atomic_load(&dom->trig_count))
		return;
	/* one thread posts at a time, so due records go out in their order */
	if (pthread_mutex_trylock(&dom->trig_pump))
		return;
	for (;;) {
		ssize_t ret;

		pthread_mutex_lock(&dom->trig_lock);
		t = trig_due(dom);
		pthread_mutex_unlock(&dom->trig_lock);
		if (!t)
			break;
		ret = trig_post(t);
		if (ret == -FI_EAGAIN) {
			/* the endpoint is full: first again, tried at the next progress */
			pthread_mutex_lock(&dom->trig_lock);
			braid_dlist_insert_head(&t->node, &dom->trigs);
			pthread_mutex_unlock(&dom->trig_lock);
			break;
		}
		if (ret)
			trig_fail(t, (int)-ret, BRAID_PERR_OK);
		trig_free(dom, t);
	}
	pthread_mutex_unlock(&dom->trig_pump);
}

int braid_trig_cancel(struct braid_ep *ep, void *context)
{
	struct braid_domain *dom = ep->domain;
	struct braid_trig *t = NULL;
	struct braid_dlist *it;

	if (!atomic_load(&ep->trig_held))
		return -FI_ENOENT;
	pthread_mutex_lock(&dom->trig_lock);
	braid_dlist_foreach(&dom->trigs, it) {
		struct braid_trig *c = braid_container_of(it, struct braid_trig, node);

		if (c->ep == ep && c->context == context) {
			braid_dlist_remove(&c->node);
			t = c;
			break;
		}
	}
	pthread_mutex_unlock(&dom->trig_lock);
	if (!t)
		return -FI_ENOENT;
	trig_fail(t, FI_ECANCELED, BRAID_PERR_CANCELED);
	trig_free(dom, t);
	return 0;
}

void braid_trig_drop(struct braid_ep *ep)
{
	struct braid_domain *dom = ep->domain;
	struct braid_dlist *it, *tmp, gone;

	if (!atomic_load(&ep->trig_held))
		return;
	braid_dlist_init(&gone);
	pthread_mutex_lock(&dom->trig_lock);
	braid_dlist_foreach_safe(&dom->trigs, it, tmp) {
		struct braid_trig *t = braid_container_of(it, struct braid_trig, node);

		if (t->ep == ep) {
			braid_dlist_remove(&t->node);
			braid_dlist_insert_tail(&t->node, &gone);
		}
	}
	pthread_mutex_unlock(&dom->trig_lock);
	while (!braid_dlist_empty(&gone))
		trig_free(dom, braid_container_of(braid_dlist_pop_head(&gone), struct braid_trig,
						  node));
}
