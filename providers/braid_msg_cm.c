/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg_cm.c: an FI_EP_MSG endpoint's connection: the I/O of its handshake (core/braid_cm.c, protocol.md §6: CM messages on its socket, the EQ events), its QP's creation when the handshake gives the numbers, and fi_cm(3). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "braid_msg_int.h"

void braid_msg_cm_send(struct braid_wire *wire, const struct braid_auth *auth,
		       const struct sockaddr_in *to, const struct braid_cm_view *v)
{
	uint8_t h[sizeof(struct braid_cm_hdr) + BRAID_AUTH_TAG], scratch[MSG_CM_BUF];
	struct iovec iov[2] = { { h, sizeof(struct braid_cm_hdr) }, { (void *)v->pdata, v->pdata_len } };
	struct braid_pkt pkt = { .iov = iov, .iovcnt = v->pdata_len ? 2 : 1, .path = 0,
				 .addr = *to };

	braid_cm_write((struct braid_cm_hdr *)h, ntohs(wire->name.sin_port), v);
	if (auth->mode)	/* keyed (protocol.md §2.4): the tag covers the private data too */
		iov[0].iov_len = (size_t)braid_auth_seal(auth, h, iov + 1, pkt.iovcnt - 1, scratch);
	if (wire->ops->tx_burst(wire, &pkt, 1) != 1 || pkt.status)
		BRAID_DBG(FI_LOG_EP_CTRL, "CM message %u not sent (socket full); resent later\n",
			  v->kind);
}

void braid_msg_eq_event(struct braid_ep *ep, uint32_t event, const void *pdata, size_t len)
{
	struct braid_msg *m = braid_msg_of(ep);
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + BRAID_CM_DATA_MAX];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;

	if (!m->eq)
		return;
	memset(e, 0, sizeof(*e));
	e->fid = &ep->ep_fid.fid;
	if (len)
		memcpy(e->data, pdata, len);
	if (braid_eq_report(m->eq, event, e, sizeof(*e) + len, 0, false))
		BRAID_WARN(FI_LOG_EQ, "EQ full: connection event %u lost\n", event);
}

static void eq_error(struct braid_ep *ep, int err, const void *pdata, size_t len)
{
	struct braid_msg *m = braid_msg_of(ep);
	uint8_t buf[sizeof(struct fi_eq_err_entry) + BRAID_CM_DATA_MAX];
	struct fi_eq_err_entry *e = (struct fi_eq_err_entry *)buf;

	if (!m->eq)
		return;
	memset(e, 0, sizeof(*e));
	e->fid = &ep->ep_fid.fid;
	e->context = ep->ep_fid.fid.context;
	e->err = err;
	e->prov_errno = -err;
	if (len)
		memcpy(buf + sizeof(*e), pdata, len);
	if (braid_eq_report(m->eq, 0, e, sizeof(*e) + len, 0, true))
		BRAID_WARN(FI_LOG_EQ, "EQ full: connection error %d lost\n", err);
}

/* The QP's state changes, at FI_LOG_LEVEL=debug (the RC engine's trace). */
static void msg_rc_trace(void *ctx, uint32_t qpn, const char *role, const char *from,
			 const char *to)
{
	(void)ctx;
	BRAID_DBG(FI_LOG_EP_DATA, "RC QP 0x%06x %s: %s -> %s\n", qpn, role, from, to);
}

/* the RC engine's memory-key check: the domain's regions (braid_mr_check) */
static int mr_check(void *ctx, uint32_t rkey, uint64_t addr, size_t len, uint32_t access,
		    void **ptr)
{
	return braid_mr_check(ctx, rkey, addr, len,
			      (access & BRAID_RC_ACCESS_REMOTE_WRITE) ? FI_REMOTE_WRITE : FI_REMOTE_READ,
			      ptr);
}

/* Create the QP once both sides' numbers are known (caller holds the domain lock). */
static int qp_create(struct braid_ep *ep)
{
	struct braid_msg *m = braid_msg_of(ep);
	struct braid_rc_config c;
	int ret;

	braid_rc_config_default(&c);
	c.addr.src_ip = ntohl(ep->wire->name.sin_addr.s_addr);
	c.addr.src_port = ntohs(ep->wire->name.sin_port);
	c.addr.dst_ip = ntohl(m->peer.sin_addr.s_addr);
	c.addr.dst_port = m->peer_rc_port;
	c.rx_addr.src_ip = c.addr.dst_ip;
	c.rx_addr.src_port = ntohs(m->peer.sin_port);
	c.rx_addr.dst_ip = c.addr.src_ip;
	c.rx_addr.dst_port = ntohs(m->port->wire->name.sin_port);
	c.local_qpn = m->qpn;
	c.remote_qpn = m->peer_qpn;
	c.sq_psn = m->psn;
	c.rq_psn = m->peer_psn;
	c.mtu = m->mtu;
	c.max_send_wr = (uint32_t)(ep->info->tx_attr->size ? ep->info->tx_attr->size : braid_cfg.tx_size);
	c.max_recv_wr = (uint32_t)(ep->info->rx_attr->size ? ep->info->rx_attr->size : braid_cfg.rx_size);
	c.max_msg_size = ep->max_msg_size;
	c.inject_size = (uint32_t)ep->info->tx_attr->inject_size;
	/* the timers a RoCE deployment's QP gets (FI_BRAID_RC_*, fi_braid(7)) */
	c.timeout_ns = braid_rc_timeout_ns((unsigned int)braid_cfg.rc_timeout);
	c.retry_cnt = (uint32_t)braid_cfg.rc_retry;
	c.rnr_retry = (uint32_t)braid_cfg.rc_rnr_retry;
	c.min_rnr_timer_ns = braid_rc_rnr_timer_ns((unsigned int)braid_cfg.rc_min_rnr_timer);
	/* a RoCE NIC's usual initiator depth / responder resources; each READ
	 * of rxm's rendezvous is a whole message, so this bounds the burst of
	 * read responses a peer can have in flight towards us */
	c.max_rd_atomic = c.max_dest_rd_atomic = 4;
	c.imm_no_recv = !((ep->info->mode | ep->info->rx_attr->mode) & FI_RX_CQ_DATA);
	/* keyed: a partition of the key's own; the QP drops another's packets (§5.2) */
	c.pkey = ep->auth.pkey;
	c.mr_check = mr_check;
	c.mr_ctx = ep;
	if (fi_log_enabled(&braid_prov, FI_LOG_DEBUG, FI_LOG_EP_DATA))
		c.trace = msg_rc_trace;
	/* receives come from the shared context, or the endpoint's own queue, one a message */
	if (ep->srx) {
		c.srq_pull = braid_srx_pull;
		c.srq_ctx = ep;
	} else {
		c.srq_pull = braid_msg_rx_pull;
		c.recv_done = braid_msg_rx_done;
		c.srq_ctx = &m->rx;
	}
	/* both sides asked FI_TAGGED: every SEND carries braid's message header (§5.10) */
	m->rx.framed = m->conn.local.flags & m->conn.peer.flags & BRAID_CM_F_TAGGED;
	ret = braid_rc_open(&c, &m->qp);
	if (ret)
		return ret;
	/* the peer's RoCEv2 packets reach us through the domain's port, by QPN */
	m->route = (struct braid_rc_demux_entry){ .qp = m->qp, .cm = &m->conn, .owner = ep };
	ret = braid_rc_demux_add(&m->port->demux, m->qpn, &m->route);
	if (ret) {
		braid_rc_close(m->qp);
		m->qp = NULL;
	}
	return ret;
}

/* what REQ and REP announce of this endpoint's QP (and whether it takes tagged messages) */
static struct braid_cm_qp msg_cm_local(const struct braid_ep *ep)
{
	const struct braid_msg *m = braid_msg_of(ep);

	return (struct braid_cm_qp){ .qpn = m->qpn, .psn = m->psn, .mtu = m->mtu,
				     .rc_port = m->port ? ntohs(m->port->wire->name.sin_port) : 0,
				     .flags = (ep->info->caps & FI_TAGGED) ? BRAID_CM_F_TAGGED : 0 };
}

/*
 * Do what the CM engine asks after a call into it (caller holds the domain
 * lock): its actions and events first, then its messages (a flushed QP's
 * final ACK leaves before the DREQ). @from: the address the REP came from
 * (the accepting endpoint's own socket: the peer from then on) or, on
 * fi_accept, the request's. Return: the QP creation's result, 0 if none.
 */
int braid_msg_cm_run(struct braid_ep *ep, uint64_t now, const struct sockaddr_in *from)
{
	struct braid_msg *m = braid_msg_of(ep);
	struct braid_cm_event ev;
	struct braid_cm_view out;
	int ret = 0;

	while (braid_cm_poll(&m->conn, &ev, 1) == 1) {
		BRAID_DBG(FI_LOG_EP_CTRL, "QP %u: CM event %d, now %s\n", m->qpn, ev.type,
			  braid_cm_state_str(m->conn.state));
		switch (ev.type) {
		case BRAID_CM_EV_QP_CREATE:
			if (from)
				m->peer = *from;
			m->peer_qpn = m->conn.peer.qpn;
			m->peer_psn = m->conn.peer.psn;
			m->peer_rc_port = m->conn.peer.rc_port;
			m->mtu = m->conn.local.mtu;
			ret = qp_create(ep);
			braid_cm_qp_created(&m->conn, ret, now);
			break;
		case BRAID_CM_EV_QP_FLUSH:
			if (m->qp) {
				braid_rc_flush(m->qp);
				braid_msg_flush(ep, now);
			}
			braid_msg_rx_flush(&m->rx);
			break;
		case BRAID_CM_EV_CONNECTED:
			braid_msg_eq_event(ep, FI_CONNECTED, ev.pdata, ev.pdata_len);
			break;
		case BRAID_CM_EV_SHUTDOWN:
			m->shutdown_held = now ? now : 1;	/* braid_msg_shutdown_release() */
			break;
		default:	/* REJECTED, TIMEDOUT, ERROR */
			eq_error(ep, ev.err, ev.pdata, ev.pdata_len);
			/* no connection: the receives posted for it are canceled */
			braid_msg_rx_flush(&m->rx);
			break;
		}
	}
	while (braid_cm_output(&m->conn, &out, 1) == 1)
		braid_msg_cm_send(ep->wire, &ep->auth, &m->peer, &out);
	return ret;
}

int braid_msg_cm_open(const struct braid_auth *auth, const struct braid_pkt *pkt,
		      const uint8_t **cm, size_t *len)
{
	uint8_t *buf = pkt->iov[0].iov_base, scratch[MSG_CM_BUF];
	int ret;

	if (pkt->flags & BRAID_PKT_TRUNC)
		return -(BRAID_DROP_BAD_LEN + 1);
	*cm = buf;
	*len = pkt->len;
	if (!auth->mode)
		return 0;	/* braid_cm_decode drops a keyed one (bad_auth) */
	ret = braid_auth_open(auth, buf, pkt->len, scratch);
	*cm = buf + BRAID_AUTH_TAG;
	*len = pkt->len - BRAID_AUTH_TAG;
	return ret;
}

/* A CM message arrived on this endpoint's socket (caller holds the domain lock). */
static void msg_cm_input(struct braid_ep *ep, const struct braid_cm_view *v,
			 const struct sockaddr_in *from, uint64_t now)
{
	struct braid_msg *m = braid_msg_of(ep);
	int ret;

	if (from->sin_addr.s_addr != m->peer.sin_addr.s_addr) {
		ep->stats.drops[BRAID_DROP_NO_STATE]++;
		return;
	}
	if (v->kind == BRAID_CM_DREQ && v->conn_id == m->conn.conn_id &&
	    (m->conn.state == BRAID_CM_ESTABLISHED || m->conn.state == BRAID_CM_REP_SENT)) {
		/* the peer's final ACK left before its DREQ but reaches
		 * another socket: take it first, so what the peer
		 * received completes here instead of being canceled */
		braid_msg_drain_port(ep, now);
	}
	ret = braid_cm_input(&m->conn, v, now);
	if (ret < 0) {
		ep->stats.drops[-ret - 1]++;
		return;
	}
	braid_msg_cm_run(ep, now, from);
}

/* Read this endpoint's own socket: CM messages only (RoCEv2 arrives at the port). */
void braid_msg_cm_poll(struct braid_ep *ep, uint64_t now)
{
	uint8_t buf[MSG_CM_BUF];
	struct iovec iov = { buf, sizeof(buf) };
	struct braid_pkt pkt = { .iov = &iov, .iovcnt = 1 };
	int guard;

	for (guard = 0; guard < 64; guard++) {
		struct braid_cm_view v;
		const uint8_t *cm;
		size_t len;
		int ret;

		if (ep->wire->ops->rx_burst(ep->wire, &pkt, 1) != 1)
			break;
		ret = braid_msg_cm_open(&ep->auth, &pkt, &cm, &len);
		if (!ret)
			ret = braid_cm_decode(cm, len, &v);
		if (ret) {
			ep->stats.drops[-ret - 1]++;
			continue;
		}
		msg_cm_input(ep, &v, &pkt.addr, now);
	}
}

/* CM retransmissions and time-outs (caller holds the domain lock). */
void braid_msg_cm_timer(struct braid_ep *ep, uint64_t now)
{
	braid_cm_timer(&braid_msg_of(ep)->conn, now);
	braid_msg_cm_run(ep, now, NULL);
}

/* The EQ drives an endpoint's handshake when it is read. */
void braid_msg_cm_progress(struct braid_cm_obj *obj)
{
	struct braid_msg *m = braid_container_of(obj, struct braid_msg, cm);
	struct braid_ep *ep = m->ep;

	braid_domain_lock(ep->domain);
	braid_msg_progress_locked(ep);
	braid_domain_unlock(ep->domain);
}

static int msg_check_param(const void *param, size_t paramlen)
{
	if (paramlen > BRAID_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	return 0;
}

static int msg_connect(struct fid_ep *ep_fid, const void *addr, const void *param,
		       size_t paramlen)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = braid_msg_of(ep);
	uint64_t now = braid_now_ns();
	struct braid_cm_qp local;
	uint64_t conn_id;
	int ret;

	if (!addr || msg_check_param(param, paramlen))
		return -FI_EINVAL;
	if (((const struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (getrandom(&conn_id, sizeof(conn_id), 0) != sizeof(conn_id))
		conn_id = now ^ ((uint64_t)m->qpn << 40);
	local = msg_cm_local(ep);
	ret = braid_cm_connect(&m->conn, conn_id, &local, param, paramlen, now);
	if (ret)
		goto out;
	memcpy(&m->peer, addr, sizeof(m->peer));
	m->dest = m->peer;	/* what fi_getpeer reports, as rdma_cm does (m->peer moves to the REP's source) */
	braid_msg_cm_run(ep, now, NULL);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_accept(struct fid_ep *ep_fid, const void *param, size_t paramlen)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = braid_msg_of(ep);
	struct braid_connreq *cr;
	uint64_t now = braid_now_ns();
	struct braid_cm_qp local;
	int ret;

	if (msg_check_param(param, paramlen))
		return -FI_EINVAL;
	cr = m->cr;	/* the request the endpoint was opened for, held (braid_msg_open) */
	if (!cr)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	/* refused meanwhile (fi_reject, or its listener closed): the client was told */
	if (cr->refused) {
		ret = -FI_ECONNREFUSED;
		goto out;
	}
	local = msg_cm_local(ep);
	ret = braid_cm_accept(&m->conn, &cr->req, &local, param, paramlen, now);
	if (ret)
		goto out;
	/* the QP exists (it receives at once) before REP goes out */
	ret = braid_msg_cm_run(ep, now, &cr->peer);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = braid_msg_of(ep);
	uint64_t now = braid_now_ns();
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	braid_domain_lock(ep->domain);
	ret = braid_cm_shutdown(&m->conn, now);
	if (!ret) {
		/* the QP to error, its final ACK out (the peer's last sends
		 * complete), then DREQ; fi_cm(3): canceled operations are
		 * reported before fi_shutdown returns */
		braid_msg_cm_run(ep, now, NULL);
		braid_msg_reap(ep);
	}
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = braid_msg_of(ep);
	size_t want = sizeof(struct sockaddr_in);
	int ret = 0;

	if (!addrlen)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (m->conn.state == BRAID_CM_IDLE) {
		ret = -FI_ENOTCONN;
	} else if (*addrlen < want || !addr) {
		ret = -FI_ETOOSMALL;
	} else {
		memcpy(addr, m->dest.sin_family ? &m->dest : &m->peer, want);
	}
	braid_domain_unlock(ep->domain);
	*addrlen = want;
	return ret;
}

static int msg_cm_nosys_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int msg_cm_nosys_reject(struct fid_pep *pep, fid_t handle, const void *param,
			       size_t paramlen)
{
	return -FI_ENOSYS;
}

/* the endpoint's address; an accepted one's is its listener's (as rdma_cm's) */
static int msg_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct braid_ep *ep = msg_ep(braid_container_of(fid, struct fid_ep, fid));
	struct braid_msg_ep *me = braid_msg_ep_of(ep);

	return braid_name_copy(me->cm_named ? &me->cm_name : &ep->wire->name, addr, addrlen);
}

static int msg_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int msg_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		    void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_cm braid_msg_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = msg_setname,
	.getname = msg_getname,
	.getpeer = msg_getpeer,
	.connect = msg_connect,
	.listen = msg_cm_nosys_listen,
	.accept = msg_accept,
	.reject = msg_cm_nosys_reject,
	.shutdown = msg_shutdown,
	.join = msg_join,
};
