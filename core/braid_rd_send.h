/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_send.h: what a sender keeps: a send operation, its packets awaiting acknowledgement, each path's loss detection state (the RD engine's internals, not a public header; braid_rd_int.h includes it). */
#ifndef BRAID_RD_SEND_H
#define BRAID_RD_SEND_H

#include "braid/braid_counters.h"
#include "braid/braid_list.h"
#include "braid_hdr.h"
#include "braid_rd.h"

struct rd_conn;
struct rd_stage;

/* payload bytes per RD_DATA packet, and per RD_RMA packet (§4.7) */
#define RD_SEG(rd)	((rd)->cfg.mtu - sizeof(struct braid_rd_data_hdr))
#define RD_RMA_SEG(rd)	((rd)->cfg.mtu - sizeof(struct braid_rd_rma_hdr))
/* the header length of a send's packets */
#define RD_HDR_LEN(s)	((s)->rma.op ? sizeof(struct braid_rd_rma_hdr) : sizeof(struct braid_rd_data_hdr))

/** A send operation (pool: max_sends). */
struct rd_send {
	/** @node: in the conn's send queue while bytes remain to be cut into packets. */
	struct braid_dlist node;
	size_t iov_count;
	uint64_t len;
	/** @next_off: bytes already cut into packets. */
	uint64_t next_off;
	/** @pkts_out: packets of this op sent and not yet acknowledged. */
	uint32_t pkts_out;
	/** @cut_done: every byte (or the one empty packet) has been cut into packets. */
	bool cut_done;
	/** @bad: its bytes could not be staged (BRAID_RD_STAGE_FAILED): its packets go marked BAD. */
	bool bad;
	/** @rdv: rendezvous (§4.6): after the first packet it waits in conn->paused for a CTS. */
	bool rdv;
	/** @cts: the receiver's CTS came. */
	bool cts;
	uint32_t msg_id;
	/** @first_psn: the PSN of its first packet (a rendezvous keepalive probe repeats it). */
	uint32_t first_psn;
	uint64_t tag, data;
	uint32_t flags;
	void *context;
	struct rd_conn *conn;
	/** @inject: the copy of an injected payload (pool buffer) or NULL. */
	uint8_t *inject;
	/**
	 * @rma: RMA (§4.7): the RD_RMA fields of its packets (op 0: a message);
	 * a request's rma.status is the target's answer once @resp_done.
	 */
	struct braid_rma_fields rma;
	bool resp_done;
	/** @resp_bound: a RESP message is being received for it. */
	bool resp_bound;
	/** @waiting: every packet acknowledged, the answer not yet here (counted in conn->waiting). */
	bool waiting;
	/** @res_count: entries of @res; @res_len: their size. */
	size_t res_count;
	uint64_t res_len;
	/** @rlink: in conn->rma_ops from the request's start until its completion. */
	struct braid_dlist rlink;
	/** @stage: a RESP's buffer of fetched values (stages pool), or NULL. */
	struct rd_stage *stage;
	/** @staged: BRAID_RD_STAGED: the prefix of its bytes cfg.stage made ready. */
	uint64_t staged;
	/** @ring: BRAID_RD_STAGED through a ring: iov[0] is it, byte o at o % @ring; 0: none. */
	uint64_t ring;
	/*
	 * The arrays last, not zeroed when the record is taken (rd_send_alloc):
	 * each is written up to its count before anything reads it.
	 */
	struct iovec iov[BRAID_RD_IOV_MAX];
	/** @res: where a READ's data or an atomic's fetched values go. */
	struct iovec res[BRAID_RD_IOV_MAX];
};

/* How much of a send record is zeroed when it is taken: all but its arrays. */
#define RD_SEND_HEAD	offsetof(struct rd_send, iov)

/* why a packet was declared lost (its resend is counted under the cause) */
enum rd_loss { RD_LOSS_RACK = 0, RD_LOSS_TLP, RD_LOSS_RTO, RD_LOSS_DEAD, RD_LOSS_REFUSED };

enum rd_pkt_state {
	RD_PKT_FREE = 0,
	RD_PKT_INFLIGHT,	/* sent, waiting for its ACK */
	RD_PKT_LOST,		/* declared lost, waiting in retxq */
};

/** A sent packet awaiting acknowledgement (ring of window slots per flow, psn % window). */
struct rd_txpkt {
	/** @link: in txorder (INFLIGHT, transmit-time order) or retxq (LOST). */
	struct braid_dlist link;
	/** @plink: in its path's in-flight list (INFLIGHT only), transmit order. */
	struct braid_dlist plink;
	struct rd_send *op;
	uint32_t psn;
	uint32_t off, len;
	/** @probed_us: when the transmission a probe replaced was sent (rd_usec; @probed_path). */
	uint32_t probed_us;
	uint64_t tx_time;
	/** @tx_seq: transmit order within the flow (ties of tx_time broken by it). */
	uint32_t tx_seq;
	uint16_t path;
	uint8_t state;
	uint8_t retx;
	/** @why: why it was last declared lost (enum rd_loss): its resend is counted by cause. */
	uint8_t why;
	/** @unsent: returned by braid_rd_unsent(): goes again as it was, not as a retransmission. */
	bool unsent;
	/**
	 * @probed_path, @probed_entropy: a probe's resend (a tail loss probe or a
	 * resend after an RTO, on another path) records the path slot, and its route
	 * then, of the transmission it replaced, for the probe-answered rule
	 * (protocol.md §4.5); RD_NO_PATH: none (a first transmission, or a resend
	 * for another cause). A slot re-drawn since is not judged.
	 */
	uint16_t probed_path, probed_entropy;
};

#define RD_NO_PATH	UINT16_MAX

/** What an ACK that echoed a probe's resend tells of the transmission it replaced. */
struct rd_probed {
	uint16_t path, entropy;
	uint32_t us;
};

/** Per-path loss detection state of a flow (RACK per path, protocol.md §4.5). */
struct rd_pathrack {
	/** @inflight: this path's in-flight packets, transmit order. */
	struct braid_dlist inflight;
	/** @rack_seq, @rack_rtt, @rack_tx: the latest-sent packet acknowledged on this path,
	 * its RTT and when it was sent. */
	uint32_t rack_seq;
	bool has_rack;
	uint64_t rack_rtt, rack_tx;
	/** @ctr: the path slot's counters (they outlive re-draws: a slot is a row). */
	struct braid_rd_path_ctr ctr;
};

#endif /* BRAID_RD_SEND_H */
