/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg_int.h: what the FI_EP_MSG files share (braid_msg.c, braid_msg_cm.c, braid_msg_progress.c, braid_msg_rma.c, braid_msg_rx.c): the endpoint, its connection and QP, and the calls between them. */
#ifndef BRAID_MSG_INT_H
#define BRAID_MSG_INT_H

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
	/** @route: @qp's entry in @port's demultiplexer (while @qp is open). */
	struct braid_rc_demux_entry route;
	struct braid_connreq *cr;
	struct braid_eq *eq;
	/**
	 * @rx: its receives (posted before the QP exists too) and unexpected
	 * messages; the QP takes one per message (braid_msg_rx.c).
	 */
	struct braid_msg_rx rx;
	/**
	 * @shutdown_held: when the peer's disconnect came (ns), while its
	 * FI_SHUTDOWN waits for the receive completions before it to be read
	 * (msg_shutdown_release()); 0: none waiting.
	 */
	uint64_t shutdown_held;
};

/** struct braid_msg_ep - an FI_EP_MSG endpoint. */
struct braid_msg_ep {
	struct braid_ep ep;
	/**
	 * @msg: its connection and QP (braid_msg_open); NULL once it is closing
	 * (set so under the domain lock: a call that races the close sees none).
	 */
	struct braid_msg *msg;
	/** @cm_name, @cm_named: accepted: the listener's address, its fi_getname. */
	struct sockaddr_in cm_name;
	bool cm_named;
	/** @min_multi_recv: FI_OPT_MIN_MULTI_RECV of this endpoint. */
	size_t min_multi_recv;
};

static inline struct braid_msg_ep *braid_msg_ep_of(struct braid_ep *ep)
{
	return braid_container_of(ep, struct braid_msg_ep, ep);
}

/* the connection and QP of MSG endpoint @ep, NULL once it is closing */
static inline struct braid_msg *braid_msg_of(const struct braid_ep *ep)
{
	return braid_container_of(ep, const struct braid_msg_ep, ep)->msg;
}

static inline struct braid_ep *msg_ep(struct fid_ep *ep_fid)
{
	return braid_container_of(ep_fid, struct braid_ep, ep_fid);
}

/*
 * The context of the work fi_inject, fi_injectdata, fi_inject_write and
 * fi_inject_writedata post (braid_msg.c): they have none to report.
 */
extern char braid_msg_inject_ctx;

/* a SEND's tag (@tagged: fi_tsend and its kin) */
struct msg_tag {
	bool tagged;
	uint64_t tag;
};

/* braid_msg.c */
uint32_t braid_msg_tx_flags(struct braid_ep *ep, uint64_t flags, bool inject);
ssize_t braid_msg_post(struct braid_ep *ep, struct braid_rc_wr *wr, const struct msg_tag *t);

/* braid_msg_cm.c: the handshake */
void braid_msg_eq_event(struct braid_ep *ep, uint32_t event, const void *pdata, size_t len);
void braid_msg_cm_poll(struct braid_ep *ep, uint64_t now);
void braid_msg_cm_timer(struct braid_ep *ep, uint64_t now);
void braid_msg_cm_progress(struct braid_cm_obj *obj);
int braid_msg_cm_run(struct braid_ep *ep, uint64_t now, const struct sockaddr_in *from);

/* braid_msg_progress.c: ports, packets, completions */
void braid_msg_reap(struct braid_ep *ep);
void braid_msg_drain_port(struct braid_ep *ep, uint64_t now);
void braid_msg_shutdown_release(struct braid_ep *ep, uint64_t now);
void braid_msg_qp_log(struct braid_ep *ep, const char *what, bool warn);
void braid_msg_port_put(struct braid_rc_port *port);
struct braid_rc_port *braid_msg_port_get(struct braid_domain *dom, struct in_addr ip,
					 const struct braid_wire_ops *ops);
void braid_msg_flush(struct braid_ep *ep, uint64_t now);

#endif /* BRAID_MSG_INT_H */
