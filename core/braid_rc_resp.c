/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_resp.c: the RC responder: incoming requests checked and executed, READ responses kept for replay, duplicates, NAKs, ACK coalescing (IBTA 9.7.5.1, 9.8, 9.9.3). */
#include <assert.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

/*
 * The responder is a state machine, as Soft-RoCE's rxe_resp.c: one run per
 * request packet received (braid_rc_input()). Its checks come in IBTA's
 * order (9.7.5.1): PSN, opcode sequence, packet length, resources (a posted
 * receive, a READ resource), message length, R_Key; then the request
 * executes, a message's last packet completes it, and the packet is
 * acknowledged (coalesced). A run ends in RC_RESPST_DONE with
 * braid_rc_input()'s result (0 or a drop). What it decides to send (ACK,
 * NAK, READ responses) goes out through braid_rc_output().
 */

const char *const rc_resp_state_names[RC_RESPST_NUM] = {
	[RC_RESPST_CHK_PSN] = "CHK_PSN",
	[RC_RESPST_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[RC_RESPST_CHK_PKT_LEN] = "CHK_PKT_LEN",
	[RC_RESPST_CHK_RESOURCE] = "CHK_RESOURCE",
	[RC_RESPST_CHK_LENGTH] = "CHK_LENGTH",
	[RC_RESPST_CHK_RKEY] = "CHK_RKEY",
	[RC_RESPST_EXECUTE] = "EXECUTE",
	[RC_RESPST_COMPLETE] = "COMPLETE",
	[RC_RESPST_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RC_RESPST_DUPLICATE] = "DUPLICATE",
	[RC_RESPST_DUPLICATE_READ] = "DUPLICATE_READ",
	[RC_RESPST_ERR_PSN_SEQ] = "ERR_PSN_SEQ",
	[RC_RESPST_ERR_RNR] = "ERR_RNR",
	[RC_RESPST_ERR_INVALID_REQ] = "ERR_INVALID_REQ",
	[RC_RESPST_ERR_ACCESS] = "ERR_ACCESS",
	[RC_RESPST_ERROR] = "ERROR",
	[RC_RESPST_DONE] = "DONE",
};

/** struct rc_resp_run - one run of the responder. */
struct rc_resp_run {
	struct braid_rc_qp *qp;
	const struct braid_roce_view *v;
	uint64_t now;
	/** @op: the operation the packet belongs to (RC_RESPST_CHK_OP_SEQ on). */
	enum braid_rc_op op;
	/** @first, @last, @imm: it starts / ends its message, carries ImmDt. */
	bool first, last, imm;
	/** @ptr: where the R_Key check put the request's memory (WRITE first packet, READ). */
	void *ptr;
	/** @npsn: the PSNs the packet accounts for (a READ: its responses'). */
	uint32_t npsn;
	/** @nak_code, @err: for RC_RESPST_ERROR: the NAK and the FI_E* of a class C error. */
	uint8_t nak_code;
	int err;
	/** @ret: braid_rc_input()'s result: 0 or -(enum braid_rc_drop + 1). */
	int ret;
};

/* ---- helpers the states share ---- */

/* a NAK to send for @psn (kind and code in @syn) */
static void resp_nak(struct braid_rc_qp *qp, uint8_t syn, uint32_t psn)
{
	struct rc_resp *rs = &qp->resp;

	rs->nak_pending = true;
	rs->nak_syn = syn;
	rs->nak_psn = psn;
	rs->nak_sent = true;
}

/* the receive at rq_head completes (recv_done hears of the bytes a SEND placed in it) */
static void resp_complete_recv(struct braid_rc_qp *qp, uint32_t flags, int err, size_t len,
			       size_t olen, uint32_t imm)
{
	const struct rc_rwqe *r = rc_rq_at(qp, qp->rq_head);
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
	rc_recv_done(qp, r, (flags & BRAID_RC_COMP_RECV) ? len : 0, err);
}

/* packet payload sizes (IBTA 9.7.3.2): FIRST/MIDDLE one MTU, LAST 1..MTU, ONLY 0..MTU */
static bool resp_len_ok(const struct braid_rc_qp *qp, uint8_t op, size_t len)
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

/* is [@va, @va + @len) covered by @rkey with @access? (a zero length is not checked, IBTA 9.4.3) */
static bool resp_rkey_ok(struct braid_rc_qp *qp, uint32_t rkey, uint64_t va, uint32_t len,
			 uint32_t access, void **ptr)
{
	return !len || (qp->cfg.mr_check &&
			!qp->cfg.mr_check(qp->cfg.mr_ctx, rkey, va, len, access, ptr));
}

/* the packet is dropped and counted as @r: the run ends */
static enum rc_resp_state resp_drop(struct rc_resp_run *c, enum braid_rc_drop r)
{
	c->ret = rc_drop(c->qp, r);
	return RC_RESPST_DONE;
}

/* ---- the states ---- */

/*
 * CHK_PSN (9.7.5.1.1): strict in-order acceptance: the packet at the
 * expected PSN goes on; one behind it is a duplicate; one beyond it means
 * a gap. Further than RC_PSN_WINDOW either way it is out of window.
 */
static enum rc_resp_state resp_chk_psn(struct rc_resp_run *c)
{
	int32_t d = braid_psn_diff(c->v->psn, c->qp->resp.epsn);

	if (d < -(int32_t)RC_PSN_WINDOW || d > (int32_t)RC_PSN_WINDOW)
		return resp_drop(c, BRAID_RC_DROP_OUT_OF_WINDOW);
	if (d < 0)
		return RC_RESPST_DUPLICATE;
	if (d > 0)
		return RC_RESPST_ERR_PSN_SEQ;
	return RC_RESPST_CHK_OP_SEQ;
}

/*
 * CHK_OP_SEQ (9.8.3.1): between messages, a FIRST or ONLY packet or a READ
 * request; inside a SEND or WRITE, its MIDDLE or LAST packets only. Anything
 * else is an invalid request.
 */
static enum rc_resp_state resp_chk_op_seq(struct rc_resp_run *c)
{
	uint8_t op = c->v->opcode;
	bool ok;

	switch (c->qp->resp.msg) {
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
	if (!ok)
		return RC_RESPST_ERR_INVALID_REQ;
	if (op <= BRAID_ROCE_SEND_ONLY_IMM) {
		c->op = BRAID_RC_OP_SEND;
		c->first = op == BRAID_ROCE_SEND_FIRST || op == BRAID_ROCE_SEND_ONLY ||
			   op == BRAID_ROCE_SEND_ONLY_IMM;
		c->last = op != BRAID_ROCE_SEND_FIRST && op != BRAID_ROCE_SEND_MIDDLE;
		c->imm = op == BRAID_ROCE_SEND_LAST_IMM || op == BRAID_ROCE_SEND_ONLY_IMM;
	} else if (op <= BRAID_ROCE_WRITE_ONLY_IMM) {
		c->op = BRAID_RC_OP_WRITE;
		c->first = op == BRAID_ROCE_WRITE_FIRST || op == BRAID_ROCE_WRITE_ONLY ||
			   op == BRAID_ROCE_WRITE_ONLY_IMM;
		c->last = op != BRAID_ROCE_WRITE_FIRST && op != BRAID_ROCE_WRITE_MIDDLE;
		c->imm = op == BRAID_ROCE_WRITE_LAST_IMM || op == BRAID_ROCE_WRITE_ONLY_IMM;
	} else {
		c->op = BRAID_RC_OP_READ;
		c->first = c->last = true;
	}
	return RC_RESPST_CHK_PKT_LEN;
}

/* CHK_PKT_LEN (9.7.3.2): FIRST and MIDDLE carry one MTU, LAST 1..MTU bytes, ONLY 0..MTU */
static enum rc_resp_state resp_chk_pkt_len(struct rc_resp_run *c)
{
	if (!resp_len_ok(c->qp, c->v->opcode, c->v->payload_len))
		return RC_RESPST_ERR_INVALID_REQ;
	return RC_RESPST_CHK_RESOURCE;
}

/*
 * CHK_RESOURCE: a SEND's first packet, and a WRITE with immediate's last,
 * consume a posted receive: without one, receiver not ready (9.7.5.2.8).
 * (With imm_no_recv a WRITE with immediate needs only a free receive-side
 * completion slot.)
 * A READ needs a free READ resource: more READs outstanding than
 * max_dest_rd_atomic is an invalid request (9.5).
 */
/*
 * An empty receive queue asks the caller's queue (srq_pull) for one, telling
 * it what it knows of the message; only when the QP has room for it, so a
 * receive handed over is never lost.
 */
static bool rq_refill(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct braid_rc_msg_start m = { 0 };
	struct braid_rc_recv rr = { 0 };

	if (!qp->cfg.srq_pull || qp->rq_unpolled >= qp->cfg.max_recv_wr)
		return false;
	if (c->op == BRAID_RC_OP_SEND) {
		m.payload = c->v->payload;
		m.payload_len = c->v->payload_len;
		m.whole = c->last;
	} else {
		m.write_imm = true;
	}
	if (qp->cfg.srq_pull(qp->cfg.srq_ctx, &m, &rr))
		return false;
	if (rr.skip > m.payload_len)
		rr.skip = (uint32_t)m.payload_len;
	return rc_rq_push(qp, &rr, true) == 0;
}

static enum rc_resp_state resp_chk_resource(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	bool no_recv = qp->rq_head == qp->rq_tail;

	/* a request that will consume a receive pulls one from the SRQ (10.2.9.1) */
	if (no_recv && ((c->op == BRAID_RC_OP_SEND && c->first) ||
			(c->op == BRAID_RC_OP_WRITE && c->imm && !qp->cfg.imm_no_recv)))
		no_recv = !rq_refill(c);

	switch (c->op) {
	case BRAID_RC_OP_SEND:
		return c->first && no_recv ? RC_RESPST_ERR_RNR : RC_RESPST_CHK_LENGTH;
	case BRAID_RC_OP_WRITE:
		if (c->imm && qp->cfg.imm_no_recv)	/* only a completion slot */
			no_recv = qp->rq_tail - qp->rq_head + qp->rq_unpolled >= qp->cfg.max_recv_wr;
		return c->imm && no_recv ? RC_RESPST_ERR_RNR : RC_RESPST_CHK_LENGTH;
	case BRAID_RC_OP_READ:
	default: {
		struct rc_rdres *old = qp->cfg.max_dest_rd_atomic ? rc_res_at(qp, qp->resp.res_head)
								 : NULL;

		/*
		 * The slot of the READ max_dest_rd_atomic READs ago is reused.
		 * Its first execution unfinished: the requester exceeds its
		 * READ limit (9.5: invalid request). A replay of it unfinished:
		 * a stale duplicate request (the requester had all of it, or it
		 * would not start this one) made it; it gives way.
		 */
		if (!old || (old->pending && !old->replay))
			return RC_RESPST_ERR_INVALID_REQ;
		old->pending = false;
		return RC_RESPST_CHK_LENGTH;
	}
	}
}

/*
 * CHK_LENGTH (9.4.3, 9.4.4): a WRITE's or READ's DMA length is at most
 * max_msg_size; a WRITE's first packet's fits its packets (ONLY: the
 * payload; FIRST: more than one MTU) and the packets add up to exactly it.
 * (A SEND longer than its receive is truncated, not refused.)
 */
static enum rc_resp_state resp_chk_length(struct rc_resp_run *c)
{
	const struct braid_rc_qp *qp = c->qp;
	const struct rc_resp *rs = &qp->resp;
	const struct braid_roce_view *v = c->v;
	bool bad;

	switch (c->op) {
	case BRAID_RC_OP_SEND:
		bad = false;
		break;
	case BRAID_RC_OP_WRITE:
		if (c->first)
			bad = v->dma_len > qp->cfg.max_msg_size ||
			      (c->last ? v->payload_len != v->dma_len : v->dma_len <= qp->cfg.mtu);
		else
			bad = rs->off + v->payload_len > rs->wlen ||
			      (c->last && rs->off + v->payload_len != rs->wlen);
		break;
	case BRAID_RC_OP_READ:
	default:
		bad = v->dma_len > qp->cfg.max_msg_size;
		break;
	}
	return bad ? RC_RESPST_ERR_INVALID_REQ : RC_RESPST_CHK_RKEY;
}

/*
 * CHK_RKEY (9.4.3, 9.4.4): a WRITE's first packet and a READ name memory the
 * R_Key must cover with the access they need (an empty one is not checked);
 * else a remote access error.
 */
static enum rc_resp_state resp_chk_rkey(struct rc_resp_run *c)
{
	const struct braid_roce_view *v = c->v;
	uint32_t access;

	if (c->op == BRAID_RC_OP_SEND || !c->first)
		return RC_RESPST_EXECUTE;
	access = c->op == BRAID_RC_OP_WRITE ? BRAID_RC_ACCESS_REMOTE_WRITE
					    : BRAID_RC_ACCESS_REMOTE_READ;
	if (!resp_rkey_ok(c->qp, v->rkey, v->va, v->dma_len, access, &c->ptr))
		return RC_RESPST_ERR_ACCESS;
	return RC_RESPST_EXECUTE;
}

/*
 * A SEND packet's payload, at message offset rs->off, into receive @r: the
 * message's first r->skip bytes (the caller's header) and what passes the
 * receive's end are not placed.
 */
static void resp_place(const struct rc_resp *rs, const struct rc_rwqe *r,
		       const struct braid_roce_view *v)
{
	const uint8_t *p = v->payload;
	size_t n = v->payload_len;
	uint64_t at = rs->off;

	if (at < r->skip) {
		size_t cut = r->skip - at < n ? (size_t)(r->skip - at) : n;

		p += cut;
		n -= cut;
		at += cut;
	}
	at -= r->skip;
	if (n && at < r->capacity)
		braid_iov_scatter(r->iov, r->iov_count, at, p,
				  n < r->capacity - at ? n : (size_t)(r->capacity - at));
}

/*
 * EXECUTE (9.7.5.1): a SEND's payload lands in the receive at its offset
 * (what passes the receive's end is discarded); a WRITE's in the memory its
 * first packet named; a READ fills a READ resource, whose responses
 * braid_rc_output() sends.
 */
static enum rc_resp_state resp_execute(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_resp *rs = &qp->resp;
	const struct braid_roce_view *v = c->v;

	c->npsn = 1;
	switch (c->op) {
	case BRAID_RC_OP_SEND:
		if (c->first) {
			rs->off = 0;
			rs->msg = RC_RESP_SEND;
		}
		resp_place(rs, rc_rq_at(qp, qp->rq_head), v);
		rs->off += v->payload_len;
		break;
	case BRAID_RC_OP_WRITE:
		if (c->first) {
			rs->wptr = c->ptr;
			rs->wlen = v->dma_len;
			rs->off = 0;
			rs->msg = RC_RESP_WRITE;
		}
		if (v->payload_len)
			memcpy(rs->wptr + rs->off, v->payload, v->payload_len);
		rs->off += v->payload_len;
		break;
	case BRAID_RC_OP_READ:
	default:
		c->npsn = rc_npsn(qp, v->dma_len);
		*rc_res_at(qp, rs->res_head) = (struct rc_rdres){
			.psn = v->psn,
			.npsn = c->npsn,
			.va = v->va,
			.rkey = v->rkey,
			.len = v->dma_len,
			.pending = true,
			.start_psn = v->psn,
			.cur_psn = v->psn,
			.ptr = c->ptr,
			.exec_len = v->dma_len,
		};
		break;
	}
	return c->last ? RC_RESPST_COMPLETE : RC_RESPST_ACKNOWLEDGE;
}

/*
 * COMPLETE (9.7.5.1.2): a message's last packet: the MSN counts it; a SEND
 * completes its receive (FI_ETRUNC when it did not fit), a WRITE with
 * immediate consumes one (imm_no_recv: completes without); a READ's resource is queued with the MSN its
 * responses carry.
 */
static enum rc_resp_state resp_complete(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_resp *rs = &qp->resp;
	const struct braid_roce_view *v = c->v;
	const struct rc_rwqe *r;
	uint64_t total, got;

	rs->msn = braid_psn_add(rs->msn, 1);
	switch (c->op) {
	case BRAID_RC_OP_SEND:
		r = rc_rq_at(qp, qp->rq_head);
		total = rs->off > r->skip ? rs->off - r->skip : 0;
		got = total < r->capacity ? total : r->capacity;
		resp_complete_recv(qp, BRAID_RC_COMP_RECV | (c->imm ? BRAID_RC_COMP_IMM : 0),
				   total > r->capacity ? FI_ETRUNC : 0, (size_t)got,
				   (size_t)(total - got), v->imm);
		rs->msg = RC_RESP_IDLE;
		break;
	case BRAID_RC_OP_WRITE:
		if (c->imm && qp->cfg.imm_no_recv) {
			struct braid_rc_comp wc = {
				.flags = BRAID_RC_COMP_REMOTE_WRITE | BRAID_RC_COMP_IMM,
				.len = (size_t)rs->wlen,
				.imm = v->imm,
			};

			rc_comp_push(qp, &wc);
			qp->rq_unpolled++;
		} else if (c->imm) {
			resp_complete_recv(qp, BRAID_RC_COMP_REMOTE_WRITE | BRAID_RC_COMP_IMM, 0,
					   (size_t)rs->wlen, 0, v->imm);
		}
		rs->msg = RC_RESP_IDLE;
		break;
	case BRAID_RC_OP_READ:
	default:
		rc_res_at(qp, rs->res_head)->msn = rs->msn;
		rs->res_head++;
		break;
	}
	return RC_RESPST_ACKNOWLEDGE;
}

/*
 * ACKNOWLEDGE (9.7.5.1.2): the expected PSN moves past the packet (a READ:
 * past its responses) and a gap is closed (a NAK not sent yet for it, or an
 * RNR NAK this packet got past, is dropped); an ACK is due when asked for
 * (A bit) or every ack_coalesce packets, else after ack_delay_ns; a READ's
 * responses acknowledge everything up to them.
 */
static enum rc_resp_state resp_acknowledge(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_resp *rs = &qp->resp;
	const struct braid_roce_view *v = c->v;
	uint32_t npsn = c->npsn;
	uint64_t now = c->now;

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
		return RC_RESPST_DONE;
	}
	rs->ack_count++;
	if (v->ack_req || rs->ack_count >= qp->cfg.ack_coalesce)
		rs->ack_now = true;
	else if (rs->ack_deadline == RC_NONE)
		rs->ack_deadline = now + qp->cfg.ack_delay_ns;
	return RC_RESPST_DONE;
}

/*
 * DUPLICATE (9.9.3.2.1): a request behind the expected PSN. A SEND or WRITE
 * is not executed again but re-ACKed at once (the requester resent it: our
 * ACK was lost or late); a READ may be answered again.
 */
static enum rc_resp_state resp_duplicate(struct rc_resp_run *c)
{
	if (c->v->opcode == BRAID_ROCE_READ_REQ)
		return RC_RESPST_DUPLICATE_READ;
	c->qp->resp.ack_force = true;
	return resp_drop(c, BRAID_RC_DROP_DUPLICATE);
}

/*
 * DUPLICATE_READ (9.9.3.2.1): a READ is answered again from the resource
 * kept for it, from the PSN the requester restarts at, if it still is among
 * the last max_dest_rd_atomic and asks for what we executed (else it is
 * silently dropped). Responses of that and later READs still queued are
 * cut: the requester's go-back-N sends those again too.
 */
static enum rc_resp_state resp_duplicate_read(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;
	struct rc_resp *rs = &qp->resp;
	const struct braid_roce_view *v = c->v;
	uint64_t n = rs->res_head < qp->cfg.max_dest_rd_atomic ? rs->res_head
							       : qp->cfg.max_dest_rd_atomic;
	uint64_t i, j;

	for (i = rs->res_head; n; n--) {
		struct rc_rdres *s = rc_res_at(qp, --i);
		uint64_t off;
		void *ptr = NULL;

		if (!psn_in(v->psn, s->psn, s->npsn))
			continue;
		off = (uint64_t)braid_psn_diff(v->psn, s->psn) * qp->cfg.mtu;
		if (v->rkey != s->rkey || off > s->len || v->va != s->va + off ||
		    v->dma_len != s->len - off)
			break;	/* not the request we executed */
		if (!resp_rkey_ok(qp, v->rkey, v->va, v->dma_len, BRAID_RC_ACCESS_REMOTE_READ, &ptr))
			break;
		for (j = i + 1; j != rs->res_head; j++)
			rc_res_at(qp, j)->pending = false;
		s->pending = true;
		s->replay = true;
		s->start_psn = s->cur_psn = v->psn;
		s->ptr = ptr;
		s->exec_len = v->dma_len;
		if (i < rs->res_tx)
			rs->res_tx = i;
		break;
	}
	return resp_drop(c, BRAID_RC_DROP_DUPLICATE);
}

/* ERR_PSN_SEQ (9.7.5.1.1): a gap: one sequence error NAK of the expected PSN until it comes */
static enum rc_resp_state resp_err_psn_seq(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;

	if (!qp->resp.nak_sent)
		resp_nak(qp, BRAID_ROCE_AETH_NAK | BRAID_ROCE_NAK_PSN_SEQ_ERR, qp->resp.epsn);
	return resp_drop(c, BRAID_RC_DROP_SEQ);
}

/* ERR_RNR (9.7.5.2.8): receiver not ready: an RNR NAK with our timer; the requester waits */
static enum rc_resp_state resp_err_rnr(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;

	resp_nak(qp, BRAID_ROCE_AETH_RNR_NAK | rc_rnr_code(qp->cfg.min_rnr_timer_ns), c->v->psn);
	return RC_RESPST_DONE;
}

/* ERR_INVALID_REQ (9.9.3.1.2): an invalid request: a class C error */
static enum rc_resp_state resp_err_invalid_req(struct rc_resp_run *c)
{
	c->nak_code = BRAID_ROCE_NAK_INVALID_REQ;
	c->err = FI_EINVAL;
	return RC_RESPST_ERROR;
}

/* ERR_ACCESS (9.9.3.1.2): a remote access error: a class C error */
static enum rc_resp_state resp_err_access(struct rc_resp_run *c)
{
	c->nak_code = BRAID_ROCE_NAK_REM_ACCESS_ERR;
	c->err = FI_EACCES;
	return RC_RESPST_ERROR;
}

/*
 * ERROR (9.9.3.1.2): a responder class C error: NAK it and move the QP to
 * error; the receive of the message in progress completes with the error.
 */
static enum rc_resp_state resp_error(struct rc_resp_run *c)
{
	struct braid_rc_qp *qp = c->qp;

	resp_nak(qp, BRAID_ROCE_AETH_NAK | c->nak_code, qp->resp.epsn);
	rc_qp_error(qp, c->err, qp->req.tail, c->err);
	return RC_RESPST_DONE;
}

/* ---- the loop ---- */

int rc_resp_input(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
{
	struct rc_resp_run c = { .qp = qp, .v = v, .now = now };
	enum rc_resp_state s = RC_RESPST_CHK_PSN, n = s;

	while (s != RC_RESPST_DONE) {
		switch (s) {
		case RC_RESPST_CHK_PSN:		n = resp_chk_psn(&c); break;
		case RC_RESPST_CHK_OP_SEQ:	n = resp_chk_op_seq(&c); break;
		case RC_RESPST_CHK_PKT_LEN:	n = resp_chk_pkt_len(&c); break;
		case RC_RESPST_CHK_RESOURCE:	n = resp_chk_resource(&c); break;
		case RC_RESPST_CHK_LENGTH:	n = resp_chk_length(&c); break;
		case RC_RESPST_CHK_RKEY:	n = resp_chk_rkey(&c); break;
		case RC_RESPST_EXECUTE:		n = resp_execute(&c); break;
		case RC_RESPST_COMPLETE:	n = resp_complete(&c); break;
		case RC_RESPST_ACKNOWLEDGE:	n = resp_acknowledge(&c); break;
		case RC_RESPST_DUPLICATE:	n = resp_duplicate(&c); break;
		case RC_RESPST_DUPLICATE_READ:	n = resp_duplicate_read(&c); break;
		case RC_RESPST_ERR_PSN_SEQ:	n = resp_err_psn_seq(&c); break;
		case RC_RESPST_ERR_RNR:		n = resp_err_rnr(&c); break;
		case RC_RESPST_ERR_INVALID_REQ:	n = resp_err_invalid_req(&c); break;
		case RC_RESPST_ERR_ACCESS:	n = resp_err_access(&c); break;
		case RC_RESPST_ERROR:		n = resp_error(&c); break;
		case RC_RESPST_DONE:
		case RC_RESPST_NUM:
			assert(0);
			return c.ret;
		}
		if (n != s)
			rc_trace(c.qp, "responder", rc_resp_state_names[s], rc_resp_state_names[n]);
		s = n;
	}
	return c.ret;
}

/* ---- output: READ responses, ACKs and NAKs (braid_rc_output()) ---- */

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
