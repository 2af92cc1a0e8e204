/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd.h: the reliable-datagram engine's interface: sans-I/O, packets and time in, packets and completions out. */
#ifndef BRAID_RD_H
#define BRAID_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "braid/braid_counters.h"
#include "braid_hdr.h"

/*
 * One engine serves one local endpoint. It never opens a socket, reads a
 * clock or starts a thread: the caller hands it requests, received packets
 * and the current time (nanoseconds, any monotonic origin), and takes back
 * packets to transmit, the next timer deadline and completions.
 *
 *   loop:
 *     braid_rd_input(rd, bytes, len, src_ip, ecn, now)   for each packet received
 *     braid_rd_timer(rd, now)                            when now >= braid_rd_next_deadline(rd)
 *     n = braid_rd_output(rd, now, out, max)             transmit out[0..n)
 *     n = braid_rd_poll(rd, comps, max)                  report completions
 *
 * Peers are addressed by braid_peer_key(ipv4, home_port). Wire format:
 * docs/protocol.md §4. All sizes are bounded by the config; the data path
 * allocates nothing after braid_rd_open().
 */

struct braid_peer_table;
struct braid_cc_ops;
struct braid_rd_rxq;

/* braid_rd_mr_check_fn @access bits */
#define BRAID_RD_ACC_READ	(1u << 0)	/* the peer reads the region (READ, fetching atomics) */
#define BRAID_RD_ACC_WRITE	(1u << 1)	/* the peer writes it (WRITE, atomics) */
#define BRAID_RD_ACC_ATOMIC	(1u << 2)	/* with READ and/or WRITE: an atomic reads, changes
						 * and writes it back at once */

/**
 * braid_rd_mr_check_fn - the target side's memory-key check for RMA and
 * atomics (§4.7): is [@addr, @addr + @len) inside the region of key @key,
 * which grants @access? On success *@ptr is where @addr is in this process.
 * Return: 0, or a negative FI_E* value (-FI_EACCES).
 */
typedef int (*braid_rd_mr_check_fn)(void *ctx, uint64_t key, uint64_t addr, size_t len,
				    uint32_t access, void **ptr);

/**
 * braid_rd_mr_written_fn - the target's memory [@addr, @addr + @len) of
 * region @key was written (a WRITE message wholly placed, an atomic
 * applied) through the pointer its mr_check gave, and is answered next:
 * what the region needs done before that (a copy from host staging to
 * device memory) is done now. Return: 0, or a negative FI_E* value (the
 * answer is then a refusal, BRAID_RMA_ACCESS).
 */
typedef int (*braid_rd_mr_written_fn)(void *ctx, uint64_t key, uint64_t addr, size_t len);

/**
 * braid_rd_stage_fn - bytes [@off, @off + @len) of a BRAID_RD_STAGED send or
 * WRITE (its buffers host staging the caller fills as it goes) are about to
 * be cut into their first packet: the caller makes them ready, and may make
 * more. @op_context is the operation's context. Return: the end of the
 * prefix of the operation's bytes now ready (>= @off + @len); the engine asks
 * again for the first byte beyond it.
 */
typedef uint64_t (*braid_rd_stage_fn)(void *ctx, void *op_context, uint64_t off, uint64_t len);

/*
 * What a braid_rd_stage_fn returns when the bytes cannot be had (a copy
 * failed): the operation goes on with its buffers as they are; a send's
 * packets from then on are marked BAD (§4.2), so its receive fails rather
 * than delivering them.
 */
#define BRAID_RD_STAGE_FAILED	UINT64_MAX

#define BRAID_RD_MAX_WINDOW	256	/* = BRAID_RD_SACK_BITS */
#define BRAID_RD_MAX_PATHS	256
#define BRAID_RD_IOV_MAX	8

/** struct braid_rd_config - engine parameters (braid_rd_config_default() fills sane ones). */
struct braid_rd_config {
	/** @local_ip, @local_port: this endpoint's home address (host order). */
	uint32_t local_ip;
	uint16_t local_port;
	/** @epoch: this endpoint's incarnation, non-zero (protocol.md §4.1). */
	uint32_t epoch;
	/** @mtu: largest datagram payload the wire carries (>= 128). */
	uint32_t mtu;
	/** @paths: paths to spray over, 1..BRAID_RD_MAX_PATHS. */
	uint32_t paths;
	/**
	 * @entropies: distinct route selectors the wire offers (braid_wire.entropies;
	 * 0: 65536). A re-drawn path takes one no other path of its flow uses.
	 */
	uint32_t entropies;
	/** @window: packets in flight per peer, 1..BRAID_RD_MAX_WINDOW. */
	uint32_t window;
	/** @max_flows: peers with traffic in flight at once (flow state pool). */
	uint32_t max_flows;
	/**
	 * @max_peers: peers this endpoint keeps state for at once (§4.9). A first
	 * contact beyond it evicts the peer least recently heard from among those
	 * not verified and with nothing pending, else it is dropped (peer_cap).
	 * Verified peers are never evicted. 0: no limit (state grows with peers).
	 */
	uint32_t max_peers;
	/**
	 * @random: unpredictable 32-bit values for challenge cookies (§4.9): an
	 * off-path attacker must not guess them. NULL: a generator seeded from
	 * @seed (predictable: tests only).
	 */
	uint32_t (*random)(void);
	/**
	 * @max_sends, @max_recvs: operation pools; @max_recvs is the size of
	 * the engine's own receive queue, or that of @rxq (it sizes the
	 * completion ring: every receive of a shared queue may complete here).
	 */
	uint32_t max_sends, max_recvs;
	/**
	 * @rxq: a receive queue shared with other engines (braid_rd_rxq_open()),
	 * which must outlive the engine; NULL: a queue of its own.
	 */
	struct braid_rd_rxq *rxq;
	/** @max_msgs: messages being reassembled or waiting unexpected, all peers. */
	uint32_t max_msgs;
	/** @stage_pkts: packet buffers for data that arrives before its message is matched. */
	uint32_t stage_pkts;
	/**
	 * @rx_queue_pkts: full-size datagrams the wire's receive queue holds
	 * (a UDP socket's buffer); the receive window never advertises more,
	 * so a sender does not overrun a receiver that falls behind (the kernel
	 * would drop the excess). 0: no such limit.
	 */
	uint32_t rx_queue_pkts;
	/** @max_msg_size: largest message accepted (<= 4 GiB - 1). */
	uint64_t max_msg_size;
	/** @rdv_threshold: messages longer than this go by rendezvous (§4.6); 0: never. */
	uint64_t rdv_threshold;
	/** @inject_size: largest FLAG_INJECT send (copied at send time). */
	uint32_t inject_size;
	/** @rto_min_ns, @rto_max_ns, @rto_init_ns: retransmission timer bounds. */
	uint64_t rto_min_ns, rto_max_ns, rto_init_ns;
	/** @tlp_min_ns: floor of the tail-loss-probe timeout (scheduling jitter of the hosts). */
	uint64_t tlp_min_ns;
	/** @peer_timeout_ns: no ACK progress for this long with data in flight = peer unreachable. */
	uint64_t peer_timeout_ns;
	/**
	 * @lend_min: the wire can send a payload by reference (braid_wire.h
	 * BRAID_PKT_LEND) from this many bytes; 0: it cannot. A packet the engine
	 * marks LENT (§4.2 "Lent payloads": a first transmission of the
	 * application's data, at least this long, to a peer that acknowledged
	 * new data within BRAID_RD_LENT_WAIT_NS) comes out with braid_rd_out.lend
	 * set. The engine lends nothing with a peer timeout below
	 * BRAID_RD_LENT_PEER_MIN.
	 */
	size_t lend_min;
	/**
	 * @idle_ns: a peer's traffic state (its flow: windows, RTTs) with nothing
	 * in flight either way for this long is freed, and the memory of what
	 * was freed given back to the system (0: kept until needed for another
	 * peer). What the peer's sequence numbers need (its conn) stays.
	 */
	uint64_t idle_ns;
	/**
	 * @forget_ns: an idle peer's record (idle_ns above) is looked at every
	 * forget_ns: once it has rested a whole forget_ns the peer is asked to
	 * forget the pair's numbering with us (§4.9 RD_CHALLENGE FORGET), and both
	 * sides give it up when it agrees; one that does not answer twice is
	 * forgotten alone. 0: records are kept while the engine lives.
	 */
	uint64_t forget_ns;
	/** @ack_delay_ns: longest an ACK is held back for coalescing. */
	uint64_t ack_delay_ns;
	/**
	 * @bundle: pack the packets one output call makes for one peer into
	 * RD_BUNDLE datagrams where they fit (§4.8): a held-back ACK rides with
	 * the data going back, small messages share a datagram. false: one
	 * packet per datagram, ACKs alone.
	 */
	bool bundle;
	/**
	 * @gso_segs: the wire can send up to this many full-size packets to one
	 * destination by one route as one segmentation-offload write (UDP GSO);
	 * runs of full-size packets of a flow then share a path, that many at
	 * most (§4.5, informative). 0 or 1: every packet its own path.
	 */
	uint32_t gso_segs;
	/** @path_health: steer traffic by per-path health (false: plain round robin). */
	bool path_health;
	/** @cc: congestion control algorithm (NULL: braid_cc_swift). */
	const struct braid_cc_ops *cc;
	/** @cc_target_ns: target queueing delay above the base RTT for delay-based CC. */
	uint64_t cc_target_ns;
	/**
	 * @init_cwnd: a new flow's congestion window, in packets (at most
	 * @window). Small, so that many senders starting at once at one
	 * receiver (an incast) fit its switch port's buffer in their first
	 * round trip; slow start doubles it per RTT from there.
	 */
	uint32_t init_cwnd;
	/**
	 * @unsched_pkts: packets a flow sends before the receiver's first ACK
	 * (its unscheduled window: a first contact, or after an RTO's idleness;
	 * §4.10), whatever its congestion window. 0: no such limit.
	 */
	uint32_t unsched_pkts;
	/**
	 * @grant_bytes: the bytes this endpoint lets its active senders have in
	 * flight to it together (§4.10), shared among them in the receive window
	 * of its ACKs; a sender alone is not limited. 0: no grants.
	 */
	uint64_t grant_bytes;
	/** @seed: for path entropy and path choice. */
	uint64_t seed;
	/**
	 * @mr_check, @mr_ctx: the key check of every RMA or atomic request that
	 * targets this endpoint (NULL: every one is refused with FI_EACCES).
	 */
	braid_rd_mr_check_fn mr_check;
	void *mr_ctx;
	/** @mr_written: after a write to the target's memory (NULL: nothing to do); @mr_ctx. */
	braid_rd_mr_written_fn mr_written;
	/** @stage, @stage_ctx: readies BRAID_RD_STAGED operations' bytes (NULL: none is staged). */
	braid_rd_stage_fn stage;
	void *stage_ctx;
};

/** braid_rd_config_default() - defaults for everything but the address and epoch. */
void braid_rd_config_default(struct braid_rd_config *cfg);

/* braid_rd_send.flags / braid_rd_recv.flags */
#define BRAID_RD_TAGGED		(1u << 0)	/* tagged message (tag matching) */
#define BRAID_RD_CQ_DATA	(1u << 1)	/* send: carry @data as remote CQ data */
#define BRAID_RD_INJECT		(1u << 2)	/* send: copy the payload now; the caller may reuse it */
#define BRAID_RD_NO_COMP	(1u << 3)	/* the success completion is marked BRAID_RD_COMP_SILENT */
#define BRAID_RD_MULTI		(1u << 4)	/* recv: one buffer (one iov) for many messages, each
						 * given the next free part of it (FI_MULTI_RECV) */

#define BRAID_RD_INTERNAL	(1u << 5)	/* engine-made send (an RMA response): no completion */
#define BRAID_RD_DELIVERY	(1u << 6)	/* send: complete once the message is in a receive
						 * buffer (or discarded) at the peer, not at its ACK
						 * (FI_DELIVERY_COMPLETE; §4.7) */
#define BRAID_RD_STAGED		(1u << 7)	/* send, WRITE: cfg.stage readies the bytes before
						 * their first packet is cut */

/** struct braid_rd_send - a message to send. */
struct braid_rd_send {
	/**
	 * @iov, @iov_count: the message's bytes; with BRAID_RD_STAGED and
	 * @staged_len longer than @iov's one entry, that entry is a ring its
	 * bytes pass through (byte o at o modulo the ring's length), at least
	 * braid_rd_stage_ring() bytes: cfg.stage fills it as packets are cut.
	 */
	const struct iovec *iov;
	size_t iov_count;
	/** @staged_len: BRAID_RD_STAGED: the message's length (0: @iov's). */
	uint64_t staged_len;
	uint64_t peer;		/* braid_peer_key() of the destination */
	uint64_t tag;
	uint64_t data;
	uint32_t flags;
	void *context;
};

/** struct braid_rd_recv - a receive buffer to post. */
struct braid_rd_recv {
	const struct iovec *iov;
	size_t iov_count;
	uint64_t peer;		/* only from this peer; 0 = any */
	uint64_t tag, ignore;	/* tagged: match when (tag ^ msg tag) & ~ignore == 0 */
	uint32_t flags;		/* BRAID_RD_TAGGED, BRAID_RD_NO_COMP, BRAID_RD_MULTI */
	void *context;
	/** @min_free: BRAID_RD_MULTI: retire the buffer when less than this is left. */
	uint64_t min_free;
};

/* braid_rd_comp.flags */
#define BRAID_RD_COMP_SEND	(1u << 0)
#define BRAID_RD_COMP_RECV	(1u << 1)
#define BRAID_RD_COMP_TAGGED	(1u << 2)
#define BRAID_RD_COMP_CQ_DATA	(1u << 3)
/* the operation asked for no success completion: count it, do not report it */
#define BRAID_RD_COMP_SILENT	(1u << 4)
/* the last completion of a BRAID_RD_MULTI buffer: the buffer is the caller's again */
#define BRAID_RD_COMP_MULTI_RECV	(1u << 5)
/* RMA and atomics (braid_rd_rma()): at the initiator, the operation is done (the
 * target applied it and answered); with BRAID_RD_COMP_REMOTE, an event at the
 * target: a peer wrote (WRITE), read (READ) or applied an atomic (ATOMIC, with
 * WRITE and/or READ as the op did) in this endpoint's memory */
#define BRAID_RD_COMP_WRITE	(1u << 6)
#define BRAID_RD_COMP_READ	(1u << 7)
#define BRAID_RD_COMP_ATOMIC	(1u << 8)
#define BRAID_RD_COMP_REMOTE	(1u << 9)

/* braid_rd_rma.op */
enum braid_rd_rma_kind {
	BRAID_RD_RMA_WRITE = 1,		/* iov -> the peer's region */
	BRAID_RD_RMA_READ,		/* the peer's region -> res */
	BRAID_RD_RMA_ATOMIC,		/* apply aop with iov's operands; fetched values -> res */
};

/** struct braid_rd_rma - an RMA or atomic operation (fi_rma(3), fi_atomic(3)). */
struct braid_rd_rma {
	enum braid_rd_rma_kind op;
	/**
	 * @iov: WRITE: the data (with BRAID_RD_STAGED, as braid_rd_send.iov);
	 * ATOMIC: the operands, then (compare ops) the compare values.
	 */
	const struct iovec *iov;
	size_t iov_count;
	/** @staged_len: a BRAID_RD_STAGED WRITE's length (0: @iov's). */
	uint64_t staged_len;
	/** @res: READ: where the data goes; ATOMIC fetch and compare ops: the old values. */
	const struct iovec *res;
	size_t res_count;
	uint64_t peer;
	/** @rkey, @raddr: the target region's key and address (as its mr_check reads them). */
	uint64_t rkey, raddr;
	/** @aop, @dt, @count: ATOMIC: enum braid_aop, enum braid_adt, elements. */
	uint8_t aop, dt;
	uint32_t count;
	/** @data: WRITE with BRAID_RD_CQ_DATA: the target's remote CQ data. */
	uint64_t data;
	/**
	 * @flags: BRAID_RD_CQ_DATA (WRITE), BRAID_RD_INJECT (WRITE, ATOMIC),
	 * BRAID_RD_NO_COMP, BRAID_RD_STAGED (WRITE).
	 */
	uint32_t flags;
	void *context;
};

/** struct braid_rd_comp - a finished operation. */
struct braid_rd_comp {
	void *context;
	uint32_t flags;
	/** @err: 0, or a positive FI_E* value (FI_ETRUNC, FI_ECANCELED, FI_EHOSTUNREACH, ...). */
	int err;
	/** @prov_errno: a braid_prov_errno value. */
	int prov_errno;
	/** @len: bytes delivered (recv) or sent. */
	size_t len;
	/** @olen: bytes that did not fit (FI_ETRUNC). */
	size_t olen;
	/** @buf: start of the receive buffer. */
	void *buf;
	uint64_t tag, data;
	/** @peer: the other side's key. */
	uint64_t peer;
	/** @rkey: BRAID_RD_COMP_REMOTE: the key of the region the access targeted. */
	uint64_t rkey;
};

/*
 * Lent payloads (protocol.md §4.2): a receiver drops a LENT packet that
 * waited in its host longer than BRAID_RD_LENT_WAIT_NS; a sender lends only
 * with a peer timeout of BRAID_RD_LENT_PEER_MIN or more, so an operation
 * never fails while a payload it lent could still be read.
 */
#define BRAID_RD_LENT_WAIT_NS	100000000ULL
#define BRAID_RD_LENT_PEER_MIN	(4 * BRAID_RD_LENT_WAIT_NS)

/** struct braid_rd_out - one packet to transmit: header bytes, then payload. */
struct braid_rd_out {
	/**
	 * @frame, @frame_len: bytes that go on the wire before @hdr (§4.8): 0
	 * bytes for a packet that is its datagram alone; the RD_BUNDLE header and
	 * the record length for the first record of a bundle (10 bytes); the
	 * record length for each further record (2 bytes), which continues the
	 * datagram of the record before it. braid_rd_out_dgram() assembles one.
	 */
	uint8_t frame[BRAID_RD_BUNDLE_HDR + BRAID_RD_BUNDLE_REC];
	uint8_t frame_len;
	/**
	 * @gso_cont: a full-size packet that continues the run of the record
	 * before it: same destination, same path, same length (but the run's
	 * last, which may be shorter), for one segmentation-offload write
	 * (cfg.gso_segs; braid_rd_out_dgram() returns the run whole).
	 */
	bool gso_cont;
	uint8_t hdr[BRAID_RD_MAX_HDR];
	uint16_t hdr_len;
	/**
	 * @lend: the packet is marked LENT: its payload (the application's
	 * buffer, unchanged until its operation completes) may go by reference
	 * if it is a datagram alone (braid_wire.h BRAID_PKT_LEND).
	 */
	bool lend;
	/** @payload: the payload gathered from the sender's buffers (valid until its send completes). */
	struct iovec payload[BRAID_RD_IOV_MAX];
	int payload_iovcnt;
	size_t payload_len;
	/** @dst_ip, @dst_port: destination home address (host order). */
	uint32_t dst_ip;
	uint16_t dst_port;
	/** @path: the path slot (0..paths-1) and its current entropy (the wire's route selector). */
	uint16_t path;
	uint16_t entropy;
	/**
	 * @reply_route: >= 0: a reply (ACK, CTS) that must go back by the reverse
	 * of the route the packet it answers came by: the caller sends it to
	 * that route (UDP: from the home port to this source port of the peer,
	 * so ECMP's symmetric hash takes the same path back); @path and @entropy
	 * are then 0. -1: sprayed like data, by @entropy.
	 */
	int32_t reply_route;
};

/**
 * struct braid_rd_peer_ctr - a peer's counters (braid_counters.h): the path
 * list, the peer list, then drops by reason; a prefix of the endpoint's.
 */
struct braid_rd_peer_ctr {
	BRAID_RD_PATH_COUNTERS(BRAID_CTR_FIELD)
	BRAID_RD_PEER_COUNTERS(BRAID_CTR_FIELD)
	uint64_t drops[BRAID_DROP_MAX];
};

/**
 * struct braid_rd_stats - the engine's counters (braid_counters.h): those of
 * struct braid_rd_peer_ctr in the same order, then the endpoint-only list.
 */
struct braid_rd_stats {
	BRAID_RD_PATH_COUNTERS(BRAID_CTR_FIELD)
	BRAID_RD_PEER_COUNTERS(BRAID_CTR_FIELD)
	uint64_t drops[BRAID_DROP_MAX];
	BRAID_RD_EP_COUNTERS(BRAID_CTR_FIELD)
};

struct braid_rd;

/**
 * braid_rd_open() - create an engine.
 * @cfg: parameters; copied.
 * @peers: the domain's peer table (shared with other engines), not owned.
 * Return: 0, -FI_EINVAL for a bad config, -FI_ENOMEM.
 * The caller must eventually call braid_rd_close().
 */
int braid_rd_open(const struct braid_rd_config *cfg, struct braid_peer_table *peers,
		  struct braid_rd **rd);

/** braid_rd_close() - free the engine; pending operations are dropped without completions. */
void braid_rd_close(struct braid_rd *rd);

/**
 * struct braid_rd_local_hdr - a message handed whole to a local peer
 * (protocol.md §7.4): this header, then @len bytes of payload. In the host's
 * byte order (one host); from another process: untrusted.
 */
struct braid_rd_local_hdr {
	uint8_t version;	/* BRAID_RD_LOCAL_VERSION */
	uint8_t flags;		/* BRAID_RD_F_TAGGED, BRAID_RD_F_CQ_DATA; the others 0 */
	uint16_t pad;		/* 0 */
	uint32_t len;
	uint64_t tag;
	uint64_t data;
};
#define BRAID_RD_LOCAL_VERSION	1

/**
 * braid_rd_local_ready() - may a message to @peer go to it whole now, by a
 * way of the caller's that delivers in order and loses nothing (a local
 * peer's ring)? True when nothing of ours to @peer is unsent or
 * unacknowledged (it would be overtaken: FI_ORDER_SAS) and the completion
 * ring has room for the send's completion.
 */
bool braid_rd_local_ready(struct braid_rd *rd, uint64_t peer);

/** braid_rd_local_hdr_of() - the header of @req, of @len bytes, handed whole (§7.4). */
void braid_rd_local_hdr_of(const struct braid_rd_send *req, uint64_t len,
			   struct braid_rd_local_hdr *h);

/**
 * braid_rd_local_sent() - @req, of @len bytes, was handed whole to its local
 * peer after braid_rd_local_ready() said it may: it completes now
 * (transmit complete: the peer holds it). With @comp, its completion is
 * written there for the caller to report (it may do so only while
 * braid_rd_comps_waiting() is false: completions keep their order); without,
 * it goes into the completion ring for braid_rd_poll().
 */
void braid_rd_local_sent(struct braid_rd *rd, const struct braid_rd_send *req, uint64_t len,
			 struct braid_rd_comp *comp);

/**
 * braid_rd_local_input() - a message local peer @peer handed whole: @rec
 * (@len bytes: struct braid_rd_local_hdr and the payload). It is matched
 * now, in order after everything that peer sent before it.
 * Return: 0 taken (delivered, or kept as unexpected); -FI_EAGAIN no room to
 * keep it now (leave it where it is and hand it again later); -FI_EINVAL
 * bytes that make no sense (drop it).
 */
int braid_rd_local_input(struct braid_rd *rd, uint64_t peer, const void *rec, size_t len,
			 uint64_t now);

/**
 * braid_rd_local_over() - messages handed whole are kept beyond the staging
 * pools: local peers should hand no more whole until they are taken.
 */
bool braid_rd_local_over(const struct braid_rd *rd);

/**
 * braid_rd_send() - queue a message.
 * Return: 0; -FI_EAGAIN when an operation pool or flow state is exhausted,
 * or completions not taken yet (braid_rd_poll()) hold the places of new
 * operations' (retry after progress); -FI_EMSGSIZE beyond max_msg_size (or
 * inject_size with BRAID_RD_INJECT); -FI_EINVAL for bad arguments.
 */
int braid_rd_send(struct braid_rd *rd, const struct braid_rd_send *req, uint64_t now);

/**
 * braid_rd_rma() - start an RMA or atomic operation on a peer's memory (§4.7).
 * It completes (BRAID_RD_COMP_WRITE, _READ or _ATOMIC) when the target's
 * answer came: the data is in the target's memory (delivery complete), the
 * read data or fetched values are in @res; or with an error: FI_EACCES (key,
 * range, permission), FI_EOPNOTSUPP (the target refused the atomic), and the
 * peer errors of sends. An atomic's operands and compare values, and its
 * fetched values, fit one packet: braid_rd_atomic_max() bytes.
 * Return: 0; -FI_EAGAIN (pools); -FI_EMSGSIZE; -FI_EINVAL; -FI_EOPNOTSUPP
 * (an op/datatype braid does not do).
 */
int braid_rd_rma(struct braid_rd *rd, const struct braid_rd_rma *req, uint64_t now);

/**
 * braid_rd_stage_ring() - the least bytes of a BRAID_RD_STAGED operation's
 * ring: every byte of it not yet acknowledged lies within this many bytes
 * below the next to be cut (the flow's window of packets, each of a
 * packet's payload at most). cfg.stage may fill the ring up to that far
 * ahead of them less what it readies at once; a ring this long plus two
 * of the caller's chunks lets it ready one chunk and start the next.
 */
size_t braid_rd_stage_ring(const struct braid_rd *rd);

/** braid_rd_atomic_max() - the most bytes of operands (and compare values) one atomic carries. */
size_t braid_rd_atomic_max(const struct braid_rd *rd);

/** braid_rd_post_recv() - post a receive buffer to the engine's queue. 0, -FI_EAGAIN (as braid_rd_send()), -FI_EINVAL. */
int braid_rd_post_recv(struct braid_rd *rd, const struct braid_rd_recv *req, uint64_t now);

/*
 * Receive queues. Every engine matches its messages against a queue of
 * posted receives (msg and tagged, in post order) and keeps those that
 * match none there, unexpected, until a receive is posted: its own, or one
 * engines share (cfg.rxq; fi_endpoint(3)'s shared receive context). With a
 * shared queue a message takes a receive by the same rules (sender order,
 * FI_ORDER_SAS, per peer and engine; peer and tag filters), and completes
 * on the engine it arrived at (braid_rd_poll() of that engine), whoever
 * posted the receive. The engines that share a queue, and the queue's own
 * calls, must be serialised by the caller (one lock for them all).
 */

/**
 * braid_rd_rxq_open() - a queue to share, of at most @max_recvs receive
 * records (posted receives and the parts of multi-receive buffers).
 * Return: 0, -FI_EINVAL, -FI_ENOMEM. The caller must eventually call
 * braid_rd_rxq_close(), after the engines that use it are closed.
 */
int braid_rd_rxq_open(uint32_t max_recvs, struct braid_rd_rxq **q);

/**
 * braid_rd_rxq_close() - free a queue: -FI_EBUSY while an engine uses it.
 * Its posted receives go with it, with no completions.
 */
int braid_rd_rxq_close(struct braid_rd_rxq *q);

/**
 * braid_rd_rxq_post() - post a receive buffer to a shared queue (as
 * braid_rd_post_recv()): a message waiting unexpected that it matches is
 * received into it at once, completing on its own engine.
 * Return: 0, -FI_EAGAIN (no record free), -FI_EINVAL.
 */
int braid_rd_rxq_post(struct braid_rd_rxq *q, const struct braid_rd_recv *req, uint64_t now);

/**
 * braid_rd_rxq_cancel() - cancel the receive posted with @context: 0, its
 * FI_ECANCELED completion on engine @report (NULL: none is made), or
 * -FI_ENOENT.
 */
int braid_rd_rxq_cancel(struct braid_rd_rxq *q, void *context, struct braid_rd *report);

/**
 * braid_rd_rxq_leave() - engine @rd stops drawing from its shared queue
 * (its endpoint closes, and no receive posted to the queue may go to it
 * now): its unexpected messages leave the queue, and the receives its
 * messages being received had taken complete FI_ECANCELED on @rd
 * (braid_rd_poll()). Nothing more is matched on it; close it next. An
 * engine with a queue of its own: nothing. braid_rd_close() does it too.
 */
void braid_rd_rxq_leave(struct braid_rd *rd);

/** braid_rd_rxq_room() - receives that can still be posted before -FI_EAGAIN. */
size_t braid_rd_rxq_room(const struct braid_rd_rxq *q);

/* braid_rd_peek() modes (fi_tagged(3) FI_PEEK, FI_CLAIM, FI_DISCARD) */
#define BRAID_RD_PEEK		(1u << 0)
#define BRAID_RD_CLAIM		(1u << 1)
#define BRAID_RD_DISCARD	(1u << 2)

/**
 * braid_rd_peek() - look for an unexpected message matching @req in the
 * engine's queue (shared or not), or retrieve one claimed earlier, as
 * fi_tagged(3) describes (the completions of a message found go to the
 * engine it arrived at, FI_ENOMSG to @rd):
 *  PEEK: a completion with the message's length, tag, data and peer (no
 *	data moved), or an error completion FI_ENOMSG when none matches;
 *  PEEK|CLAIM: the same, and the message is kept for a later CLAIM with
 *	the same @req->context, invisible to ordinary receives;
 *  PEEK|DISCARD: the same, and the message is dropped;
 *  CLAIM: the message claimed with @req->context is received into @req's
 *	buffers (completion as for a receive);
 *  CLAIM|DISCARD: the claimed message is dropped (a completion with len 0).
 * Return: 0 (a completion follows), -FI_EAGAIN (no receive record free),
 * -FI_EINVAL.
 */
int braid_rd_peek(struct braid_rd *rd, const struct braid_rd_recv *req, uint32_t mode,
		  uint64_t now);

/** braid_rd_cancel() - cancel a receive posted to the engine's queue by context: 0 (an FI_ECANCELED completion on @rd follows) or -FI_ENOENT. */
int braid_rd_cancel(struct braid_rd *rd, void *context);

/**
 * braid_rd_input() - hand the engine one received packet.
 * @src_ip: the IPv4 source address (host order); the source port comes from
 *	the braid header.
 * Return: 0 when used, or a negative drop reason (-(enum braid_drop_reason + 1)),
 * which is also counted in the stats.
 */
int braid_rd_input(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		   bool ecn_ce, uint64_t now);

/* braid_rd_input_from() @src_route when the wire cannot name the route back */
#define BRAID_RD_ROUTE_NONE	(-1)

/**
 * braid_rd_input_from() - braid_rd_input() for a packet whose route back is
 * known: @src_route is the wire's name for it (UDP: the packet's source
 * port; the sim: its path), 0..65535, or BRAID_RD_ROUTE_NONE. Replies to it
 * (ACKs, CTS) go back by that route (braid_rd_out.reply_route), so a path
 * that dies takes a flow's data and the ACKs of that data alike, and the
 * sender's view of the path covers both directions.
 */
int braid_rd_input_from(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
			int32_t src_route, bool ecn_ce, uint64_t now);

/**
 * braid_rd_place() - receive a payload straight into place: for a datagram
 * of @len bytes from @src_ip whose first @hdr_len bytes (its RD_DATA or
 * RD_RMA header, at least) are @hdr, where its payload goes if the engine
 * would take the packet now and put it in an application buffer (a matched
 * receive, a WRITE's region, a read's result buffers): up to @max iovs in
 * @iov. The caller may then receive the datagram as its header (exactly
 * the header's length) followed by those iovs and hand it to
 * braid_rd_input_placed(), with nothing done to the engine in between.
 * Call braid_rd_arrived() with the datagram's arrival first: a LENT packet
 * that waited longer than BRAID_RD_LENT_WAIT_NS by @now is never placed.
 * Return: how many iovs; 0: receive it whole and use braid_rd_input_from()
 * (a first packet, a duplicate, data to stage, a bundle, anything else).
 */
int braid_rd_place(struct braid_rd *rd, const void *hdr, size_t hdr_len, size_t len,
		   uint32_t src_ip, struct iovec *iov, int max, uint64_t now);

/**
 * braid_rd_is_dup() - whether the engine would drop the RD_DATA or RD_RMA
 * datagram of @len bytes from @src_ip whose header is @hdr as a duplicate
 * (its PSN received already), reading nothing but its header: the caller
 * may then receive the header alone, let the host discard the payload, and
 * hand it to braid_rd_input_placed() (which takes the duplicate as usual:
 * counted, echoed), with nothing done to the engine in between.
 */
bool braid_rd_is_dup(struct braid_rd *rd, const void *hdr, size_t hdr_len, size_t len,
		     uint32_t src_ip);

/**
 * braid_rd_input_placed() - braid_rd_input_from() for a datagram received
 * as braid_rd_place() said: @hdr holds its header, @len is its whole length.
 */
int braid_rd_input_placed(struct braid_rd *rd, const void *hdr, size_t len, uint32_t src_ip,
			  int32_t src_route, bool ecn_ce, uint64_t now);

/**
 * braid_rd_output() - up to @max packets to transmit now. Return: how many.
 * Consecutive packets may make one datagram (a bundle, §4.8: see @frame);
 * braid_rd_out_dgram() takes them a datagram at a time.
 */
int braid_rd_output(struct braid_rd *rd, uint64_t now, struct braid_rd_out *out, int max);

/**
 * braid_rd_out_dgram() - the datagram that begins at @out[0] (of @n): its
 * bytes as up to @max_iov iovs (frame, header and payload of each of its
 * packets; @max_iov >= BRAID_RD_BUNDLE_MAX * (BRAID_RD_IOV_MAX + 2) always
 * suffices) in @iov, *@iovcnt of them, and its length in *@len. Its
 * destination and route are @out[0]'s. A run of full-size packets
 * (@gso_cont) comes whole, as the bytes of its datagrams one after the
 * other, and *@seg (when not NULL) is the length of each but the last (for
 * a segmentation-offload write); else *@seg is 0.
 * Return: how many packets it holds.
 */
int braid_rd_out_dgram(const struct braid_rd_out *out, int n, struct iovec *iov, int max_iov,
		       int *iovcnt, size_t *len, size_t *seg);

/**
 * braid_rd_unsent() - the wire could not take @n packets returned by the last
 * braid_rd_output() (from @out on): they go back to the front of their queues,
 * to be returned again by the next braid_rd_output(), with no loss counted.
 */
void braid_rd_unsent(struct braid_rd *rd, const struct braid_rd_out *out, int n);

/** braid_rd_next_deadline() - when braid_rd_timer() next has work (UINT64_MAX: none). */
uint64_t braid_rd_next_deadline(const struct braid_rd *rd);

/** braid_rd_timer() - run every timer due at @now (retransmissions, ACKs, peer timeouts). */
void braid_rd_timer(struct braid_rd *rd, uint64_t now);

/**
 * braid_rd_arrived() - the packets braid_rd_input*() is handed next reached
 * this host at @when (the wire's receive timestamp), or at least no earlier
 * (the last time the wire was read to empty); 0: not known. The time from
 * then to the @now of their handling is this host's absence (descheduled,
 * computing, not polling), which a delay-based congestion control must not
 * read as the fabric's queueing: a receiver reports it in its ACKs (§4.3
 * hold_us), a sender leaves its own out of the RTT samples it judges
 * congestion by (§4.5). Never called: no absence is known, and the samples
 * are taken whole.
 */
void braid_rd_arrived(struct braid_rd *rd, uint64_t when);

/**
 * braid_rd_poll() - take up to @max completions. Every operation produces
 * exactly one (successes of BRAID_RD_NO_COMP operations carry
 * BRAID_RD_COMP_SILENT), however late it is taken: the ring has a place
 * for each operation taken, and while completions not taken hold them all
 * new operations get -FI_EAGAIN. Return: how many.
 */
int braid_rd_poll(struct braid_rd *rd, struct braid_rd_comp *comps, int max);

/** braid_rd_comps_waiting() - completions are there for braid_rd_poll to take. */
bool braid_rd_comps_waiting(const struct braid_rd *rd);

/**
 * braid_rd_flush_acks() - make every held-back (delayed) ACK due now, so the
 * next braid_rd_output() sends them (before the caller stops polling, e.g.
 * at close).
 */
void braid_rd_flush_acks(struct braid_rd *rd);

/** braid_rd_pending() - true while sends are unacknowledged or packets wait to go out. */
bool braid_rd_pending(const struct braid_rd *rd);

/** braid_rd_room() - sends and receives (to its queue) that can still be queued before -FI_EAGAIN (each alone). */
void braid_rd_room(const struct braid_rd *rd, size_t *sends, size_t *recvs);

/** braid_rd_stats() - the engine's counters. */
const struct braid_rd_stats *braid_rd_get_stats(const struct braid_rd *rd);

/** braid_rd_pool_bytes() - the memory the engine's pools hold now (flows, staging, operations, conns, idle records) and its peer map's slots. */
size_t braid_rd_pool_bytes(const struct braid_rd *rd);

/**
 * braid_rd_snapshot_peers() - the peer records of a snapshot (struct
 * braid_ctr_peer_rec, braid_counters.h): one per peer with traffic state, in
 * the order it was made, each with its counters and gauges and a row per
 * path, as many as fit in @len bytes of @buf (8-byte aligned).
 * Return: bytes written; *@peers: records written.
 */
size_t braid_rd_snapshot_peers(const struct braid_rd *rd, void *buf, size_t len, uint32_t *peers);


#endif /* BRAID_RD_H */
