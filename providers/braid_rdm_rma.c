/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rdm_rma.c: fi_rma(3) and fi_atomic(3) on the FI_EP_RDM endpoint: argument checks, then the RD engine's RMA (core/braid_rd_rma.c, protocol.md §4.7). */
#include <string.h>

#include "braid.h"

#define RMA_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | FI_REMOTE_CQ_DATA | \
			 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_TRIGGER)
/* a compare or fetch op carries no remote CQ data (fi_atomic(3)) */
#define ATOMIC_FLAGS	(RMA_FLAGS & ~FI_REMOTE_CQ_DATA)

int braid_atomic_query(enum fi_datatype dt, enum fi_op op, uint64_t flags, size_t *count)
{
	enum braid_atomic_kind kind = (flags & FI_COMPARE_ATOMIC) ? BRAID_ATOMIC_COMPARE_KIND :
				      (flags & FI_FETCH_ATOMIC) ? BRAID_ATOMIC_FETCH_KIND :
				      BRAID_ATOMIC_WRITE_KIND;

	if ((flags & FI_COMPARE_ATOMIC) && (flags & FI_FETCH_ATOMIC))
		return -FI_EINVAL;
	if (!braid_atomic_valid(braid_aop_of(op), braid_adt_of(dt), kind))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = BRAID_ATOMIC_MAX / braid_atomic_dt_size(braid_adt_of(dt));
	return 0;
}

/* Check, post and flush one operation. */
static ssize_t rma_post(struct braid_ep *ep, struct braid_rd_rma *req,
			const struct braid_hmem_req *hr, fi_addr_t dest, uint64_t flags, bool nocomp)
{
	struct braid_hmem_op *h = NULL;
	bool inject = flags & FI_INJECT;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (braid_rdm_peer(ep, dest, &req->peer))
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		req->flags |= BRAID_RD_CQ_DATA;
	if (flags & FI_INJECT)
		req->flags |= BRAID_RD_INJECT;
	if (braid_rdm_nocomp(ep, flags, nocomp))
		req->flags |= BRAID_RD_NO_COMP;
	braid_ep_lock(ep);
	ret = braid_ep_tx_take(ep);
	if (!ret && hr) {
		/* device buffers: the engine sees their staging (an atomic's operands all staged now) */
		h = braid_rdm_hmem_start(ep, hr, inject || req->op == BRAID_RD_RMA_ATOMIC, &ret);
		if (h && h->in.stage) {
			req->iov = &h->in.siov;
			req->iov_count = 1;
			req->staged_len = h->in.ring ? h->in.len : 0;
		}
		if (h && h->out.stage) {
			req->res = &h->out.siov;
			req->res_count = 1;
		}
		if (h && !inject)
			req->context = h;
		if (h && h->staged < h->in.len)
			req->flags |= BRAID_RD_STAGED;
		if (ret)
			braid_ep_tx_give(ep, 1);
	}
	if (!ret && (ret = braid_rd_rma(braid_rdm_ep_of(ep)->rd, req, braid_now_ns())))
		braid_ep_tx_give(ep, 1);
	if (h && (ret || inject))
		braid_hmem_op_give(&braid_rdm_ep_of(ep)->hmem, h);
	braid_rdm_posted_locked(ep, ret, flags);
	braid_ep_unlock(ep);
	return ret;
}

/* ---- fi_rma(3) ---- */

static ssize_t rma_op(struct braid_ep *ep, enum braid_rd_rma_kind op, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
		      uint64_t data, uint64_t flags, void *context, bool nocomp)
{
	struct braid_rd_rma req = {
		.op = op, .rkey = key, .raddr = addr, .data = data, .context = context,
	};
	struct braid_hmem_req hr = { .context = context };
	bool dev = braid_hmem_desc(desc, count);
	uint64_t len = 0;
	size_t i;

	if (count > ep->info->tx_attr->iov_limit || count > BRAID_RD_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~RMA_FLAGS)
		return -FI_EBADFLAGS;
	if (op == BRAID_RD_RMA_READ && (flags & (FI_REMOTE_CQ_DATA | FI_INJECT)))
		return -FI_EBADFLAGS;	/* a read carries no data to the target and cannot inject */
	if (flags & FI_TRIGGER) {
		/* held for its counter (braid_trigger.c); the endpoint must have asked */
		if (!(ep->info->caps & FI_TRIGGER))
			return -FI_EBADFLAGS;
		if (dev)
			return -FI_EOPNOTSUPP;	/* (a held transfer keeps no descriptors) */
		return braid_trig_rma(ep, op == BRAID_RD_RMA_READ, iov, count, peer, addr, key,
				      data, flags, context);
	}
	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	if ((flags & FI_INJECT) && len > ep->info->tx_attr->inject_size)
		return -FI_EMSGSIZE;
	if (op == BRAID_RD_RMA_READ) {
		req.res = hr.out = iov;
		req.res_count = hr.out_count = count;
		hr.out_desc = desc;
	} else {
		req.iov = hr.in = iov;
		req.iov_count = hr.in_count = count;
		hr.in_desc = desc;
	}
	return rma_post(ep, &req, dev ? &hr : NULL, peer, flags, nocomp);
}

/* fi_msg_rma: one remote range as long as the local buffers (rma_iov_limit 1) */
static ssize_t rma_msg(struct fid_ep *ep_fid, enum braid_rd_rma_kind op, const struct fi_msg_rma *msg,
		       uint64_t flags)
{
	uint64_t len = 0;
	size_t i;

	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov || (msg->iov_count && !msg->msg_iov))
		return -FI_EINVAL;
	for (i = 0; i < msg->iov_count; i++)
		len += msg->msg_iov[i].iov_len;
	if (msg->rma_iov[0].len != len)
		return -FI_EINVAL;
	return rma_op(braid_ep_of(ep_fid), op, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
		      msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data, flags, msg->context, false);
}

static ssize_t rdm_read(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rma_op(ep, BRAID_RD_RMA_READ, &iov, &desc, 1, src_addr, addr, key, 0,
		      braid_ep_tx_flags(ep_fid) & ~FI_INJECT, context, false);
}

static ssize_t rdm_readv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key,
			 void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rma_op(ep, BRAID_RD_RMA_READ, iov, desc, count, src_addr, addr, key, 0,
		      braid_ep_tx_flags(ep_fid) & ~FI_INJECT, context, false);
}

static ssize_t rdm_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, BRAID_RD_RMA_READ, msg, flags);
}

static ssize_t rdm_write(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rma_op(ep, BRAID_RD_RMA_WRITE, &iov, &desc, 1, dest_addr, addr, key, 0,
		      braid_ep_tx_flags(ep_fid), context, false);
}

static ssize_t rdm_writev(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rma_op(ep, BRAID_RD_RMA_WRITE, iov, desc, count, dest_addr, addr, key, 0,
		      braid_ep_tx_flags(ep_fid), context, false);
}

static ssize_t rdm_writemsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, BRAID_RD_RMA_WRITE, msg, flags);
}

static ssize_t rdm_inject_write(struct fid_ep *ep_fid, const void *buf, size_t len,
				fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rma_op(ep, BRAID_RD_RMA_WRITE, &iov, &desc, 1, dest_addr, addr, key, 0,
		      FI_INJECT, NULL, true);
}

static ssize_t rdm_writedata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			     void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rma_op(ep, BRAID_RD_RMA_WRITE, &iov, &desc, 1, dest_addr, addr, key, data,
		      braid_ep_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, context, false);
}

static ssize_t rdm_inject_writedata(struct fid_ep *ep_fid, const void *buf, size_t len,
				    uint64_t data, fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rma_op(ep, BRAID_RD_RMA_WRITE, &iov, &desc, 1, dest_addr, addr, key, data,
		      FI_INJECT | FI_REMOTE_CQ_DATA, NULL, true);
}

struct fi_ops_rma braid_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rdm_read,
	.readv = rdm_readv,
	.readmsg = rdm_readmsg,
	.write = rdm_write,
	.writev = rdm_writev,
	.writemsg = rdm_writemsg,
	.inject = rdm_inject_write,
	.writedata = rdm_writedata,
	.injectdata = rdm_inject_writedata,
};

/* ---- fi_atomic(3) ---- */

/*
 * fi_ioc arrays (elements) as byte iovecs, appended at @out[*n]. Return: the
 * elements, or -FI_EINVAL (too many iovecs, NULL with a count).
 */
static ssize_t ioc_to_iov(const struct fi_ioc *ioc, size_t count, size_t dtsize,
			  struct iovec *out, size_t *n)
{
	size_t i, elems = 0;

	if (count && !ioc)
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (*n == BRAID_RD_IOV_MAX || (!ioc[i].addr && ioc[i].count))
			return -FI_EINVAL;
		out[*n].iov_base = ioc[i].addr;
		out[(*n)++].iov_len = ioc[i].count * dtsize;
		elems += ioc[i].count;
	}
	return (ssize_t)elems;
}

/*
 * One atomic: @opnd (absent for FI_ATOMIC_READ), @cmp (compare ops), @res
 * (fetch and compare ops) as fi_ioc arrays of @count elements each, to
 * @rma's one remote range.
 */
static ssize_t atomic_op(struct braid_ep *ep, const struct fi_msg_atomic *msg,
			 const struct fi_ioc *cmp, void **cmp_desc, size_t cmp_count,
			 struct fi_ioc *res, void **res_desc, size_t res_count, uint64_t flags,
			 bool fetch, bool nocomp)
{
	struct iovec iov[BRAID_RD_IOV_MAX], riov[BRAID_RD_IOV_MAX];
	void *idesc[BRAID_RD_IOV_MAX] = { NULL };
	struct braid_hmem_req hr = { .in = iov, .in_desc = idesc, .out = riov,
				     .out_desc = res_desc, .context = msg->context };
	size_t i, nopnd;
	struct braid_rd_rma req = {
		.op = BRAID_RD_RMA_ATOMIC, .iov = iov, .res = riov, .context = msg->context,
		.aop = (uint8_t)msg->op, .dt = (uint8_t)msg->datatype,
	};
	enum braid_atomic_kind kind = cmp ? BRAID_ATOMIC_COMPARE_KIND :
				      fetch ? BRAID_ATOMIC_FETCH_KIND : BRAID_ATOMIC_WRITE_KIND;
	size_t dtsize = braid_atomic_dt_size(braid_adt_of(msg->datatype));
	ssize_t elems, celems = 0, relems = 0;

	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	if (flags & ~ATOMIC_FLAGS)
		return -FI_EBADFLAGS;
	if (flags & FI_TRIGGER) {
		if (!(ep->info->caps & FI_TRIGGER))
			return -FI_EBADFLAGS;
		if (!braid_atomic_valid(braid_aop_of(msg->op), braid_adt_of(msg->datatype), kind) ||
		    braid_hmem_desc(msg->desc, msg->iov_count) ||
		    braid_hmem_desc(cmp_desc, cmp_count) || braid_hmem_desc(res_desc, res_count))
			return -FI_EOPNOTSUPP;	/* (a held transfer keeps no descriptors) */
		return braid_trig_atomic(ep, msg, cmp, cmp_count, res, res_count, flags, fetch);
	}
	if ((unsigned)msg->op >= FI_ATOMIC_OP_LAST || !dtsize ||
	    !braid_atomic_valid(braid_aop_of(msg->op), braid_adt_of(msg->datatype), kind))
		return -FI_EOPNOTSUPP;
	if (fetch)
		relems = ioc_to_iov(res, res_count, dtsize, riov, &req.res_count);
	/* FI_ATOMIC_READ takes no operand (a buffer may be given: it is ignored) */
	elems = msg->op == FI_ATOMIC_READ ? relems :
		ioc_to_iov(msg->msg_iov, msg->iov_count, dtsize, iov, &req.iov_count);
	nopnd = req.iov_count;
	if (elems >= 0 && cmp)
		celems = ioc_to_iov(cmp, cmp_count, dtsize, iov, &req.iov_count);
	/* the operands' and compare values' descriptors, as their iovecs follow each other */
	for (i = 0; i < req.iov_count; i++)
		idesc[i] = i < nopnd ? (msg->desc ? msg->desc[i] : NULL) :
			   (cmp_desc ? cmp_desc[i - nopnd] : NULL);
	if (elems < 0 || celems < 0 || relems < 0)
		return -FI_EINVAL;
	if (!elems || (size_t)elems != msg->rma_iov[0].count || (cmp && celems != elems) ||
	    (fetch && relems != elems))
		return -FI_EINVAL;
	if ((size_t)elems * dtsize > BRAID_ATOMIC_MAX)
		return -FI_EMSGSIZE;	/* beyond the count fi_atomicvalid gave (fi_atomic(3)) */
	req.count = (uint32_t)elems;
	req.rkey = msg->rma_iov[0].key;
	req.raddr = msg->rma_iov[0].addr;
	hr.in_count = req.iov_count;
	hr.out_count = req.res_count;
	return rma_post(ep, &req, braid_hmem_desc(idesc, req.iov_count) ||
			braid_hmem_desc(res_desc, req.res_count) ? &hr : NULL, msg->addr, flags,
			nocomp);
}

/* The vector forms: @n elements from @iov (or, for FI_ATOMIC_READ, from @res) to one remote range. */
static ssize_t atomic_vec(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
			  size_t count, const struct fi_ioc *cmp, void **cmp_desc, size_t cmp_count,
			  struct fi_ioc *res, void **res_desc, size_t res_count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			  void *context, bool fetch)
{
	const struct fi_ioc *v = op == FI_ATOMIC_READ ? res : iov;
	size_t i, n = 0, vn = op == FI_ATOMIC_READ ? res_count : count;
	struct fi_rma_ioc rioc = { addr, 0, key };
	struct fi_msg_atomic msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count, .addr = dest_addr, .rma_iov = &rioc,
		.rma_iov_count = 1, .datatype = datatype, .op = op, .context = context,
	};
	uint64_t flags = braid_ep_tx_flags(ep_fid);

	for (i = 0; v && i < vn; i++)
		n += v[i].count;
	rioc.count = n;
	return atomic_op(braid_ep_of(ep_fid), &msg, cmp, cmp_desc, cmp_count, res, res_desc,
			 res_count, fetch ? flags & ~FI_INJECT : flags, fetch, false);
}

#define ATOMIC_MSG(buf_, desc_, count_, dest_, addr_, key_, dt_, op_, ctx_)			\
	struct fi_ioc ioc_ = { (void *)(buf_), (count_) };					\
	struct fi_rma_ioc rioc_ = { (addr_), (count_), (key_) };					\
	struct fi_msg_atomic msg_ = {								\
		.msg_iov = &ioc_, .desc = (desc_), .iov_count = 1, .addr = (dest_),		\
		.rma_iov = &rioc_,								\
		.rma_iov_count = 1, .datatype = (dt_), .op = (op_), .context = (ctx_),		\
	}

static ssize_t rdm_atomic(struct fid_ep *ep_fid, const void *buf, size_t count, void *desc,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	ATOMIC_MSG(buf, &desc, count, dest_addr, addr, key, datatype, op, context);

	return atomic_op(ep, &msg_, NULL, NULL, 0, NULL, NULL, 0, braid_ep_tx_flags(ep_fid), false,
			 false);
}

static ssize_t rdm_atomicv(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
			   size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op, void *context)
{
	return atomic_vec(ep_fid, iov, desc, count, NULL, NULL, 0, NULL, NULL, 0, dest_addr, addr,
			  key, datatype, op, context, false);
}

static ssize_t rdm_atomicmsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
			     uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return atomic_op(braid_ep_of(ep_fid), msg, NULL, NULL, 0, NULL, NULL, 0, flags, false, false);
}

static ssize_t rdm_inject_atomic(struct fid_ep *ep_fid, const void *buf, size_t count,
				 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, count, &probe);
	ATOMIC_MSG(buf, &desc, count, dest_addr, addr, key, datatype, op, NULL);

	return atomic_op(ep, &msg_, NULL, NULL, 0, NULL, NULL, 0, FI_INJECT, false, true);
}

static ssize_t rdm_fetch_atomic(struct fid_ep *ep_fid, const void *buf, size_t count, void *desc,
				void *result, void *result_desc, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key, enum fi_datatype datatype,
				enum fi_op op, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct fi_ioc res = { result, count };
	ATOMIC_MSG(buf, &desc, count, dest_addr, addr, key, datatype, op, context);

	return atomic_op(ep, &msg_, NULL, NULL, 0, &res, &result_desc, 1,
			 braid_ep_tx_flags(ep_fid) & ~FI_INJECT, true, false);
}

static ssize_t rdm_fetch_atomicv(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
				 size_t count, struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	return atomic_vec(ep_fid, iov, desc, count, NULL, NULL, 0, resultv, result_desc,
			  result_count, dest_addr, addr, key, datatype, op, context, true);
}

static ssize_t rdm_fetch_atomicmsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc, size_t result_count,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & FI_INJECT)
		return -FI_EBADFLAGS;
	return atomic_op(braid_ep_of(ep_fid), msg, NULL, NULL, 0, resultv, result_desc, result_count,
			 flags, true, false);
}

static ssize_t rdm_compare_atomic(struct fid_ep *ep_fid, const void *buf, size_t count,
				  void *desc, const void *compare, void *compare_desc,
				  void *result, void *result_desc, fi_addr_t dest_addr,
				  uint64_t addr, uint64_t key, enum fi_datatype datatype,
				  enum fi_op op, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct fi_ioc cmp = { (void *)compare, count }, res = { result, count };
	ATOMIC_MSG(buf, &desc, count, dest_addr, addr, key, datatype, op, context);

	return atomic_op(ep, &msg_, &cmp, &compare_desc, 1, &res, &result_desc, 1,
			 braid_ep_tx_flags(ep_fid) & ~FI_INJECT, true, false);
}

static ssize_t rdm_compare_atomicv(struct fid_ep *ep_fid, const struct fi_ioc *iov, void **desc,
				   size_t count, const struct fi_ioc *comparev, void **compare_desc,
				   size_t compare_count, struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key, enum fi_datatype datatype, enum fi_op op,
				   void *context)
{
	if (!comparev)
		return -FI_EINVAL;
	return atomic_vec(ep_fid, iov, desc, count, comparev, compare_desc, compare_count, resultv,
			  result_desc, result_count, dest_addr, addr, key, datatype, op, context,
			  true);
}

static ssize_t rdm_compare_atomicmsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
				     const struct fi_ioc *comparev, void **compare_desc,
				     size_t compare_count, struct fi_ioc *resultv,
				     void **result_desc, size_t result_count, uint64_t flags)
{
	if (!msg || !comparev)
		return -FI_EINVAL;
	if (flags & FI_INJECT)
		return -FI_EBADFLAGS;
	return atomic_op(braid_ep_of(ep_fid), msg, comparev, compare_desc, compare_count, resultv,
			 result_desc, result_count, flags, true, false);
}

static int rdm_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			   size_t *count)
{
	return braid_atomic_query(datatype, op, 0, count);
}

static int rdm_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	return braid_atomic_query(datatype, op, FI_FETCH_ATOMIC, count);
}

static int rdm_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
				   size_t *count)
{
	return braid_atomic_query(datatype, op, FI_COMPARE_ATOMIC, count);
}

struct fi_ops_atomic braid_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rdm_atomic,
	.writev = rdm_atomicv,
	.writemsg = rdm_atomicmsg,
	.inject = rdm_inject_atomic,
	.readwrite = rdm_fetch_atomic,
	.readwritev = rdm_fetch_atomicv,
	.readwritemsg = rdm_fetch_atomicmsg,
	.compwrite = rdm_compare_atomic,
	.compwritev = rdm_compare_atomicv,
	.compwritemsg = rdm_compare_atomicmsg,
	.writevalid = rdm_atomicvalid,
	.readwritevalid = rdm_fetch_atomicvalid,
	.compwritevalid = rdm_compare_atomicvalid,
};
