/* braid_srx.c: shared receive contexts of MSG endpoints (fi_srx_context, fi_endpoint(3)): one queue of posted receives that the RC queue pair of every bound endpoint draws from when it has none of its own, as a RoCE NIC's SRQ does (IBTA 10.2.9.1). */
#include <stdlib.h>
#include <string.h>

#include "braid.h"

struct srx_entry {
	struct braid_dlist node;
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t count;
	uint64_t flags;
	void *context;
};

static inline struct braid_srx *srx_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_srx, ep_fid.fid);
}

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
	struct braid_dlist *it = srx ? braid_dlist_pop_head(&srx->posted) : NULL;
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
	braid_pool_release(&srx->pool, e);
	return 0;
}

/* Post a receive to the shared context (its own calls, and fi_recv on a bound endpoint). */
ssize_t braid_srx_recv(struct braid_srx *srx, const struct iovec *iov, size_t count,
		       uint64_t flags, void *context)
{
	struct srx_entry *e;
	ssize_t ret = 0;

	if (count > BRAID_RC_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~(FI_COMPLETION | FI_MORE))
		return -FI_EBADFLAGS;
	braid_domain_lock(srx->domain);
	e = braid_pool_alloc(&srx->pool);
	if (!e) {
		ret = -FI_EAGAIN;
	} else {
		memcpy(e->iov, iov, count * sizeof(*iov));
		e->count = count;
		e->flags = flags;
		e->context = context;
		braid_dlist_insert_tail(&e->node, &srx->posted);
	}
	braid_domain_unlock(srx->domain);
	return ret;
}

static ssize_t srx_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return braid_srx_recv(srx, &iov, 1, srx->op_flags | FI_COMPLETION, context);
}

static ssize_t srx_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_srx *srx = srx_of(&ep_fid->fid);

	return braid_srx_recv(srx, iov, count, srx->op_flags | FI_COMPLETION, context);
}

static ssize_t srx_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return braid_srx_recv(srx_of(&ep_fid->fid), msg->msg_iov, msg->iov_count, flags, msg->context);
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

/* fi_cancel of a receive still in the shared queue: gone, -FI_ENOENT otherwise.
 * (The context has no CQ of its own to report it on: no completion follows.) */
static ssize_t srx_cancel(fid_t fid, void *context)
{
	struct braid_srx *srx = srx_of(fid);
	struct braid_dlist *it;
	ssize_t ret = -FI_ENOENT;

	braid_domain_lock(srx->domain);
	braid_dlist_foreach(&srx->posted, it) {
		struct srx_entry *e = braid_container_of(it, struct srx_entry, node);

		if (e->context != context)
			continue;
		braid_dlist_remove(&e->node);
		braid_pool_release(&srx->pool, e);
		ret = 0;
		break;
	}
	braid_domain_unlock(srx->domain);
	return ret;
}

static int srx_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int srx_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops_ep srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = srx_cancel,
	.getopt = srx_getopt,
	.setopt = srx_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = NULL,
	.tx_size_left = NULL,
};

static int srx_close(struct fid *fid)
{
	struct braid_srx *srx = srx_of(fid);

	if (atomic_load(&srx->ref))
		return -FI_EBUSY;	/* endpoints still draw from it */
	braid_pool_destruct(&srx->pool);
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

int braid_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		   void *context)
{
	struct braid_domain *dom = braid_container_of(domain, struct braid_domain, domain_fid);
	size_t size = attr && attr->size ? attr->size : braid_cfg.rx_size;
	struct braid_srx *srx;

	if (!rx_ep)
		return -FI_EINVAL;
	if (dom->info->ep_attr->type != FI_EP_MSG)
		return -FI_ENOSYS;	/* RDM and DGRAM endpoints have no shared contexts */
	if (attr && ((attr->caps & ~(FI_MSG | FI_RECV)) || attr->iov_limit > BRAID_RC_IOV_MAX ||
		     (attr->op_flags & ~FI_COMPLETION)))
		return -FI_EINVAL;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	if (braid_pool_construct(&srx->pool, sizeof(struct srx_entry), size)) {
		free(srx);
		return -FI_ENOMEM;
	}
	srx->domain = dom;
	srx->op_flags = attr ? attr->op_flags : 0;
	braid_dlist_init(&srx->posted);
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &srx_fi_ops;
	srx->ep_fid.ops = &srx_ep_ops;
	srx->ep_fid.msg = &srx_msg_ops;
	srx->ep_fid.cm = &braid_nosys_cm_ops;
	srx->ep_fid.rma = &braid_nosys_rma_ops;
	srx->ep_fid.tagged = &braid_nosys_tagged_ops;
	srx->ep_fid.atomic = &braid_nosys_atomic_ops;
	srx->ep_fid.collective = &braid_nosys_collective_ops;
	atomic_fetch_add(&dom->ref, 1);
	*rx_ep = &srx->ep_fid;
	return 0;
}
