/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_comp.c: the RC completer: ACKs, NAKs and READ responses coming back, retry and RNR retry counters, the local ACK timeout (IBTA 9.7.5.2, 9.9.2). */
#include <assert.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

/*
 * The completer is a state machine, as Soft-RoCE's rxe_comp.c: one run per
 * ACK packet or READ response received (braid_rc_input()) or per local ACK
 * timeout (braid_rc_timer()). Each state does one step and returns the next;
 * a run ends in RC_COMPST_DONE with braid_rc_input()'s result (0 or a drop).
 */

const char *const rc_comp_state_names[RC_COMPST_NUM] = {
	[RC_COMPST_GET_PKT] = "GET_PKT",
	[RC_COMPST_CHECK_PSN] = "CHECK_PSN",
	[RC_COMPST_CHECK_ACK] = "CHECK_ACK",
	[RC_COMPST_ACK] = "ACK",
	[RC_COMPST_RNR_NAK] = "RNR_NAK",
	[RC_COMPST_RNR_RETRY] = "RNR_RETRY",
	[RC_COMPST_NAK_SEQ] = "NAK_SEQ",
	[RC_COMPST_NAK_FATAL] = "NAK_FATAL",
	[RC_COMPST_CHECK_READ] = "CHECK_READ",
	[RC_COMPST_READ_PSN] = "READ_PSN",
	[RC_COMPST_READ] = "READ",
	[RC_COMPST_UPDATE_COMP] = "UPDATE_COMP",
	[RC_COMPST_TIMEOUT] = "TIMEOUT",
	[RC_COMPST_SEQ_ERR] = "SEQ_ERR",
	[RC_COMPST_ERROR_RETRY] = "ERROR_RETRY",
	[RC_COMPST_ERROR] = "ERROR",
	[RC_COMPST_DONE] = "DONE",
};

/** struct rc_comp_run - one run of the completer. */
struct rc_comp_run {
	struct braid_rc_qp *qp;
	/** @v: the packet; NULL: the local ACK timer ran out. */
	const struct braid_roce_view *v;
	uint64_t now;
	/** @w: the READ a response belongs to (RC_COMPST_CHECK_READ on). */
	struct rc_swqe *w;
	/** @err, @fail: for RC_COMPST_ERROR: the FI_E* and the send queue index that gets it. */
	int err;
	uint64_t fail;
	/** @ret: braid_rc_input()'s result: 0 or -(enum braid_rc_drop + 1). */
	int ret;
};

/* the packet is dropped and counted as @r: the run ends */
static enum rc_comp_state comp_drop(struct rc_comp_run *c, enum braid_rc_drop r)
{
	c->ret = rc_drop(c->qp, r);
	return RC_COMPST_DONE;
}

/* ---- helpers the states share ---- */

/* sq[head] finished with @err (0: success): its completion, in posting order */
void rc_comp_finish_head(struct braid_rc_qp *qp, int err)
{
	static const uint32_t op_flag[] = {
		[BRAID_RC_OP_SEND] = BRAID_RC_COMP_SEND,
		[BRAID_RC_OP_WRITE] = BRAID_RC_COMP_WRITE,
		[BRAID_RC_OP_READ] = BRAID_RC_COMP_READ,
	};
	struct rc_req *rq = &qp->req;
	struct rc_swqe *w = rc_sq_at(qp, rq->head);
	struct braid_rc_comp c = {
		.context = w->context,
		.flags = op_flag[w->op],
		.err = err,
		.len = err ? 0 : w->len - w->prefix_len,
	};

	if (!err && (w->flags & BRAID_RC_NO_COMP))
		c.flags |= BRAID_RC_COMP_SILENT;
	if (w->op == BRAID_RC_OP_READ && w->started)
		rq->reads_out--;
	rc_comp_push(qp, &c);
	rq->head++;
	rq->unpolled++;
}

/* una moved forward: retry counters start again (IBTA 9.9.2.1), the ACK timer restarts */
static void comp_progress(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;

	rq->retry_left = qp->cfg.retry_cnt;
	rq->rnr_left = qp->cfg.rnr_retry;
	rq->nak_acted = false;
	if (braid_psn_diff(rq->hw_psn, rq->una) > 0 && rq->rnr_deadline == RC_NONE &&
	    qp->cfg.timeout_ns)
		rq->rto_deadline = now + qp->cfg.timeout_ns;
	else
		rq->rto_deadline = RC_NONE;
	/* what was acknowledged need not go again */
	if ((int64_t)(rq->tx - rq->head) < 0 ||
	    (rq->tx == rq->head && braid_psn_diff(rq->tx_psn, rq->una) < 0))
		rc_req_rewind(qp);
}

/*
 * comp_ack_through() - acknowledge every request PSN up to and including
 * @psn (coalesced ACKs, IBTA 9.7.5.1.2): SEND and WRITE requests whose last
 * PSN is covered complete. A READ is finished only by its responses, which
 * come before any later ACK: meeting one still missing them means they were
 * lost (an implied NAK, 9.9.2.3): return true and stop there.
 */
static bool comp_ack_through(struct braid_rc_qp *qp, uint32_t psn, uint64_t now)
{
	struct rc_req *rq = &qp->req;
	bool progress = false, gap = false;

	while (rq->head != rq->tail && braid_psn_diff(psn, rq->una) >= 0) {
		struct rc_swqe *w = rc_sq_at(qp, rq->head);
		uint32_t last = rc_swqe_last(w);

		if (w->op == BRAID_RC_OP_READ) {
			gap = true;
			break;
		}
		progress = true;
		if (braid_psn_diff(psn, last) < 0) {
			rq->una = braid_psn_add(psn, 1);
			break;
		}
		rq->una = braid_psn_add(last, 1);
		rc_comp_finish_head(qp, 0);
	}
	if (progress)
		comp_progress(qp, now);
	return gap;
}

/* ---- the states ---- */

/*
 * GET_PKT: what came back: nothing (the local ACK timer ran out), an ACK
 * packet, whose AETH must be of a kind IBTA defines (9.7.5.2, Table 43:
 * ACK, RNR NAK, NAK), or a READ response.
 */
static enum rc_comp_state comp_get_pkt(struct rc_comp_run *c)
{
	const struct braid_roce_view *v = c->v;

	if (!v)
		return RC_COMPST_TIMEOUT;
	if (v->opcode == BRAID_ROCE_ACK && RC_AETH_KIND(v->syndrome) != BRAID_ROCE_AETH_ACK &&
	    RC_AETH_KIND(v->syndrome) != BRAID_ROCE_AETH_RNR_NAK &&
	    RC_AETH_KIND(v->syndrome) != BRAID_ROCE_AETH_NAK)
		return comp_drop(c, BRAID_RC_DROP_MALFORMED);	/* reserved AETH kind */
	return RC_COMPST_CHECK_PSN;
}

/*
 * CHECK_PSN (9.7.5.2, 9.9.2): a response names a PSN in [una, hw). Behind
 * una it acknowledges nothing new: a re-ACK or a late copy, a duplicate (an
 * ACK is still counted as received); at or beyond hw, or further back than
 * RC_PSN_WINDOW, it is not of this connection's traffic. (hw is never more
 * than RC_PSN_WINDOW past una, so the two cases never overlap.)
 */
static enum rc_comp_state comp_check_psn(struct rc_comp_run *c)
{
	const struct braid_roce_view *v = c->v;
	const struct rc_req *rq = &c->qp->req;
	int32_t d = braid_psn_diff(v->psn, rq->una);
	bool ack = v->opcode == BRAID_ROCE_ACK;

	if (braid_psn_diff(v->psn, rq->hw_psn) >= 0 || d < -(int32_t)RC_PSN_WINDOW)
		return comp_drop(c, BRAID_RC_DROP_OUT_OF_WINDOW);
	if (d >= 0)
		return ack ? RC_COMPST_CHECK_ACK : RC_COMPST_CHECK_READ;
	if (ack && RC_AETH_KIND(v->syndrome) == BRAID_ROCE_AETH_ACK)
		c->qp->stats.acks_rx++;
	return comp_drop(c, BRAID_RC_DROP_DUPLICATE);
}

/* CHECK_ACK (9.7.5.2, Table 43): the AETH: ACK, RNR NAK, PSN sequence error NAK, other NAK */
static enum rc_comp_state comp_check_ack(struct rc_comp_run *c)
{
	struct braid_rc_stats *st = &c->qp->stats;
	uint8_t syn = c->v->syndrome;

	switch (RC_AETH_KIND(syn)) {
	case BRAID_ROCE_AETH_ACK:
		st->acks_rx++;
		return RC_COMPST_ACK;
	case BRAID_ROCE_AETH_RNR_NAK:
		st->rnr_naks_rx++;
		return RC_COMPST_RNR_NAK;
	default:	/* NAK (GET_PKT dropped the reserved kind) */
		if (RC_AETH_VALUE(syn) == BRAID_ROCE_NAK_PSN_SEQ_ERR) {
			st->naks_seq_rx++;
			return RC_COMPST_NAK_SEQ;
		}
		st->naks_other_rx++;
		return RC_COMPST_NAK_FATAL;
	}
}

/*
 * ACK (9.7.5.1.2): a coalesced ACK completes every SEND and WRITE it
 * covers; passing a READ still missing responses implies they were lost
 * (9.9.2.3).
 */
static enum rc_comp_state comp_ack(struct rc_comp_run *c)
{
	return comp_ack_through(c->qp, c->v->psn, c->now) ? RC_COMPST_SEQ_ERR : RC_COMPST_DONE;
}

/*
 * RNR_NAK (9.7.5.2.8): a copy of the RNR NAK we already wait for is stale.
 * It acknowledges what precedes its PSN; a READ there missing responses
 * means they were lost: go back to it at once, without waiting.
 */
static enum rc_comp_state comp_rnr_nak(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct braid_roce_view *v = c->v;

	if (qp->req.rnr_deadline != RC_NONE && v->psn == qp->req.rnr_psn)
		return comp_drop(c, BRAID_RC_DROP_DUPLICATE);
	if (comp_ack_through(qp, psn_prev(v->psn), c->now))
		return RC_COMPST_SEQ_ERR;
	return RC_COMPST_RNR_RETRY;
}

/*
 * RNR_RETRY (9.7.5.2.8): rnr_retry bounds the RNR waits since the last
 * progress (7: forever), then the request the NAK names fails with
 * FI_ENORX. The requester stops until the RNR timer the NAK names runs
 * out, then sends again from una (braid_rc_timer()).
 */
static enum rc_comp_state comp_rnr_retry(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_req *rq = &qp->req;
	const struct braid_roce_view *v = c->v;

	if (qp->cfg.rnr_retry != 7) {
		if (!rq->rnr_left) {
			c->err = FI_ENORX;
			c->fail = rc_req_find(qp, v->psn);
			return RC_COMPST_ERROR;
		}
		rq->rnr_left--;
	}
	rq->rnr_psn = v->psn;
	rq->rnr_deadline = c->now + braid_rc_rnr_timer_ns(RC_AETH_VALUE(v->syndrome));
	rq->rto_deadline = RC_NONE;
	rc_req_rewind(qp);
	return RC_COMPST_DONE;
}

/*
 * NAK_SEQ (9.9.2.1): a PSN sequence error NAK. The responder NAKs a gap
 * once, so another NAK of the PSN we already went back to, or one during an
 * RNR wait, is a stale copy. It acknowledges what precedes its PSN.
 */
static enum rc_comp_state comp_nak_seq(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct rc_req *rq = &qp->req;

	if (rq->rnr_deadline != RC_NONE || (rq->nak_acted && rq->nak_psn == c->v->psn))
		return comp_drop(c, BRAID_RC_DROP_DUPLICATE);
	comp_ack_through(qp, psn_prev(c->v->psn), c->now);
	return RC_COMPST_SEQ_ERR;
}

/*
 * NAK_FATAL (9.9.2.2): remote access error, invalid request, remote
 * operational error: what precedes the PSN is acknowledged, the request the
 * NAK names fails and the QP goes to error.
 */
static enum rc_comp_state comp_nak_fatal(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;

	comp_ack_through(qp, psn_prev(c->v->psn), c->now);
	switch (RC_AETH_VALUE(c->v->syndrome)) {
	case BRAID_ROCE_NAK_REM_ACCESS_ERR:
		c->err = FI_EACCES;
		break;
	case BRAID_ROCE_NAK_REM_OP_ERR:
		c->err = FI_EREMOTEIO;
		break;
	case BRAID_ROCE_NAK_INVALID_REQ:
	case BRAID_ROCE_NAK_INVALID_RD_REQ:
	default:
		c->err = FI_EINVAL;
		break;
	}
	c->fail = rc_req_find(qp, c->v->psn);
	return RC_COMPST_ERROR;
}

/*
 * CHECK_READ (9.7.5.1.5): a READ response's AETH (FIRST, LAST, ONLY) can
 * only be an ACK, and its PSN must fall in a READ not finished yet.
 */
static enum rc_comp_state comp_check_read(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct braid_roce_view *v = c->v;
	uint64_t i;

	if (v->opcode != BRAID_ROCE_READ_RESP_MIDDLE &&
	    RC_AETH_KIND(v->syndrome) != BRAID_ROCE_AETH_ACK)
		return comp_drop(c, BRAID_RC_DROP_MALFORMED);
	i = rc_req_find(qp, v->psn);
	if (i == qp->req.tail)
		return comp_drop(c, BRAID_RC_DROP_OUT_OF_WINDOW);
	c->w = rc_sq_at(qp, i);
	if (c->w->op != BRAID_RC_OP_READ)
		return comp_drop(c, BRAID_RC_DROP_STATE);	/* a response nobody waits for */
	return RC_COMPST_READ_PSN;
}

/*
 * READ_PSN (9.7.5.1.5, 9.9.2.3): a READ response implicitly acknowledges
 * every earlier request (passing an earlier READ still missing responses:
 * an implied NAK), and must be the next response expected (at una); a later
 * one means responses in between were lost: go back to the missing one.
 */
static enum rc_comp_state comp_read_psn(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct rc_req *rq = &qp->req;

	if ((braid_psn_diff(c->w->first_psn, rq->una) > 0 &&
	     comp_ack_through(qp, psn_prev(c->w->first_psn), c->now)) ||
	    c->v->psn != rq->una) {
		c->ret = rc_drop(qp, BRAID_RC_DROP_SEQ);
		return RC_COMPST_SEQ_ERR;
	}
	return RC_COMPST_READ;
}

/*
 * READ (9.7.5.1.5): a response before the READ's last PSN is a FIRST or
 * MIDDLE of one MTU, the last a LAST or ONLY with the rest; its data lands
 * at its PSN's offset in the READ's buffers.
 */
static enum rc_comp_state comp_read(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	const struct braid_roce_view *v = c->v;
	const struct rc_swqe *w = c->w;
	bool is_last = v->psn == rc_swqe_last(w);
	size_t want = is_last ? (size_t)(w->len - (uint64_t)(w->npsn - 1) * qp->cfg.mtu)
			      : qp->cfg.mtu;

	if (v->payload_len != want ||
	    (is_last ? (v->opcode != BRAID_ROCE_READ_RESP_LAST &&
			v->opcode != BRAID_ROCE_READ_RESP_ONLY)
		     : (v->opcode != BRAID_ROCE_READ_RESP_FIRST &&
			v->opcode != BRAID_ROCE_READ_RESP_MIDDLE)))
		return comp_drop(c, BRAID_RC_DROP_MALFORMED);
	braid_iov_scatter(w->iov, w->iov_count,
			  (uint64_t)braid_psn_diff(v->psn, w->first_psn) * qp->cfg.mtu, v->payload,
			  v->payload_len);
	return RC_COMPST_UPDATE_COMP;
}

/* UPDATE_COMP (9.9.2.1): una past the response; the READ completes with its last: progress */
static enum rc_comp_state comp_update_comp(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;

	qp->req.una = braid_psn_add(c->v->psn, 1);
	if (c->v->psn == rc_swqe_last(c->w))
		rc_comp_finish_head(qp, 0);
	comp_progress(qp, c->now);
	return RC_COMPST_DONE;
}

/*
 * TIMEOUT (9.7.6.1.3): the local ACK timer ran out: with anything sent and
 * unacknowledged, a retry. Whatever the responder sent before has arrived or
 * is lost by now: a sequence error seen after this restart is news (e.g. an
 * ACK beyond a READ whose resent request was lost again) and restarts at once.
 */
static enum rc_comp_state comp_timeout(struct rc_comp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_req *rq = &qp->req;

	rq->rto_deadline = RC_NONE;
	if (braid_psn_diff(rq->hw_psn, rq->una) <= 0)
		return RC_COMPST_DONE;
	qp->stats.timeouts++;
	rq->nak_acted = false;
	return RC_COMPST_ERROR_RETRY;
}

/* SEQ_ERR (9.9.2.1, 9.9.2.3): a sequence error, explicit or implied: back to una once per gap */
static enum rc_comp_state comp_seq_err(struct rc_comp_run *c)
{
	struct rc_req *rq = &c->qp->req;

	if (rq->nak_acted && rq->nak_psn == rq->una)
		return RC_COMPST_DONE;
	rq->nak_acted = true;
	rq->nak_psn = rq->una;
	return RC_COMPST_ERROR_RETRY;
}

/*
 * ERROR_RETRY (9.9.2.1): a go-back-N retry (NAK, implied NAK or timeout);
 * retry_cnt bounds them since the last progress, then the oldest request
 * fails with FI_ETIMEDOUT.
 */
static enum rc_comp_state comp_error_retry(struct rc_comp_run *c)
{
	struct rc_req *rq = &c->qp->req;

	{
		struct rc_retry_ev *e = &c->qp->retries[c->qp->nretries++ % RC_RETRY_TRACE];

		e->t = c->now;
		e->why = !c->v ? 'T' : c->v->opcode != BRAID_ROCE_ACK ? 'R' :
			 RC_AETH_KIND(c->v->syndrome) == BRAID_ROCE_AETH_NAK ? 'N' : 'A';
		e->psn = c->v ? c->v->psn : 0;
		e->una = rq->una;
		e->hw_psn = rq->hw_psn;
		e->left = rq->retry_left;
	}
	if (!rq->retry_left) {
		c->err = FI_ETIMEDOUT;
		c->fail = rq->head;
		return RC_COMPST_ERROR;
	}
	rq->retry_left--;
	rc_req_go_back(c->qp, c->now);
	return RC_COMPST_DONE;
}

/* ERROR (10.3.1): the QP goes to error: sq[fail] completes with err, everything else is flushed */
static enum rc_comp_state comp_error(struct rc_comp_run *c)
{
	rc_qp_error(c->qp, c->err, c->fail, 0);
	return RC_COMPST_DONE;
}

/* ---- the loop ---- */

static int comp_run(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_comp_run c = { .qp = qp, .v = v, .now = now };
	enum rc_comp_state s = RC_COMPST_GET_PKT, n = s;

	while (s != RC_COMPST_DONE) {
		switch (s) {
		case RC_COMPST_GET_PKT:		n = comp_get_pkt(&c); break;
		case RC_COMPST_CHECK_PSN:	n = comp_check_psn(&c); break;
		case RC_COMPST_CHECK_ACK:	n = comp_check_ack(&c); break;
		case RC_COMPST_ACK:		n = comp_ack(&c); break;
		case RC_COMPST_RNR_NAK:		n = comp_rnr_nak(&c); break;
		case RC_COMPST_RNR_RETRY:	n = comp_rnr_retry(&c); break;
		case RC_COMPST_NAK_SEQ:		n = comp_nak_seq(&c); break;
		case RC_COMPST_NAK_FATAL:	n = comp_nak_fatal(&c); break;
		case RC_COMPST_CHECK_READ:	n = comp_check_read(&c); break;
		case RC_COMPST_READ_PSN:	n = comp_read_psn(&c); break;
		case RC_COMPST_READ:		n = comp_read(&c); break;
		case RC_COMPST_UPDATE_COMP:	n = comp_update_comp(&c); break;
		case RC_COMPST_TIMEOUT:		n = comp_timeout(&c); break;
		case RC_COMPST_SEQ_ERR:		n = comp_seq_err(&c); break;
		case RC_COMPST_ERROR_RETRY:	n = comp_error_retry(&c); break;
		case RC_COMPST_ERROR:		n = comp_error(&c); break;
		case RC_COMPST_DONE:
		case RC_COMPST_NUM:
			assert(0);
			return c.ret;
		}
		if (n != s)
			rc_trace(qp, "completer", rc_comp_state_names[s], rc_comp_state_names[n]);
		s = n;
	}
	return c.ret;
}

int rc_comp_input(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	return comp_run(qp, v, now);
}

void rc_comp_timeout(struct braid_rc_qp *qp, uint64_t now)
{
	comp_run(qp, NULL, now);
}
