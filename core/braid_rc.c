/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc.c: the RoCEv2 RC queue pair (IBTA vol. 1 ch. 9), sans-I/O: open/close, input dispatch, output arbitration, timers, completions, errors; the roles are in braid_rc_{req,comp,resp}.c. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc_int.h"

#define RC_MAX_DEPTH		(1u << 20)
#define RC_MAX_INJECT		(1u << 16)

/* IBTA Table 45: RNR NAK timer codes, in ns (code 0 is the longest) */
static const uint64_t rc_rnr_ns[32] = {
	655360000, 10000, 20000, 30000, 40000, 60000, 80000, 120000,
	160000, 240000, 320000, 480000, 640000, 960000, 1280000, 1920000,
	2560000, 3840000, 5120000, 7680000, 10240000, 15360000, 20480000, 30720000,
	40960000, 61440000, 81920000, 122880000, 163840000, 245760000, 327680000, 491520000,
};

/* the smallest Table 45 code whose time is at least @ns */
uint8_t rc_rnr_code(uint64_t ns)
{
	uint8_t c;

	for (c = 1; c < 32; c++)
		if (rc_rnr_ns[c] >= ns)
			return c;
	return 0;
}

static const char *const rc_drop_names[BRAID_RC_DROP_MAX] = {
#define BRAID_X_NAME(e, name, meaning) [e] = #name,
	BRAID_RC_DROP_TABLE(BRAID_X_NAME)
#undef BRAID_X_NAME
};

uint64_t braid_rc_timeout_ns(unsigned int code)
{
	return code ? 4096ULL << (code & 31) : 0;
}

uint64_t braid_rc_rnr_timer_ns(unsigned int code)
{
	return rc_rnr_ns[code & 31];
}

const char *braid_rc_drop_str(enum braid_rc_drop reason)
{
	if ((unsigned)reason >= BRAID_RC_DROP_MAX)
		return "?";
	return rc_drop_names[reason];
}

void braid_rc_config_default(struct braid_rc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pkey = BRAID_ROCE_DEFAULT_PKEY;
	cfg->mtu = 4096;
	cfg->max_send_wr = 256;
	cfg->max_recv_wr = 256;
	cfg->max_rd_atomic = 16;
	cfg->max_dest_rd_atomic = 16;
	cfg->max_msg_size = 1ULL << 30;
	cfg->inject_size = 64;
	cfg->timeout_ns = braid_rc_timeout_ns(BRAID_RC_DEFAULT_TIMEOUT);
	cfg->retry_cnt = BRAID_RC_DEFAULT_RETRY;
	cfg->rnr_retry = BRAID_RC_DEFAULT_RNR_RETRY;
	cfg->min_rnr_timer_ns = braid_rc_rnr_timer_ns(BRAID_RC_DEFAULT_MIN_RNR_TIMER);
	cfg->ack_coalesce = 16;
	cfg->ack_delay_ns = 20000;
}

/* ---- completions and packets out ---- */

void rc_comp_push(struct braid_rc_qp *qp, const struct braid_rc_comp *c)
{
	/* cannot overflow: every work request holds its slot until its completion is polled */
	assert(qp->comp_count < qp->comp_cap);
	qp->comps[(qp->comp_head + qp->comp_count) % qp->comp_cap] = *c;
	qp->comp_count++;
}

void rc_view_init(const struct braid_rc_qp *qp, struct braid_roce_view *v, uint8_t opcode,
		  uint32_t psn)
{
	memset(v, 0, sizeof(*v));
	v->opcode = opcode;
	v->mig = true;
	v->pkey = qp->cfg.pkey;
	v->dest_qp = qp->cfg.remote_qpn;
	v->psn = psn;
}

/* header, pad and ICRC of @o, whose payload iovecs are set; returns the packet's bytes */
size_t rc_out_finish(struct braid_rc_qp *qp, struct braid_rc_out *o, struct braid_roce_view *v)
{
	size_t pad = (4 - (o->payload_len & 3)) & 3, bytes;
	uint32_t icrc;

	v->payload_len = o->payload_len;
	o->hdr_len = (uint16_t)braid_roce_write(o->hdr, v);
	assert(o->hdr_len);
	icrc = braid_roce_icrc(&qp->cfg.addr, o->hdr, o->hdr_len, o->payload, o->payload_iovcnt,
			       o->payload_len, pad);
	memset(o->trailer, 0, pad);
	braid_roce_icrc_put(o->trailer + pad, icrc);
	o->trailer_len = (uint16_t)(pad + BRAID_ROCE_ICRC_LEN);
	bytes = o->hdr_len + o->payload_len + o->trailer_len;
	qp->stats.tx_pkts++;
	qp->stats.tx_bytes += bytes;
	return bytes;
}

/* ---- errors and flushing (IBTA 10.3.1: the Error state) ---- */

/*
 * rc_qp_error() - move the QP to error: the send WR at index @fail gets
 * @err (any other index: none does), every other outstanding send and every
 * posted receive completes FI_ECANCELED, except the receive a message in
 * progress holds, which gets @recv_err when it is not 0 (a responder class
 * C error: then READ responses owed for earlier requests still go out, in
 * PSN order, before its NAK). A NAK already decided still goes out; no
 * request does.
 */
void rc_qp_error(struct braid_rc_qp *qp, int err, uint64_t fail, int recv_err)
{
	struct rc_resp *rs = &qp->resp;
	struct rc_req *rq = &qp->req;
	uint64_t i;
	bool held = recv_err && rs->msg == RC_RESP_SEND;

	if (qp->state == RC_QP_ERR)
		return;
	rc_trace(qp, "qp", "RTS", "ERR");
	qp->state = RC_QP_ERR;
	qp->err = err;
	while (rq->head != rq->tail)
		rc_comp_finish_head(qp, rq->head == fail ? err : FI_ECANCELED);
	rq->tx = rq->tail;
	rq->rto_deadline = RC_NONE;
	rq->rnr_deadline = RC_NONE;
	for (i = qp->rq_head; i != qp->rq_tail; i++) {
		struct rc_rwqe *r = rc_rq_at(qp, i);
		struct braid_rc_comp c = {
			.context = r->context,
			.flags = BRAID_RC_COMP_RECV,
			.err = (held && i == qp->rq_head) ? recv_err : FI_ECANCELED,
			.buf = r->iov_count ? r->iov[0].iov_base : NULL,
		};

		rc_comp_push(qp, &c);
		qp->rq_unpolled++;
		rc_recv_done(qp, r, 0, c.err);
	}
	qp->rq_head = qp->rq_tail;
	if (!recv_err) {
		for (i = rs->res_tx; i != rs->res_head; i++)
			rc_res_at(qp, i)->pending = false;
		rs->res_tx = rs->res_head;
	}
	rs->msg = RC_RESP_IDLE;
	rs->ack_now = rs->ack_force = false;
	rs->ack_deadline = RC_NONE;
}

/* ======================================================================
 * the QP: open, post, input, output, timers, completions
 * ====================================================================== */

static bool rc_mtu_ok(uint32_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

int braid_rc_open(const struct braid_rc_config *cfg, struct braid_rc_qp **qpp)
{
	struct braid_rc_qp *qp;
	size_t nres;

	if (!cfg || !qpp)
		return -FI_EINVAL;
	*qpp = NULL;
	if (!rc_mtu_ok(cfg->mtu) || !cfg->max_send_wr || !cfg->max_recv_wr ||
	    cfg->max_send_wr > RC_MAX_DEPTH || cfg->max_recv_wr > RC_MAX_DEPTH ||
	    cfg->local_qpn > BRAID_ROCE_QPN_MASK || cfg->remote_qpn > BRAID_ROCE_QPN_MASK ||
	    cfg->sq_psn > BRAID_ROCE_PSN_MASK || cfg->rq_psn > BRAID_ROCE_PSN_MASK ||
	    !(cfg->pkey & 0x7fff) || cfg->retry_cnt > 7 || cfg->rnr_retry > 7 ||
	    !cfg->ack_coalesce || cfg->inject_size > RC_MAX_INJECT ||
	    cfg->max_rd_atomic > RC_MAX_DEPTH || cfg->max_dest_rd_atomic > RC_MAX_DEPTH ||
	    cfg->max_msg_size > (1ULL << 31) ||
	    (cfg->max_msg_size + cfg->mtu - 1) / cfg->mtu > RC_PSN_WINDOW)
		return -FI_EINVAL;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -FI_ENOMEM;
	qp->cfg = *cfg;
	nres = cfg->max_dest_rd_atomic ? cfg->max_dest_rd_atomic : 1;
	qp->comp_cap = cfg->max_send_wr + cfg->max_recv_wr;
	qp->sq = calloc(cfg->max_send_wr, sizeof(*qp->sq));
	qp->rq = calloc(cfg->max_recv_wr, sizeof(*qp->rq));
	qp->resp.res = calloc(nres, sizeof(*qp->resp.res));
	qp->comps = calloc(qp->comp_cap, sizeof(*qp->comps));
	if (cfg->inject_size)
		qp->inject = malloc((size_t)cfg->max_send_wr * cfg->inject_size);
	if (!qp->sq || !qp->rq || !qp->resp.res || !qp->comps ||
	    (cfg->inject_size && !qp->inject)) {
		braid_rc_close(qp);
		return -FI_ENOMEM;
	}
	if (cfg->rx_addr.src_ip || cfg->rx_addr.dst_ip || cfg->rx_addr.src_port ||
	    cfg->rx_addr.dst_port) {
		qp->rx_addr = cfg->rx_addr;
	} else {
		qp->rx_addr.src_ip = cfg->addr.dst_ip;
		qp->rx_addr.dst_ip = cfg->addr.src_ip;
		qp->rx_addr.src_port = cfg->addr.dst_port;
		qp->rx_addr.dst_port = cfg->addr.src_port;
	}

	qp->req.next_psn = qp->req.una = qp->req.tx_psn = qp->req.hw_psn = cfg->sq_psn;
	qp->req.retry_left = cfg->retry_cnt;
	qp->req.rnr_left = cfg->rnr_retry;
	qp->req.rto_deadline = qp->req.rnr_deadline = RC_NONE;
	qp->resp.epsn = cfg->rq_psn;
	qp->resp.acked_psn = psn_prev(cfg->rq_psn);
	qp->resp.ack_deadline = RC_NONE;
	rc_trace(qp, "qp", "RESET", "RTS");	/* created ready to send, its peer known */
	*qpp = qp;
	return 0;
}

void braid_rc_close(struct braid_rc_qp *qp)
{
	if (!qp)
		return;
	free(qp->sq);
	free(qp->rq);
	free(qp->resp.res);
	free(qp->comps);
	free(qp->inject);
	free(qp);
}

int rc_rq_push(struct braid_rc_qp *qp, const struct braid_rc_recv *rr, bool pulled)
{
	struct rc_rwqe *r;
	size_t i;

	if (!rr || rr->iov_count > BRAID_RC_IOV_MAX || (rr->iov_count && !rr->iov))
		return -FI_EINVAL;
	if (qp->state != RC_QP_RTS)
		return -FI_EOPBADSTATE;
	if (qp->rq_tail - qp->rq_head + qp->rq_unpolled >= qp->cfg.max_recv_wr)
		return -FI_EAGAIN;
	r = rc_rq_at(qp, qp->rq_tail);
	memset(r, 0, sizeof(*r));
	for (i = 0; i < rr->iov_count; i++)
		r->iov[i] = rr->iov[i];
	r->capacity = braid_iov_len(rr->iov, rr->iov_count);
	r->iov_count = rr->iov_count;
	r->flags = rr->flags;
	r->skip = rr->skip;
	r->pulled = pulled;
	r->context = rr->context;
	qp->rq_tail++;
	return 0;
}

int braid_rc_post_recv(struct braid_rc_qp *qp, const struct braid_rc_recv *rr)
{
	if (rr && rr->skip)
		return -FI_EINVAL;
	return rc_rq_push(qp, rr, false);
}

void rc_recv_done(struct braid_rc_qp *qp, const struct rc_rwqe *r, size_t len, int err)
{
	if (r->pulled && qp->cfg.recv_done)
		qp->cfg.recv_done(qp->cfg.srq_ctx, r->context, len, err);
}

static bool rc_pkey_ok(uint16_t ours, uint16_t theirs)
{
	/* IBTA 10.9.3: same key, at least one full member */
	return (ours & 0x7fff) == (theirs & 0x7fff) && (theirs & 0x7fff) &&
	       ((ours | theirs) & 0x8000);
}

int braid_rc_input(struct braid_rc_qp *qp, const void *pkt, size_t len, uint64_t now)
{
	struct braid_roce_view v;

	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += len;
	if (!pkt || braid_roce_parse(pkt, len, &v))
		return rc_drop(qp, BRAID_RC_DROP_MALFORMED);
	if (!braid_roce_icrc_ok(&qp->rx_addr, pkt, len))
		return rc_drop(qp, BRAID_RC_DROP_ICRC);
	if (v.dest_qp != qp->cfg.local_qpn)
		return rc_drop(qp, BRAID_RC_DROP_QP);
	if (!rc_pkey_ok(qp->cfg.pkey, v.pkey))
		return rc_drop(qp, BRAID_RC_DROP_PKEY);
	if (qp->state != RC_QP_RTS)
		return rc_drop(qp, BRAID_RC_DROP_STATE);
	switch (v.opcode) {
	case BRAID_ROCE_ACK:
	case BRAID_ROCE_READ_RESP_FIRST:
	case BRAID_ROCE_READ_RESP_MIDDLE:
	case BRAID_ROCE_READ_RESP_LAST:
	case BRAID_ROCE_READ_RESP_ONLY:
		return rc_comp_input(qp, &v, now);	/* responses: the completer */
	default:
		return rc_resp_input(qp, &v, now);	/* requests: the responder */
	}
}

int braid_rc_output(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *out, int max)
{
	int n = 0;

	while (n < max) {
		struct rc_rdres *job;
		bool req;

		/* ACKs and NAKs first: they are small and unblock the peer */
		if (rc_resp_ctl_ready(qp)) {
			rc_resp_emit_ctl(qp, &out[n++]);
			continue;
		}
		job = rc_resp_job(qp);	/* in error: only responses owed before a class C NAK */
		req = rc_req_ready(qp);
		if (!job && !req)
			break;
		if (job && (!req || qp->req.turn)) {
			rc_resp_emit_read(qp, job, &out[n++]);
			qp->req.turn = false;
		} else {
			req = rc_req_output(qp, now, &out[n++]);
			assert(req);
			qp->req.turn = true;
		}
	}
	return n;
}

bool braid_rc_ready(struct braid_rc_qp *qp)
{
	return rc_resp_ctl_ready(qp) || rc_resp_job(qp) || rc_req_ready(qp);
}

uint64_t braid_rc_next_deadline(const struct braid_rc_qp *qp)
{
	uint64_t d = UINT64_MAX;

	if (qp->state != RC_QP_RTS)
		return d;
	if (qp->req.rto_deadline < d)
		d = qp->req.rto_deadline;
	if (qp->req.rnr_deadline < d)
		d = qp->req.rnr_deadline;
	if (qp->resp.ack_deadline < d)
		d = qp->resp.ack_deadline;
	return d;
}

void braid_rc_timer(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;
	struct rc_resp *rs = &qp->resp;

	if (qp->state != RC_QP_RTS)
		return;
	if (rq->rnr_deadline != RC_NONE && now >= rq->rnr_deadline) {
		/* the RNR wait is over: send again from the PSN the RNR NAK named */
		rq->rnr_deadline = RC_NONE;
		rc_req_go_back(qp, now);
	}
	if (rq->rto_deadline != RC_NONE && now >= rq->rto_deadline) {
		rc_comp_timeout(qp, now);	/* local ACK timeout (IBTA 9.7.6.1.3) */
		if (qp->state != RC_QP_RTS)
			return;
	}
	if (rs->ack_deadline != RC_NONE && now >= rs->ack_deadline) {
		rs->ack_deadline = RC_NONE;
		rs->ack_now = true;
	}
}

int braid_rc_poll(struct braid_rc_qp *qp, struct braid_rc_comp *comps, int max)
{
	int n = 0;

	while (n < max && qp->comp_count) {
		struct braid_rc_comp *c = &qp->comps[qp->comp_head];

		if (c->flags & (BRAID_RC_COMP_SEND | BRAID_RC_COMP_WRITE | BRAID_RC_COMP_READ))
			qp->req.unpolled--;
		else
			qp->rq_unpolled--;
		comps[n++] = *c;
		qp->comp_head = (qp->comp_head + 1) % qp->comp_cap;
		qp->comp_count--;
	}
	return n;
}

void braid_rc_flush(struct braid_rc_qp *qp)
{
	struct rc_resp *rs = &qp->resp;
	uint64_t i;

	rc_qp_error(qp, FI_ECANCELED, qp->req.tail, 0);
	/* READ responses still owed after a class C error do not go out either */
	for (i = rs->res_tx; i != rs->res_head; i++)
		rc_res_at(qp, i)->pending = false;
	rs->res_tx = rs->res_head;
	/* a final ACK of what was received and not acknowledged */
	if (rs->acked_psn != psn_prev(rs->epsn))
		rs->ack_now = true;
}

int braid_rc_error(const struct braid_rc_qp *qp)
{
	return qp->state == RC_QP_RTS ? 0 : qp->err;
}

bool braid_rc_pending(const struct braid_rc_qp *qp)
{
	const struct rc_resp *rs = &qp->resp;
	uint64_t i;

	if (rs->nak_pending ||
	    ((rs->ack_now || rs->ack_force) && (rs->ack_force || rs->acked_psn != psn_prev(rs->epsn))))
		return true;
	for (i = rs->res_tx; i != rs->res_head; i++)
		if (rc_res_at(qp, i)->pending)
			return true;
	return qp->state == RC_QP_RTS &&
	       (qp->req.head != qp->req.tail || rs->ack_deadline != RC_NONE);
}

const struct braid_rc_stats *braid_rc_get_stats(const struct braid_rc_qp *qp)
{
	return &qp->stats;
}

bool braid_rc_from_peer(const struct braid_rc_qp *qp, uint32_t src_ip, uint16_t src_port)
{
	return qp->rx_addr.src_ip == src_ip && qp->rx_addr.src_port == src_port;
}

void braid_rc_retry_trace(const struct braid_rc_qp *qp, char *buf, size_t len)
{
	uint32_t n = qp->nretries < RC_RETRY_TRACE ? qp->nretries : RC_RETRY_TRACE, i;
	uint64_t last = n ? qp->retries[(qp->nretries - 1) % RC_RETRY_TRACE].t : 0;
	size_t off = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (i = qp->nretries - n; i != qp->nretries && off < len; i++) {
		const struct rc_retry_ev *e = &qp->retries[i % RC_RETRY_TRACE];

		off += (size_t)snprintf(buf + off, len - off, "%s-%luus %c psn %u una %u hw %u left %u",
					off ? "; " : "", (unsigned long)((last - e->t) / 1000), e->why,
					e->psn, e->una, e->hw_psn, e->left);
	}
}
