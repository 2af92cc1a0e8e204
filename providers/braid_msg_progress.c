/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg_progress.c: FI_EP_MSG progress: the domain's RoCEv2 ports (one socket per address, packets to their QP by QP number), each QP's packets out and its completions to the CQs and counters, its timers and failure. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid_msg_int.h"

struct braid_rc_port *braid_msg_port_get(struct braid_domain *dom, struct in_addr ip,
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
	braid_rc_demux_construct(&port->demux);
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

void braid_msg_port_put(struct braid_rc_port *port)
{
	if (--port->refs)
		return;
	braid_dlist_remove(&port->node);
	braid_rc_demux_destruct(&port->demux);
	port->wire->ops->close(port->wire);
	free(port->rx_bufs);
	free(port);
}

int braid_msg_prov_errno(int err)
{
	switch (err) {
	case 0:
		return BRAID_PERR_OK;
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

/* a completion to the CQ (@silent: not when it succeeded) and the counter (@count) */
static void msg_complete(struct braid_ep *ep, bool rx, void *context, uint64_t flags,
			 size_t len, void *buf, uint64_t data, uint64_t tag, int err, int prov_errno,
			 size_t olen, bool silent, bool count)
{
	struct braid_cq *cq = rx ? ep->rx_cq : ep->tx_cq;
	struct braid_cntr *cntr = rx ? ep->recv_cntr : ep->send_cntr;

	if (err) {
		if (cq)
			braid_cq_write_err(cq, ep, context, flags, len, buf, data, tag, olen, err,
					   prov_errno, FI_ADDR_NOTAVAIL);
		if (cntr && count)
			braid_cntr_inc_err(cntr);
		return;
	}
	if (cq && !silent)
		braid_cq_write(cq, ep, context, flags, len, buf, data, tag, FI_ADDR_NOTAVAIL);
	if (cntr && count)
		braid_cntr_inc(cntr);
}

void braid_msg_write_rx(struct braid_ep *ep, void *context, uint64_t flags, size_t len, void *buf,
			uint64_t data, uint64_t tag, int err, int prov_errno, size_t olen,
			bool silent, bool count)
{
	msg_complete(ep, true, context, flags, len, buf, data, tag, err, prov_errno, olen, silent,
		     count);
}

static void msg_report(struct braid_ep *ep, const struct braid_rc_comp *c)
{
	bool rx = c->flags & (BRAID_RC_COMP_RECV | BRAID_RC_COMP_REMOTE_WRITE);
	struct braid_cntr *cntr = rx ? ep->recv_cntr : ep->send_cntr;
	uint64_t flags;

	if (rx && c->context && !ep->srx) {
		/* a receive of the endpoint's own queue: its record says what it was */
		braid_msg_rx_comp(&braid_msg_of(ep)->rx, c);
		return;
	}

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
	if (c->err && c->context == &braid_msg_inject_ctx) {
		BRAID_INFO(FI_LOG_CQ, "an injected transfer failed: %s\n", fi_strerror(c->err));
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	}
	msg_complete(ep, rx, c->context, flags, c->len, rx ? c->buf : NULL, c->imm, 0, c->err,
		     braid_msg_prov_errno(c->err), c->olen, c->flags & BRAID_RC_COMP_SILENT, true);
}

/*
 * Move the QP's completions to the CQs while they have room: a CQ is never
 * overrun (before, a full CQ lost them). What stays holds its work queue
 * slot: the sender sees -FI_EAGAIN, a peer's sends and WRITEs with
 * immediate get RNR NAKs until the application reads its CQ.
 */
void braid_msg_reap(struct braid_ep *ep)
{
	struct braid_msg *m = braid_msg_of(ep);
	struct braid_rc_comp c;

	for (;;) {
		/* completions made by the receive queue come before what the QP finished since */
		braid_msg_rx_reap(&m->rx);
		if (!m->qp || !braid_cq_room(ep->tx_cq) || !braid_cq_room(ep->rx_cq) ||
		    braid_rc_poll(m->qp, &c, 1) != 1)
			break;
		if (c.flags & (BRAID_RC_COMP_SEND | BRAID_RC_COMP_WRITE | BRAID_RC_COMP_READ))
			braid_ep_tx_give(ep, 1);	/* a work request ended */
		msg_report(ep, &c);
	}
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
void braid_msg_flush(struct braid_ep *ep, uint64_t now)
{
	struct braid_msg *m = braid_msg_of(ep);
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
			struct braid_rc_demux_entry *e;
			struct braid_ep *dst;
			bool established;

			/* to the QP it names, from that QP's peer only (core/braid_rc_demux.c) */
			e = braid_rc_demux_input(&port->demux, iovs[i].iov_base, pkts[i].len,
						 pkts[i].flags & BRAID_PKT_TRUNC,
						 ntohl(pkts[i].addr.sin_addr.s_addr),
						 ntohs(pkts[i].addr.sin_port), now, &established);
			if (!e)
				continue;
			dst = e->owner;
			dst->stats.rx_dgrams++;
			if (established)
				braid_msg_cm_run(dst, now, NULL);
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
	const struct braid_msg *m = braid_msg_of(ep);

	return m && m->qp ? braid_rc_get_stats(m->qp) : NULL;
}

/* the QP's counters in the log: at close (info), and when it fails (warning) */
void braid_msg_qp_log(struct braid_ep *ep, const char *what, bool warn)
{
	struct braid_msg *m = braid_msg_of(ep);
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
		 off ? drops : " none", (unsigned long)m->port->demux.unknown_qp,
		 (unsigned long)m->port->demux.wrong_source);
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
	struct braid_msg *m = braid_msg_of(ep);

	if (!m->qp)
		return;
	if (braid_rc_next_deadline(m->qp) <= now)
		braid_rc_timer(m->qp, now);
	braid_msg_flush(ep, now);
	braid_msg_reap(ep);
	if (braid_rc_error(m->qp) && !m->rx.flushed) {
		/* the QP is in error: the receives still posted are canceled */
		braid_msg_rx_flush(&m->rx);
		braid_msg_reap(ep);
	}
	if (braid_rc_error(m->qp) && m->conn.state == BRAID_CM_ESTABLISHED) {
		/* retries exhausted: the connection is gone */
		braid_msg_qp_log(ep, braid_rc_error(m->qp) == FI_ETIMEDOUT ? "failed, retries exhausted" :
			   "failed", true);
		braid_cm_qp_error(&m->conn);
		braid_msg_cm_run(ep, now, NULL);
	}
}

/* Take what the domain port holds and step the QPs it was for. */
void braid_msg_drain_port(struct braid_ep *ep, uint64_t now)
{
	struct braid_rc_port *port = braid_msg_of(ep)->port;
	struct braid_ep *touched[MSG_RX_BURST * 8];
	int nt = 0, i;

	if (!port)
		return;
	port_poll(port, now, touched, &nt, (int)(sizeof(touched) / sizeof(touched[0])));
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
void braid_msg_shutdown_release(struct braid_ep *ep, uint64_t now)
{
	struct braid_msg *m = braid_msg_of(ep);

	if (!m->shutdown_held)
		return;
	if (ep->rx_cq && braid_cq_holds_recv(ep->rx_cq, ep) &&
	    now - m->shutdown_held < (uint64_t)braid_cfg.peer_timeout_ms * 1000000ULL)
		return;
	m->shutdown_held = 0;
	braid_msg_eq_event(ep, FI_SHUTDOWN, NULL, 0);
}

void braid_msg_progress_locked(struct braid_ep *ep)
{
	uint64_t now = braid_now_ns();

	ep->progress_ns = now;
	if (!braid_msg_of(ep))
		return;
	/* RC traffic before CM messages: a peer's last ACKs left before its DREQ */
	braid_msg_drain_port(ep, now);
	braid_msg_cm_poll(ep, now);
	braid_msg_cm_timer(ep, now);
	msg_qp_step(ep, now);
	braid_msg_reap(ep);	/* completions made without the QP (before it exists, after a cancel) */
	braid_msg_shutdown_release(ep, now);
}

int braid_msg_wait_fd(struct braid_ep *ep)
{
	const struct braid_msg *m = braid_msg_of(ep);

	return m && m->port ? m->port->wire->ops->wait_fd(m->port->wire) : -1;
}

uint64_t braid_msg_next_deadline(struct braid_ep *ep)
{
	struct braid_msg *m = braid_msg_of(ep);
	uint64_t d = UINT64_MAX;

	if (!m)
		return d;
	if (m->qp)
		d = braid_rc_ready(m->qp) ? 0 : braid_rc_next_deadline(m->qp);
	if (braid_cm_next_deadline(&m->conn) < d)
		d = braid_cm_next_deadline(&m->conn);
	return d;
}
