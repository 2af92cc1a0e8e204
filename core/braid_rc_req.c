/* braid_rc_req.c: the RC requester: the send queue cut into request packets, the send window, go-back-N restarts (IBTA 9.7.1, 9.7.4, 9.4). */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

/* PSNs sent beyond una, counting the packet at tx_psn */
static uint32_t rc_req_unacked(const struct braid_rc_qp *qp)
{
	return (uint32_t)braid_psn_diff(qp->req.tx_psn, qp->req.una) + 1;
}

/* has the requester a packet it may send now? (send window, READ limit, RNR wait) */
bool rc_req_ready(const struct braid_rc_qp *qp)
{
	const struct rc_req *rq = &qp->req;
	const struct rc_swqe *w;

	if (qp->state != RC_QP_RTS || rq->rnr_deadline != RC_NONE || rq->tx == rq->tail)
		return false;
	if (rc_req_unacked(qp) > RC_MAX_UNACKED_PSNS)
		return false;
	w = rc_sq_at(qp, rq->tx);
	if (!w->started) {
		if (w->op == BRAID_RC_OP_READ && rq->reads_out >= qp->cfg.max_rd_atomic)
			return false;
		/* keep every outstanding PSN within RC_PSN_WINDOW of the oldest */
		if ((uint32_t)braid_psn_diff(braid_psn_add(rc_swqe_last(w), 1), rq->una) >
		    RC_PSN_WINDOW)
			return false;
	}
	return true;
}

/* opcode of packet @psn of @w (IBTA Table 38); *@last: it ends the request message */
static uint8_t rc_req_opcode(const struct rc_swqe *w, uint32_t psn, bool *last)
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

/*
 * rc_req_emit() - the packet at tx_psn of sq[tx] (IBTA 9.4): SEND and WRITE
 * segments of one MTU, RETH on a WRITE's first packet, ImmDt on the last;
 * a READ request from tx_psn on (a restart in the middle of a READ asks for
 * the rest: its RETH moves on by the PSNs already answered, as IBTA 9.4.4
 * has it). The A bit asks for an ACK at the end of each message, every
 * ack_coalesce packets, and when this packet fills the send window.
 */
void rc_req_emit(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *o)
{
	struct rc_req *rq = &qp->req;
	struct rc_swqe *w = rc_sq_at(qp, rq->tx);
	uint32_t psn = rq->tx_psn, idx = (uint32_t)braid_psn_diff(psn, w->first_psn), next_hw;
	uint64_t off = (uint64_t)idx * qp->cfg.mtu;
	struct braid_roce_view v;
	bool last;
	uint8_t op = rc_req_opcode(w, psn, &last);
	size_t bytes;

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
		if (last && (w->flags & BRAID_RC_IMM))
			v.imm = w->imm;
		if (last && (w->flags & BRAID_RC_SOLICITED) &&
		    (w->op == BRAID_RC_OP_SEND || (w->flags & BRAID_RC_IMM)))
			v.se = true;
		o->payload_iovcnt = braid_iov_slice(w->iov, w->iov_count, off, plen, o->payload,
						    BRAID_RC_IOV_MAX + 1);
		o->payload_len = plen;
	}
	v.ack_req = last || (idx + 1) % qp->cfg.ack_coalesce == 0 ||
		    rc_req_unacked(qp) >= RC_MAX_UNACKED_PSNS;
	bytes = rc_out_finish(qp, o, &v);
	if (braid_psn_diff(psn, rq->hw_psn) < 0) {
		qp->stats.retx_pkts++;
		qp->stats.retx_bytes += bytes;
	}
	if (!w->started) {
		w->started = true;
		if (w->op == BRAID_RC_OP_READ)
			rq->reads_out++;
	}
	if (last) {
		next_hw = braid_psn_add(rc_swqe_last(w), 1);
		rq->tx++;
		rq->tx_psn = next_hw;
	} else {
		next_hw = braid_psn_add(psn, 1);
		rq->tx_psn = next_hw;
	}
	if (braid_psn_diff(next_hw, rq->hw_psn) > 0)
		rq->hw_psn = next_hw;
	if (rq->rto_deadline == RC_NONE && qp->cfg.timeout_ns)
		rq->rto_deadline = now + qp->cfg.timeout_ns;
}

/* go back N: transmit again from the oldest unacknowledged PSN (IBTA 9.9.2.1) */
void rc_req_go_back(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;

	rq->tx = rq->head;
	rq->tx_psn = rq->una;
	rq->rto_deadline = qp->cfg.timeout_ns ? now + qp->cfg.timeout_ns : RC_NONE;
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
	if (wr->op == BRAID_RC_OP_READ &&
	    ((wr->flags & (BRAID_RC_IMM | BRAID_RC_INJECT)) || !qp->cfg.max_rd_atomic))
		return -FI_EINVAL;
	if (qp->state != RC_QP_RTS)
		return -FI_EOPBADSTATE;
	len = braid_iov_len(wr->iov, wr->iov_count);
	if (len > qp->cfg.max_msg_size)
		return -FI_EMSGSIZE;
	if ((wr->flags & BRAID_RC_INJECT) && len > qp->cfg.inject_size)
		return -FI_EMSGSIZE;
	if (rq->tail - rq->head + rq->unpolled >= qp->cfg.max_send_wr)
		return -FI_EAGAIN;

	w = rc_sq_at(qp, rq->tail);
	memset(w, 0, sizeof(*w));
	w->op = wr->op;
	w->len = len;
	w->raddr = wr->raddr;
	w->rkey = wr->rkey;
	w->imm = wr->imm;
	w->flags = wr->flags;
	w->context = wr->context;
	if (wr->flags & BRAID_RC_INJECT) {
		uint8_t *buf = qp->inject + (rq->tail % qp->cfg.max_send_wr) * qp->cfg.inject_size;

		braid_iov_gather(wr->iov, wr->iov_count, buf);
		w->iov[0].iov_base = buf;
		w->iov[0].iov_len = len;
		w->iov_count = 1;
	} else {
		for (i = 0; i < wr->iov_count; i++)
			w->iov[i] = wr->iov[i];
		w->iov_count = wr->iov_count;
	}
	w->first_psn = rq->next_psn;
	w->npsn = rc_npsn(qp, len);
	rq->next_psn = braid_psn_add(rq->next_psn, w->npsn);
	rq->tail++;
	return 0;
}
