/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_int.h: the RC engine's internals, shared by its files: the QP, its work queue entries, small helpers, and the calls between the roles. */
#ifndef BRAID_RC_INT_H
#define BRAID_RC_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "braid_rc.h"

/*
 * One QP plays three roles, as in Soft-RoCE (rxe_req.c, rxe_comp.c,
 * rxe_resp.c), each in its own file; braid_rc.c is the QP itself:
 *
 *   braid_rc_req.c  (rc_req_*):  requester: the send queue cut into request
 *                                packets: PSNs, segmentation at the MTU, the
 *                                send window, go-back-N restarts (IBTA 9.7.1,
 *                                9.7.4, 9.4).
 *   braid_rc_comp.c (rc_comp_*): completer: ACKs, NAKs and READ responses
 *                                coming back: coalesced and implicit
 *                                acknowledgement, send completions in posting
 *                                order, retry and RNR retry counters, the local
 *                                ACK timeout (9.7.5.2, 9.9.2).
 *   braid_rc_resp.c (rc_resp_*): responder: request packets coming in: strict
 *                                in-order acceptance by the expected PSN,
 *                                duplicates, one PSN sequence error NAK per
 *                                gap, RNR NAK, placement, memory-key checks,
 *                                READ responses (kept for replay), MSN, ACK
 *                                coalescing (9.7.5.1, 9.8, 9.9.3).
 *   braid_rc.c      (braid_rc_*): the QP: open/close, receive posting, input
 *                                dispatch, output arbitration, timers,
 *                                completions, flush, errors, counters.
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
	/**
	 * @iov: the caller's buffers, or one iovec over this slot's inject
	 * copy; a SEND with a prefix has it first, an iovec over @prefix.
	 */
	struct iovec iov[BRAID_RC_IOV_MAX + 1];
	size_t iov_count;
	/** @len: the message's bytes (prefix and payload). */
	uint64_t len;
	/** @prefix, @prefix_len: the caller's header bytes sent before the payload. */
	uint8_t prefix[BRAID_RC_PREFIX_MAX];
	uint32_t prefix_len;
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
	/** @skip: message bytes not placed (braid_rc_recv.skip). */
	uint32_t skip;
	/** @pulled: srq_pull gave it (recv_done is told when it completes). */
	bool pulled;
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
	/** @replay: they are a duplicate request's, not the first execution's. */
	bool replay;
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

#define RC_RETRY_TRACE	16	/* retries kept for the log */

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
	/**
	 * @retries, @nretries: the last RC_RETRY_TRACE retries (what caused each,
	 * and where the requester stood), for the log when retries run out.
	 */
	struct rc_retry_ev {
		uint64_t t;
		char why;	/* T timeout, N NAK, R READ response past una, A ACK past a READ */
		uint32_t psn, una, hw_psn, left;
	} retries[RC_RETRY_TRACE];
	uint32_t nretries;
};

/* ---- small helpers ---- */

static inline int rc_drop(struct braid_rc_qp *qp, enum braid_rc_drop r)
{
	qp->stats.drops[r]++;
	return -((int)r + 1);
}

static inline uint32_t psn_prev(uint32_t psn)
{
	return braid_psn_add(psn, BRAID_ROCE_PSN_MASK);
}

/* PSNs a message of @len bytes occupies: one per MTU, one for an empty message */
static inline uint32_t rc_npsn(const struct braid_rc_qp *qp, uint64_t len)
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

/* ---- braid_rc.c: the QP ---- */

uint8_t rc_rnr_code(uint64_t ns);
void rc_comp_push(struct braid_rc_qp *qp, const struct braid_rc_comp *c);
void rc_view_init(const struct braid_rc_qp *qp, struct braid_roce_view *v, uint8_t opcode,
		  uint32_t psn);
size_t rc_out_finish(struct braid_rc_qp *qp, struct braid_rc_out *o, struct braid_roce_view *v);
void rc_qp_error(struct braid_rc_qp *qp, int err, uint64_t fail, int recv_err);
/** rc_rq_push() - queue a receive (@pulled: srq_pull gave it): 0 or braid_rc_post_recv()'s errors. */
int rc_rq_push(struct braid_rc_qp *qp, const struct braid_rc_recv *rr, bool pulled);
/** rc_recv_done() - @r completed, @len bytes placed, @err: recv_done if srq_pull gave it. */
void rc_recv_done(struct braid_rc_qp *qp, const struct rc_rwqe *r, size_t len, int err);

/* ---- braid_rc_req.c: requester (state machine: one run per request packet) ---- */

enum rc_req_state {
	RC_REQST_GET_WQE,	/* the WQE at tx, if any may go now (9.7.4) */
	RC_REQST_CHECK_WINDOW,	/* the send window: RC_MAX_UNACKED_PSNS past una (9.7.1) */
	RC_REQST_CHECK_START,	/* a WQE's first packet: READ limit, PSN window (9.7.1, 9.5) */
	RC_REQST_BUILD,		/* the packet: opcode, headers, payload (9.4) */
	RC_REQST_UPDATE,	/* counters, tx and hw_psn on, the ACK timer (9.7.1, 9.7.6.1.3) */
	RC_REQST_SENT,		/* end: a packet was built */
	RC_REQST_READY,		/* end of a checking run: a packet may go */
	RC_REQST_IDLE,		/* end: nothing may go now */
	RC_REQST_NUM
};

extern const char *const rc_req_state_names[RC_REQST_NUM];

/* A state change of @role (braid_rc_config.trace), when the QP is traced. */
static inline void rc_trace(const struct braid_rc_qp *qp, const char *role, const char *from,
			    const char *to)
{
	if (qp->cfg.trace)
		qp->cfg.trace(qp->cfg.trace_ctx, qp->cfg.local_qpn, role, from, to);
}

/** rc_req_ready() - may the requester send a packet now? (changes nothing) */
bool rc_req_ready(struct braid_rc_qp *qp);
/** rc_req_output() - the next request packet into @o; false: none may go now. */
bool rc_req_output(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *o);
/** rc_req_rewind() - the next packet to send is una's (tx back to the oldest unfinished WQE). */
void rc_req_rewind(struct braid_rc_qp *qp);
/** rc_req_go_back() - go-back-N: rewind and restart the local ACK timer (IBTA 9.9.2.1). */
void rc_req_go_back(struct braid_rc_qp *qp, uint64_t now);
/** rc_req_find() - the send queue index of the unfinished WQE holding @psn, or req.tail. */
uint64_t rc_req_find(const struct braid_rc_qp *qp, uint32_t psn);

/* ---- braid_rc_comp.c: completer (state machine: one run per response or timeout) ---- */

enum rc_comp_state {
	RC_COMPST_GET_PKT,	/* a timeout, an ACK packet or a READ response (9.7.5.2) */
	RC_COMPST_CHECK_PSN,	/* in [una, hw): else duplicate or out of window */
	RC_COMPST_CHECK_ACK,	/* the AETH: ACK, RNR NAK, sequence NAK, other NAK (Table 43) */
	RC_COMPST_ACK,		/* coalesced ACK (9.7.5.1.2) */
	RC_COMPST_RNR_NAK,	/* RNR NAK: stale copy, implicit ACK (9.7.5.2.8) */
	RC_COMPST_RNR_RETRY,	/* RNR retry count, the RNR wait (9.7.5.2.8) */
	RC_COMPST_NAK_SEQ,	/* PSN sequence error NAK (9.9.2.1) */
	RC_COMPST_NAK_FATAL,	/* access / invalid request / operational NAK (9.9.2.2) */
	RC_COMPST_CHECK_READ,	/* a READ response: AETH, which READ (9.7.5.1.5) */
	RC_COMPST_READ_PSN,	/* implicit ACK before it, next expected? (9.9.2.3) */
	RC_COMPST_READ,		/* length, opcode, data placed (9.7.5.1.5) */
	RC_COMPST_UPDATE_COMP,	/* una on, the READ completes, progress (9.9.2.1) */
	RC_COMPST_TIMEOUT,	/* local ACK timeout (9.7.6.1.3) */
	RC_COMPST_SEQ_ERR,	/* a sequence error, explicit or implied: once per gap (9.9.2.1) */
	RC_COMPST_ERROR_RETRY,	/* retry count, go back N (9.9.2.1) */
	RC_COMPST_ERROR,	/* the QP to error (10.3.1) */
	RC_COMPST_DONE,
	RC_COMPST_NUM
};

extern const char *const rc_comp_state_names[RC_COMPST_NUM];

/** rc_comp_input() - an ACK packet or READ response: 0 or -(enum braid_rc_drop + 1). */
int rc_comp_input(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now);
/** rc_comp_timeout() - the local ACK timer ran out (req.rto_deadline <= @now). */
void rc_comp_timeout(struct braid_rc_qp *qp, uint64_t now);
/** rc_comp_finish_head() - sq[head] completes with @err (0: success), in posting order. */
void rc_comp_finish_head(struct braid_rc_qp *qp, int err);

/* ---- braid_rc_resp.c: responder (state machine: one run per request packet) ---- */

enum rc_resp_state {
	RC_RESPST_CHK_PSN,		/* expected, duplicate, gap, out of window (9.7.5.1.1) */
	RC_RESPST_CHK_OP_SEQ,		/* opcode sequence (9.8.3.1) */
	RC_RESPST_CHK_PKT_LEN,		/* payload length per opcode (9.7.3.2) */
	RC_RESPST_CHK_RESOURCE,		/* a posted receive (9.7.5.2.8), a READ resource (9.5) */
	RC_RESPST_CHK_LENGTH,		/* DMA length (9.4.3, 9.4.4) */
	RC_RESPST_CHK_RKEY,		/* R_Key, range, access (9.4.3, 9.4.4) */
	RC_RESPST_EXECUTE,		/* place the data, take a READ resource (9.7.5.1) */
	RC_RESPST_COMPLETE,		/* message end: MSN, receive completion (9.7.5.1.2) */
	RC_RESPST_ACKNOWLEDGE,		/* ePSN on, ACK coalescing (9.7.5.1.2) */
	RC_RESPST_DUPLICATE,		/* behind ePSN: re-ACK (9.9.3.2.1) */
	RC_RESPST_DUPLICATE_READ,	/* a READ again from its resource (9.9.3.2.1) */
	RC_RESPST_ERR_PSN_SEQ,		/* a gap: one sequence error NAK (9.7.5.1.1) */
	RC_RESPST_ERR_RNR,		/* no receive: RNR NAK (9.7.5.2.8) */
	RC_RESPST_ERR_INVALID_REQ,	/* invalid request (9.9.3.1.2) */
	RC_RESPST_ERR_ACCESS,		/* remote access error (9.9.3.1.2) */
	RC_RESPST_ERROR,		/* class C: NAK, the QP to error (9.9.3.1.2) */
	RC_RESPST_DONE,
	RC_RESPST_NUM
};

extern const char *const rc_resp_state_names[RC_RESPST_NUM];

/** rc_resp_input() - a request packet: 0 or -(enum braid_rc_drop + 1). */
int rc_resp_input(struct braid_rc_qp *qp, const struct braid_roce_view *v, uint64_t now);
/** rc_resp_job() - the first READ resource with responses to send, or NULL. */
struct rc_rdres *rc_resp_job(struct braid_rc_qp *qp);
/** rc_resp_emit_read() - the next READ response packet of @s into @o. */
void rc_resp_emit_read(struct braid_rc_qp *qp, struct rc_rdres *s, struct braid_rc_out *o);
/** rc_resp_ctl_ready() - is an ACK or NAK to go out now? */
bool rc_resp_ctl_ready(struct braid_rc_qp *qp);
/** rc_resp_emit_ctl() - the ACK or the pending NAK into @o. */
void rc_resp_emit_ctl(struct braid_rc_qp *qp, struct braid_rc_out *o);

#endif /* BRAID_RC_INT_H */
