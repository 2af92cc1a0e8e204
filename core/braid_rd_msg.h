/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_msg.h: what a receiver keeps: staged payloads, posted receives, messages being received, and the receive queue engines may share (the RD engine's internals, not a public header; braid_rd_int.h includes it). */
#ifndef BRAID_RD_MSG_H
#define BRAID_RD_MSG_H

#include "braid/braid_list.h"
#include "braid/braid_pool.h"
#include "braid_rd.h"

struct braid_rd;
struct rd_conn;
struct rd_send;

/** Staged payload: data that arrived before its message had a buffer (pool: stage_pkts). */
struct rd_stage {
	struct rd_stage *next;
	uint32_t off, len;
	/** @small: from stages_small (RD_STAGE_SMALL bytes of data), else from stages (a packet's). */
	bool small;
	/** @heap: from malloc: a message handed whole kept beyond the pools (protocol.md §7.4). */
	bool heap;
	uint8_t data[];
};

/* payloads up to this size are staged in small buffers, not a whole packet's */
#define RD_STAGE_SMALL	256

/** A posted receive (pool: max_recvs). */
struct rd_recv {
	struct braid_dlist node;
	size_t iov_count;
	uint64_t capacity;
	uint64_t peer, tag, ignore;
	uint32_t flags;
	void *context;
	/* BRAID_RD_MULTI buffers: the part given out, the floor, messages using it */
	uint64_t used, min_free;
	uint32_t refs;
	bool retired;
	/** @parent: for the part of a multi-receive buffer one message got. */
	struct rd_recv *parent;
	/** @iov: last, not zeroed when taken (RD_RECV_HEAD): written up to @iov_count first. */
	struct iovec iov[BRAID_RD_IOV_MAX];
};

#define RD_RECV_HEAD	offsetof(struct rd_recv, iov)

/** A message being received (pool: max_msgs). */
struct rd_msg {
	/** @node: in its receive queue's unexpected list once its matching turn passed with no receive. */
	struct braid_dlist node;
	/** @rd: the engine it arrives at (a shared queue's unexpected list holds several engines'). */
	struct braid_rd *rd;
	struct rd_conn *conn;
	uint64_t peer;
	uint32_t msg_id;
	uint32_t len, received;
	uint64_t tag, data;
	uint8_t hflags;
	/** @matched: its turn came (SAS): it has a receive or sits in the unexpected list. */
	bool matched;
	bool unexpected;
	/** @rdv: the sender waits for our CTS before sending more than the first packet. */
	bool rdv;
	/** @discard: dropped by FI_DISCARD: its remaining bytes are absorbed, then it is freed. */
	bool discard;
	/** @claim: the context that claimed it (FI_PEEK|FI_CLAIM), or NULL. */
	void *claim;
	struct rd_recv *recv;
	struct rd_stage *stage;
	/** @rma: RMA (§4.7): an RD_RMA message, executed (target) or matched to its request (initiator). */
	struct braid_rma_fields rma;
	/** @req: RESP: the initiator's request it answers (NULL: none: absorbed). */
	struct rd_send *req;
	/** @evented: the target's event for it was reported. */
	bool evented;
	/** @bad: a packet of it came marked BAD (§4.2): its receive fails FI_EIO. */
	bool bad;
};

/**
 * struct braid_rd_rxq - a receive queue (braid_rd.h): the posted receives
 * and the messages that found none. An engine's own, or one that engines
 * share; what matching reads and writes of it is the same either way.
 */
struct braid_rd_rxq {
	/** @recvs: receive records (posted ones, and the parts of multi-receive buffers). */
	struct braid_pool recvs;
	/** @posted_msg, @posted_tagged: posted receives, in post order. */
	struct braid_dlist posted_msg, posted_tagged;
	/**
	 * @unexpected: messages, complete or arriving, that matched no receive,
	 * in the order they had their turn (struct rd_msg.node; each names its
	 * engine, struct rd_msg.rd).
	 */
	struct braid_dlist unexpected;
	/** @engines: the engines that take their receives from it (struct braid_rd.rxq_node). */
	struct braid_dlist engines;
};

#endif /* BRAID_RD_MSG_H */
