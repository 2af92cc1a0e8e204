/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg.c: FI_EP_MSG endpoints (RoCEv2 RC queue pairs, core/braid_rc.c): their life (open, bind, enable, close) and the calls of fi_msg(3) and fi_tagged(3); braid_msg_cm.c connects them, braid_msg_progress.c moves their packets and completions, braid_msg_rx.c keeps their receives, braid_msg_rma.c posts their RMA. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "braid_msg_int.h"

/*
 * The context of the work fi_inject, fi_injectdata, fi_inject_write and
 * fi_inject_writedata post: they have none to report. Their success writes
 * no CQ entry (fi_msg(3)); nor does their failure, which has nothing to name
 * (a verbs provider posts them unsignaled and drops their flush errors): an
 * error entry with a NULL op_context is one ofi_rxm reads as its own buffer
 * and crashes on. The error counts on the endpoint's counter, the QP's error
 * reaches the EQ (FI_SHUTDOWN) and the work after it fails on the CQ.
 */
char braid_msg_inject_ctx;

/* ---- object life ---- */

int braid_msg_open(struct braid_ep *ep)
{
	struct braid_msg_ep *me = braid_msg_ep_of(ep);
	struct braid_msg *m = calloc(1, sizeof(*m));
	struct braid_cm_config cm_cfg;

	if (!m)
		return -FI_ENOMEM;
	m->ep = ep;
	braid_cm_config_default(&cm_cfg);
	cm_cfg.timeout_ns = (uint64_t)braid_cfg.peer_timeout_ms * 1000000ULL;
	braid_cm_construct(&m->conn, &cm_cfg);
	m->cm.progress = braid_msg_cm_progress;
	m->cm.fd = ep->wire->ops->wait_fd(ep->wire);
	braid_dlist_init(&m->cm.node);
	/* the IB MTU whose packets (BTH + RETH + ImmDt + pad + ICRC on top) this wire carries */
	m->mtu = braid_roce_path_mtu(ep->wire->mtu);
	if (braid_msg_rx_construct(&m->rx, ep, ep->info->rx_attr && ep->info->rx_attr->size ?
				   ep->info->rx_attr->size : braid_cfg.rx_size)) {
		free(m);
		return -FI_ENOMEM;
	}
	me->msg = m;
	/* opened for a connection request: it holds the request until it closes */
	if (ep->info->handle && ep->info->handle->fclass == FI_CLASS_CONNREQ) {
		m->cr = braid_container_of(ep->info->handle, struct braid_connreq, fid);
		braid_pep_hold(m->cr);
	}
	return 0;
}

static int braid_msg_bind_eq(struct braid_ep *ep, struct braid_eq *eq)
{
	struct braid_msg *m = braid_msg_of(ep);

	if (m->eq)
		return -FI_EINVAL;
	m->eq = eq;
	braid_eq_add_cm(eq, &m->cm);
	return 0;
}

/* Allocate the QPN and the port; the caller holds the domain lock. */
static int braid_msg_enable(struct braid_ep *ep)
{
	struct braid_msg *m = braid_msg_of(ep);
	struct braid_domain *dom = ep->domain;

	if (!m->eq)
		return -FI_ENOEQ;
	if (m->port)
		return 0;
	m->port = braid_msg_port_get(dom, ep->wire->name.sin_addr, ep->wire_ops);
	if (!m->port)
		return -FI_ENOMEM;
	/* QP numbers a stranger cannot guess (fi_braid(7), THREAT MODEL): random, 24 bits, unused on the port */
	do {
		if (getrandom(&m->qpn, sizeof(m->qpn), 0) != sizeof(m->qpn))
			m->qpn = (uint32_t)(braid_now_ns() * 2654435761u) ^ dom->next_qpn++;
		m->qpn &= BRAID_ROCE_QPN_MASK;
	} while (m->qpn < 2 || braid_rc_demux_has(&m->port->demux, m->qpn));
	if (getrandom(&m->psn, sizeof(m->psn), 0) != sizeof(m->psn))
		m->psn = (uint32_t)braid_now_ns();
	m->psn &= BRAID_ROCE_PSN_MASK;
	if (ep->rx_cq)
		braid_wait_add_fd(&ep->rx_cq->wait, braid_msg_wait_fd(ep));
	if (ep->tx_cq && ep->tx_cq != ep->rx_cq)
		braid_wait_add_fd(&ep->tx_cq->wait, braid_msg_wait_fd(ep));
	return 0;
}

/* (the domain lock held: other MSG endpoints' state is stable) */
static bool port_used_by_other(struct braid_epset *set, const struct braid_ep *self,
			       const struct braid_rc_port *port)
{
	bool used = false;
	int i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n && !used; i++) {
		const struct braid_ep *ep = set->eps[i];

		/* (a CQ may serve endpoints of another type too) */
		used = ep != self && ep->kind == &braid_msg_kind && braid_msg_of(ep) &&
		       braid_msg_of(ep)->port == port;
	}
	pthread_mutex_unlock(&set->lock);
	return used;
}

static void braid_msg_close(struct braid_ep *ep)
{
	struct braid_msg_ep *me = braid_msg_ep_of(ep);
	struct braid_msg *m = me->msg;

	if (!m)
		return;
	/* the EQ list first, before the domain lock (the EQ takes them in that order) */
	if (m->eq) {
		braid_eq_del_cm(m->eq, &m->cm);
		braid_eq_remove_fid(m->eq, &ep->ep_fid.fid);
	}
	braid_domain_lock(ep->domain);
	if (braid_cm_shutdown(&m->conn, braid_now_ns()) == 0) {
		/* an abrupt close still acknowledges what arrived, then tells the
		 * peer once (fi_cm(3): FI_SHUTDOWN "if reachable") */
		braid_msg_cm_run(ep, braid_now_ns(), NULL);
	}
	if (m->cr)
		braid_pep_forget(m->cr);
	if (m->qp) {
		braid_msg_qp_log(ep, "closed", false);
		braid_rc_demux_remove(&m->port->demux, m->qpn);
		braid_rc_close(m->qp);
	}
	if (m->port) {
		int fd = braid_msg_wait_fd(ep);

		/* the port's socket stays in a CQ's wait set while another of
		 * the CQ's endpoints receives through it */
		if (ep->rx_cq && !port_used_by_other(&ep->rx_cq->eps, ep, m->port))
			braid_wait_del_fd(&ep->rx_cq->wait, fd);
		if (ep->tx_cq && ep->tx_cq != ep->rx_cq &&
		    !port_used_by_other(&ep->tx_cq->eps, ep, m->port))
			braid_wait_del_fd(&ep->tx_cq->wait, fd);
		braid_msg_port_put(m->port);
	}
	/* gone under the lock: a post that races the close sees no state, not freed state */
	me->msg = NULL;
	braid_msg_rx_destruct(&m->rx);
	braid_domain_unlock(ep->domain);
	free(m);
}

/* ---- fi_msg(3) ---- */

/*
 * Post a send work request and push it out (the caller does not hold the
 * lock). On a connection that carries braid's message header (§5.10) a
 * SEND (@t) gets it as its prefix; a tagged SEND needs such a connection.
 */
ssize_t braid_msg_post(struct braid_ep *ep, struct braid_rc_wr *wr, const struct msg_tag *t)
{
	uint8_t hdr[BRAID_ROCE_MSG_HDR_LEN];
	struct braid_msg *m;
	uint64_t now = braid_now_ns();
	ssize_t ret;

	braid_domain_lock(ep->domain);
	m = braid_msg_of(ep);
	if (!m) {
		ret = -FI_EOPBADSTATE;	/* closing */
		goto out;
	}
	ret = braid_cm_post_check(&m->conn);
	if (ret)
		goto out;
	if (t && t->tagged && !m->rx.framed) {
		ret = -FI_EOPNOTSUPP;	/* the peer did not ask for tagged messages */
		goto out;
	}
	if (t && m->rx.framed) {
		struct braid_roce_msg_view v = {
			.kind = t->tagged ? BRAID_ROCE_MSG_TAGGED : BRAID_ROCE_MSG_UNTAGGED,
			.len = (uint32_t)braid_iov_len(wr->iov, wr->iov_count), .tag = t->tag,
		};

		braid_roce_msg_write(hdr, &v);
		wr->prefix = hdr;
		wr->prefix_len = sizeof(hdr);
	}
	ret = braid_ep_tx_take(ep);	/* room in a shared transmit context */
	if (!ret && (ret = braid_rc_post_send(m->qp, wr, now)))
		braid_ep_tx_give(ep, 1);
	if (ret == -FI_EAGAIN) {
		braid_msg_progress_locked(ep);
		goto out;
	}
	if (!ret)
		braid_msg_flush(ep, now);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

uint32_t braid_msg_tx_flags(struct braid_ep *ep, uint64_t flags, bool inject)
{
	uint32_t f = 0;

	if (inject || (flags & FI_INJECT))
		f |= BRAID_RC_INJECT;
	if (inject || (ep->tx_selective && !(flags & FI_COMPLETION)))
		f |= BRAID_RC_NO_COMP;
	return f;
}

static ssize_t msg_send_tagged(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t data, uint64_t flags, void *context, bool inject,
			       const struct msg_tag *t)
{
	struct braid_rc_wr wr = {
		.op = BRAID_RC_OP_SEND, .iov = iov, .iov_count = count, .imm = (uint32_t)data,
		.flags = braid_msg_tx_flags(ep, flags, inject), .context = inject ? &braid_msg_inject_ctx : context,
	};

	if (count > BRAID_RC_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		wr.flags |= BRAID_RC_IMM;
	return braid_msg_post(ep, &wr, t);
}

static ssize_t msg_send_common(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t data, uint64_t flags, void *context, bool inject)
{
	static const struct msg_tag untagged = { .tagged = false };

	return msg_send_tagged(ep, iov, count, data, flags, context, inject, &untagged);
}

static ssize_t msg_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return msg_send_common(ep, &iov, 1, 0, ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	return msg_send_common(ep, iov, count, 0, ep->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	if (!msg)
		return -FI_EINVAL;
	return msg_send_common(ep, msg->msg_iov, msg->iov_count, msg->data, flags, msg->context,
			       false);
}

static ssize_t msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return msg_send_common(msg_ep(ep_fid), &iov, 1, 0, 0, NULL, true);
}

static ssize_t msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return msg_send_common(ep, &iov, 1, data,
			       ep->tx_op_flags | FI_COMPLETION | FI_REMOTE_CQ_DATA, context, false);
}

static ssize_t msg_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return msg_send_common(msg_ep(ep_fid), &iov, 1, data, FI_REMOTE_CQ_DATA, NULL, true);
}

struct braid_msg_rx *braid_msg_rx_of(struct braid_ep *ep)
{
	struct braid_msg *m = braid_msg_of(ep);

	return m ? &m->rx : NULL;
}

/*
 * Receives may be posted before the connection is up (as on a verbs QP in
 * INIT) and while it is; not once it is over or its QP failed.
 */
bool braid_msg_rx_closed(struct braid_ep *ep)
{
	const struct braid_msg *m = braid_msg_of(ep);

	if (!m || m->rx.flushed)
		return true;
	if (m->qp)
		return braid_rc_error(m->qp) != 0;
	return m->conn.state != BRAID_CM_IDLE && m->conn.state != BRAID_CM_REQ_SENT;
}

/* the flags fi_recvmsg and fi_trecvmsg take (fi_msg(3), fi_tagged(3)) */
#define MSG_RX_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_MULTI_RECV)

static ssize_t msg_recv_tagged(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t tag, uint64_t ignore, uint64_t flags, void *context,
			       bool tagged)
{
	ssize_t ret;

	if (count > BRAID_RC_IOV_MAX || (count && !iov) || !braid_iov_valid(iov, count))
		return -FI_EINVAL;
	if (flags & ~(MSG_RX_FLAGS | FI_PEEK | FI_CLAIM | FI_DISCARD))
		return -FI_EBADFLAGS;
	if ((flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) &&
	    (!tagged || !(flags & (FI_PEEK | FI_CLAIM))))
		return -FI_EBADFLAGS;	/* fi_tagged(3): FI_DISCARD goes with one of them */
	if (flags & FI_MULTI_RECV) {
		/* fi_msg(3): one buffer, untagged messages (no FI_TAGGED_MULTI_RECV here) */
		if (tagged)
			return -FI_EBADFLAGS;
		if (!(ep->info->caps & FI_MULTI_RECV) || count != 1)
			return -FI_EINVAL;
	}
	if (ep->srx)	/* its receives are the shared context's */
		return braid_srx_recv(ep->srx, iov, count, flags, context);
	braid_domain_lock(ep->domain);
	if (flags & (FI_PEEK | FI_CLAIM)) {
		/* what has arrived is seen before looking */
		if (braid_msg_of(ep))
			braid_msg_progress_locked(ep);
		ret = braid_msg_rx_peek(ep, iov, count, tag, ignore, flags, context);
	} else {
		/* closing: -FI_EOPBADSTATE (ofi_rxm reposts its buffers from its own threads) */
		ret = braid_msg_rx_post(ep, iov, count, tag, ignore, flags, context, tagged);
	}
	braid_domain_unlock(ep->domain);
	return ret;
}

static ssize_t msg_recv_common(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t flags, void *context)
{
	return msg_recv_tagged(ep, iov, count, 0, 0, flags, context, false);
}

static ssize_t msg_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { buf, len };

	return msg_recv_common(ep, &iov, 1, ep->rx_op_flags | FI_COMPLETION, context);
}

static ssize_t msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	return msg_recv_common(ep, iov, count, ep->rx_op_flags | FI_COMPLETION, context);
}

static ssize_t msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return msg_recv_common(msg_ep(ep_fid), msg->msg_iov, msg->iov_count, flags, msg->context);
}

struct fi_ops_msg braid_msg_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- fi_tagged(3): braid's message header carries the tag (protocol.md §5.10) ---- */

static ssize_t msg_tsend_one(struct fid_ep *ep_fid, const struct iovec *iov, size_t count,
			     uint64_t tag, uint64_t data, uint64_t flags, void *context, bool inject)
{
	const struct msg_tag t = { .tagged = true, .tag = tag };

	return msg_send_tagged(msg_ep(ep_fid), iov, count, data, flags, context, inject, &t);
}

static ssize_t msg_trecv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			 fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct iovec iov = { buf, len };

	return msg_recv_tagged(ep, &iov, 1, tag, ignore,
			       (ep->rx_op_flags & ~FI_MULTI_RECV) | FI_COMPLETION, context, true);
}

static ssize_t msg_trecvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			  void *context)
{
	struct braid_ep *ep = msg_ep(ep_fid);

	return msg_recv_tagged(ep, iov, count, tag, ignore,
			       (ep->rx_op_flags & ~FI_MULTI_RECV) | FI_COMPLETION, context, true);
}

static ssize_t msg_trecvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return msg_recv_tagged(msg_ep(ep_fid), msg->msg_iov, msg->iov_count, msg->tag, msg->ignore,
			       flags, msg->context, true);
}

static ssize_t msg_tsend(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			 fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return msg_tsend_one(ep_fid, &iov, 1, tag, 0, msg_ep(ep_fid)->tx_op_flags | FI_COMPLETION,
			     context, false);
}

static ssize_t msg_tsendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return msg_tsend_one(ep_fid, iov, count, tag, 0,
			     msg_ep(ep_fid)->tx_op_flags | FI_COMPLETION, context, false);
}

static ssize_t msg_tsendmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return msg_tsend_one(ep_fid, msg->msg_iov, msg->iov_count, msg->tag, msg->data, flags,
			     msg->context, false);
}

static ssize_t msg_tinject(struct fid_ep *ep_fid, const void *buf, size_t len,
			   fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return msg_tsend_one(ep_fid, &iov, 1, tag, 0, 0, NULL, true);
}

static ssize_t msg_tsenddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return msg_tsend_one(ep_fid, &iov, 1, tag, data,
			     msg_ep(ep_fid)->tx_op_flags | FI_COMPLETION | FI_REMOTE_CQ_DATA,
			     context, false);
}

static ssize_t msg_tinjectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return msg_tsend_one(ep_fid, &iov, 1, tag, data, FI_REMOTE_CQ_DATA, NULL, true);
}

/* an endpoint with FI_TAGGED gets these (braid_ep.c); without, the calls return -FI_ENOSYS */
struct fi_ops_tagged braid_msg_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = msg_trecv,
	.recvv = msg_trecvv,
	.recvmsg = msg_trecvmsg,
	.send = msg_tsend,
	.sendv = msg_tsendv,
	.sendmsg = msg_tsendmsg,
	.inject = msg_tinject,
	.senddata = msg_tsenddata,
	.injectdata = msg_tinjectdata,
};

/* ---- the endpoint's type (struct braid_ep_kind): what braid_ep.c asks of MSG ---- */

static int msg_open(struct braid_ep *ep, const struct sockaddr_in *addr)
{
	struct braid_msg_ep *me = braid_msg_ep_of(ep);
	struct fid *handle = ep->info->handle;
	int ret;

	if (handle && handle->fclass == FI_CLASS_PEP) {
		/* it takes over the passive endpoint's address (fi_endpoint(3)) */
		struct braid_wire *wire;

		ret = braid_pep_give_wire(handle, &wire);
		if (ret)
			return ret;
		braid_ep_wire_adopt(ep, wire);
	} else {
		ret = braid_ep_wire_open(ep, addr);
		if (ret)
			return ret;
	}
	if (handle && handle->fclass == FI_CLASS_CONNREQ) {
		me->cm_name = braid_container_of(handle, struct braid_connreq, fid)->local;
		me->cm_named = true;
	}
	me->min_multi_recv = BRAID_MIN_MULTI_RECV;
	ret = braid_msg_open(ep);
	if (ret) {
		ep->wire_ops->close(ep->wire);
		return ret;
	}
	if (ep->info->caps & FI_TAGGED)
		ep->ep_fid.tagged = &braid_msg_tagged_ops;
	return 0;
}

static size_t msg_max_msg_size(const struct braid_ep *ep)
{
	return BRAID_MSG_MAX_MSG;
}

static int msg_enable(struct braid_ep *ep)
{
	int ret;

	braid_domain_lock(ep->domain);
	ret = braid_msg_enable(ep);
	if (!ret)
		ret = braid_epset_add(&ep->domain->eps, ep);
	if (!ret)
		braid_ep_live_locked(ep);	/* (its lock is the domain's) */
	braid_domain_unlock(ep->domain);
	return ret;
}

/* a receive still posted (not yet taken by a message) */
static int msg_cancel(struct braid_ep *ep, void *context)
{
	int ret;

	braid_domain_lock(ep->domain);
	ret = braid_msg_rx_cancel(ep, context);
	braid_domain_unlock(ep->domain);
	return ret;
}

/* FI_OPT_CM_DATA_SIZE, and the floor of a multi-receive buffer (FI_OPT_MIN_MULTI_RECV) */
static int msg_getopt(struct braid_ep *ep, int optname, void *optval, size_t *optlen)
{
	if (optname == FI_OPT_CM_DATA_SIZE)
		return braid_ep_opt_get_size(BRAID_CM_DATA_MAX, optval, optlen);
	if (optname == FI_OPT_MIN_MULTI_RECV)
		return braid_ep_opt_get_size(braid_msg_ep_of(ep)->min_multi_recv, optval, optlen);
	return -FI_ENOPROTOOPT;
}

static int msg_setopt(struct braid_ep *ep, int optname, const void *optval, size_t optlen)
{
	if (optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return braid_ep_opt_set_size(&braid_msg_ep_of(ep)->min_multi_recv, optval, optlen);
}

const struct braid_ep_kind braid_msg_kind = {
	.size = sizeof(struct braid_msg_ep),
	.msg = &braid_msg_msg_ops,
	.rma = &braid_msg_rma_ops,
	.cm = &braid_msg_cm_ops,
	.domain_lock = true,
	.clocked = true,
	.one_path = true,
	.open = msg_open,
	.max_msg_size = msg_max_msg_size,
	.enable = msg_enable,
	.progress = braid_msg_progress_locked,
	.bind_eq = braid_msg_bind_eq,
	.cancel = msg_cancel,
	.getopt = msg_getopt,
	.setopt = msg_setopt,
	.detach = braid_msg_close,
	.next_deadline = braid_msg_next_deadline,
	.rc_stats = braid_msg_rc_stats,
};
