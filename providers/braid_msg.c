/* braid_msg.c: FI_EP_MSG endpoints: RoCEv2 RC queue pairs (core/braid_rc.c) and the I/O of their connection handshake (core/braid_cm.c, protocol.md §6). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "braid.h"

#define MSG_RX_BURST	32
#define MSG_COMP_BATCH	32
#define MSG_CM_BUF	(sizeof(struct braid_cm_hdr) + BRAID_AUTH_TAG + BRAID_CM_DATA_MAX)

/** struct braid_msg - the connection and QP of one MSG endpoint. */
struct braid_msg {
	struct braid_cm_obj cm;
	struct braid_ep *ep;
	/** @conn: the handshake's state machine (core/braid_cm.c). */
	struct braid_cm_conn conn;
	/** @peer: the peer's QP socket (it carries the peer's CM messages too). */
	struct sockaddr_in peer;
	/** @dest: active side: the address fi_connect was given (fi_getpeer's answer). */
	struct sockaddr_in dest;
	/** @peer_rc_port ... @mtu: the QP's numbers, from @conn once the handshake gave them. */
	uint16_t peer_rc_port;
	uint32_t qpn, psn, peer_qpn, peer_psn, mtu;
	struct braid_rc_qp *qp;
	struct braid_rc_port *port;
	struct braid_connreq *cr;
	struct braid_eq *eq;
	/** @early: receives posted before the QP exists, handed to it in order when it does. */
	struct early_rx *early;
	size_t nearly, early_cap;
	/**
	 * @shutdown_held: when the peer's disconnect came (ns), while its
	 * FI_SHUTDOWN waits for the receive completions before it to be read
	 * (msg_shutdown_release()); 0: none waiting.
	 */
	uint64_t shutdown_held;
};

struct early_rx {
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t count;
	uint32_t flags;
	void *context;
};

static inline struct braid_ep *msg_ep(struct fid_ep *ep_fid)
{
	return braid_container_of(ep_fid, struct braid_ep, ep_fid);
}

/* the IB MTU an RC packet of this wire can carry (BTH + RETH + ImmDt + pad + ICRC on top) */
static uint32_t msg_rc_mtu(size_t wire_mtu)
{
	static const uint32_t ib[] = { 4096, 2048, 1024, 512, 256 };
	size_t i;

	for (i = 0; i < sizeof(ib) / sizeof(ib[0]); i++)
		if (ib[i] + BRAID_ROCE_MAX_HDR + BRAID_ROCE_MAX_TRAILER <= wire_mtu)
			return ib[i];
	return 256;
}

/* ---- the domain's RoCEv2 receive sockets ---- */

static struct braid_rc_port *rc_port_get(struct braid_domain *dom, struct in_addr ip,
					 const struct braid_wire_ops *ops)
{
	/* every QP of the domain on this IP receives through this one socket */
	struct braid_wire_params params = { .paths = 1, .sockbuf = 4 * braid_cfg.sockbuf };
	struct braid_rc_port *port;
	struct braid_dlist *it;
	int ret;

	for (it = dom->rc_ports.next; it != &dom->rc_ports; it = it->next) {
		port = braid_container_of(it, struct braid_rc_port, node);
		if (port->wire->name.sin_addr.s_addr == ip.s_addr) {
			port->refs++;
			return port;
		}
	}
	port = calloc(1, sizeof(*port));
	if (!port)
		return NULL;
	params.addr.sin_family = AF_INET;
	params.addr.sin_addr = ip;
	/* 4791 where the address is ours alone (a host or namespace of its own);
	 * FI_BRAID_RC_PORT, or any free port, otherwise: peers learn it in the
	 * handshake */
	params.addr.sin_port = htons(braid_cfg.rc_port ? (uint16_t)braid_cfg.rc_port :
				     BRAID_ROCE_UDP_PORT);
	ret = ops->open(&params, &port->wire);
	if (ret == -FI_EADDRINUSE) {
		params.addr.sin_port = 0;
		ret = ops->open(&params, &port->wire);
	}
	if (ret)
		goto err;
	port->rx_bufs = malloc((size_t)MSG_RX_BURST * port->wire->mtu);
	if (!port->rx_bufs)
		goto err_wire;
	braid_map_construct(&port->qps);
	port->refs = 1;
	braid_dlist_insert_tail(&port->node, &dom->rc_ports);
	BRAID_INFO(FI_LOG_EP_CTRL, "RoCEv2 receive port %s:%u\n", inet_ntoa(ip),
		   ntohs(port->wire->name.sin_port));
	return port;
err_wire:
	free(port->rx_bufs);
	port->wire->ops->close(port->wire);
err:
	free(port);
	return NULL;
}

static void rc_port_put(struct braid_rc_port *port)
{
	if (--port->refs)
		return;
	braid_dlist_remove(&port->node);
	braid_map_destruct(&port->qps);
	port->wire->ops->close(port->wire);
	free(port->rx_bufs);
	free(port);
}

/* ---- CM messages ---- */

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

static void eq_event(struct braid_ep *ep, uint32_t event, const void *pdata, size_t len)
{
	struct braid_msg *m = ep->msg;
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
	struct braid_msg *m = ep->msg;
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
	struct braid_msg *m = ep->msg;
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
	if (ep->srx) {
		c.srq_pull = braid_srx_pull;
		c.srq_ctx = ep;
	}
	c.mr_ctx = ep;
	ret = braid_rc_open(&c, &m->qp);
	if (ret)
		return ret;
	for (size_t i = 0; i < m->nearly; i++) {
		struct braid_rc_recv rr = { .iov = m->early[i].iov, .iov_count = m->early[i].count,
					    .flags = m->early[i].flags, .context = m->early[i].context };

		(void)braid_rc_post_recv(m->qp, &rr);	/* depth checked when they were kept */
	}
	m->nearly = 0;
	/* the peer's RoCEv2 packets reach us through the domain's port, by QPN */
	ret = braid_map_insert(&m->port->qps, m->qpn, ep);
	if (ret) {
		braid_rc_close(m->qp);
		m->qp = NULL;
	}
	return ret;
}

static void msg_drain_port(struct braid_ep *ep, uint64_t now);
static void msg_flush(struct braid_ep *ep, uint64_t now);

/* what REQ and REP announce of this endpoint's QP */
static struct braid_cm_qp msg_cm_local(const struct braid_msg *m)
{
	return (struct braid_cm_qp){ .qpn = m->qpn, .psn = m->psn, .mtu = m->mtu,
				     .rc_port = m->port ? ntohs(m->port->wire->name.sin_port) : 0 };
}

/*
 * Do what the CM engine asks after a call into it (caller holds the domain
 * lock): its actions and events first, then its messages (a flushed QP's
 * final ACK leaves before the DREQ). @from: the address the REP came from
 * (the accepting endpoint's own socket: the peer from then on) or, on
 * fi_accept, the request's. Return: the QP creation's result, 0 if none.
 */
static int msg_cm_run(struct braid_ep *ep, uint64_t now, const struct sockaddr_in *from)
{
	struct braid_msg *m = ep->msg;
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
				msg_flush(ep, now);
			}
			break;
		case BRAID_CM_EV_CONNECTED:
			eq_event(ep, FI_CONNECTED, ev.pdata, ev.pdata_len);
			break;
		case BRAID_CM_EV_SHUTDOWN:
			m->shutdown_held = now ? now : 1;	/* msg_shutdown_release() */
			break;
		default:	/* REJECTED, TIMEDOUT, ERROR */
			eq_error(ep, ev.err, ev.pdata, ev.pdata_len);
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
	struct braid_msg *m = ep->msg;
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
		msg_drain_port(ep, now);
	}
	ret = braid_cm_input(&m->conn, v, now);
	if (ret < 0) {
		ep->stats.drops[-ret - 1]++;
		return;
	}
	msg_cm_run(ep, now, from);
}

/* Read this endpoint's own socket: CM messages only (RoCEv2 arrives at the port). */
static void msg_cm_poll(struct braid_ep *ep, uint64_t now)
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
static void msg_cm_timer(struct braid_ep *ep, uint64_t now)
{
	braid_cm_timer(&ep->msg->conn, now);
	msg_cm_run(ep, now, NULL);
}

/* ---- data path ---- */

static int msg_prov_errno(int err)
{
	switch (err) {
	case FI_ETRUNC:
		return BRAID_PERR_TRUNC;
	case FI_ETIMEDOUT:
		return BRAID_PERR_RC_RETRY;
	case FI_ENORX:
		return BRAID_PERR_RC_RNR;
	case FI_EACCES:
		return BRAID_PERR_REMOTE_ACCESS;
	case FI_EINVAL:
		return BRAID_PERR_RC_INVALID;
	default:
		return BRAID_PERR_RC_FLUSHED;
	}
}

/*
 * The context of the work fi_inject, fi_injectdata, fi_inject_write and
 * fi_inject_writedata post: they have none to report. Their success writes
 * no CQ entry (fi_msg(3)); nor does their failure, which has nothing to name
 * (a verbs provider posts them unsignaled and drops their flush errors): an
 * error entry with a NULL op_context is one ofi_rxm reads as its own buffer
 * and crashes on. The error counts on the endpoint's counter, the QP's error
 * reaches the EQ (FI_SHUTDOWN) and the work after it fails on the CQ.
 */
static char msg_inject_ctx;

static void msg_report(struct braid_ep *ep, const struct braid_rc_comp *c)
{
	bool rx = c->flags & (BRAID_RC_COMP_RECV | BRAID_RC_COMP_REMOTE_WRITE);
	struct braid_cq *cq = rx ? ep->rx_cq : ep->tx_cq;
	struct braid_cntr *cntr = rx ? ep->recv_cntr : ep->send_cntr;
	uint64_t flags;

	if (c->flags & BRAID_RC_COMP_SEND)
		flags = FI_MSG | FI_SEND;
	else if (c->flags & BRAID_RC_COMP_WRITE)
		flags = FI_RMA | FI_WRITE;
	else if (c->flags & BRAID_RC_COMP_READ)
		flags = FI_RMA | FI_READ;
	else if (c->flags & BRAID_RC_COMP_REMOTE_WRITE)
		flags = FI_RMA | FI_REMOTE_WRITE;
	else
		flags = FI_MSG | FI_RECV;
	if (c->flags & BRAID_RC_COMP_IMM)
		flags |= FI_REMOTE_CQ_DATA;
	if (c->err && c->context == &msg_inject_ctx) {
		BRAID_INFO(FI_LOG_CQ, "an injected transfer failed: %s\n", fi_strerror(c->err));
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	}
	if (c->err) {
		if (cq)
			braid_cq_write_err(cq, ep, c->context, flags, c->len, c->buf, c->imm, 0, c->olen,
					   c->err, msg_prov_errno(c->err), FI_ADDR_NOTAVAIL);
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	}
	if (cq && !(c->flags & BRAID_RC_COMP_SILENT))
		braid_cq_write(cq, ep, c->context, flags, c->len, rx ? c->buf : NULL, c->imm, 0,
			       FI_ADDR_NOTAVAIL);
	if (cntr)
		braid_cntr_inc(cntr);
}

/*
 * Move the QP's completions to the CQs while they have room: a CQ is never
 * overrun (before, a full CQ lost them). What stays holds its work queue
 * slot: the sender sees -FI_EAGAIN, a peer's sends and WRITEs with
 * immediate get RNR NAKs until the application reads its CQ.
 */
static void msg_reap(struct braid_ep *ep)
{
	struct braid_rc_comp c;

	while (braid_cq_room(ep->tx_cq) && braid_cq_room(ep->rx_cq) &&
	       braid_rc_poll(ep->msg->qp, &c, 1) == 1)
		msg_report(ep, &c);
}

/*
 * Send what the QP has to send, one burst of at most BRAID_MAX_BATCH packets
 * per progress step (caller holds the domain lock). A NIC's wire paces its
 * packets and its receive side runs all the while; a host would put a whole
 * READ's responses into the sockets at once and see the requester's resent
 * READ only after them: between bursts the port is read again, so a
 * responder cuts a stream go-back-N has made stale after one burst, not
 * after a megabyte, and what is in flight stays near one burst.
 */
static void msg_flush(struct braid_ep *ep, uint64_t now)
{
	struct braid_msg *m = ep->msg;
	struct braid_rc_out out[BRAID_MAX_BATCH];
	struct braid_pkt pkts[BRAID_MAX_BATCH];
	struct iovec iovs[BRAID_MAX_BATCH][BRAID_RC_IOV_MAX + 3];
	struct sockaddr_in dst = m->peer;
	int n, i, j, sent = 0;

	dst.sin_port = htons(m->peer_rc_port);
	n = braid_rc_output(m->qp, now, out, BRAID_MAX_BATCH);
	for (i = 0; i < n; i++) {
		int k = 0;

		iovs[i][k++] = (struct iovec){ out[i].hdr, out[i].hdr_len };
		for (j = 0; j < out[i].payload_iovcnt; j++)
			if (out[i].payload[j].iov_len)
				iovs[i][k++] = out[i].payload[j];
		iovs[i][k++] = (struct iovec){ out[i].trailer, out[i].trailer_len };
		pkts[i] = (struct braid_pkt){ .iov = iovs[i], .iovcnt = k, .path = 0, .addr = dst };
	}
	while (sent < n) {
		int r = ep->wire->ops->tx_burst(ep->wire, pkts + sent, n - sent);

		if (r <= 0)
			break;
		sent += r;
	}
	/* a full socket loses what it refused; go-back-N recovers it, as a
	 * NIC's dropped frame would be */
	if (sent < n)
		ep->stats.tx_refused += (uint64_t)(n - sent);
	ep->stats.tx_dgrams += (uint64_t)sent;
}

/* Hand RoCEv2 packets from the domain port to their QPs (caller holds the domain lock). */
static void port_poll(struct braid_rc_port *port, uint64_t now, struct braid_ep **touched,
		      int *ntouched, int max_touched)
{
	struct braid_pkt pkts[MSG_RX_BURST];
	struct iovec iovs[MSG_RX_BURST];
	int n, i, rounds, t;

	for (rounds = 0; rounds < 8; rounds++) {
		n = braid_wire_rx(port->wire, pkts, iovs, port->rx_bufs, MSG_RX_BURST);
		for (i = 0; i < n; i++) {
			const uint8_t *b = iovs[i].iov_base;
			struct braid_ep *dst;
			uint32_t qpn;

			if ((pkts[i].flags & BRAID_PKT_TRUNC) ||
			    braid_roce_dest_qp(b, pkts[i].len, &qpn)) {
				port->unknown_qp++;
				continue;
			}
			dst = braid_map_get(&port->qps, qpn);
			if (!dst || !dst->msg->qp) {
				port->unknown_qp++;
				continue;
			}
			/* a QP hears only its peer: the address and port it sends from */
			if (pkts[i].addr.sin_addr.s_addr != dst->msg->peer.sin_addr.s_addr ||
			    pkts[i].addr.sin_port != dst->msg->peer.sin_port) {
				port->wrong_source++;
				continue;
			}
			dst->stats.rx_dgrams++;
			if (braid_rc_input(dst->msg->qp, b, pkts[i].len, now) == 0 &&
			    dst->msg->conn.state == BRAID_CM_REP_SENT) {
				/* RC traffic on the new QP: the RTU was lost, the
				 * connection is up all the same (IBTA: communication
				 * established) */
				braid_cm_comm_established(&dst->msg->conn);
				msg_cm_run(dst, now, NULL);
			}
			for (t = 0; t < *ntouched && touched[t] != dst; t++)
				;
			if (t == *ntouched && t < max_touched)
				touched[(*ntouched)++] = dst;
		}
		braid_wire_rx_done(port->wire, pkts, n);
		if (n < MSG_RX_BURST)
			break;
	}
}

const struct braid_rc_stats *braid_msg_rc_stats(struct braid_ep *ep)
{
	return ep->msg && ep->msg->qp ? braid_rc_get_stats(ep->msg->qp) : NULL;
}

/* the QP's counters in the log: at close (info), and when it fails (warning) */
static void msg_qp_log(struct braid_ep *ep, const char *what, bool warn)
{
	struct braid_msg *m = ep->msg;
	const struct braid_rc_stats *st = braid_rc_get_stats(m->qp);
	char drops[256] = "", line[640];
	size_t off = 0;
	int k;

	for (k = 0; k < BRAID_RC_DROP_MAX; k++)
		if (st->drops[k] && off < sizeof(drops))
			off += (size_t)snprintf(drops + off, sizeof(drops) - off, " %s=%lu",
						braid_rc_drop_str(k), (unsigned long)st->drops[k]);
	snprintf(line, sizeof(line), "MSG endpoint QP %u %s: %lu packets sent (%lu resent), "
		 "%lu received; %lu NAKs sent, %lu received; %lu RNR NAKs sent, %lu received; "
		 "%lu timeouts; drops:%s; port: %lu packets for unknown QPs, %lu from a QP's "
		 "non-peer", m->qpn, what,
		 (unsigned long)st->tx_pkts, (unsigned long)st->retx_pkts,
		 (unsigned long)st->rx_pkts, (unsigned long)st->naks_seq_tx,
		 (unsigned long)st->naks_seq_rx, (unsigned long)st->rnr_naks_tx,
		 (unsigned long)st->rnr_naks_rx, (unsigned long)st->timeouts,
		 off ? drops : " none", (unsigned long)m->port->unknown_qp,
		 (unsigned long)m->port->wrong_source);
	if (warn) {
		char trace[1024];

		braid_rc_retry_trace(m->qp, trace, sizeof(trace));
		BRAID_WARN(FI_LOG_EP_DATA, "%s\n", line);
		BRAID_WARN(FI_LOG_EP_DATA, "QP %u's last retries: %s\n", m->qpn, trace);
	} else {
		BRAID_INFO(FI_LOG_EP_CTRL, "%s\n", line);
	}
}

static void msg_qp_step(struct braid_ep *ep, uint64_t now)
{
	struct braid_msg *m = ep->msg;

	if (!m->qp)
		return;
	if (braid_rc_next_deadline(m->qp) <= now)
		braid_rc_timer(m->qp, now);
	msg_flush(ep, now);
	msg_reap(ep);
	if (braid_rc_error(m->qp) && m->conn.state == BRAID_CM_ESTABLISHED) {
		/* retries exhausted: the connection is gone */
		msg_qp_log(ep, braid_rc_error(m->qp) == FI_ETIMEDOUT ? "failed, retries exhausted" :
			   "failed", true);
		braid_cm_qp_error(&m->conn);
		msg_cm_run(ep, now, NULL);
	}
}

/* Take what the domain port holds and step the QPs it was for. */
static void msg_drain_port(struct braid_ep *ep, uint64_t now)
{
	struct braid_ep *touched[MSG_RX_BURST * 8];
	int nt = 0, i;

	if (!ep->msg->port)
		return;
	port_poll(ep->msg->port, now, touched, &nt, (int)(sizeof(touched) / sizeof(touched[0])));
	for (i = 0; i < nt; i++)
		msg_qp_step(touched[i], now);
}

/*
 * FI_SHUTDOWN after the receives that came before it: the event waits while
 * the endpoint's CQ still holds receive completions of this endpoint that
 * the application has not read, at most the peer timeout
 * (FI_BRAID_PEER_TIMEOUT_MS). A layer above that closes the connection on
 * FI_SHUTDOWN (ofi_rxm) reads the data first, instead of losing it to the
 * close (braid_cq_ep_closed() cancels what is still unread).
 */
static void msg_shutdown_release(struct braid_ep *ep, uint64_t now)
{
	struct braid_msg *m = ep->msg;

	if (!m->shutdown_held)
		return;
	if (ep->rx_cq && braid_cq_holds_recv(ep->rx_cq, ep) &&
	    now - m->shutdown_held < (uint64_t)braid_cfg.peer_timeout_ms * 1000000ULL)
		return;
	m->shutdown_held = 0;
	eq_event(ep, FI_SHUTDOWN, NULL, 0);
}

void braid_msg_progress_locked(struct braid_ep *ep)
{
	uint64_t now = braid_now_ns();

	ep->progress_ns = now;
	if (!ep->msg)
		return;
	/* RC traffic before CM messages: a peer's last ACKs left before its DREQ */
	msg_drain_port(ep, now);
	msg_cm_poll(ep, now);
	msg_cm_timer(ep, now);
	msg_qp_step(ep, now);
	msg_shutdown_release(ep, now);
}

int braid_msg_wait_fd(struct braid_ep *ep)
{
	return ep->msg && ep->msg->port ? ep->msg->port->wire->ops->wait_fd(ep->msg->port->wire) : -1;
}

uint64_t braid_msg_next_deadline(struct braid_ep *ep)
{
	struct braid_msg *m = ep->msg;
	uint64_t d = UINT64_MAX;

	if (!m)
		return d;
	if (m->qp)
		d = braid_rc_ready(m->qp) ? 0 : braid_rc_next_deadline(m->qp);
	if (braid_cm_next_deadline(&m->conn) < d)
		d = braid_cm_next_deadline(&m->conn);
	return d;
}

/* The EQ drives an endpoint's handshake when it is read. */
static void msg_cm_progress(struct braid_cm_obj *obj)
{
	struct braid_msg *m = braid_container_of(obj, struct braid_msg, cm);
	struct braid_ep *ep = m->ep;

	braid_domain_lock(ep->domain);
	braid_msg_progress_locked(ep);
	braid_domain_unlock(ep->domain);
}

/* ---- object life ---- */

int braid_msg_open(struct braid_ep *ep)
{
	struct braid_msg *m = calloc(1, sizeof(*m));
	struct braid_cm_config cm_cfg;

	if (!m)
		return -FI_ENOMEM;
	m->ep = ep;
	braid_cm_config_default(&cm_cfg);
	cm_cfg.timeout_ns = (uint64_t)braid_cfg.peer_timeout_ms * 1000000ULL;
	braid_cm_construct(&m->conn, &cm_cfg);
	m->cm.progress = msg_cm_progress;
	m->cm.fd = ep->wire->ops->wait_fd(ep->wire);
	braid_dlist_init(&m->cm.node);
	m->mtu = msg_rc_mtu(ep->wire->mtu);
	m->early_cap = ep->info->rx_attr && ep->info->rx_attr->size ? ep->info->rx_attr->size :
									braid_cfg.rx_size;
	m->early = calloc(m->early_cap, sizeof(*m->early));
	if (!m->early) {
		free(m);
		return -FI_ENOMEM;
	}
	ep->msg = m;
	/* opened for a connection request: it holds the request until it closes */
	if (ep->info->handle && ep->info->handle->fclass == FI_CLASS_CONNREQ) {
		m->cr = braid_container_of(ep->info->handle, struct braid_connreq, fid);
		braid_pep_hold(m->cr);
	}
	ep->max_msg_size = BRAID_MSG_MAX_MSG;
	if (ep->info->ep_attr->max_msg_size && ep->info->ep_attr->max_msg_size < ep->max_msg_size)
		ep->max_msg_size = ep->info->ep_attr->max_msg_size;
	return 0;
}

int braid_msg_bind_eq(struct braid_ep *ep, struct braid_eq *eq)
{
	struct braid_msg *m = ep->msg;

	if (m->eq)
		return -FI_EINVAL;
	m->eq = eq;
	braid_eq_add_cm(eq, &m->cm);
	return 0;
}

/* Allocate the QPN and the port; the caller holds the domain lock. */
int braid_msg_enable(struct braid_ep *ep)
{
	struct braid_msg *m = ep->msg;
	struct braid_domain *dom = ep->domain;

	if (!m->eq)
		return -FI_ENOEQ;
	if (m->port)
		return 0;
	m->port = rc_port_get(dom, ep->wire->name.sin_addr, ep->wire_ops);
	if (!m->port)
		return -FI_ENOMEM;
	/* QP numbers a stranger cannot guess (issue 15): random, 24 bits, unused on the port */
	do {
		if (getrandom(&m->qpn, sizeof(m->qpn), 0) != sizeof(m->qpn))
			m->qpn = (uint32_t)(braid_now_ns() * 2654435761u) ^ dom->next_qpn++;
		m->qpn &= BRAID_ROCE_QPN_MASK;
	} while (m->qpn < 2 || braid_map_get(&m->port->qps, m->qpn));
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
	for (i = 0; i < set->n && !used; i++)
		used = set->eps[i] != self && set->eps[i]->msg && set->eps[i]->msg->port == port;
	pthread_mutex_unlock(&set->lock);
	return used;
}

void braid_msg_close(struct braid_ep *ep)
{
	struct braid_msg *m = ep->msg;

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
		msg_cm_run(ep, braid_now_ns(), NULL);
	}
	if (m->cr)
		braid_pep_forget(m->cr);
	if (m->qp) {
		msg_qp_log(ep, "closed", false);
		braid_map_remove(&m->port->qps, m->qpn);
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
		rc_port_put(m->port);
	}
	/* gone under the lock: a post that races the close sees no state, not freed state */
	ep->msg = NULL;
	braid_domain_unlock(ep->domain);
	free(m->early);
	free(m);
}

/* ---- fi_cm(3) ---- */

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
	struct braid_msg *m = ep->msg;
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
	local = msg_cm_local(m);
	ret = braid_cm_connect(&m->conn, conn_id, &local, param, paramlen, now);
	if (ret)
		goto out;
	memcpy(&m->peer, addr, sizeof(m->peer));
	m->dest = m->peer;	/* what fi_getpeer reports, as rdma_cm does (m->peer moves to the REP's source) */
	msg_cm_run(ep, now, NULL);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_accept(struct fid_ep *ep_fid, const void *param, size_t paramlen)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = ep->msg;
	struct braid_connreq *cr;
	uint64_t now = braid_now_ns();
	struct braid_cm_qp local;
	int ret;

	if (msg_check_param(param, paramlen))
		return -FI_EINVAL;
	cr = m->cr;
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
	local = msg_cm_local(m);
	ret = braid_cm_accept(&m->conn, &cr->req, &local, param, paramlen, now);
	if (ret)
		goto out;
	/* the QP exists (it receives at once) before REP goes out */
	ret = msg_cm_run(ep, now, &cr->peer);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	struct braid_msg *m = ep->msg;
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
		msg_cm_run(ep, now, NULL);
		msg_reap(ep);
	}
	braid_domain_unlock(ep->domain);
	return ret;
}

static int msg_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct braid_ep *ep = msg_ep(ep_fid);
	size_t want = sizeof(struct sockaddr_in);
	int ret = 0;

	if (!addrlen)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (ep->msg->conn.state == BRAID_CM_IDLE) {
		ret = -FI_ENOTCONN;
	} else if (*addrlen < want || !addr) {
		ret = -FI_ETOOSMALL;
	} else {
		memcpy(addr, ep->msg->dest.sin_family ? &ep->msg->dest : &ep->msg->peer, want);
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
	.getname = braid_ep_getname,
	.getpeer = msg_getpeer,
	.connect = msg_connect,
	.listen = msg_cm_nosys_listen,
	.accept = msg_accept,
	.reject = msg_cm_nosys_reject,
	.shutdown = msg_shutdown,
	.join = msg_join,
};

/* ---- fi_msg(3) and fi_rma(3) ---- */

/* Post a send work request and push it out (the caller does not hold the lock). */
static ssize_t msg_post(struct braid_ep *ep, const struct braid_rc_wr *wr)
{
	struct braid_msg *m;
	uint64_t now = braid_now_ns();
	ssize_t ret;

	braid_domain_lock(ep->domain);
	m = ep->msg;
	if (!m) {
		ret = -FI_EOPBADSTATE;	/* closing */
		goto out;
	}
	ret = braid_cm_post_check(&m->conn);
	if (ret)
		goto out;
	ret = braid_rc_post_send(m->qp, wr, now);
	if (ret == -FI_EAGAIN) {
		braid_msg_progress_locked(ep);
		goto out;
	}
	if (!ret)
		msg_flush(ep, now);
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static uint32_t msg_tx_flags(struct braid_ep *ep, uint64_t flags, bool inject)
{
	uint32_t f = 0;

	if (inject || (flags & FI_INJECT))
		f |= BRAID_RC_INJECT;
	if (inject || (ep->tx_selective && !(flags & FI_COMPLETION)))
		f |= BRAID_RC_NO_COMP;
	return f;
}

static ssize_t msg_send_common(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t data, uint64_t flags, void *context, bool inject)
{
	struct braid_rc_wr wr = {
		.op = BRAID_RC_OP_SEND, .iov = iov, .iov_count = count, .imm = (uint32_t)data,
		.flags = msg_tx_flags(ep, flags, inject), .context = inject ? &msg_inject_ctx : context,
	};

	if (count > BRAID_RC_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		wr.flags |= BRAID_RC_IMM;
	return msg_post(ep, &wr);
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

static ssize_t msg_recv_common(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       uint64_t flags, void *context)
{
	struct braid_msg *m;
	struct braid_rc_recv rr = {
		.iov = iov, .iov_count = count, .context = context,
		.flags = (ep->rx_selective && !(flags & FI_COMPLETION)) ? BRAID_RC_NO_COMP : 0,
	};
	ssize_t ret;

	if (count > BRAID_RC_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if (ep->srx)	/* its receives are the shared context's */
		return braid_srx_recv(ep->srx, iov, count, flags, context);
	braid_domain_lock(ep->domain);
	m = ep->msg;
	if (!m) {
		ret = -FI_EOPBADSTATE;	/* closing (ofi_rxm reposts its buffers from its own threads) */
	} else if (!m->qp) {
		/* receives may be posted before the connection is up (as on a
		 * verbs QP in INIT): kept, and given to the QP when it exists */
		if (m->conn.state != BRAID_CM_IDLE && m->conn.state != BRAID_CM_REQ_SENT) {
			ret = -FI_EOPBADSTATE;
		} else if (m->nearly == m->early_cap) {
			ret = -FI_EAGAIN;
		} else {
			struct early_rx *e = &m->early[m->nearly++];

			memcpy(e->iov, iov, count * sizeof(*iov));
			e->count = count;
			e->flags = rr.flags;
			e->context = context;
			ret = 0;
		}
	} else {
		ret = braid_rc_post_recv(m->qp, &rr);
	}
	braid_domain_unlock(ep->domain);
	return ret;
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

static ssize_t msg_rma(struct braid_ep *ep, enum braid_rc_op op, const struct iovec *iov,
		       size_t count, uint64_t addr, uint64_t key, uint64_t data, uint64_t flags,
		       void *context, bool inject)
{
	struct braid_rc_wr wr = {
		.op = op, .iov = iov, .iov_count = count, .raddr = addr, .rkey = (uint32_t)key,
		.imm = (uint32_t)data, .flags = msg_tx_flags(ep, flags, inject),
		.context = inject ? &msg_inject_ctx : context,
	};

	if (count > BRAID_RC_IOV_MAX || (count && !iov) || key > UINT32_MAX)
		return -FI_EINVAL;
	if ((flags & FI_REMOTE_CQ_DATA) && op == BRAID_RC_OP_WRITE)
		wr.flags |= BRAID_RC_IMM;
	if (op == BRAID_RC_OP_READ && inject)
		return -FI_EINVAL;
	return msg_post(ep, &wr);
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
