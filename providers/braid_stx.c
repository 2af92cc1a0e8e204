/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_stx.c: shared transmit contexts (fi_stx_context, fi_endpoint(3)): endpoints bound to one post their transmit operations as before, and it bounds how many are outstanding across them all. */
#include <assert.h>
#include <stdlib.h>

#include "braid.h"

/* the transmit capabilities an endpoint bound to a context must find in it (fi_endpoint(3)) */
#define STX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)

static inline struct braid_stx *stx_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_stx, stx_fid.fid);
}

/*
 * One transmit operation of @ep begins: room in its context, or -FI_EAGAIN
 * while the context's size are outstanding (the caller progresses, as for
 * any -FI_EAGAIN; completions give room back). Endpoints bound to one
 * context post under their own locks: the count is atomic.
 */
int braid_stx_take(struct braid_ep *ep)
{
	struct braid_stx *stx = ep->stx;
	size_t used = atomic_load_explicit(&stx->used, memory_order_relaxed);

	do {
		if (used >= stx->size)
			return -FI_EAGAIN;
	} while (!atomic_compare_exchange_weak(&stx->used, &used, used + 1));
	ep->stx_held++;
	return 0;
}

/* @n transmit operations of @ep ended (completed, failed, or never posted after all). */
void braid_stx_give(struct braid_ep *ep, size_t n)
{
	assert(n <= ep->stx_held);
	ep->stx_held -= n;
	atomic_fetch_sub(&ep->stx->used, n);
}

size_t braid_stx_room(const struct braid_stx *stx)
{
	size_t used = atomic_load(&stx->used);

	return used < stx->size ? stx->size - used : 0;
}

int braid_stx_bind(struct braid_ep *ep, struct braid_stx *stx)
{
	uint64_t caps = ep->info->tx_attr ? ep->info->tx_attr->caps : ep->info->caps;
	int ret = 0;

	if (ep->stx || stx->domain != ep->domain || stx->type != ep->type)
		return -FI_EINVAL;
	/* fi_endpoint(3): an endpoint uses a subset of its shared context's attributes */
	if (caps & STX_CAPS & ~stx->caps)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (atomic_load(&stx->ref) >= BRAID_SHARED_CTX_EPS) {
		ret = -FI_EINVAL;	/* domain_attr max_ep_stx_ctx */
	} else {
		ep->stx = stx;
		atomic_fetch_add(&stx->ref, 1);
	}
	braid_domain_unlock(ep->domain);
	return ret;
}

/* (its engine or queue pair is gone: what it still held will not complete) */
void braid_stx_leave(struct braid_ep *ep)
{
	struct braid_stx *stx = ep->stx;

	if (!stx)
		return;
	atomic_fetch_sub(&stx->used, ep->stx_held);
	ep->stx_held = 0;
	atomic_fetch_sub(&stx->ref, 1);
}

/* operations are the endpoints' (fi_cancel on them); the context holds none */
static ssize_t stx_cancel(fid_t fid, void *context)
{
	return -FI_ENOENT;
}

static int stx_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int stx_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t stx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;	/* not an endpoint: fi_tx_size_left asks the endpoints */
}

static struct fi_ops_ep stx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = stx_cancel,
	.getopt = stx_getopt,
	.setopt = stx_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = stx_size_left,
	.tx_size_left = stx_size_left,
};

static int stx_close(struct fid *fid)
{
	struct braid_stx *stx = stx_of(fid);

	if (atomic_load(&stx->ref))
		return -FI_EBUSY;	/* endpoints still send through it */
	atomic_fetch_sub(&stx->domain->ref, 1);
	free(stx);
	return 0;
}

static struct fi_ops stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = stx_close,
	.bind = braid_nosys_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

/*
 * fi_stx_context: a context of the domain's endpoint type. The attributes
 * are checked against what braid offers that type (-FI_ENODATA for
 * capabilities it does not have, -FI_EINVAL for the rest), and those left
 * 0 are filled in with the context's actual ones (fi_endpoint(3)).
 */
int braid_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx_out,
		   void *context)
{
	struct braid_domain *dom = braid_container_of(domain, struct braid_domain, domain_fid);
	const struct fi_info *di = dom->info;
	struct braid_stx *stx;
	int ret;

	if (!stx_out)
		return -FI_EINVAL;
	ret = braid_ctx_attr_check(di->ep_attr->type, dom->fabric->fabric_fid.api_version, attr,
				   NULL, di->tx_attr->inject_size);
	if (ret)
		return ret;
	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	stx->domain = dom;
	stx->type = di->ep_attr->type;
	stx->size = attr && attr->size ? attr->size : braid_cfg.tx_size;
	stx->caps = attr && attr->caps ? attr->caps : di->tx_attr->caps;
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = &stx_fi_ops;
	stx->stx_fid.ops = &stx_ep_ops;
	if (attr) {
		/* the context's actual attributes (fi_endpoint(3)) */
		attr->size = stx->size;
		attr->caps = stx->caps;
		if (!attr->iov_limit)
			attr->iov_limit = di->tx_attr->iov_limit;
		if (!attr->inject_size)
			attr->inject_size = di->tx_attr->inject_size;
	}
	atomic_fetch_add(&dom->ref, 1);
	*stx_out = &stx->stx_fid;
	return 0;
}
