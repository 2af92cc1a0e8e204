/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_req.c: the RC requester: the send queue cut into request packets, the send window, go-back-N restarts (IBTA 9.7.1, 9.7.4, 9.4). */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

/*
 * The requester is a state machine, as Soft-RoCE's rxe_req.c: one run per
 * request packet. It starts at the WQE at tx (the next to transmit, which a
 * go-back-N restart moves back to the oldest unacknowledged one), checks that
 * a packet may go, builds it and moves tx on. A run without a packet to fill
 * only checks (rc_req_ready()).
 */

const char *const rc_req_state_names[RC_REQST_NUM] = {
	[RC_REQST_GET_WQE] = "GET_WQE",
	[RC_REQST_CHECK_WINDOW] = "CHECK_WINDOW",
	[RC_REQST_CHECK_START] = "CHECK_START",
	[RC_REQST_BUILD] = "BUILD",
	[RC_REQST_UPDATE] = "UPDATE",
	[RC_REQST_SENT] = "SENT",
	[RC_REQST_READY] = "READY",
	[RC_REQST_IDLE] = "IDLE",
};

/** struct rc_req_run - one run of the requester. */
struct rc_req_run {
	struct braid_rc_qp *qp;
	uint64_t now;
	/** @o: where the packet goes; NULL: only whether one may go. */
	struct braid_rc_out *o;
	/** @w: the WQE at tx. */
	struct rc_swqe *w;
	/** @last: the packet built ends its request message; @bytes: its size. */
	bool last;
	size_t bytes;
};

/* PSNs sent beyond una, counting the packet at tx_psn */
static uint32_t req_unacked(const struct braid_rc_qp *qp)
{
	return (uint32_t)braid_psn_diff(qp->req.tx_psn, qp->req.una) + 1;
}

/* opcode of packet @psn of @w (IBTA Table 38); *@last: it ends the request message */
static uint8_t req_opcode(const struct rc_swqe *w, uint32_t psn, bool *last)
{
	bool first = psn == w->first_psn, imm = w->flags & BRAID_RC_IMM;

	*last = psn == rc_swqe_last(w);
	switch (w->op) {
	case BRAID_RC_OP_SEND:
		if (first && *last)
			return imm ? BRAID_ROCE_SEND_ONLY_IMM : BRAID_ROCE_SEND_ONLY;
		if (first)
			return BRAID_ROCE_SEND_FIRST;
		if (*last)
			return imm ? BRAID_ROCE_SEND_LAST_IMM : BRAID_ROCE_SEND_LAST;
		return BRAID_ROCE_SEND_MIDDLE;
	case BRAID_RC_OP_WRITE:
		if (first && *last)
			return imm ? BRAID_ROCE_WRITE_ONLY_IMM : BRAID_ROCE_WRITE_ONLY;
		if (first)
			return BRAID_ROCE_WRITE_FIRST;
		if (*last)
			return imm ? BRAID_ROCE_WRITE_LAST_IMM : BRAID_ROCE_WRITE_LAST;
		return BRAID_ROCE_WRITE_MIDDLE;
	case BRAID_RC_OP_READ:
	default:
		*last = true;	/* one request packet, whatever PSN it (re)starts at */
		return BRAID_ROCE_READ_REQ;
	}
}

/* ---- the states ---- */

/* a packet may go: build it, or end a checking run */
static enum rc_req_state req_may_send(const struct rc_req_run *c)
{
	return c->o ? RC_REQST_BUILD : RC_REQST_READY;
}

/*
 * GET_WQE (9.7.4): the WQE at tx: none while the QP is not ready to send,
 * an RNR wait runs (9.7.5.2.8) or everything posted has been sent.
 */
static enum rc_req_state req_get_wqe(struct rc_req_run *c)
{
	const struct braid_rc_qp *qp = c->qp;
	const struct rc_req *rq = &qp->req;

	if (qp->state != RC_QP_RTS || rq->rnr_deadline != RC_NONE || rq->tx == rq->tail)
		return RC_REQST_IDLE;
	c->w = rc_sq_at(qp, rq->tx);
	return RC_REQST_CHECK_WINDOW;
}

/*
 * CHECK_WINDOW (9.7.1): at most RC_MAX_UNACKED_PSNS PSNs beyond una, READ
 * response PSNs included; a WQE already started continues within it.
 */
static enum rc_req_state req_check_window(struct rc_req_run *c)
{
	if (req_unacked(c->qp) > RC_MAX_UNACKED_PSNS)
		return RC_REQST_IDLE;
	return c->w->started ? req_may_send(c) : RC_REQST_CHECK_START;
}

/*
 * CHECK_START (9.7.1, 9.5): a WQE's first packet: a READ only while fewer
 * than max_rd_atomic are outstanding, and every outstanding PSN stays within
 * RC_PSN_WINDOW of the oldest.
 */
static enum rc_req_state req_check_start(struct rc_req_run *c)
{
	const struct braid_rc_qp *qp = c->qp;
	const struct rc_swqe *w = c->w;

	if (w->op == BRAID_RC_OP_READ && qp->req.reads_out >= qp->cfg.max_rd_atomic)
		return RC_REQST_IDLE;
	if ((uint32_t)braid_psn_diff(braid_psn_add(rc_swqe_last(w), 1), qp->req.una) >
	    RC_PSN_WINDOW)
		return RC_REQST_IDLE;
	return req_may_send(c);
}

/*
 * BUILD (9.4): the packet at tx_psn: SEND and WRITE segments of one MTU,
 * RETH on a WRITE's first packet, ImmDt on the last; a READ request from
 * tx_psn on (a restart in the middle of a READ asks for the rest: its RETH
 * moves on by the PSNs already answered, as IBTA 9.4.4 has it). The A bit
 * asks for an ACK at the end of each message, every ack_coalesce packets,
 * and when this packet fills the send window.
 */
static enum rc_req_state req_build(struct rc_req_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct rc_swqe *w = c->w;
	struct braid_rc_out *o = c->o;
	uint32_t psn = qp->req.tx_psn, idx = (uint32_t)braid_psn_diff(psn, w->first_psn);
	uint64_t off = (uint64_t)idx * qp->cfg.mtu;
	struct braid_roce_view v;
	uint8_t op = req_opcode(w, psn, &c->last);

	rc_view_init(qp, &v, op, psn);
	o->payload_iovcnt = 0;
	o->payload_len = 0;
	if (w->op == BRAID_RC_OP_READ) {
		v.va = w->raddr + off;
		v.rkey = w->rkey;
		v.dma_len = (uint32_t)(w->len - off);
	} else {
		size_t plen = w->len - off < qp->cfg.mtu ? (size_t)(w->len - off) : qp->cfg.mtu;

		if (w->op == BRAID_RC_OP_WRITE && idx == 0) {
			v.va = w->raddr;
			v.rkey = w->rkey;
			v.dma_len = (uint32_t)w->len;
		}
		if (c->last && (w->flags & BRAID_RC_IMM))
			v.imm = w->imm;
		if (c->last && (w->flags & BRAID_RC_SOLICITED) &&
		    (w->op == BRAID_RC_OP_SEND || (w->flags & BRAID_RC_IMM)))
			v.se = true;
		o->payload_iovcnt = braid_iov_slice(w->iov, w->iov_count, off, plen, o->payload,
						    BRAID_RC_IOV_MAX + 1);
		o->payload_len = plen;
	}
	v.ack_req = c->last || (idx + 1) % qp->cfg.ack_coalesce == 0 ||
		    req_unacked(qp) >= RC_MAX_UNACKED_PSNS;
	c->bytes = rc_out_finish(qp, o, &v);
	return RC_REQST_UPDATE;
}

/*
 * UPDATE (9.7.1, 9.7.6.1.3): a packet below hw_psn is a resend (counted);
 * a READ counts as outstanding from its first packet; tx moves to the next
 * PSN (the next WQE after a message's last), hw_psn with it; the local ACK
 * timer runs while anything is unacknowledged.
 */
static enum rc_req_state req_update(struct rc_req_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_req *rq = &qp->req;
	struct rc_swqe *w = c->w;
	uint32_t next_hw;

	if (braid_psn_diff(rq->tx_psn, rq->hw_psn) < 0) {
		qp->stats.retx_pkts++;
		qp->stats.retx_bytes += c->bytes;
	}
	if (!w->started) {
		w->started = true;
		if (w->op == BRAID_RC_OP_READ)
			rq->reads_out++;
	}
	if (c->last) {
		next_hw = braid_psn_add(rc_swqe_last(w), 1);
		rq->tx++;
	} else {
		next_hw = braid_psn_add(rq->tx_psn, 1);
	}
	rq->tx_psn = next_hw;
	if (braid_psn_diff(next_hw, rq->hw_psn) > 0)
		rq->hw_psn = next_hw;
	if (rq->rto_deadline == RC_NONE && qp->cfg.timeout_ns)
		rq->rto_deadline = c->now + qp->cfg.timeout_ns;
	return RC_REQST_SENT;
}

/* ---- the loop ---- */

/* true when a packet may go (@o NULL) or went into @o */
static bool req_run(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *o)
{
	struct rc_req_run c = { .qp = qp, .now = now, .o = o };
	enum rc_req_state s = RC_REQST_GET_WQE, n = s;

	for (;;) {
		switch (s) {
		case RC_REQST_GET_WQE:		n = req_get_wqe(&c); break;
		case RC_REQST_CHECK_WINDOW:	n = req_check_window(&c); break;
		case RC_REQST_CHECK_START:	n = req_check_start(&c); break;
		case RC_REQST_BUILD:		n = req_build(&c); break;
		case RC_REQST_UPDATE:		n = req_update(&c); break;
		case RC_REQST_SENT:
		case RC_REQST_READY:
			return true;
		case RC_REQST_IDLE:
		case RC_REQST_NUM:
			return false;
		}
		/* a run that builds a packet (not rc_req_ready()'s look) */
		if (o && n != s)
			rc_trace(qp, "requester", rc_req_state_names[s], rc_req_state_names[n]);
		s = n;
	}
}

bool rc_req_ready(struct braid_rc_qp *qp)
{
	return req_run(qp, 0, NULL);
}

bool rc_req_output(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *o)
{
	return req_run(qp, now, o);
}

/* ---- restarts and lookups (the completer's) ---- */

/* the next packet to send is una's: tx goes back to the oldest unfinished WQE */
void rc_req_rewind(struct braid_rc_qp *qp)
{
	qp->req.tx = qp->req.head;
	qp->req.tx_psn = qp->req.una;
}

/* go back N: transmit again from the oldest unacknowledged PSN (IBTA 9.9.2.1) */
void rc_req_go_back(struct braid_rc_qp *qp, uint64_t now)
{
	rc_req_rewind(qp);
	qp->req.rto_deadline = qp->cfg.timeout_ns ? now + qp->cfg.timeout_ns : RC_NONE;
}

/* the send queue index of the unfinished work request holding @psn, or tail */
uint64_t rc_req_find(const struct braid_rc_qp *qp, uint32_t psn)
{
	uint64_t i;

	/* mostly the oldest: READ responses and NAKs name una */
	for (i = qp->req.head; i != qp->req.tail; i++) {
		const struct rc_swqe *w = rc_sq_at(qp, i);

		if (psn_in(psn, w->first_psn, w->npsn))
			return i;
	}
	return qp->req.tail;
}

/* ---- posting ---- */

int braid_rc_post_send(struct braid_rc_qp *qp, const struct braid_rc_wr *wr, uint64_t now)
{
	struct rc_req *rq = &qp->req;
	struct rc_swqe *w;
	uint64_t len;
	size_t i;

	(void)now;
	if (!wr || wr->iov_count > BRAID_RC_IOV_MAX || (wr->iov_count && !wr->iov))
		return -FI_EINVAL;
	if (wr->op != BRAID_RC_OP_SEND && wr->op != BRAID_RC_OP_WRITE &&
	    wr->op != BRAID_RC_OP_READ)
		return -FI_EINVAL;
	if (wr->prefix_len && (wr->op != BRAID_RC_OP_SEND || !wr->prefix ||
			       wr->prefix_len > BRAID_RC_PREFIX_MAX))
		return -FI_EINVAL;
	if (wr->op == BRAID_RC_OP_READ &&
	    ((wr->flags & (BRAID_RC_IMM | BRAID_RC_INJECT)) || !qp->cfg.max_rd_atomic))
		return -FI_EINVAL;
	if (qp->state != RC_QP_RTS)
		return -FI_EOPBADSTATE;
	len = braid_iov_len(wr->iov, wr->iov_count);
	if (len > qp->cfg.max_msg_size || rc_npsn(qp, len + wr->prefix_len) > RC_PSN_WINDOW)
		return -FI_EMSGSIZE;
	if ((wr->flags & BRAID_RC_INJECT) && len > qp->cfg.inject_size)
		return -FI_EMSGSIZE;
	if (rq->tail - rq->head + rq->unpolled >= qp->cfg.max_send_wr)
		return -FI_EAGAIN;

	w = rc_sq_at(qp, rq->tail);
	memset(w, 0, sizeof(*w));
	w->op = wr->op;
	w->len = len + wr->prefix_len;
	w->raddr = wr->raddr;
	w->rkey = wr->rkey;
	w->imm = wr->imm;
	w->flags = wr->flags;
	w->context = wr->context;
	w->prefix_len = wr->prefix_len;
	if (wr->prefix_len) {
		memcpy(w->prefix, wr->prefix, wr->prefix_len);
		w->iov[w->iov_count++] = (struct iovec){ w->prefix, wr->prefix_len };
	}
	if (wr->flags & BRAID_RC_INJECT) {
		uint8_t *buf = qp->inject + (rq->tail % qp->cfg.max_send_wr) * qp->cfg.inject_size;

		braid_iov_gather(wr->iov, wr->iov_count, buf);
		w->iov[w->iov_count++] = (struct iovec){ buf, len };
	} else {
		for (i = 0; i < wr->iov_count; i++)
			w->iov[w->iov_count++] = wr->iov[i];
	}
	w->first_psn = rq->next_psn;
	w->npsn = rc_npsn(qp, w->len);
	rq->next_psn = braid_psn_add(rq->next_psn, w->npsn);
	rq->tail++;
	return 0;
}
