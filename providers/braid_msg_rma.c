/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg_rma.c: fi_rma(3) on FI_EP_MSG endpoints: RDMA WRITE (with immediate) and READ work requests on the QP (core/braid_rc.c, protocol.md §5). */
#include "braid_msg_int.h"

static ssize_t msg_rma(struct braid_ep *ep, enum braid_rc_op op, const struct iovec *iov,
		       size_t count, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
		       void *context, bool inject)
{
	struct braid_rc_wr wr = {
		.op = op, .iov = iov, .iov_count = count, .raddr = addr, .rkey = (uint32_t)key,
		.imm = (uint32_t)data, .flags = braid_msg_tx_flags(ep, flags, inject),
		.context = inject ? &braid_msg_inject_ctx : context,
	};

	if (count > BRAID_RC_IOV_MAX || (count && !iov) || key > UINT32_MAX)
		return -FI_EINVAL;
	if ((flags & FI_REMOTE_CQ_DATA) && op == BRAID_RC_OP_WRITE)
		wr.flags |= BRAID_RC_IMM;
	if (op == BRAID_RC_OP_READ && inject)
		return -FI_EINVAL;
	return braid_msg_post(ep, &wr, NULL);
}

static ssize_t msg_read(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { buf, len };

	return msg_rma(ep, BRAID_RC_OP_READ, &iov, 1, addr, key, 0,
		       ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_readv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key,
			 void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	return msg_rma(ep, BRAID_RC_OP_READ, iov, count, addr, key, 0,
		       ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return msg_rma(msg_ep(ep_fid), BRAID_RC_OP_READ, msg->msg_iov, msg->iov_count,
		       msg->rma_iov[0].addr, msg->rma_iov[0].key, 0, flags, msg->context, false);
}

static ssize_t msg_write(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return msg_rma(ep, BRAID_RC_OP_WRITE, &iov, 1, addr, key, 0,
		       ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_writev(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	return msg_rma(ep, BRAID_RC_OP_WRITE, iov, count, addr, key, 0,
		       ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_writemsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return msg_rma(msg_ep(ep_fid), BRAID_RC_OP_WRITE, msg->msg_iov, msg->iov_count,
		       msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data, flags, msg->context,
		       false);
}

static ssize_t msg_inject_write(struct fid_ep *ep_fid, const void *buf, size_t len,
				fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return msg_rma(msg_ep(ep_fid), BRAID_RC_OP_WRITE, &iov, 1, addr, key, 0, 0, NULL, true);
}

static ssize_t msg_writedata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			     void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return msg_rma(ep, BRAID_RC_OP_WRITE, &iov, 1, addr, key, data,
		       ep->tx_op_flags | FI_COMPLETION | FI_REMOTE_CQ_DATA, context, false);
}

static ssize_t msg_inject_writedata(struct fid_ep *ep_fid, const void *buf, size_t len,
				    uint64_t data, fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return msg_rma(msg_ep(ep_fid), BRAID_RC_OP_WRITE, &iov, 1, addr, key, data,
		       FI_REMOTE_CQ_DATA, NULL, true);
}

struct fi_ops_rma braid_msg_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = msg_read,
	.readv = msg_readv,
	.readmsg = msg_readmsg,
	.write = msg_write,
	.writev = msg_writev,
	.writemsg = msg_writemsg,
	.inject = msg_inject_write,
	.writedata = msg_writedata,
	.injectdata = msg_inject_writedata,
};
