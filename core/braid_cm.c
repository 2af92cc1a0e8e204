/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cm.c: the RC connection handshake (protocol.md §6, after IBTA vol. 1 ch. 12): one connection's CM state machine and a listener's requests, sans-I/O. */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_cm.h"

/*
 * An explicit state machine in the style of Soft-RoCE's rxe_comp.c and
 * rxe_resp.c: each state has a small function per stimulus (a message, the
 * timer) that does that state's work and returns the next state;
 * cm_states[] holds them, cm_state_names[] names the states for logs. API
 * calls (connect, accept, shutdown, the QP's news) are valid in one or two
 * states and check them where they are defined.
 *
 *   active:   IDLE -connect-> REQ_SENT -REP-> REP_RCVD -qp_created-> ESTABLISHED
 *                                      -REJ, deadline-> ERROR
 *   passive:  IDLE -accept-> REQ_RCVD -qp_created-> REP_SENT -RTU, RC packet-> ESTABLISHED
 *                                                            -deadline-> ERROR
 *   release:  ESTABLISHED, REP_SENT -shutdown-> DREQ_SENT -DREP, DREQ, tries out-> CLOSED
 *             ESTABLISHED, REP_SENT -DREQ-> CLOSED
 *             ESTABLISHED -QP error-> ERROR
 */

#define CM_DROP(r)	(-((int)(r) + 1))

static const char *const cm_state_names[BRAID_CM_NSTATES] = {
	[BRAID_CM_IDLE] = "IDLE",
	[BRAID_CM_REQ_SENT] = "REQ_SENT",
	[BRAID_CM_REP_RCVD] = "REP_RCVD",
	[BRAID_CM_REQ_RCVD] = "REQ_RCVD",
	[BRAID_CM_REP_SENT] = "REP_SENT",
	[BRAID_CM_ESTABLISHED] = "ESTABLISHED",
	[BRAID_CM_DREQ_SENT] = "DREQ_SENT",
	[BRAID_CM_CLOSED] = "CLOSED",
	[BRAID_CM_ERROR] = "ERROR",
};

const char *braid_cm_state_str(enum braid_cm_state s)
{
	return (unsigned int)s < BRAID_CM_NSTATES ? cm_state_names[s] : "?";
}

/* ---- outputs ---- */

/* Queue a message to the peer; every one carries our QP's fields (§6.2). */
static void cm_send(struct braid_cm_conn *c, uint8_t kind, uint32_t status, const uint8_t *pdata,
		    size_t pdata_len)
{
	if (c->out_n == BRAID_CM_OUT_MAX) {
		c->lost++;	/* the caller did not drain: a timer resends what matters */
		return;
	}
	c->out[(c->out_head + c->out_n++) % BRAID_CM_OUT_MAX] = (struct braid_cm_view){
		.kind = kind, .status = status, .conn_id = c->conn_id, .qpn = c->local.qpn,
		.psn = c->local.psn, .mtu = c->local.mtu, .rc_port = c->local.rc_port,
		.flags = c->local.flags, .pdata = pdata, .pdata_len = pdata_len,
	};
}

static void cm_event(struct braid_cm_conn *c, enum braid_cm_event_type type, int err,
		     const uint8_t *pdata, size_t pdata_len)
{
	if (c->ev_n == BRAID_CM_EV_MAX) {
		c->lost++;
		return;
	}
	c->ev[(c->ev_head + c->ev_n++) % BRAID_CM_EV_MAX] = (struct braid_cm_event){
		.type = type, .err = err, .pdata = pdata, .pdata_len = pdata_len,
	};
}

/* The peer closed (its DREQ): our QP to error, FI_SHUTDOWN (§6.5). */
static enum braid_cm_state cm_disconnected(struct braid_cm_conn *c)
{
	cm_event(c, BRAID_CM_EV_QP_FLUSH, 0, NULL, 0);
	cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);
	return BRAID_CM_CLOSED;
}

/* ---- per state: messages in ---- */

/*
 * Every function takes a message with the connection's conn_id (a DREQ has
 * had its DREP already) and returns the next state. A message a state does
 * not expect is ignored: it is a late or repeated one. IDLE, the *_RCVD
 * states (they last only while the caller creates the QP), CLOSED and
 * ERROR take none.
 */

/* Active, waiting for the REP (§6.3) or REJ. */
static enum braid_cm_state cm_req_sent_input(struct braid_cm_conn *c,
					     const struct braid_cm_view *v)
{
	switch (v->kind) {
	case BRAID_CM_REP:
		c->peer = (struct braid_cm_qp){ .qpn = v->qpn, .psn = v->psn, .mtu = v->mtu,
						.rc_port = v->rc_port, .flags = v->flags };
		if (v->mtu < c->local.mtu)
			c->local.mtu = v->mtu;	/* the REP's MTU is the one both use */
		memcpy(c->peer_pdata, v->pdata, v->pdata_len);
		c->peer_pdata_len = v->pdata_len;
		cm_event(c, BRAID_CM_EV_QP_CREATE, 0, NULL, 0);
		return BRAID_CM_REP_RCVD;
	case BRAID_CM_REJ:
		memcpy(c->peer_pdata, v->pdata, v->pdata_len);
		c->peer_pdata_len = v->pdata_len;
		cm_event(c, BRAID_CM_EV_REJECTED, v->status ? (int)v->status : FI_ECONNREFUSED,
			 c->peer_pdata, c->peer_pdata_len);
		return BRAID_CM_ERROR;
	default:
		return BRAID_CM_REQ_SENT;
	}
}

/* Passive, REP sent, the QP already receiving: waiting for the RTU. */
static enum braid_cm_state cm_rep_sent_input(struct braid_cm_conn *c,
					     const struct braid_cm_view *v)
{
	switch (v->kind) {
	case BRAID_CM_RTU:
		cm_event(c, BRAID_CM_EV_CONNECTED, 0, NULL, 0);
		return BRAID_CM_ESTABLISHED;
	case BRAID_CM_DREQ:
		return cm_disconnected(c);
	default:
		return BRAID_CM_REP_SENT;
	}
}

static enum braid_cm_state cm_established_input(struct braid_cm_conn *c,
						const struct braid_cm_view *v)
{
	switch (v->kind) {
	case BRAID_CM_REP:
		/* the peer repeats its REP: our RTU was lost (§6.4) */
		cm_send(c, BRAID_CM_RTU, 0, NULL, 0);
		return BRAID_CM_ESTABLISHED;
	case BRAID_CM_DREQ:
		return cm_disconnected(c);
	default:
		return BRAID_CM_ESTABLISHED;
	}
}

/* We closed: waiting for the DREP. */
static enum braid_cm_state cm_dreq_sent_input(struct braid_cm_conn *c,
					      const struct braid_cm_view *v)
{
	switch (v->kind) {
	case BRAID_CM_DREP:
		/*
		 * The disconnect is done: the closing side hears of it too, as
		 * rdma_cm reports DISCONNECTED to both sides (libfabric's verbs
		 * provider: FI_SHUTDOWN) and the tcp provider writes FI_SHUTDOWN
		 * for a local fi_shutdown; fabtests' fi_cm_data waits for it.
		 */
		cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);
		return BRAID_CM_CLOSED;
	case BRAID_CM_DREQ:
		/*
		 * Simultaneous close: the peer disconnected too, and fi_cm(3)
		 * reports FI_SHUTDOWN when the remote peer issues a disconnect
		 * (as IB CM reports a DREQ received in DREQ Sent). Our QP is
		 * flushed already; the peer closes on our DREP whether our DREQ
		 * reached it or not, so ours is not resent.
		 */
		cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);
		return BRAID_CM_CLOSED;
	default:
		return BRAID_CM_DREQ_SENT;
	}
}

/* ---- per state: the retransmission timer (§6.4, §6.5) ---- */

/* @kind (with our private data) again, in state @s, until the deadline */
static enum braid_cm_state cm_resend(struct braid_cm_conn *c, uint64_t now, uint8_t kind,
				     enum braid_cm_state s)
{
	if (now >= c->deadline) {
		cm_event(c, BRAID_CM_EV_TIMEDOUT, FI_ETIMEDOUT, NULL, 0);
		return BRAID_CM_ERROR;
	}
	cm_send(c, kind, 0, c->pdata, c->pdata_len);
	return s;
}

/* REQ until REP or REJ arrives */
static enum braid_cm_state cm_req_sent_timer(struct braid_cm_conn *c, uint64_t now)
{
	return cm_resend(c, now, BRAID_CM_REQ, BRAID_CM_REQ_SENT);
}

/* REP until the RTU (or the first RC packet, braid_cm_comm_established) arrives */
static enum braid_cm_state cm_rep_sent_timer(struct braid_cm_conn *c, uint64_t now)
{
	return cm_resend(c, now, BRAID_CM_REP, BRAID_CM_REP_SENT);
}

/* DREQ at most dreq_tries more times; a peer that never answers is closed all the same */
static enum braid_cm_state cm_dreq_sent_timer(struct braid_cm_conn *c, uint64_t now)
{
	cm_send(c, BRAID_CM_DREQ, 0, NULL, 0);
	if (--c->dreq_tries > 0)
		return BRAID_CM_DREQ_SENT;
	cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);	/* a silent peer: closed all the same */
	return BRAID_CM_CLOSED;
}

struct cm_state_ops {
	/** @input: NULL where every message is ignored. */
	enum braid_cm_state (*input)(struct braid_cm_conn *c, const struct braid_cm_view *v);
	/** @timer: NULL where nothing is resent (no deadline armed). */
	enum braid_cm_state (*timer)(struct braid_cm_conn *c, uint64_t now);
};

static const struct cm_state_ops cm_states[BRAID_CM_NSTATES] = {
	[BRAID_CM_REQ_SENT] = { cm_req_sent_input, cm_req_sent_timer },
	[BRAID_CM_REP_SENT] = { cm_rep_sent_input, cm_rep_sent_timer },
	[BRAID_CM_ESTABLISHED] = { cm_established_input, NULL },
	[BRAID_CM_DREQ_SENT] = { cm_dreq_sent_input, cm_dreq_sent_timer },
};

/* ---- the interface ---- */

void braid_cm_config_default(struct braid_cm_config *cfg)
{
	cfg->retry_ns = BRAID_CM_RETRY_NS;
	cfg->timeout_ns = BRAID_CM_TIMEOUT_NS;
	cfg->dreq_tries = BRAID_CM_DREQ_TRIES;
}

void braid_cm_construct(struct braid_cm_conn *c, const struct braid_cm_config *cfg)
{
	memset(c, 0, sizeof(*c));
	if (cfg)
		c->cfg = *cfg;
	else
		braid_cm_config_default(&c->cfg);
	c->state = BRAID_CM_IDLE;
}

/* REQ_SENT and REP_SENT: the first resend one retry_ns from now, the deadline one timeout_ns */
static void cm_arm(struct braid_cm_conn *c, uint64_t now)
{
	c->deadline = now + c->cfg.timeout_ns;
	c->next = now + c->cfg.retry_ns;
}

static int cm_keep_pdata(struct braid_cm_conn *c, const void *pdata, size_t pdata_len)
{
	if (pdata_len > BRAID_CM_DATA_MAX || (pdata_len && !pdata))
		return -FI_EINVAL;
	if (pdata_len)
		memcpy(c->pdata, pdata, pdata_len);
	c->pdata_len = pdata_len;
	return 0;
}

int braid_cm_connect(struct braid_cm_conn *c, uint64_t conn_id, const struct braid_cm_qp *local,
		     const void *pdata, size_t pdata_len, uint64_t now)
{
	if (c->state != BRAID_CM_IDLE)
		return c->state == BRAID_CM_ESTABLISHED ? -FI_EISCONN : -FI_EALREADY;
	if (cm_keep_pdata(c, pdata, pdata_len))
		return -FI_EINVAL;
	c->conn_id = conn_id;
	c->local = *local;
	cm_arm(c, now);
	cm_send(c, BRAID_CM_REQ, 0, c->pdata, c->pdata_len);
	c->state = BRAID_CM_REQ_SENT;
	return 0;
}

int braid_cm_accept(struct braid_cm_conn *c, struct braid_cm_req *r,
		    const struct braid_cm_qp *local, const void *pdata, size_t pdata_len,
		    uint64_t now)
{
	if (c->state != BRAID_CM_IDLE || r->accepted)
		return -FI_EALREADY;
	if (cm_keep_pdata(c, pdata, pdata_len))
		return -FI_EINVAL;
	c->conn_id = r->conn_id;
	c->local = *local;
	c->peer = r->qp;
	if (r->qp.mtu < c->local.mtu)
		c->local.mtu = r->qp.mtu;	/* REP carries the smaller of the two (§6.2) */
	c->req = r;
	cm_event(c, BRAID_CM_EV_QP_CREATE, 0, NULL, 0);
	c->state = BRAID_CM_REQ_RCVD;
	return 0;
}

void braid_cm_qp_created(struct braid_cm_conn *c, int ret, uint64_t now)
{
	switch (c->state) {
	case BRAID_CM_REP_RCVD:
		if (ret) {
			cm_send(c, BRAID_CM_REJ, (uint32_t)-ret, NULL, 0);
			cm_event(c, BRAID_CM_EV_ERROR, -ret, NULL, 0);
			c->state = BRAID_CM_ERROR;
			return;
		}
		/* our QP is in RTS: RTU, and the application hears the REP's private data */
		cm_send(c, BRAID_CM_RTU, 0, NULL, 0);
		cm_event(c, BRAID_CM_EV_CONNECTED, 0, c->peer_pdata, c->peer_pdata_len);
		c->state = BRAID_CM_ESTABLISHED;
		return;
	case BRAID_CM_REQ_RCVD:
		if (ret) {
			/* fi_accept fails; the request may still be accepted or refused */
			c->req = NULL;
			c->state = BRAID_CM_IDLE;
			return;
		}
		/* the QP receives from now on; REP answers the REQ (and its repeats) */
		c->req->accepted = true;
		cm_arm(c, now);
		cm_send(c, BRAID_CM_REP, 0, c->pdata, c->pdata_len);
		c->state = BRAID_CM_REP_SENT;
		return;
	default:
		return;
	}
}

int braid_cm_shutdown(struct braid_cm_conn *c, uint64_t now)
{
	if (c->state != BRAID_CM_ESTABLISHED && c->state != BRAID_CM_REP_SENT)
		return -FI_ENOTCONN;
	/* the QP to error first (its final ACK out: the peer's last sends complete), then DREQ */
	cm_event(c, BRAID_CM_EV_QP_FLUSH, 0, NULL, 0);
	cm_send(c, BRAID_CM_DREQ, 0, NULL, 0);
	c->dreq_tries = c->cfg.dreq_tries;
	c->next = now + c->cfg.retry_ns;
	c->state = c->dreq_tries > 0 ? BRAID_CM_DREQ_SENT : BRAID_CM_CLOSED;
	if (c->state == BRAID_CM_CLOSED)
		cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);
	return 0;
}

int braid_cm_input(struct braid_cm_conn *c, const struct braid_cm_view *v, uint64_t now)
{
	(void)now;
	if (v->conn_id != c->conn_id)
		return CM_DROP(BRAID_DROP_NO_STATE);
	if (v->kind == BRAID_CM_REQ)
		return CM_DROP(BRAID_DROP_TYPE);	/* REQs go to listeners */
	/* every DREQ gets a DREP, in any state: a repeated one means ours was lost (§6.5) */
	if (v->kind == BRAID_CM_DREQ)
		cm_send(c, BRAID_CM_DREP, 0, NULL, 0);
	if (cm_states[c->state].input)
		c->state = cm_states[c->state].input(c, v);
	return 0;
}

void braid_cm_comm_established(struct braid_cm_conn *c)
{
	if (c->state != BRAID_CM_REP_SENT)
		return;
	/* IBTA's "communication established": RC traffic on the new QP, the RTU was lost */
	cm_event(c, BRAID_CM_EV_CONNECTED, 0, NULL, 0);
	c->state = BRAID_CM_ESTABLISHED;
}

void braid_cm_qp_error(struct braid_cm_conn *c)
{
	if (c->state != BRAID_CM_ESTABLISHED)
		return;
	/* the QP's transport retries are exhausted (§5): the connection is gone */
	cm_event(c, BRAID_CM_EV_SHUTDOWN, 0, NULL, 0);
	c->state = BRAID_CM_ERROR;
}

void braid_cm_timer(struct braid_cm_conn *c, uint64_t now)
{
	if (!cm_states[c->state].timer || now < c->next)
		return;
	c->next = now + c->cfg.retry_ns;
	c->state = cm_states[c->state].timer(c, now);
}

uint64_t braid_cm_next_deadline(const struct braid_cm_conn *c)
{
	return cm_states[c->state].timer ? c->next : BRAID_CM_NONE;
}

int braid_cm_post_check(const struct braid_cm_conn *c)
{
	switch (c->state) {
	case BRAID_CM_REP_SENT:
	case BRAID_CM_ESTABLISHED:
		return 0;
	case BRAID_CM_DREQ_SENT:
	case BRAID_CM_CLOSED:
	case BRAID_CM_ERROR:
		return -FI_EOPBADSTATE;
	default:
		return -FI_ENOTCONN;
	}
}

int braid_cm_poll(struct braid_cm_conn *c, struct braid_cm_event *ev, int max)
{
	int n = 0;

	while (n < max && c->ev_n) {
		ev[n++] = c->ev[c->ev_head];
		c->ev_head = (c->ev_head + 1) % BRAID_CM_EV_MAX;
		c->ev_n--;
	}
	return n;
}

int braid_cm_output(struct braid_cm_conn *c, struct braid_cm_view *msgs, int max)
{
	int n = 0;

	while (n < max && c->out_n) {
		msgs[n++] = c->out[c->out_head];
		c->out_head = (c->out_head + 1) % BRAID_CM_OUT_MAX;
		c->out_n--;
	}
	return n;
}

/* ---- the listener ---- */

void braid_cm_listener_construct(struct braid_cm_listener *l)
{
	braid_dlist_init(&l->reqs);
}

struct braid_cm_req *braid_cm_listener_find(const struct braid_cm_listener *l,
					    const struct braid_cm_view *v, uint32_t ip,
					    uint16_t port)
{
	const struct braid_dlist *it;

	for (it = l->reqs.next; it != &l->reqs; it = it->next) {
		struct braid_cm_req *r = braid_container_of(it, struct braid_cm_req, node);

		if (r->conn_id == v->conn_id && r->ip == ip && r->port == port)
			return r;
	}
	return NULL;
}

void braid_cm_listener_add(struct braid_cm_listener *l, struct braid_cm_req *r,
			   const struct braid_cm_view *v, uint32_t ip, uint16_t port)
{
	r->ip = ip;
	r->port = port;
	r->conn_id = v->conn_id;
	r->qp = (struct braid_cm_qp){ .qpn = v->qpn, .psn = v->psn, .mtu = v->mtu,
				      .rc_port = v->rc_port, .flags = v->flags };
	r->accepted = false;
	braid_dlist_insert_tail(&r->node, &l->reqs);
}

/* a listener's REJ names the connection only: it has no QP of its own (§6.2) */
static void cm_listener_rej(uint64_t conn_id, uint32_t status, const void *pdata,
			    size_t pdata_len, struct braid_cm_view *rej)
{
	*rej = (struct braid_cm_view){ .kind = BRAID_CM_REJ, .status = status,
				       .conn_id = conn_id, .pdata = pdata, .pdata_len = pdata_len };
}

int braid_cm_listener_reject(struct braid_cm_req *r, uint32_t status, const void *pdata,
			     size_t pdata_len, struct braid_cm_view *rej)
{
	if (r->accepted || pdata_len > BRAID_CM_DATA_MAX)
		return -FI_EINVAL;
	cm_listener_rej(r->conn_id, status, pdata, pdata_len, rej);
	braid_dlist_remove(&r->node);
	return 0;
}

void braid_cm_listener_busy(const struct braid_cm_view *v, struct braid_cm_view *rej)
{
	cm_listener_rej(v->conn_id, FI_EBUSY, NULL, 0, rej);
}

void braid_cm_listener_remove(struct braid_cm_req *r)
{
	braid_dlist_remove(&r->node);
}

struct braid_cm_req *braid_cm_listener_first(const struct braid_cm_listener *l)
{
	if (braid_dlist_empty(&l->reqs))
		return NULL;
	return braid_container_of(l->reqs.next, struct braid_cm_req, node);
}
