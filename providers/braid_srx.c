/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_srx.c: shared receive contexts (fi_srx_context, fi_endpoint(3)): one queue of posted receives that every endpoint bound to it draws from, a message's completion going to the CQ of the endpoint it arrived at. MSG: the RC queue pairs pull from it as a RoCE NIC's SRQ (IBTA 10.2.9.1); DGRAM: the bound endpoints' datagrams land in its buffers (braid_dgram.c); RDM: the bound endpoints' RD engines match their messages against it (braid_rdm.c, core's shared receive queue). */
#include <stdlib.h>
#include <string.h>

#include "braid.h"

/* A receive of an MSG endpoints' context. */
struct srx_entry {
	struct braid_dlist node;
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t count;
	uint64_t flags;
	void *context;
};

/* what a context's queue holds for the receives of the endpoints bound to it: they use no more */
#define SRX_QUEUE_CAPS	(FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_MULTI_RECV | \
			 BRAID_TAGGED_DIRECTED_RECV | BRAID_EXACT_DIRECTED_RECV | \
			 BRAID_TAGGED_MULTI_RECV)

static inline struct braid_srx *srx_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_srx, ep_fid.fid);
}

void braid_srx_lock(struct braid_srx *srx)
{
	if (srx->type == FI_EP_MSG)
		braid_domain_lock(srx->domain);
	else if (srx->domain->locking)
		pthread_mutex_lock(&srx->lock);
}

void braid_srx_unlock(struct braid_srx *srx)
{
	if (srx->type == FI_EP_MSG)
		braid_domain_unlock(srx->domain);
	else if (srx->domain->locking)
		pthread_mutex_unlock(&srx->lock);
}

struct braid_ep *braid_srx_home(struct braid_srx *srx)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&srx->eps, it) {
		struct braid_ep *ep = braid_container_of(it, struct braid_ep, srx_node);

		if (ep->enabled)
			return ep;
	}
	return NULL;
}

void braid_srx_progress_locked(struct braid_srx *srx)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&srx->eps, it)
		braid_ep_progress(braid_container_of(it, struct braid_ep, srx_node));
}

/* ---- endpoints bound to a context ---- */

int braid_srx_bind(struct braid_ep *ep, struct braid_srx *srx)
{
	struct braid_domain *dom = ep->domain;
	uint64_t caps = ep->info->rx_attr ? ep->info->rx_attr->caps : ep->info->caps;
	int ret = 0;

	if (ep->srx || srx->domain != dom || srx->type != ep->type)
		return -FI_EINVAL;
	/* MSG: a shared context holds untagged receives only: a tagged endpoint keeps its own */
	if (srx->type == FI_EP_MSG && (ep->info->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	/* fi_endpoint(3): an endpoint uses a subset of its shared context's attributes */
	if (caps & SRX_QUEUE_CAPS & ~srx->caps)
		return -FI_EINVAL;
	braid_domain_lock(dom);
	if (atomic_load(&srx->ref) >= BRAID_SHARED_CTX_EPS) {
		ret = -FI_EINVAL;	/* domain_attr max_ep_srx_ctx */
		goto out;
	}
	if (srx->type != FI_EP_MSG && dom->locking)
		pthread_mutex_lock(&srx->lock);
	braid_dlist_insert_tail(&ep->srx_node, &srx->eps);
	if (srx->type != FI_EP_MSG && dom->locking) {
		/* the context's lock becomes its data lock: the endpoints share its queue
		 * (braid_ep_lock(): changed while the lock it had is held) */
		pthread_mutex_t *old = atomic_load(&ep->lockp);

		pthread_mutex_lock(old);
		atomic_store(&ep->lockp, &srx->lock);
		pthread_mutex_unlock(old);
		pthread_mutex_unlock(&srx->lock);
	}
	ep->srx = srx;
	if (srx->type == FI_EP_DGRAM)
		braid_dgram_ep_of(ep)->rxq = &srx->q;	/* its datagrams land in the context's receives */
	atomic_fetch_add(&srx->ref, 1);
out:
	braid_domain_unlock(dom);
	return ret;
}

/*
 * fi_endpoint(3): the connectionless endpoints of a shared receive context
 * share one AV, in which a directed receive's source is looked up. The
 * caller holds the context's lock (the endpoint's).
 */
int braid_srx_enable(struct braid_ep *ep)
{
	struct braid_srx *srx = ep->srx;

	if (!srx || srx->type == FI_EP_MSG)
		return 0;
	if (srx->av && srx->av != ep->av)
		return -FI_EINVAL;
	srx->av = ep->av;
	return 0;
}

void braid_srx_unlink_locked(struct braid_ep *ep)
{
	struct braid_srx *srx = ep->srx;

	if (!srx)
		return;
	braid_dlist_remove(&ep->srx_node);
	if (srx->type == FI_EP_RDM)
		braid_rdm_srx_leave_locked(ep);
	/* the AV is the enabled endpoints' (they hold it open) */
	if (!braid_srx_home(srx))
		srx->av = NULL;
}

void braid_srx_leave(struct braid_ep *ep)
{
	if (ep->srx)
		atomic_fetch_sub(&ep->srx->ref, 1);
}

/* ---- MSG: the queue pairs' shared receive queue ---- */

/*
 * The RC engine's srq_pull (core/braid_rc.h) for endpoint @ctx: the oldest
 * receive posted to its shared context, whatever the message (caller holds
 * the domain lock). The iovecs go into @srx->pulled: the QP copies them at
 * once.
 */
int braid_srx_pull(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr)
{
	struct braid_ep *ep = ctx;
	struct braid_srx *srx = ep->srx;
	struct braid_dlist *it = srx ? braid_dlist_pop_head(&srx->q.posted) : NULL;
	struct srx_entry *e;

	(void)m;
	if (!it)
		return -FI_EAGAIN;
	e = braid_container_of(it, struct srx_entry, node);
	memcpy(srx->pulled, e->iov, e->count * sizeof(e->iov[0]));
	rr->iov = srx->pulled;
	rr->iov_count = e->count;
	rr->context = e->context;
	rr->flags = (ep->rx_selective && !(e->flags & FI_COMPLETION)) ? BRAID_RC_NO_COMP : 0;
	braid_pool_release(&srx->q.pool, e);
	return 0;
}

/* Post a receive to an MSG context (its own calls, and fi_recv on a bound endpoint). */
ssize_t braid_srx_recv(struct braid_srx *srx, const struct iovec *iov, size_t count,
		       uint64_t flags, void *context)
{
	struct srx_entry *e;
	ssize_t ret = 0;

	if (count > BRAID_RC_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~(FI_COMPLETION | FI_MORE))
		return -FI_EBADFLAGS;
	braid_srx_lock(srx);
	e = braid_pool_alloc(&srx->q.pool);
	if (!e) {
		ret = -FI_EAGAIN;
	} else {
		memcpy(e->iov, iov, count * sizeof(*iov));
		e->count = count;
		e->flags = flags;
		e->context = context;
		braid_dlist_insert_tail(&e->node, &srx->q.posted);
	}
	braid_srx_unlock(srx);
	return ret;
}

/* fi_cancel of a receive still in an MSG context's queue: gone, -FI_ENOENT otherwise.
 * (No queue pair took it, so no endpoint's CQ reports it: no completion follows.) */
static int srx_msg_cancel(struct braid_srx *srx, void *context)
{
	struct braid_dlist *it;
	int ret = -FI_ENOENT;

	braid_srx_lock(srx);
	braid_dlist_foreach(&srx->q.posted, it) {
		struct srx_entry *e = braid_container_of(it, struct srx_entry, node);

		if (e->context != context)
			continue;
		braid_dlist_remove(&e->node);
		braid_pool_release(&srx->q.pool, e);
		ret = 0;
		break;
	}
	braid_srx_unlock(srx);
	return ret;
}

/* ---- the context's calls ---- */

/* A receive posted to the context itself, as its endpoint type takes it. */
static ssize_t srx_post(struct braid_srx *srx, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			uint64_t flags, bool tagged)
{
	/* device memory is staged per endpoint; a shared context's receives are not its own */
	if (braid_hmem_desc(desc, count))
		return -FI_EOPNOTSUPP;
	switch (srx->type) {
	case FI_EP_RDM:
		return braid_rdm_srx_post(srx, iov, count, src, context, tag, ignore, flags, tagged);
	case FI_EP_DGRAM:
		return braid_dgram_srx_post(srx, iov, count, context, flags);
	default:
		return braid_srx_recv(srx, iov, count, flags, context);
	}
}

/* the flags of a call that takes none: the context's op_flags (MSG: always a completion) */
static uint64_t srx_flags(const struct braid_srx *srx)
{
	return srx->type == FI_EP_MSG ? srx->op_flags | FI_COMPLETION : srx->op_flags;
}

static ssize_t srx_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return srx_post(srx, &iov, &desc, 1, src_addr, context, 0, 0, srx_flags(srx), false);
}

static ssize_t srx_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);

	return srx_post(srx, iov, desc, count, src_addr, context, 0, 0, srx_flags(srx), false);
}

static ssize_t srx_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return srx_post(srx_of(&ep_fid->fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, 0, 0, flags, false);
}

/* a receive context does not send (fi_endpoint(3)) */
static ssize_t srx_no_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   fi_addr_t dest_addr, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			    size_t count, fi_addr_t dest_addr, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			       uint64_t data, fi_addr_t dest_addr, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
				 fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

static struct fi_ops_msg srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = srx_recv,
	.recvv = srx_recvv,
	.recvmsg = srx_recvmsg,
	.send = srx_no_send,
	.sendv = srx_no_sendv,
	.sendmsg = srx_no_sendmsg,
	.inject = srx_no_inject,
	.senddata = srx_no_senddata,
	.injectdata = srx_no_injectdata,
};

/* RDM: tagged receives (FI_PEEK, FI_CLAIM, FI_DISCARD through trecvmsg) */
static ssize_t srx_trecv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			 fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return srx_post(srx, &iov, &desc, 1, src_addr, context, tag, ignore,
			srx->op_flags & ~FI_MULTI_RECV, true);
}

static ssize_t srx_trecvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			  void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);

	return srx_post(srx, iov, desc, count, src_addr, context, tag, ignore,
			srx->op_flags & ~FI_MULTI_RECV, true);
}

static ssize_t srx_trecvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return srx_post(srx_of(&ep_fid->fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, msg->tag, msg->ignore, flags, true);
}

static ssize_t srx_no_tsend(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_tsendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			      fi_addr_t dest_addr, uint64_t tag)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_tsenddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t srx_no_tinjectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
				  fi_addr_t dest_addr, uint64_t tag)
{
	return -FI_ENOSYS;
}

static struct fi_ops_tagged srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = srx_trecv,
	.recvv = srx_trecvv,
	.recvmsg = srx_trecvmsg,
	.send = srx_no_tsend,
	.sendv = srx_no_tsendv,
	.sendmsg = srx_no_tsendmsg,
	.inject = srx_no_tinject,
	.senddata = srx_no_tsenddata,
	.injectdata = srx_no_tinjectdata,
};

/*
 * fi_cancel of a receive the context holds (no message took it yet). RDM
 * and DGRAM: an FI_ECANCELED completion on the CQ of the first enabled
 * endpoint bound to it (none without one); MSG: none (srx_msg_cancel).
 */
static ssize_t srx_cancel(fid_t fid, void *context)
{
	struct braid_srx *srx = srx_of(fid);

	switch (srx->type) {
	case FI_EP_RDM:
		return braid_rdm_srx_cancel(srx, context);
	case FI_EP_DGRAM:
		return braid_dgram_srx_cancel(srx, context);
	default:
		return srx_msg_cancel(srx, context);
	}
}

/* RDM: FI_OPT_MIN_MULTI_RECV of the context's multi-receive buffers */
static int srx_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct braid_srx *srx = srx_of(fid);

	if (!optval || !optlen)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV ||
	    srx->type != FI_EP_RDM)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = srx->min_multi_recv;
	*optlen = sizeof(size_t);
	return 0;
}

static int srx_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct braid_srx *srx = srx_of(fid);

	if (!optval)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV ||
	    srx->type != FI_EP_RDM)
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t))
		return -FI_EINVAL;
	braid_srx_lock(srx);
	srx->min_multi_recv = *(const size_t *)optval;
	braid_srx_unlock(srx);
	return 0;
}

size_t braid_srx_room(struct braid_srx *srx)
{
	size_t room;

	braid_srx_lock(srx);
	room = srx->rdq ? braid_rd_rxq_room(srx->rdq) : srx->q.pool.count - srx->q.pool.in_use;
	braid_srx_unlock(srx);
	return room;
}

static ssize_t srx_rx_size_left(struct fid_ep *ep_fid)
{
	return (ssize_t)braid_srx_room(srx_of(&ep_fid->fid));
}

static ssize_t srx_tx_size_left(struct fid_ep *ep_fid)
{
	return -FI_ENOSYS;	/* a receive context */
}

static struct fi_ops_ep srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = srx_cancel,
	.getopt = srx_getopt,
	.setopt = srx_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = srx_rx_size_left,
	.tx_size_left = srx_tx_size_left,
};

static int srx_close(struct fid *fid)
{
	struct braid_srx *srx = srx_of(fid);

	if (atomic_load(&srx->ref))
		return -FI_EBUSY;	/* endpoints still draw from it */
	/* (the engines that shared it closed with their endpoints) */
	if (srx->rdq)
		(void)braid_rd_rxq_close(srx->rdq);
	braid_pool_destruct(&srx->q.pool);
	pthread_mutex_destroy(&srx->lock);
	atomic_fetch_sub(&srx->domain->ref, 1);
	free(srx);
	return 0;
}

static int srx_control(struct fid *fid, int command, void *arg)
{
	/* nothing to enable: it takes receives from its creation */
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = srx_close,
	.bind = braid_nosys_bind,
	.control = srx_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

/*
 * fi_srx_context: a context of the domain's endpoint type. The attributes
 * are checked against what braid offers that type (-FI_ENODATA for
 * capabilities it does not have, -FI_EINVAL for the rest), and those left
 * 0 are filled in with the context's actual ones (fi_endpoint(3)).
 */
int braid_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		   void *context)
{
	struct braid_domain *dom = braid_container_of(domain, struct braid_domain, domain_fid);
	enum fi_ep_type type = dom->info->ep_attr->type;
	uint32_t api = dom->fabric->fabric_fid.api_version;
	struct braid_srx *srx;
	size_t size, entry;
	int ret;

	if (!rx_ep)
		return -FI_EINVAL;
	ret = braid_ctx_attr_check(type, api, NULL, attr, 0);
	if (ret)
		return ret;
	size = attr && attr->size ? attr->size : braid_cfg.rx_size;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	srx->domain = dom;
	srx->type = type;
	srx->size = size;
	srx->op_flags = attr ? attr->op_flags : 0;
	srx->caps = attr && attr->caps ? attr->caps : dom->info->rx_attr->caps;
	srx->min_multi_recv = BRAID_MIN_MULTI_RECV;
	pthread_mutex_init(&srx->lock, NULL);
	braid_dlist_init(&srx->eps);
	braid_dlist_init(&srx->q.posted);
	entry = type == FI_EP_MSG ? sizeof(struct srx_entry) : sizeof(struct braid_rx_entry);
	ret = type == FI_EP_RDM ? braid_rd_rxq_open((uint32_t)size, &srx->rdq) :
				  braid_pool_construct(&srx->q.pool, entry, size);
	if (ret) {
		pthread_mutex_destroy(&srx->lock);
		free(srx);
		return ret;
	}
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &srx_fi_ops;
	srx->ep_fid.ops = &srx_ep_ops;
	srx->ep_fid.msg = &srx_msg_ops;
	srx->ep_fid.cm = &braid_nosys_cm_ops;
	srx->ep_fid.rma = &braid_nosys_rma_ops;
	srx->ep_fid.tagged = type == FI_EP_RDM ? &srx_tagged_ops : &braid_nosys_tagged_ops;
	srx->ep_fid.atomic = &braid_nosys_atomic_ops;
	srx->ep_fid.collective = &braid_nosys_collective_ops;
	if (attr) {
		/* the context's actual attributes (fi_endpoint(3)) */
		attr->size = size;
		attr->caps = srx->caps;
		if (!attr->iov_limit)
			attr->iov_limit = dom->info->rx_attr->iov_limit;
	}
	atomic_fetch_add(&dom->ref, 1);
	*rx_ep = &srx->ep_fid;
	return 0;
}
