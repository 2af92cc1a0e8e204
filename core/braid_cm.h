/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cm.h: the RC connection handshake's interface (protocol.md §6): one connection's CM state machine and a listener's requests, sans-I/O. */
#ifndef BRAID_CM_H
#define BRAID_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "braid/braid_list.h"
#include "braid_hdr.h"

/*
 * The REQ / REP / RTU / REJ / DREQ / DREP exchange of protocol.md §6,
 * modelled on InfiniBand CM (IBTA vol. 1 ch. 12), for FI_EP_MSG endpoints.
 * The caller (providers/braid_msg.c) owns the sockets, the clock, the QP and
 * the EQ; the engine owns the states, retries and time-outs:
 *
 *   braid_cm_connect(c, ...) / braid_cm_accept(c, ...) / braid_cm_shutdown(c, now)
 *   braid_cm_input(c, view, now)        a decoded CM message from the peer's IP
 *   braid_cm_comm_established(c)        the first valid RC packet on the QP
 *   braid_cm_qp_error(c)                the QP failed (transport retries exhausted)
 *   braid_cm_timer(c, now)              when now >= braid_cm_next_deadline(c)
 *   then, after every call:
 *     braid_cm_poll(c, ev, max)         actions and events, in order: QP_CREATE
 *                                       (create it, then braid_cm_qp_created()),
 *                                       QP_FLUSH, CONNECTED, REJECTED, TIMEDOUT,
 *                                       ERROR, SHUTDOWN
 *     braid_cm_output(c, msgs, max)     messages to send to the peer
 *
 * Actions and events come before messages: the caller acts on them first
 * (a QP's final ACK leaves before the DREQ). The source address of a message
 * is the caller's to check (the engine knows none); the conn_id is the
 * engine's. Time is nanoseconds from any monotonic origin. No allocation.
 */

#define BRAID_CM_RETRY_NS	(200ULL * 1000 * 1000)	/* REQ, REP, DREQ resent every 200 ms (§6.4) */
#define BRAID_CM_TIMEOUT_NS	(5000ULL * 1000 * 1000)	/* FI_BRAID_PEER_TIMEOUT_MS's default */
#define BRAID_CM_DREQ_TRIES	5			/* DREQ resent at most 5 times (§6.5) */
#define BRAID_CM_OUT_MAX	8			/* messages held until braid_cm_output() */
#define BRAID_CM_EV_MAX		8			/* events held until braid_cm_poll() */
#define BRAID_CM_NONE		UINT64_MAX		/* no deadline armed */

/*
 * States, named as IBTA's (and Linux ib_cm's) where they mean the same. The
 * *_RCVD states last only while the caller creates the QP (between
 * BRAID_CM_EV_QP_CREATE and braid_cm_qp_created()).
 */
enum braid_cm_state {
	BRAID_CM_IDLE = 0,	/* nothing sent or accepted yet */
	BRAID_CM_REQ_SENT,	/* active: REQ sent, resent until REP, REJ or the deadline */
	BRAID_CM_REP_RCVD,	/* active: REP taken, the caller creates the QP */
	BRAID_CM_REQ_RCVD,	/* passive: the application accepted, the caller creates the QP */
	BRAID_CM_REP_SENT,	/* passive: REP sent, resent until RTU, RC traffic or the deadline */
	BRAID_CM_ESTABLISHED,	/* both QPs up */
	BRAID_CM_DREQ_SENT,	/* we shut down: DREQ sent, resent until DREP, the peer's DREQ or tries run out */
	BRAID_CM_CLOSED,	/* disconnected (by either side); a DREQ still gets its DREP */
	BRAID_CM_ERROR,		/* refused, timed out, or the QP failed */
	BRAID_CM_NSTATES
};

/** braid_cm_state_str() - the state's name, for logs. */
const char *braid_cm_state_str(enum braid_cm_state s);

/** enum braid_cm_event_type - what the caller must do or report, in the order given. */
enum braid_cm_event_type {
	/**
	 * @BRAID_CM_EV_QP_CREATE: create the QP now from braid_cm_conn.local
	 * (its MTU is the one both use) and .peer, then report the result with
	 * braid_cm_qp_created(). On a REP, the peer's address from now on is
	 * the one the REP came from (§6.3).
	 */
	BRAID_CM_EV_QP_CREATE = 1,
	/** @BRAID_CM_EV_QP_FLUSH: move the QP to the error state (its final ACKs may still go out). */
	BRAID_CM_EV_QP_FLUSH,
	/** @BRAID_CM_EV_CONNECTED: FI_CONNECTED; the active side gets the REP's private data. */
	BRAID_CM_EV_CONNECTED,
	/** @BRAID_CM_EV_REJECTED: the peer refused: @err its REJ status, @pdata its private data. */
	BRAID_CM_EV_REJECTED,
	/** @BRAID_CM_EV_TIMEDOUT: no REP (active) or RTU (passive) by the deadline; @err FI_ETIMEDOUT. */
	BRAID_CM_EV_TIMEDOUT,
	/** @BRAID_CM_EV_ERROR: a local failure (@err: the QP could not be created). */
	BRAID_CM_EV_ERROR,
	/** @BRAID_CM_EV_SHUTDOWN: FI_SHUTDOWN: the peer disconnected (also while we were closing), or the QP failed. */
	BRAID_CM_EV_SHUTDOWN,
};

/** struct braid_cm_event - one action or event. */
struct braid_cm_event {
	enum braid_cm_event_type type;
	/** @err: REJECTED, TIMEDOUT, ERROR: a positive FI_E* value. */
	int err;
	/** @pdata, @pdata_len: CONNECTED, REJECTED: the peer's private data, valid until the next braid_cm_*() call on the connection. */
	const uint8_t *pdata;
	size_t pdata_len;
};

/** struct braid_cm_qp - what REQ and REP announce of one side's QP (§6.2). */
struct braid_cm_qp {
	/** @qpn, @psn: its QP number and first PSN (24 bits). */
	uint32_t qpn, psn;
	/** @mtu: REQ: the largest the sender takes; after the handshake, the one both use. */
	uint32_t mtu;
	/** @rc_port: the UDP port it receives RoCEv2 packets on (§6.1). */
	uint16_t rc_port;
	/**
	 * @flags: BRAID_CM_F_* this side asks for (§6.2); what both asked for
	 * (local.flags & peer.flags) holds for the connection.
	 */
	uint8_t flags;
};

/* braid_cm_qp.flags, the CM packet's flags (§6.2) */
#define BRAID_CM_F_TAGGED	0x01	/* every SEND carries braid's message header (§5.10) */

/** struct braid_cm_config - a connection's timers (braid_cm_config_default() fills them). */
struct braid_cm_config {
	/** @retry_ns: REQ, REP and DREQ are resent this often. */
	uint64_t retry_ns;
	/** @timeout_ns: connect and accept deadline (FI_BRAID_PEER_TIMEOUT_MS). */
	uint64_t timeout_ns;
	/** @dreq_tries: DREQ resends after the first before giving up. */
	int dreq_tries;
};

struct braid_cm_req;

/**
 * struct braid_cm_conn - one endpoint's connection, embedded in the caller's
 * endpoint. The caller may read @state, @conn_id, @local and @peer; every
 * other member is the engine's.
 */
struct braid_cm_conn {
	enum braid_cm_state state;
	struct braid_cm_config cfg;
	/** @conn_id: chosen by the active side, carried by every message (§6.2). */
	uint64_t conn_id;
	/** @local, @peer: both QPs; @local.mtu becomes the smaller of the two. */
	struct braid_cm_qp local, peer;
	/** @next: the next retransmission; @deadline: REQ_SENT and REP_SENT give up then. */
	uint64_t next, deadline;
	/** @dreq_tries: DREQ resends left. */
	int dreq_tries;
	/** @req: passive: the request being accepted (marked accepted once its QP exists). */
	struct braid_cm_req *req;
	/** @pdata: our REQ or REP private data, kept for retransmissions. */
	uint8_t pdata[BRAID_CM_DATA_MAX];
	size_t pdata_len;
	/** @peer_pdata: the REP's or REJ's private data, for the event that reports it. */
	uint8_t peer_pdata[BRAID_CM_DATA_MAX];
	size_t peer_pdata_len;
	/** @out, @ev: rings of what the caller has not taken yet (@*_head: the oldest). */
	struct braid_cm_view out[BRAID_CM_OUT_MAX];
	unsigned int out_head, out_n;
	struct braid_cm_event ev[BRAID_CM_EV_MAX];
	unsigned int ev_head, ev_n;
	/** @lost: messages or events dropped on a full ring (the caller did not drain it). */
	uint64_t lost;
};

/** braid_cm_config_default() - 200 ms retries, a 5 s deadline, 5 DREQ resends. */
void braid_cm_config_default(struct braid_cm_config *cfg);

/** braid_cm_construct() - an IDLE connection with @cfg (NULL: the defaults). */
void braid_cm_construct(struct braid_cm_conn *c, const struct braid_cm_config *cfg);

/**
 * braid_cm_connect() - fi_connect: send REQ (announcing @local, with
 * @pdata_len <= BRAID_CM_DATA_MAX bytes of @pdata) and resend it every
 * retry_ns until REP or REJ, giving up (TIMEDOUT) at @now + timeout_ns.
 * @conn_id: random, chosen by the caller.
 * Return: 0, -FI_EISCONN (established), -FI_EALREADY (any other state but
 * IDLE), -FI_EINVAL (@pdata_len too long).
 */
int braid_cm_connect(struct braid_cm_conn *c, uint64_t conn_id, const struct braid_cm_qp *local,
		     const void *pdata, size_t pdata_len, uint64_t now);

/**
 * braid_cm_accept() - fi_accept of the request @r: asks for the QP
 * (BRAID_CM_EV_QP_CREATE, with the REQ's QP as @peer and the smaller MTU);
 * once braid_cm_qp_created() says it exists, REP is sent and resent every
 * retry_ns until RTU or the first RC packet, giving up at @now + timeout_ns.
 * Return: 0, -FI_EALREADY (not IDLE, or @r accepted already), -FI_EINVAL.
 */
int braid_cm_accept(struct braid_cm_conn *c, struct braid_cm_req *r,
		    const struct braid_cm_qp *local, const void *pdata, size_t pdata_len,
		    uint64_t now);

/**
 * braid_cm_qp_created() - the result of BRAID_CM_EV_QP_CREATE: 0 or a
 * negative FI_E* value. Active: RTU and CONNECTED, or REJ (status -@ret)
 * and ERROR. Passive: REP; on failure the connection is IDLE again and
 * sends nothing (fi_accept fails with @ret; the request stays unanswered).
 */
void braid_cm_qp_created(struct braid_cm_conn *c, int ret, uint64_t now);

/**
 * braid_cm_shutdown() - fi_shutdown (or fi_close of a connected endpoint):
 * QP_FLUSH, then DREQ, resent every retry_ns up to dreq_tries times until
 * DREP. Return: 0, or -FI_ENOTCONN when not ESTABLISHED or REP_SENT.
 */
int braid_cm_shutdown(struct braid_cm_conn *c, uint64_t now);

/**
 * braid_cm_input() - a decoded CM message (braid_cm_decode()) that came from
 * the peer's IP address; its pdata is read during the call only.
 * Return: 0 (taken, or ignored in this state), -(BRAID_DROP_NO_STATE + 1)
 * (not this connection's conn_id), -(BRAID_DROP_TYPE + 1) (a REQ: for
 * listeners).
 */
int braid_cm_input(struct braid_cm_conn *c, const struct braid_cm_view *v, uint64_t now);

/**
 * braid_cm_comm_established() - a valid RC packet arrived on the QP. In
 * REP_SENT the RTU was lost and this establishes the connection all the same
 * (IBTA's "communication established" event); elsewhere nothing happens.
 */
void braid_cm_comm_established(struct braid_cm_conn *c);

/** braid_cm_qp_error() - the QP failed on its own (retries exhausted): ESTABLISHED -> ERROR, SHUTDOWN. */
void braid_cm_qp_error(struct braid_cm_conn *c);

/** braid_cm_timer() - retransmissions and time-outs due at @now (harmless when none is). */
void braid_cm_timer(struct braid_cm_conn *c, uint64_t now);

/** braid_cm_next_deadline() - when braid_cm_timer() has work, or BRAID_CM_NONE. */
uint64_t braid_cm_next_deadline(const struct braid_cm_conn *c);

/**
 * braid_cm_post_check() - may work requests be posted to the QP?
 * Return: 0 (REP_SENT, ESTABLISHED), -FI_ENOTCONN (not connected yet),
 * -FI_EOPBADSTATE (disconnected or failed).
 */
int braid_cm_post_check(const struct braid_cm_conn *c);

/** braid_cm_poll() - take up to @max actions and events, oldest first. Return: how many. */
int braid_cm_poll(struct braid_cm_conn *c, struct braid_cm_event *ev, int max);

/**
 * braid_cm_output() - take up to @max messages to send to the peer, oldest
 * first, ready for braid_cm_write() (their pdata points into @c, valid until
 * the next braid_cm_*() call on it). Return: how many.
 */
int braid_cm_output(struct braid_cm_conn *c, struct braid_cm_view *msgs, int max);

/*
 * ---- the listener ----
 *
 * A listener keeps the requests it reported (FI_CONNREQ), pending or
 * accepted, until they are refused or their endpoint closes. A REQ
 * repeated with the same conn_id from the same address is not a new
 * request: while pending the application is deciding; once accepted the
 * endpoint's REP retransmissions answer it (§6.3, §6.4). The caller
 * allocates each request (embedded in its own struct) and sends the REJs.
 */

/** struct braid_cm_req - one connection request (REQ) a listener reported. */
struct braid_cm_req {
	struct braid_dlist node;
	/** @ip, @port: the active side's address (host order): with @conn_id, the request's key. */
	uint32_t ip;
	uint16_t port;
	uint64_t conn_id;
	/** @qp: the active side's QP as the REQ announced it. */
	struct braid_cm_qp qp;
	/** @accepted: an endpoint took it (braid_cm_accept() and its QP exist). */
	bool accepted;
};

/** struct braid_cm_listener - the requests of one passive endpoint. */
struct braid_cm_listener {
	struct braid_dlist reqs;
};

void braid_cm_listener_construct(struct braid_cm_listener *l);

/**
 * braid_cm_listener_find() - the request a REQ from @ip:@port repeats, or
 * NULL when it is new. A repeat is dropped: the first is being answered.
 */
struct braid_cm_req *braid_cm_listener_find(const struct braid_cm_listener *l,
					    const struct braid_cm_view *v, uint32_t ip,
					    uint16_t port);

/** braid_cm_listener_add() - keep @r, a new request made from the REQ @v from @ip:@port. */
void braid_cm_listener_add(struct braid_cm_listener *l, struct braid_cm_req *r,
			   const struct braid_cm_view *v, uint32_t ip, uint16_t port);

/**
 * braid_cm_listener_reject() - refuse the pending request @r with @status
 * (FI_ECONNREFUSED: the application; FI_EBUSY: the listener could not
 * report it) and @pdata; forgets @r and fills *@rej, the REJ to send to it
 * (its pdata is @pdata).
 * Return: 0, -FI_EINVAL (@r accepted already, or @pdata_len too long).
 */
int braid_cm_listener_reject(struct braid_cm_req *r, uint32_t status, const void *pdata,
			     size_t pdata_len, struct braid_cm_view *rej);

/**
 * braid_cm_listener_busy() - fill *@rej, the REJ (FI_EBUSY) to send for the
 * REQ @v when the listener cannot keep or report it: the active side hears
 * at once instead of retrying until its deadline (§6.3).
 */
void braid_cm_listener_busy(const struct braid_cm_view *v, struct braid_cm_view *rej);

/** braid_cm_listener_remove() - forget @r (its endpoint closed, or its FI_CONNREQ was not reported); harmless twice. */
void braid_cm_listener_remove(struct braid_cm_req *r);

/** braid_cm_listener_first() - the oldest request kept, or NULL (to empty the listener on close). */
struct braid_cm_req *braid_cm_listener_first(const struct braid_cm_listener *l);

#endif /* BRAID_CM_H */
