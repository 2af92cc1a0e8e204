/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc.h: the RoCEv2 RC engine's interface: one queue pair, sans-I/O, packets and time in, packets and completions out. */
#ifndef BRAID_RC_H
#define BRAID_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "braid/braid_counters.h"
#include "braid_roce.h"

/*
 * A competent RoCEv2 reliable connection (IBTA vol. 1 ch. 9), as a NIC runs
 * it, for comparison with the RD engine: one QP per connection, one path (the
 * caller sends every packet from one UDP source port), strict in-order
 * acceptance, a PSN sequence error NAK on the first gap and go-back-N from
 * the NAKed PSN, a local ACK timeout with a retry count, RNR NAK when no
 * receive is posted (with RNR retry), coalesced ACKs carrying the MSN.
 * Operations: SEND (with immediate), RDMA WRITE (with immediate), RDMA READ.
 * Wire format: docs/protocol.md §5 (braid_roce.h).
 *
 *   loop:
 *     braid_rc_input(qp, bytes, len, now)        for each packet received
 *     braid_rc_timer(qp, now)                    when now >= braid_rc_next_deadline(qp)
 *     n = braid_rc_output(qp, now, out, max)     transmit out[0..n) to the peer
 *     n = braid_rc_poll(qp, comps, max)          report completions
 *
 * The engine opens no socket, reads no clock, starts no thread and allocates
 * nothing after braid_rc_open().
 */

#define BRAID_RC_IOV_MAX	4

/* braid_rc_config.access / braid_rc_mr_check access bits */
#define BRAID_RC_ACCESS_REMOTE_WRITE	(1u << 0)
#define BRAID_RC_ACCESS_REMOTE_READ	(1u << 1)

/**
 * braid_rc_mr_check_fn - the target side's memory-key check: is
 * [@addr, @addr + @len) inside a region registered with @rkey allowing
 * @access? On success *@ptr is where @addr is in this process.
 * Return: 0 or a negative FI_E* value (-FI_EACCES, -FI_EINVAL).
 */
typedef int (*braid_rc_mr_check_fn)(void *ctx, uint32_t rkey, uint64_t addr, size_t len,
				    uint32_t access, void **ptr);

struct braid_rc_recv;
struct braid_rc_msg_start;

/** struct braid_rc_config - one QP's parameters (braid_rc_config_default() fills the tunables). */
struct braid_rc_config {
	/**
	 * @addr: the IPv4/UDP addresses of the packets this QP sends (src: local
	 * IP and the QP's source port; dst: the peer's IP and RoCEv2 port), host
	 * order: the ICRC covers them.
	 */
	struct braid_roce_addr addr;
	/**
	 * @rx_addr: those of the packets it receives (src: the peer's IP and its
	 * QP's source port; dst: our IP and RoCEv2 receive port). RoCEv2 is
	 * asymmetric (per-QP source ports, one destination port), so this is
	 * not @addr reversed; all zero: @addr reversed (symmetric tests).
	 */
	struct braid_roce_addr rx_addr;
	/** @local_qpn, @remote_qpn: 24-bit QP numbers (BTH.DestQP of what we receive / send). */
	uint32_t local_qpn, remote_qpn;
	/** @sq_psn: first PSN we send; @rq_psn: first PSN we expect. */
	uint32_t sq_psn, rq_psn;
	/** @pkey: partition key (0xffff). */
	uint16_t pkey;
	/** @mtu: payload bytes per packet: 256, 512, 1024, 2048 or 4096 (the path MTU). */
	uint32_t mtu;
	/** @max_send_wr, @max_recv_wr: work queue depths. */
	uint32_t max_send_wr, max_recv_wr;
	/** @max_rd_atomic: RDMA READs we may have outstanding at the responder. */
	uint32_t max_rd_atomic;
	/** @max_dest_rd_atomic: READ requests we keep state for as responder. */
	uint32_t max_dest_rd_atomic;
	/** @max_msg_size: largest message (<= 2 GiB). */
	uint64_t max_msg_size;
	/** @inject_size: largest BRAID_RC_INJECT payload (copied at post time). */
	uint32_t inject_size;
	/** @timeout_ns: local ACK timeout (IBTA's 4.096 us * 2^timeout, as a time). */
	uint64_t timeout_ns;
	/** @retry_cnt: retransmissions after timeouts or NAKs before the QP fails (0..7). */
	uint32_t retry_cnt;
	/** @rnr_retry: retries after RNR NAKs (0..6; 7 = forever, as IBTA says). */
	uint32_t rnr_retry;
	/** @min_rnr_timer_ns: the RNR timer we ask the peer to wait (rounded up to a Table 45 code). */
	uint64_t min_rnr_timer_ns;
	/** @ack_coalesce: acknowledge at least every this many packets received... */
	uint32_t ack_coalesce;
	/** @ack_delay_ns: ...or this long after the first unacknowledged one. */
	uint64_t ack_delay_ns;
	/**
	 * @imm_no_recv: a WRITE with immediate completes on its own, without
	 * consuming a posted receive (libfabric without the FI_RX_CQ_DATA
	 * mode); it still takes a receive-side completion slot (no free slot:
	 * an RNR NAK). false: as on a verbs QP (IBTA 9.4.4), it consumes one.
	 */
	bool imm_no_recv;
	/** @mr_check, @mr_ctx: the memory-key check for RDMA WRITE and READ targeting us. */
	braid_rc_mr_check_fn mr_check;
	void *mr_ctx;
	/**
	 * @srq_pull, @srq_ctx: a receive queue kept by the caller (a shared
	 * receive queue, IBTA 10.2.9.1, or the caller's own, which matches a
	 * receive to each message): when a request needs a receive and the QP
	 * has none posted (and room for one), the responder asks for one, @m
	 * telling what it knows of the message. srq_pull fills *@rr (the QP
	 * copies its iovec array at once; the buffers must stay valid until
	 * the receive completes) and returns 0, or returns non-zero when it
	 * has none to give (then the request is RNR NAKed, and asks again when
	 * the requester retries). NULL: no such queue.
	 */
	int (*srq_pull)(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr);
	void *srq_ctx;
	/**
	 * @recv_done: a receive srq_pull gave completes (with or without an
	 * error, a flush included): called at once with srq_ctx, its context,
	 * the bytes placed and the error (0 or a positive FI_E*), before any
	 * later srq_pull and before braid_rc_poll() reports it. A caller that
	 * hands out parts of one buffer learns where the next part starts.
	 * NULL: not called.
	 */
	void (*recv_done)(void *ctx, void *context, size_t len, int err);
	/**
	 * @trace, @trace_ctx: told of every state change of the QP (@role
	 * "qp": RTS, ERR) and of its three state machines (@role "requester",
	 * "completer", "responder"; the states' names as IBTA and rxe give
	 * them), for a debug log, as rxe traces its states. NULL: not called.
	 */
	void (*trace)(void *ctx, uint32_t qpn, const char *role, const char *from, const char *to);
	void *trace_ctx;
};

/**
 * struct braid_rc_msg_start - what the responder knows of a request that
 * needs a receive when it asks srq_pull for one.
 */
struct braid_rc_msg_start {
	/** @payload, @payload_len: a SEND's first packet's payload (NULL, 0: a WRITE with immediate). */
	const void *payload;
	size_t payload_len;
	/** @whole: that packet is the whole message (a SEND_ONLY): its length is @payload_len. */
	bool whole;
	/** @write_imm: a WRITE with immediate consumes the receive: no data lands in it. */
	bool write_imm;
};

/*
 * The defaults a RoCE deployment's QPs get (fi_braid(7) "RoCEv2 RC"):
 * local ACK timeout 14, retry 7, RNR retry 7 (forever), min RNR timer 12 are
 * what rdma-core's rc_pingpong and perftest (DEF_QP_TIME 14, MIN_RNR_TIMER 12)
 * set. libfabric's verbs provider asks rdma_cm for retry_count 15 (the kernel's
 * CM caps it at 7) and rnr_retry_count 7, sets min_rnr_timer 12
 * (FI_VERBS_MIN_RNR_TIMER) and leaves the ACK timeout to the CM, which gives a
 * RoCE QP code 18 (1.07 s) on a ConnectX NIC: FI_BRAID_RC_TIMEOUT=18 matches it.
 */
#define BRAID_RC_DEFAULT_TIMEOUT	14	/* 4.096 us * 2^14 = 67.1 ms */
#define BRAID_RC_DEFAULT_RETRY		7
#define BRAID_RC_DEFAULT_RNR_RETRY	7
#define BRAID_RC_DEFAULT_MIN_RNR_TIMER	12	/* Table 45: 0.64 ms */

/**
 * braid_rc_timeout_ns() - the local ACK timeout an IBTA code (0..31) means:
 * 4.096 us * 2^@code (IBTA 9.7.6.1.3); 0 means no timeout (returns 0).
 */
uint64_t braid_rc_timeout_ns(unsigned int code);

/** braid_rc_rnr_timer_ns() - the RNR NAK timer an IBTA Table 45 code (0..31) means. */
uint64_t braid_rc_rnr_timer_ns(unsigned int code);

/** braid_rc_config_default() - tunables (the defaults above, depths, MTU 4096); addresses and QPNs zero. */
void braid_rc_config_default(struct braid_rc_config *cfg);

enum braid_rc_op {
	BRAID_RC_OP_SEND,
	BRAID_RC_OP_WRITE,
	BRAID_RC_OP_READ,
};

/* braid_rc_wr.flags / braid_rc_recv.flags */
#define BRAID_RC_IMM		(1u << 0)	/* SEND/WRITE: carry @imm (ImmDt) */
#define BRAID_RC_INJECT		(1u << 1)	/* copy the payload at post time */
#define BRAID_RC_NO_COMP	(1u << 2)	/* success completion marked BRAID_RC_COMP_SILENT */
#define BRAID_RC_SOLICITED	(1u << 3)	/* BTH.SE on the last packet */

/* the most bytes of braid_rc_wr.prefix */
#define BRAID_RC_PREFIX_MAX	16

/** struct braid_rc_wr - a send work request. */
struct braid_rc_wr {
	enum braid_rc_op op;
	/** @iov: local buffers (READ: where the data lands). */
	const struct iovec *iov;
	size_t iov_count;
	/**
	 * @prefix, @prefix_len: SEND: up to BRAID_RC_PREFIX_MAX bytes sent
	 * before the payload, copied at post time (a header of the caller's,
	 * protocol.md §5.10); the message is prefix and payload. max_msg_size,
	 * inject_size and the completion's length count the payload only.
	 */
	const void *prefix;
	uint32_t prefix_len;
	/** @raddr, @rkey: WRITE/READ target. */
	uint64_t raddr;
	uint32_t rkey;
	/** @imm: immediate data (BRAID_RC_IMM). */
	uint32_t imm;
	uint32_t flags;
	void *context;
};

/** struct braid_rc_recv - a receive work request. */
struct braid_rc_recv {
	const struct iovec *iov;
	size_t iov_count;
	uint32_t flags;		/* BRAID_RC_NO_COMP */
	/**
	 * @skip: bytes at the start of the message that are not placed (a
	 * header of the caller's that srq_pull read from the first packet; at
	 * most that packet's payload). The completion's length and truncation
	 * count the rest only. 0 for a receive posted with braid_rc_post_recv().
	 */
	uint32_t skip;
	void *context;
};

/* braid_rc_comp.flags */
#define BRAID_RC_COMP_SEND		(1u << 0)
#define BRAID_RC_COMP_WRITE		(1u << 1)
#define BRAID_RC_COMP_READ		(1u << 2)
#define BRAID_RC_COMP_RECV		(1u << 3)	/* a SEND arrived into a posted receive */
#define BRAID_RC_COMP_REMOTE_WRITE	(1u << 4)	/* a WRITE with immediate consumed a receive */
#define BRAID_RC_COMP_IMM		(1u << 5)	/* @imm is valid */
#define BRAID_RC_COMP_SILENT		(1u << 6)

/** struct braid_rc_comp - a finished work request. */
struct braid_rc_comp {
	void *context;
	uint32_t flags;
	/**
	 * @err: 0, or a positive FI_E* value: FI_ETRUNC (receive too small),
	 * FI_ETIMEDOUT (retry count exceeded), FI_ENORX (RNR retry exceeded),
	 * FI_EACCES (the remote refused the key/range), FI_EINVAL (remote
	 * invalid request), FI_ECANCELED (flushed: the QP is in error or closed).
	 */
	int err;
	/** @len: bytes sent / received / written / read. */
	size_t len;
	/** @olen: FI_ETRUNC: bytes that did not fit. */
	size_t olen;
	/** @buf: receive: the start of its buffer (its first iovec's base). */
	void *buf;
	uint32_t imm;
};

/** struct braid_rc_out - one packet to transmit: @hdr, the payload iovs, then @trailer (pad + ICRC). */
struct braid_rc_out {
	uint8_t hdr[BRAID_ROCE_MAX_HDR];
	uint16_t hdr_len;
	struct iovec payload[BRAID_RC_IOV_MAX + 1];
	int payload_iovcnt;
	size_t payload_len;
	uint8_t trailer[BRAID_ROCE_MAX_TRAILER];
	uint16_t trailer_len;
};

/* reasons a received packet is dropped (braid_rc_stats.drops; "rc.drop.<name>"): X(enum, name, meaning) */
#define BRAID_RC_DROP_TABLE(X) \
	X(BRAID_RC_DROP_MALFORMED, malformed,	"braid_roce_parse() refused it") \
	X(BRAID_RC_DROP_ICRC,	icrc,		"ICRC mismatch") \
	X(BRAID_RC_DROP_QP,	qp,		"BTH.DestQP is not this QP, or not from its peer") \
	X(BRAID_RC_DROP_PKEY,	pkey,		"partition key mismatch") \
	X(BRAID_RC_DROP_OUT_OF_WINDOW, out_of_window, "PSN neither expected, a duplicate nor a NAKable gap") \
	X(BRAID_RC_DROP_DUPLICATE, duplicate,	"a request PSN already executed (re-ACKed)") \
	X(BRAID_RC_DROP_SEQ,	seq,		"a request beyond the expected PSN (NAK sent once)") \
	X(BRAID_RC_DROP_STATE,	state,		"the QP is in error or closed, or a response nobody waits for")

enum braid_rc_drop {
#define BRAID_X_ENUM(e, name, meaning) e,
	BRAID_RC_DROP_TABLE(BRAID_X_ENUM)
#undef BRAID_X_ENUM
	BRAID_RC_DROP_MAX
};

/** struct braid_rc_stats - the QP's counters (braid_counters.h's RC list, then drops by reason). */
struct braid_rc_stats {
	BRAID_RC_COUNTERS(BRAID_CTR_FIELD)
	uint64_t drops[BRAID_RC_DROP_MAX];
};

struct braid_rc_qp;

/**
 * braid_rc_open() - create a QP in RTS (ready to send) with @cfg (copied).
 * Return: 0, -FI_EINVAL (bad config: MTU not an IB MTU, zero depths, QPN
 * over 24 bits, ...), -FI_ENOMEM.
 */
int braid_rc_open(const struct braid_rc_config *cfg, struct braid_rc_qp **qp);

/** braid_rc_close() - free the QP; outstanding work requests are dropped without completions. */
void braid_rc_close(struct braid_rc_qp *qp);

/**
 * braid_rc_post_send() - queue a work request.
 * Return: 0; -FI_EAGAIN (send queue full); -FI_EMSGSIZE (beyond
 * max_msg_size, or inject_size with BRAID_RC_INJECT); -FI_EINVAL;
 * -FI_EOPBADSTATE once the QP is in error (braid_rc_error()).
 */
int braid_rc_post_send(struct braid_rc_qp *qp, const struct braid_rc_wr *wr, uint64_t now);

/**
 * braid_rc_post_recv() - post a receive (its skip must be 0): 0, -FI_EAGAIN,
 * -FI_EINVAL, -FI_EOPBADSTATE. A QP whose receives all come from srq_pull
 * never has any posted.
 */
int braid_rc_post_recv(struct braid_rc_qp *qp, const struct braid_rc_recv *rr);

/**
 * braid_rc_input() - one received packet (the UDP payload: BTH ... ICRC).
 * Return: 0 when used, or -(enum braid_rc_drop + 1) (also counted).
 */
int braid_rc_input(struct braid_rc_qp *qp, const void *pkt, size_t len, uint64_t now);

/** braid_rc_output() - up to @max packets to transmit now, in order. Return: how many. */
int braid_rc_output(struct braid_rc_qp *qp, uint64_t now, struct braid_rc_out *out, int max);

/** braid_rc_next_deadline() - when braid_rc_timer() next has work (UINT64_MAX: none). */
uint64_t braid_rc_next_deadline(const struct braid_rc_qp *qp);

/** braid_rc_timer() - run the timers due at @now: ACK timeout, RNR wait, delayed ACK. */
void braid_rc_timer(struct braid_rc_qp *qp, uint64_t now);

/** braid_rc_poll() - take up to @max completions (one per work request). Return: how many. */
int braid_rc_poll(struct braid_rc_qp *qp, struct braid_rc_comp *comps, int max);

/**
 * braid_rc_flush() - move the QP to the error state: every outstanding send
 * and receive completes with FI_ECANCELED; nothing more is sent but a final
 * ACK of what was received. Used at shutdown.
 */
void braid_rc_flush(struct braid_rc_qp *qp);

/** braid_rc_error() - 0 while the QP works, else the positive FI_E* that moved it to error. */
int braid_rc_error(const struct braid_rc_qp *qp);

/**
 * braid_rc_ready() - has the QP a packet to send now? (what braid_rc_output()
 * would return; a caller that sends a bounded burst per step calls again
 * before it sleeps)
 */
bool braid_rc_ready(struct braid_rc_qp *qp);

/**
 * braid_rc_retry_trace() - the QP's last retries as text in @buf (@len
 * bytes, NUL-terminated): per retry the time (us, relative to the last),
 * its cause (T timeout, N NAK, R READ response past the oldest
 * unacknowledged PSN, A ACK past a READ), the packet's PSN, una, the
 * highest PSN sent and the retries left before it. For the log when
 * retries run out.
 */
void braid_rc_retry_trace(const struct braid_rc_qp *qp, char *buf, size_t len);

/** braid_rc_pending() - true while sends are unacknowledged or packets wait to go out. */
bool braid_rc_pending(const struct braid_rc_qp *qp);

/** braid_rc_get_stats() - the QP's counters. */
const struct braid_rc_stats *braid_rc_get_stats(const struct braid_rc_qp *qp);

/**
 * braid_rc_from_peer() - is @src_ip:@src_port (host byte order) where the
 * QP's peer sends from (braid_rc_config.rx_addr)?
 */
bool braid_rc_from_peer(const struct braid_rc_qp *qp, uint32_t src_ip, uint16_t src_port);

/** braid_rc_drop_str() - a short name for a drop reason. */
const char *braid_rc_drop_str(enum braid_rc_drop reason);

#endif /* BRAID_RC_H */
