/* braid_rc.c: the RoCEv2 RC queue-pair engine (IBTA vol. 1 ch. 9): requester, completer and responder of one QP, sans-I/O. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rc.h"

/*
 * One QP plays three roles, as in Soft-RoCE (rxe_req.c, rxe_comp.c,
 * rxe_resp.c), each in its own section below:
 *
 *   requester (rc_req_*):  the send queue cut into request packets: PSNs,
 *                          segmentation at the MTU, the send window,
 *                          go-back-N restarts (IBTA 9.7.1, 9.7.4).
 *   completer (rc_comp_*): ACKs, NAKs and READ responses coming back:
 *                          coalesced and implicit acknowledgement, send
 *                          completions in posting order, retry and RNR
 *                          retry counters, the local ACK timeout (9.7.5.2,
 *                          9.9.2).
 *   responder (rc_resp_*): request packets coming in: strict in-order
 *                          acceptance by the expected PSN, duplicates,
 *                          one PSN sequence error NAK per gap, RNR NAK,
 *                          placement, memory-key checks, READ responses
 *                          (kept for replay), MSN, ACK coalescing (9.7.5.1,
 *                          9.8, 9.9.3).
 *
 * Every PSN comparison goes through braid_psn_diff() (24 bits, wrap-safe).
 * Everything is allocated in braid_rc_open(): the send queue, receive queue,
 * READ response resources and completion ring are fixed rings.
 */

/*
 * The send window: PSNs the requester may have sent beyond the oldest one
 * not acknowledged, READ response PSNs included; a work request starts only
 * when its first PSN is inside it (as Soft-RoCE's RXE_MAX_UNACKED_PSNS). It
 * bounds what one go-back-N restart sends again, and what a READ responder
 * has queued towards us, to about one window: on a host, unlike on a NIC's
 * wire, nothing paces a burst to a link's rate, and a burst the size of every
 * outstanding message would fill the receiver's socket and lose itself again.
 */
#define RC_MAX_UNACKED_PSNS	128u
/*
 * PSNs the requester may have outstanding, READ response PSNs included
 * (IBTA needs fewer than 2^23). The responder therefore sees no legitimate
 * request further than this ahead of or behind its expected PSN: such a
 * PSN is out of window.
 */
#define RC_PSN_WINDOW		(1u << 22)
#define RC_MAX_DEPTH		(1u << 20)
#define RC_MAX_INJECT		(1u << 16)
#define RC_NONE			UINT64_MAX	/* a deadline not armed */

#define RC_AETH_KIND(s)		((s) & 0x60)
#define RC_AETH_VALUE(s)	((s) & 0x1f)
#define RC_AETH_ACK_NO_CREDIT	(BRAID_ROCE_AETH_ACK | BRAID_ROCE_AETH_CREDIT_INVALID)

enum rc_qp_state {
	RC_QP_RTS = 0,		/* ready to send: both directions work */
	RC_QP_ERR,		/* error: flushed; only a final NAK/ACK may still go out */
};

/* the message the responder is in the middle of (opcode sequence, IBTA 9.8.3.1) */
enum rc_resp_msg {
	RC_RESP_IDLE = 0,	/* expects a FIRST or ONLY packet or a READ request */
	RC_RESP_SEND,		/* expects SEND_MIDDLE or SEND_LAST* */
	RC_RESP_WRITE,		/* expects WRITE_MIDDLE or WRITE_LAST* */
};

/** A send work request in the send queue ring (slot: index % max_send_wr). */
struct rc_swqe {
	enum braid_rc_op op;
	/** @iov: the caller's buffers, or one iovec over this slot's inject copy. */
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t iov_count;
	uint64_t len;
	uint64_t raddr;
	uint32_t rkey, imm, flags;
	void *context;
	/** @first_psn, @npsn: the PSNs it occupies (READ: its responses' PSNs). */
	uint32_t first_psn, npsn;
	/** @started: its first packet has been sent (a READ then counts in reads_out). */
	bool started;
};

/** A posted receive in the receive queue ring (slot: index % max_recv_wr). */
struct rc_rwqe {
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t iov_count;
	uint64_t capacity;
	uint32_t flags;
	void *context;
};

/** A READ the responder executed, kept to replay duplicates (ring of max_dest_rd_atomic). */
struct rc_rdres {
	/** @psn, @npsn, @va, @rkey, @len: the original request (its response PSNs). */
	uint32_t psn, npsn;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	/** @msn: the MSN its responses carry. */
	uint32_t msn;
	/** @pending: response packets remain to be sent. */
	bool pending;
	/** @start_psn: where the current execution (first or replay) starts: FIRST/ONLY there. */
	uint32_t start_psn;
	/** @cur_psn: the next response PSN to send. */
	uint32_t cur_psn;
	/** @ptr, @exec_len: the memory of the current execution, from @start_psn on. */
	const uint8_t *ptr;
	uint32_t exec_len;
};

/** Requester and completer state. */
struct rc_req {
	/** @head, @tx, @tail: oldest unfinished, next to transmit, next free (free-running). */
	uint64_t head, tx, tail;
	/** @unpolled: finished sends whose completion is not polled yet (they keep their slot). */
	uint32_t unpolled;
	/** @next_psn: the PSN the next posted request gets. */
	uint32_t next_psn;
	/** @una: oldest PSN not acknowledged (inside sq[head] while it is unfinished). */
	uint32_t una;
	/** @tx_psn: the PSN of the next packet to transmit (of sq[tx]). */
	uint32_t tx_psn;
	/** @hw_psn: one past the highest PSN ever transmitted (below it a packet is a resend). */
	uint32_t hw_psn;
	/** @reads_out: READs started and not finished (bounded by max_rd_atomic). */
	uint32_t reads_out;
	/** @retry_left, @rnr_left: retries left since the last forward progress. */
	uint32_t retry_left, rnr_left;
	/** @rto_deadline: the local ACK timeout; @rnr_deadline: the end of an RNR wait. */
	uint64_t rto_deadline, rnr_deadline;
	/** @rnr_psn: the PSN the RNR NAK named. */
	uint32_t rnr_psn;
	/**
	 * @nak_acted, @nak_psn: a PSN sequence error (explicit or implied by a
	 * missing READ response) already restarted us at @nak_psn and neither
	 * progress nor a timeout came since: the responder NAKs a gap once, so
	 * another NAK of the same PSN is a stale copy, and later responses of
	 * the stream in flight before the restart must not restart us again.
	 */
	bool nak_acted;
	uint32_t nak_psn;
	/** @turn: output alternates between READ responses and requests when both wait. */
	bool turn;
};

/** Responder state. */
struct rc_resp {
	enum rc_resp_msg msg;
	/** @epsn: the next PSN we accept; @msn: request messages completed (24 bits). */
	uint32_t epsn, msn;
	/** @off: bytes of the current SEND/WRITE message placed so far. */
	uint64_t off;
	/** @wptr, @wlen: the current WRITE's target memory (mr_check) and DMA length. */
	uint8_t *wptr;
	uint64_t wlen;
	/** @nak_sent: a NAK for @epsn is out: requests beyond it are dropped without another NAK. */
	bool nak_sent;
	/** @nak_pending, @nak_syn, @nak_psn: a NAK (any kind) to send. */
	bool nak_pending;
	uint8_t nak_syn;
	uint32_t nak_psn;
	/** @ack_count: accepted packets not acknowledged yet. */
	uint32_t ack_count;
	/** @ack_now: an ACK is due; @ack_force: due even if it acknowledges nothing new (duplicates). */
	bool ack_now, ack_force;
	uint64_t ack_deadline;
	/** @acked_psn: the latest PSN an ACK or READ response of ours acknowledged. */
	uint32_t acked_psn;
	/** @res, @res_head, @res_tx: READ resources: next to allocate, first that may still send. */
	struct rc_rdres *res;
	uint64_t res_head, res_tx;
};

struct braid_rc_qp {
	struct braid_rc_config cfg;
	/** @rx_addr: the addresses of packets we receive (cfg.addr reversed): their ICRC covers them. */
	struct braid_roce_addr rx_addr;
	enum rc_qp_state state;
	/** @err: the positive FI_E* that moved the QP to error. */
	int err;
	struct rc_swqe *sq;
	uint8_t *inject;
	struct rc_rwqe *rq;
	uint64_t rq_head, rq_tail;
	uint32_t rq_unpolled;
	struct rc_req req;
	struct rc_resp resp;
	/** @comps: ring of max_send_wr + max_recv_wr: never full (slots are held until polled). */
	struct braid_rc_comp *comps;
	uint32_t comp_head, comp_count, comp_cap;
	struct braid_rc_stats stats;
};

/* IBTA Table 45: RNR NAK timer codes, in ns (code 0 is the longest) */
static const uint64_t rc_rnr_ns[32] = {
	655360000, 10000, 20000, 30000, 40000, 60000, 80000, 120000,
	160000, 240000, 320000, 480000, 640000, 960000, 1280000, 1920000,
	2560000, 3840000, 5120000, 7680000, 10240000, 15360000, 20480000, 30720000,
	40960000, 61440000, 81920000, 122880000, 163840000, 245760000, 327680000, 491520000,
};

/* the smallest Table 45 code whose time is at least @ns */
static uint8_t rc_rnr_code(uint64_t ns)
{
	uint8_t c;

	for (c = 1; c < 32; c++)
		if (rc_rnr_ns[c] >= ns)
			return c;
	return 0;
}

static const char *const rc_drop_names[BRAID_RC_DROP_MAX] = {
	[BRAID_RC_DROP_MALFORMED] = "malformed",
	[BRAID_RC_DROP_ICRC] = "icrc",
	[BRAID_RC_DROP_QP] = "qp",
	[BRAID_RC_DROP_PKEY] = "pkey",
	[BRAID_RC_DROP_OUT_OF_WINDOW] = "out_of_window",
	[BRAID_RC_DROP_DUPLICATE] = "duplicate",
	[BRAID_RC_DROP_SEQ] = "seq",
	[BRAID_RC_DROP_STATE] = "state",
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

/* ---- small helpers ---- */

static int rc_drop(struct braid_rc_qp *qp, enum braid_rc_drop r)
{
	qp->stats.drops[r]++;
	return -((int)r + 1);
}

static inline uint32_t psn_prev(uint32_t psn)
{
	return braid_psn_add(psn, BRAID_ROCE_PSN_MASK);
}

/* PSNs a message of @len bytes occupies: one per MTU, one for an empty message */
static uint32_t rc_npsn(const struct braid_rc_qp *qp, uint64_t len)
{
	return len ? (uint32_t)((len + qp->cfg.mtu - 1) / qp->cfg.mtu) : 1;
}

static inline struct rc_swqe *rc_sq_at(const struct braid_rc_qp *qp, uint64_t i)
{
	return &qp->sq[i % qp->cfg.max_send_wr];
}

static inline struct rc_rwqe *rc_rq_at(const struct braid_rc_qp *qp, uint64_t i)
{
	return &qp->rq[i % qp->cfg.max_recv_wr];
}

static inline struct rc_rdres *rc_res_at(const struct braid_rc_qp *qp, uint64_t i)
{
	return &qp->resp.res[i % qp->cfg.max_dest_rd_atomic];
}

static inline uint32_t rc_swqe_last(const struct rc_swqe *w)
{
	return braid_psn_add(w->first_psn, w->npsn - 1);
}

/* is @psn in [@first, @first + @n)? */
static inline bool psn_in(uint32_t psn, uint32_t first, uint32_t n)
{
	return ((psn - first) & BRAID_ROCE_PSN_MASK) < n;
}

static void rc_comp_push(struct braid_rc_qp *qp, const struct braid_rc_comp *c)
{
	/* cannot overflow: every work request holds its slot until its completion is polled */
	assert(qp->comp_count < qp->comp_cap);
	qp->comps[(qp->comp_head + qp->comp_count) % qp->comp_cap] = *c;
	qp->comp_count++;
}

static void rc_view_init(const struct braid_rc_qp *qp, struct braid_roce_view *v, uint8_t opcode,
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
static size_t rc_out_finish(struct braid_rc_qp *qp, struct braid_rc_out *o,
			    struct braid_roce_view *v)
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

static void rc_comp_finish_head(struct braid_rc_qp *qp, int err);

/*
 * rc_qp_error() - move the QP to error: the send WR at index @fail gets
 * @err (any other index: none does), every other outstanding send and every
 * posted receive completes FI_ECANCELED, except the receive a message in
 * progress holds, which gets @recv_err when it is not 0 (a responder class
 * C error: then READ responses owed for earlier requests still go out, in
 * PSN order, before its NAK). A NAK already decided still goes out; no
 * request does.
 */
static void rc_qp_error(struct braid_rc_qp *qp, int err, uint64_t fail, int recv_err)
{
	struct rc_resp *rs = &qp->resp;
	struct rc_req *rq = &qp->req;
	uint64_t i;
	bool held = recv_err && rs->msg == RC_RESP_SEND;

	if (qp->state == RC_QP_ERR)
		return;
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
 * requester: the send queue cut into request packets
 * ====================================================================== */

/* PSNs sent beyond una, counting the packet at tx_psn */
static uint32_t rc_req_unacked(const struct braid_rc_qp *qp)
{
	return (uint32_t)braid_psn_diff(qp->req.tx_psn, qp->req.una) + 1;
}

/* has the requester a packet it may send now? (send window, READ limit, RNR wait) */
static bool rc_req_ready(const struct braid_rc_qp *qp)
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
static void rc_req_emit(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *o)
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
static void rc_req_go_back(struct braid_rc_qp *qp, uint64_t now)
{
	struct rc_req *rq = &qp->req;

	rq->tx = rq->head;
	rq->tx_psn = rq->una;
	rq->rto_deadline = qp->cfg.timeout_ns ? now + qp->cfg.timeout_ns : RC_NONE;
}

/* the send queue index of the unfinished work request holding @psn, or tail */
static uint64_t rc_req_find(const struct braid_rc_qp *qp, uint32_t psn)
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

/* ======================================================================
 * completer: ACK, NAK and READ responses coming back
 * ====================================================================== */

/* sq[head] finished with @err (0: success): its completion, in posting order */
static void rc_comp_finish_head(struct braid_rc_qp *qp, int err)
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
static void rc_comp_retry(struct braid_rc_qp *qp, uint64_t now)
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
static int rc_comp_ack(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
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
		rq->rnr_deadline = now + rc_rnr_ns[value];
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
static int rc_comp_read_resp(struct braid_rc_qp *qp, const struct braid_roce_view *v,
			     uint64_t now)
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

/* ======================================================================
 * responder: request packets coming in
 * ====================================================================== */

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
static int rc_resp_request(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now)
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
static struct rc_rdres *rc_resp_job(struct braid_rc_qp *qp)
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
static void rc_resp_emit_read(struct braid_rc_qp *qp, struct rc_rdres *s, struct braid_rc_out *o)
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
static bool rc_resp_ctl_ready(struct braid_rc_qp *qp)
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
static void rc_resp_emit_ctl(struct braid_rc_qp *qp, struct braid_rc_out *o)
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

int braid_rc_post_recv(struct braid_rc_qp *qp, const struct braid_rc_recv *rr)
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
	r->context = rr->context;
	qp->rq_tail++;
	return 0;
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
		return rc_comp_ack(qp, &v, now);
	case BRAID_ROCE_READ_RESP_FIRST:
	case BRAID_ROCE_READ_RESP_MIDDLE:
	case BRAID_ROCE_READ_RESP_LAST:
	case BRAID_ROCE_READ_RESP_ONLY:
		return rc_comp_read_resp(qp, &v, now);
	default:
		return rc_resp_request(qp, &v, now);
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
			rc_req_emit(qp, now, &out[n++]);
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
		/* local ACK timeout (IBTA 9.7.6.1.3) */
		rq->rto_deadline = RC_NONE;
		if (braid_psn_diff(rq->hw_psn, rq->una) > 0) {
			qp->stats.timeouts++;
			/*
			 * Whatever the responder sent before has arrived or is
			 * lost by now: a sequence error seen after this restart
			 * is news (e.g. an ACK beyond a READ whose resent request
			 * was lost again) and restarts at once.
			 */
			rq->nak_acted = false;
			rc_comp_retry(qp, now);
			if (qp->state != RC_QP_RTS)
				return;
		}
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
