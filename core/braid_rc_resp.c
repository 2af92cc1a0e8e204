/* braid_rc_resp.c: the RC responder: incoming requests checked and executed, READ responses kept for replay, duplicates, NAKs, ACK coalescing (IBTA 9.7.5.1, 9.8, 9.9.3). */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

/* a NAK to send for @psn (kind and code in @syn) */
static void rc_resp_nak(struct braid_rc_qp *qp, uint8_t syn, uint32_t psn)
{
	struct rc_resp *rs = &qp->resp;

	rs->nak_pending = true;
	rs->nak_syn = syn;
	rs->nak_psn = psn;
	rs->nak_sent = true;
}

/*
 * rc_resp_class_c() - a responder class C error (IBTA 9.9.3.1.2: invalid
 * request, remote access error): NAK it and move the QP to error; the
 * receive of the message in progress completes with @err.
 */
static int rc_resp_class_c(struct braid_rc_qp *qp, uint8_t nak_code, int err)
{
	rc_resp_nak(qp, BRAID_ROCE_AETH_NAK | nak_code, qp->resp.epsn);
	rc_qp_error(qp, err, qp->req.tail, err);
	return 0;
}

/* the receive at rq_head completes */
static void rc_resp_complete_recv(struct braid_rc_qp *qp, uint32_t flags, int err, size_t len,
				  size_t olen, uint32_t imm)
{
	struct rc_rwqe *r = rc_rq_at(qp, qp->rq_head);
	struct braid_rc_comp c = {
		.context = r->context,
		.flags = flags,
		.err = err,
		.len = len,
		.olen = olen,
		.buf = r->iov_count ? r->iov[0].iov_base : NULL,
		.imm = imm,
	};

	if (!err && (r->flags & BRAID_RC_NO_COMP))
		c.flags |= BRAID_RC_COMP_SILENT;
	rc_comp_push(qp, &c);
	qp->rq_head++;
	qp->rq_unpolled++;
}

/* the packet at epsn was executed: the next PSN, the gap closed, ACK coalescing */
static void rc_resp_accepted(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint32_t npsn,
			     uint64_t now)
{
	struct rc_resp *rs = &qp->resp;

	rs->epsn = braid_psn_add(rs->epsn, npsn);
	rs->nak_sent = false;
	if (rs->nak_pending && RC_AETH_KIND(rs->nak_syn) != BRAID_ROCE_AETH_NAK)
		rs->nak_pending = false;	/* an RNR NAK not sent yet: this one got through */
	if (rs->nak_pending && rs->nak_syn == (BRAID_ROCE_AETH_NAK | BRAID_ROCE_NAK_PSN_SEQ_ERR))
		rs->nak_pending = false;	/* the gap closed before its NAK went out */
	if (v->opcode == BRAID_ROCE_READ_REQ) {
		/* the READ response acknowledges everything up to it */
		rs->ack_count = 0;
		rs->ack_now = false;
		rs->ack_deadline = RC_NONE;
		return;
	}
	rs->ack_count++;
	if (v->ack_req || rs->ack_count >= qp->cfg.ack_coalesce)
		rs->ack_now = true;
	else if (rs->ack_deadline == RC_NONE)
		rs->ack_deadline = now + qp->cfg.ack_delay_ns;
}

/* packet payload sizes (IBTA 9.7.3.2): FIRST/MIDDLE one MTU, LAST 1..MTU, ONLY 0..MTU */
static bool rc_resp_len_ok(const struct braid_rc_qp *qp, uint8_t op, size_t len)
{
	switch (op) {
	case BRAID_ROCE_SEND_FIRST:
	case BRAID_ROCE_SEND_MIDDLE:
	case BRAID_ROCE_WRITE_FIRST:
	case BRAID_ROCE_WRITE_MIDDLE:
		return len == qp->cfg.mtu;
	case BRAID_ROCE_SEND_LAST:
	case BRAID_ROCE_SEND_LAST_IMM:
	case BRAID_ROCE_WRITE_LAST:
	case BRAID_ROCE_WRITE_LAST_IMM:
		return len >= 1 && len <= qp->cfg.mtu;
	default:
		return len <= qp->cfg.mtu;
	}
}

static int rc_resp_send(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_resp *rs = &qp->resp;
	uint8_t op = v->opcode;
	bool first = op == BRAID_ROCE_SEND_FIRST || op == BRAID_ROCE_SEND_ONLY ||
		     op == BRAID_ROCE_SEND_ONLY_IMM;
	bool last = op != BRAID_ROCE_SEND_FIRST && op != BRAID_ROCE_SEND_MIDDLE;
	struct rc_rwqe *r;

	if (first) {
		if (qp->rq_head == qp->rq_tail) {
			/* receiver not ready (IBTA 9.7.5.2.8): the requester waits and resends */
			rc_resp_nak(qp, BRAID_ROCE_AETH_RNR_NAK | rc_rnr_code(qp->cfg.min_rnr_timer_ns),
				    v->psn);
			return 0;
		}
		rs->off = 0;
		rs->msg = RC_RESP_SEND;
	}
	r = rc_rq_at(qp, qp->rq_head);
	if (rs->off < r->capacity) {
		uint64_t room = r->capacity - rs->off;

		braid_iov_scatter(r->iov, r->iov_count, rs->off, v->payload,
				  v->payload_len < room ? v->payload_len : (size_t)room);
	}
	rs->off += v->payload_len;
	if (last) {
		uint64_t got = rs->off < r->capacity ? rs->off : r->capacity;

		/* too long for the receive: it completes truncated, the rest is discarded */
		rc_resp_complete_recv(qp, BRAID_RC_COMP_RECV |
				      ((op == BRAID_ROCE_SEND_LAST_IMM || op == BRAID_ROCE_SEND_ONLY_IMM)
				       ? BRAID_RC_COMP_IMM : 0),
				      rs->off > r->capacity ? FI_ETRUNC : 0, (size_t)got,
				      (size_t)(rs->off - got), v->imm);
		rs->msn = braid_psn_add(rs->msn, 1);
		rs->msg = RC_RESP_IDLE;
	}
	rc_resp_accepted(qp, v, 1, now);
	return 0;
}

static int rc_resp_write(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_resp *rs = &qp->resp;
	uint8_t op = v->opcode;
	bool first = op == BRAID_ROCE_WRITE_FIRST || op == BRAID_ROCE_WRITE_ONLY ||
		     op == BRAID_ROCE_WRITE_ONLY_IMM;
	bool last = op != BRAID_ROCE_WRITE_FIRST && op != BRAID_ROCE_WRITE_MIDDLE;
	bool imm = op == BRAID_ROCE_WRITE_LAST_IMM || op == BRAID_ROCE_WRITE_ONLY_IMM;

	/* a WRITE with immediate consumes a receive with its last packet */
	if (imm && qp->rq_head == qp->rq_tail) {
		rc_resp_nak(qp, BRAID_ROCE_AETH_RNR_NAK | rc_rnr_code(qp->cfg.min_rnr_timer_ns),
			    v->psn);
		return 0;
	}
	if (first) {
		void *ptr = NULL;

		if (v->dma_len > qp->cfg.max_msg_size ||
		    (last ? v->payload_len != v->dma_len : v->dma_len <= qp->cfg.mtu))
			return rc_resp_class_c(qp, BRAID_ROCE_NAK_INVALID_REQ, FI_EINVAL);
		/* the R_Key of an empty WRITE is not checked (IBTA 9.4.3) */
		if (v->dma_len &&
		    (!qp->cfg.mr_check ||
		     qp->cfg.mr_check(qp->cfg.mr_ctx, v->rkey, v->va, v->dma_len,
				      BRAID_RC_ACCESS_REMOTE_WRITE, &ptr)))
			return rc_resp_class_c(qp, BRAID_ROCE_NAK_REM_ACCESS_ERR, FI_EACCES);
		rs->wptr = ptr;
		rs->wlen = v->dma_len;
		rs->off = 0;
		rs->msg = RC_RESP_WRITE;
	}
	if (rs->off + v->payload_len > rs->wlen ||
	    (last && rs->off + v->payload_len != rs->wlen))
		return rc_resp_class_c(qp, BRAID_ROCE_NAK_INVALID_REQ, FI_EINVAL);
	if (v->payload_len)
		memcpy(rs->wptr + rs->off, v->payload, v->payload_len);
	rs->off += v->payload_len;
	if (last) {
		if (imm)
			rc_resp_complete_recv(qp, BRAID_RC_COMP_REMOTE_WRITE | BRAID_RC_COMP_IMM, 0,
					      (size_t)rs->wlen, 0, v->imm);
		rs->msn = braid_psn_add(rs->msn, 1);
		rs->msg = RC_RESP_IDLE;
	}
	rc_resp_accepted(qp, v, 1, now);
	return 0;
}

static int rc_resp_read(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_resp *rs = &qp->resp;
	struct rc_rdres *s;
	void *ptr = NULL;

	if (v->dma_len > qp->cfg.max_msg_size)
		return rc_resp_class_c(qp, BRAID_ROCE_NAK_INVALID_REQ, FI_EINVAL);
	/* more READs outstanding than max_dest_rd_atomic (IBTA 9.5: invalid request) */
	if (!qp->cfg.max_dest_rd_atomic || rc_res_at(qp, rs->res_head)->pending)
		return rc_resp_class_c(qp, BRAID_ROCE_NAK_INVALID_REQ, FI_EINVAL);
	if (v->dma_len &&
	    (!qp->cfg.mr_check ||
	     qp->cfg.mr_check(qp->cfg.mr_ctx, v->rkey, v->va, v->dma_len,
			      BRAID_RC_ACCESS_REMOTE_READ, &ptr)))
		return rc_resp_class_c(qp, BRAID_ROCE_NAK_REM_ACCESS_ERR, FI_EACCES);
	s = rc_res_at(qp, rs->res_head);
	rs->msn = braid_psn_add(rs->msn, 1);
	*s = (struct rc_rdres){
		.psn = v->psn,
		.npsn = rc_npsn(qp, v->dma_len),
		.va = v->va,
		.rkey = v->rkey,
		.len = v->dma_len,
		.msn = rs->msn,
		.pending = true,
		.start_psn = v->psn,
		.cur_psn = v->psn,
		.ptr = ptr,
		.exec_len = v->dma_len,
	};
	rs->res_head++;
	rc_resp_accepted(qp, v, s->npsn, now);
	return 0;
}

/*
 * rc_resp_duplicate() - a request behind epsn (IBTA 9.9.3.2.1): SEND and
 * WRITE are not executed again but re-ACKed at once (the requester resent
 * them: our ACK was lost or late); a READ is answered again from the
 * resource kept for it, from the PSN the requester restarts at, if it still
 * is among the last max_dest_rd_atomic. Responses of that and later READs
 * still queued are cut: the requester's go-back-N sends those again too.
 */
static int rc_resp_duplicate(struct braid_rc_qp *qp, const struct braid_roce_view *v)
{
	struct rc_resp *rs = &qp->resp;
	uint64_t n = rs->res_head < qp->cfg.max_dest_rd_atomic ? rs->res_head
							       : qp->cfg.max_dest_rd_atomic;
	uint64_t i, j;

	if (v->opcode != BRAID_ROCE_READ_REQ) {
		rs->ack_force = true;
		return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);
	}
	for (i = rs->res_head; n; n--) {
		struct rc_rdres *s = rc_res_at(qp, --i);
		uint64_t off;
		void *ptr = NULL;

		if (!psn_in(v->psn, s->psn, s->npsn))
			continue;
		off = (uint64_t)braid_psn_diff(v->psn, s->psn) * qp->cfg.mtu;
		if (v->rkey != s->rkey || off > s->len || v->va != s->va + off ||
		    v->dma_len != s->len - off)
			break;	/* not the request we executed: silently dropped */
		if (v->dma_len &&
		    (!qp->cfg.mr_check ||
		     qp->cfg.mr_check(qp->cfg.mr_ctx, v->rkey, v->va, v->dma_len,
				      BRAID_RC_ACCESS_REMOTE_READ, &ptr)))
			break;
		for (j = i + 1; j != rs->res_head; j++)
			rc_res_at(qp, j)->pending = false;
		s->pending = true;
		s->start_psn = s->cur_psn = v->psn;
		s->ptr = ptr;
		s->exec_len = v->dma_len;
		if (i < rs->res_tx)
			rs->res_tx = i;
		break;
	}
	return rc_drop(qp, BRAID_RC_DROP_DUPLICATE);
}

/* a request packet (IBTA 9.7.5.1: PSN check, then opcode sequence, length, execution) */
int rc_resp_request(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_resp *rs = &qp->resp;
	int32_t d = braid_psn_diff(v->psn, rs->epsn);
	uint8_t op = v->opcode;
	bool ok;

	if (d < 0) {
		if (d < -(int32_t)RC_PSN_WINDOW)
			return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
		return rc_resp_duplicate(qp, v);
	}
	if (d > 0) {
		if (d > (int32_t)RC_PSN_WINDOW)
			return rc_drop(qp, BRAID_RC_DROP_OUT_OF_WINDOW);
		/* a gap: one PSN sequence error NAK until epsn arrives (IBTA 9.7.5.1.1) */
		if (!rs->nak_sent)
			rc_resp_nak(qp, BRAID_ROCE_AETH_NAK | BRAID_ROCE_NAK_PSN_SEQ_ERR, rs->epsn);
		return rc_drop(qp, BRAID_RC_DROP_SEQ);
	}
	switch (rs->msg) {
	case RC_RESP_SEND:
		ok = op == BRAID_ROCE_SEND_MIDDLE || op == BRAID_ROCE_SEND_LAST ||
		     op == BRAID_ROCE_SEND_LAST_IMM;
		break;
	case RC_RESP_WRITE:
		ok = op == BRAID_ROCE_WRITE_MIDDLE || op == BRAID_ROCE_WRITE_LAST ||
		     op == BRAID_ROCE_WRITE_LAST_IMM;
		break;
	case RC_RESP_IDLE:
	default:
		ok = op == BRAID_ROCE_SEND_FIRST || op == BRAID_ROCE_SEND_ONLY ||
		     op == BRAID_ROCE_SEND_ONLY_IMM || op == BRAID_ROCE_WRITE_FIRST ||
		     op == BRAID_ROCE_WRITE_ONLY || op == BRAID_ROCE_WRITE_ONLY_IMM ||
		     op == BRAID_ROCE_READ_REQ;
		break;
	}
	if (!ok || !rc_resp_len_ok(qp, op, v->payload_len))
		return rc_resp_class_c(qp, BRAID_ROCE_NAK_INVALID_REQ, FI_EINVAL);
	if (op <= BRAID_ROCE_SEND_ONLY_IMM)
		return rc_resp_send(qp, v, now);
	if (op <= BRAID_ROCE_WRITE_ONLY_IMM)
		return rc_resp_write(qp, v, now);
	return rc_resp_read(qp, v, now);
}

/* the first READ resource with responses to send, or NULL */
struct rc_rdres *rc_resp_job(struct braid_rc_qp *qp)
{
	struct rc_resp *rs = &qp->resp;

	while (rs->res_tx != rs->res_head) {
		struct rc_rdres *s = rc_res_at(qp, rs->res_tx);

		if (s->pending)
			return s;
		rs->res_tx++;
	}
	return NULL;
}

/* one READ response packet of @s (AETH on FIRST, LAST and ONLY) */
void rc_resp_emit_read(struct braid_rc_qp *qp, struct rc_rdres *s, struct braid_rc_out *o)
{
	struct rc_resp *rs = &qp->resp;
	uint32_t last = braid_psn_add(s->psn, s->npsn - 1);
	uint32_t idx = (uint32_t)braid_psn_diff(s->cur_psn, s->start_psn);
	uint64_t off = (uint64_t)idx * qp->cfg.mtu;
	bool first = idx == 0, is_last = s->cur_psn == last;
	struct braid_roce_view v;
	uint8_t op;

	if (first)
		op = is_last ? BRAID_ROCE_READ_RESP_ONLY : BRAID_ROCE_READ_RESP_FIRST;
	else
		op = is_last ? BRAID_ROCE_READ_RESP_LAST : BRAID_ROCE_READ_RESP_MIDDLE;
	rc_view_init(qp, &v, op, s->cur_psn);
	v.syndrome = RC_AETH_ACK_NO_CREDIT;
	v.msn = s->msn;
	o->payload_len = s->exec_len - off < qp->cfg.mtu ? (size_t)(s->exec_len - off) : qp->cfg.mtu;
	o->payload_iovcnt = 0;
	if (o->payload_len) {
		o->payload[0].iov_base = (void *)(uintptr_t)(s->ptr + off);
		o->payload[0].iov_len = o->payload_len;
		o->payload_iovcnt = 1;
	}
	rc_out_finish(qp, o, &v);
	if (is_last) {
		s->pending = false;
		if (braid_psn_diff(last, rs->acked_psn) > 0)
			rs->acked_psn = last;
	} else {
		s->cur_psn = braid_psn_add(s->cur_psn, 1);
	}
}

/* is an ACK or NAK to go out? (never ahead of READ responses: responses go in PSN order) */
bool rc_resp_ctl_ready(struct braid_rc_qp *qp)
{
	struct rc_resp *rs = &qp->resp;

	if (!rs->nak_pending && !rs->ack_now && !rs->ack_force)
		return false;
	if (rc_resp_job(qp))
		return false;
	if (!rs->nak_pending && !rs->ack_force && rs->acked_psn == psn_prev(rs->epsn)) {
		/* a READ response acknowledged it all already */
		rs->ack_now = false;
		rs->ack_count = 0;
		rs->ack_deadline = RC_NONE;
		return false;
	}
	return true;
}

/* the ACK (ePSN - 1) or the pending NAK, with the MSN (IBTA 9.7.5.1.2) */
void rc_resp_emit_ctl(struct braid_rc_qp *qp, struct braid_rc_out *o)
{
	struct rc_resp *rs = &qp->resp;
	struct braid_roce_view v;

	if (rs->nak_pending) {
		rc_view_init(qp, &v, BRAID_ROCE_ACK, rs->nak_psn);
		v.syndrome = rs->nak_syn;
		if (rs->nak_syn == (BRAID_ROCE_AETH_NAK | BRAID_ROCE_NAK_PSN_SEQ_ERR))
			qp->stats.naks_seq_tx++;
		else if (RC_AETH_KIND(rs->nak_syn) == BRAID_ROCE_AETH_RNR_NAK)
			qp->stats.rnr_naks_tx++;
		else
			qp->stats.naks_other_tx++;
		rs->acked_psn = psn_prev(rs->nak_psn);
		rs->nak_pending = false;
	} else {
		rc_view_init(qp, &v, BRAID_ROCE_ACK, psn_prev(rs->epsn));
		v.syndrome = RC_AETH_ACK_NO_CREDIT;
		qp->stats.acks_tx++;
		rs->acked_psn = psn_prev(rs->epsn);
	}
	v.msn = rs->msn;
	o->payload_iovcnt = 0;
	o->payload_len = 0;
	rc_out_finish(qp, o, &v);
	rs->ack_now = rs->ack_force = false;
	rs->ack_count = 0;
	rs->ack_deadline = RC_NONE;
}
