/* braid_rc_comp.c: the RC completer: ACKs, NAKs and READ responses coming back, retry and RNR retry counters, the local ACK timeout (IBTA 9.7.5.2, 9.9.2). */
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

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
		.len = err ? 0 : w->len,
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
static void rc_comp_progress(struct braid_rc_qp *qp, uint64_t now)
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
	    (rq->tx == rq->head && braid_psn_diff(rq->tx_psn, rq->una) < 0)) {
		rq->tx = rq->head;
		rq->tx_psn = rq->una;
	}
}

/*
 * rc_comp_ack_through() - acknowledge every request PSN up to and including
 * @psn (coalesced ACKs, IBTA 9.7.5.1.2): SEND and WRITE requests whose last
 * PSN is covered complete. A READ is finished only by its responses, which
 * come before any later ACK: meeting one still missing them means they were
 * lost (an implied NAK, 9.9.2.3): return true and stop there.
 */
static bool rc_comp_ack_through(struct braid_rc_qp *qp, uint32_t psn, uint64_t now)
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
		rc_comp_progress(qp, now);
	return gap;
}

/* a go-back-N retry (NAK, implied NAK or timeout): retry_cnt bounds them */
void rc_comp_retry(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;

	if (!rq->retry_left) {
		rc_qp_error(qp, FI_ETIMEDOUT, rq->head, 0);
		return;
	}
	rq->retry_left--;
	rc_req_go_back(qp, now);
}

/* a PSN sequence error, explicit or implied: restart at una once per gap */
static void rc_comp_seq_error(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;

	if (rq->nak_acted && rq->nak_psn == rq->una)
		return;
	rq->nak_acted = true;
	rq->nak_psn = rq->una;
	rc_comp_retry(qp, now);
}

/* is @psn one a NAK may name: in [una, hw)? */
static int rc_comp_nak_psn_check(struct braid_rc_qp *qp, uint32_t psn)
{
	const struct rc_req *rq = &qp->req;
	int32_t d = braid_psn_diff(psn, rq->una);

	if (d < 0)
		return d >= -(int32_t)RC_PSN_WINDOW ? rc_drop(qp, BRAID_RC_DROP_DUPLICATE)
						    : rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
	if (braid_psn_diff(psn, rq->hw_psn) >= 0)
		return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
	return 0;
}

/* an ACK packet: ACK, RNR NAK or NAK (IBTA 9.7.5.2, Table 43) */
int rc_comp_ack(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_req *rq = &qp->req;
	uint8_t value = RC_AETH_VALUE(v->syndrome);
	int32_t d;
	int ret;

	switch (RC_AETH_KIND(v->syndrome)) {
	case BRAID_ROCE_AETH_ACK:
		d = braid_psn_diff(v->psn, rq->una);
		if (braid_psn_diff(v->psn, rq->hw_psn) >= 0 || d < -(int32_t)RC_PSN_WINDOW)
			return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
		qp->stats.acks_rx++;
		if (d < 0)	/* acknowledges nothing new: a re-ACK or a late copy */
			return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);
		if (rc_comp_ack_through(qp, v->psn, now))
			rc_comp_seq_error(qp, now);
		return 0;

	case BRAID_ROCE_AETH_RNR_NAK:
		ret = rc_comp_nak_psn_check(qp, v->psn);
		if (ret)
			return ret;
		qp->stats.rnr_naks_rx++;
		if (rq->rnr_deadline != RC_NONE && v->psn == rq->rnr_psn)
			return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);	/* already waiting for it */
		if (rc_comp_ack_through(qp, psn_prev(v->psn), now)) {
			/* a READ before it lost responses: go back to it at once */
			rc_comp_seq_error(qp, now);
			return 0;
		}
		if (qp->cfg.rnr_retry != 7) {	/* 7: retry forever (IBTA 9.7.5.2.8) */
			if (!rq->rnr_left) {
				rc_qp_error(qp, FI_ENORX, rc_req_find(qp, v->psn), 0);
				return 0;
			}
			rq->rnr_left--;
		}
		rq->rnr_psn = v->psn;
		rq->rnr_deadline = now + braid_rc_rnr_timer_ns(value);
		rq->rto_deadline = RC_NONE;
		rq->tx = rq->head;
		rq->tx_psn = rq->una;
		return 0;

	case BRAID_ROCE_AETH_NAK:
		ret = rc_comp_nak_psn_check(qp, v->psn);
		if (ret)
			return ret;
		if (value == BRAID_ROCE_NAK_PSN_SEQ_ERR) {
			qp->stats.naks_seq_rx++;
			/* the responder NAKs a gap once: a second NAK of it is a stale copy */
			if (rq->rnr_deadline != RC_NONE ||
			    (rq->nak_acted && rq->nak_psn == v->psn))
				return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);
			rc_comp_ack_through(qp, psn_prev(v->psn), now);
			rc_comp_seq_error(qp, now);
			return 0;
		}
		qp->stats.naks_other_rx++;
		rc_comp_ack_through(qp, psn_prev(v->psn), now);
		switch (value) {
		case BRAID_ROCE_NAK_REM_ACCESS_ERR:
			ret = FI_EACCES;
			break;
		case BRAID_ROCE_NAK_REM_OP_ERR:
			ret = FI_EREMOTEIO;
			break;
		case BRAID_ROCE_NAK_INVALID_REQ:
		case BRAID_ROCE_NAK_INVALID_RD_REQ:
		default:
			ret = FI_EINVAL;
			break;
		}
		/* IBTA 9.9.2.2: the request fails, the QP goes to error */
		rc_qp_error(qp, ret, rc_req_find(qp, v->psn), 0);
		return 0;

	default:	/* reserved AETH kind */
		return rc_drop(qp, BRAID_RC_DROP_MALFORMED);
	}
}

/*
 * rc_comp_read_resp() - a READ response packet (IBTA 9.7.5.1.5, 9.9.2.3):
 * it acknowledges every earlier request; its data lands at its PSN's offset
 * when it is the next response expected; a later one means responses were
 * lost: go back to the missing one.
 */
int rc_comp_read_resp(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_req *rq = &qp->req;
	int32_t d = braid_psn_diff(v->psn, rq->una);
	struct rc_swqe *w;
	uint64_t i;
	uint32_t last;
	size_t want;
	bool is_last;

	if (braid_psn_diff(v->psn, rq->hw_psn) >= 0 || d < -(int32_t)RC_PSN_WINDOW)
		return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
	if (d < 0)
		return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);
	/* a READ response's AETH (FIRST, LAST, ONLY) can only be an ACK */
	if (v->opcode != BRAID_ROCE_READ_RESP_MIDDLE &&
	    RC_AETH_KIND(v->syndrome) != BRAID_ROCE_AETH_ACK)
		return rc_drop(qp, BRAID_RC_DROP_MALFORMED);
	i = rc_req_find(qp, v->psn);
	if (i == rq->tail)
		return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
	w = rc_sq_at(qp, i);
	if (w->op != BRAID_RC_OP_READ)
		return rc_drop(qp, BRAID_RC_DROP_STATE);	/* a response nobody waits for */
	/* implicit ACK of everything before this READ */
	if (braid_psn_diff(w->first_psn, rq->una) > 0 &&
	    rc_comp_ack_through(qp, psn_prev(w->first_psn), now)) {
		rc_comp_seq_error(qp, now);
		return rc_drop(qp, BRAID_RC_DROP_SEQ);
	}
	if (v->psn != rq->una) {
		/* responses between una and this one are missing */
		rc_comp_seq_error(qp, now);
		return rc_drop(qp, BRAID_RC_DROP_SEQ);
	}
	last = rc_swqe_last(w);
	is_last = v->psn == last;
	want = is_last ? (size_t)(w->len - (uint64_t)(w->npsn - 1) * qp->cfg.mtu) : qp->cfg.mtu;
	if (v->payload_len != want ||
	    (is_last ? (v->opcode != BRAID_ROCE_READ_RESP_LAST &&
			v->opcode != BRAID_ROCE_READ_RESP_ONLY)
		     : (v->opcode != BRAID_ROCE_READ_RESP_FIRST &&
			v->opcode != BRAID_ROCE_READ_RESP_MIDDLE)))
		return rc_drop(qp, BRAID_RC_DROP_MALFORMED);
	braid_iov_scatter(w->iov, w->iov_count,
			  (uint64_t)braid_psn_diff(v->psn, w->first_psn) * qp->cfg.mtu, v->payload,
			  v->payload_len);
	rq->una = braid_psn_add(v->psn, 1);
	if (is_last)
		rc_comp_finish_head(qp, 0);
	rc_comp_progress(qp, now);
	return 0;
}
