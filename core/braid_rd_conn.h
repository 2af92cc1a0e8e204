/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_conn.h: the per-peer state: a peer's traffic state while traffic flows (its flow), its 32-byte idle record, and its conn (the RD engine's internals, not a public header; braid_rd_int.h includes it). */
#ifndef BRAID_RD_CONN_H
#define BRAID_RD_CONN_H

#include "braid/braid_list.h"
#include "braid_cc.h"
#include "braid_path.h"
#include "braid_peer.h"
#include "braid_rd_msg.h"
#include "braid_rd_send.h"

/* rendezvous messages with a buffer whose data a flow waits for at once (§4.6) */
#define RD_CTS_MAX	16

/** Per-peer traffic state, attached to a conn only while traffic flows (pool: max_flows). */
struct rd_flow {
	struct braid_dlist active_node;
	struct rd_conn *conn;
	/* transmit */
	uint32_t snd_una;
	uint32_t inflight;
	uint32_t peer_rwnd;
	struct braid_dlist txorder;
	struct braid_dlist retxq;
	uint64_t rack_xmit, rack_rtt, min_rtt, srtt, rttvar;
	/**
	 * @min_rtt_full: the lowest exact RTT sample of a full packet (at least
	 * half the largest payload): the base such a packet's queueing delay is
	 * taken against. On a slow link a full packet's serialization at every
	 * hop is part of its RTT, not queueing (1500 bytes take 240 us a hop at
	 * 50 Mbit/s); @min_rtt, often a small packet's, would count it as queue.
	 */
	uint64_t min_rtt_full;
	/**
	 * @heard_path, @heard_entropy: the path slot whose packet the latest
	 * RTT sample echoed, and its route then (-1: none): the packet arrived
	 * by that route and its ACK came back by the route's reverse, so it is
	 * the one route known to work both ways. Probes after a tail loss or a
	 * timeout go by it: where replies are hashed on their own (asymmetric
	 * ECMP), data may arrive on routes whose ACKs die, and a probe sent
	 * there would be answered into the hole.
	 */
	int32_t heard_path;
	uint16_t heard_entropy;
	/** @ack_batch: packets an ACK acknowledges, a moving average, x16. */
	uint16_t ack_batch;
	/** @last_ack: the latest ACK that acknowledged something new (the RTO runs from it). */
	uint64_t last_ack;
	/** @tx_counter: transmissions so far; @rack_seq: tx_seq of the latest-sent packet acknowledged. */
	uint32_t tx_counter, rack_seq;
	uint64_t rto_backoff;
	/** @rto_at: when the RTO fired that the next ACK will judge (0: none). */
	uint64_t rto_at;
	/** @rx_dups: duplicate DATA packets received from the peer (echoed in our ACKs). */
	uint32_t rx_dups;
	/** @peer_dups: the peer's last reported count of our duplicates; @reo_mult: reorder
	 * window multiplier, raised when a retransmission proves spurious (RFC 8985 §7.2),
	 * lowered again at @reo_decay_at (16 RTTs with no new duplicate). */
	uint32_t peer_dups, reo_mult;
	uint64_t reo_decay_at;
	/** @reo_raised_at: when @reo_mult was last raised (once a round trip at most). */
	uint64_t reo_raised_at;
	/** @last_tx: time of the latest transmission; @tlp_out: a tail probe awaits its ACK. */
	uint64_t last_tx;
	bool tlp_out;
	uint64_t last_progress;
	/** @zwp_at: zero window: when the next probe may go (packets refused for want of
	 * buffer wait in retxq for the receiver's window update, §4.3). */
	uint64_t zwp_at;
	/** @zwp_due: the zero-window probe may go (set by the timer at @zwp_at). */
	bool zwp_due;
	/** @refused: receive: we refused the peer's data for want of buffer and owe it a window
	 * update; @wupdate: the next ACK is that update (it echoes nothing). */
	bool refused, wupdate;
	/** @refused_small: the refused data fits small staging (RD_STAGE_SMALL). */
	bool refused_small;
	/**
	 * @granted: an ACK from the peer came since this flow began sending, or
	 * last went idle (§4.10): until then it sends at most cfg.unsched_pkts;
	 * @unsched_held: data waited for that ACK (counted once per wait).
	 */
	bool granted, unsched_held;
	/** @probe_due: a rendezvous keepalive probe waits to go (§4.6); @probe_at: the last one sent. */
	bool probe_due;
	uint64_t probe_at;
	struct braid_cc_state cc;
	/* receive */
	/** @last_rx: the latest packet of any kind from the peer (its liveness, seen from here). */
	uint64_t last_rx;
	/** @cts_rtt: smoothed time from a CTS to the data it releases (the receiver's RTT view). */
	uint64_t cts_rtt;
	uint64_t *rcv_bits;		/* window bits, slot psn % window */
	/**
	 * @msg_done: the sender's messages wholly acknowledged beyond @msg_una
	 * (a bit per message slot); @msg_una: the oldest message of this flow not
	 * wholly acknowledged (next_msg_id when none). A new message starts only
	 * within the window of it (§4.2 rule 5, sendq_held()).
	 */
	uint64_t *msg_done;
	uint32_t msg_una;
	struct rd_msg **msgs;		/* window slots, msg_id % window */
	uint32_t msgs_live;		/* messages in the msgs slots */
	uint32_t ack_count;		/* data packets accepted since the last ACK */
	bool ack_now;
	uint64_t ack_deadline;		/* 0 = none */
	uint32_t echo_psn, echo_time;
	/** @echo_rx: when the echoed packet reached this host, or no earlier (rd->in_arrived); 0: unknown. */
	uint64_t echo_rx;
	/** @echo_route: the route the echoed packet came by (its ACK goes back by it), or -1. */
	int32_t echo_route;
	/** @data_route: the route of the peer's latest data (CTS go back by it), or -1. */
	int32_t data_route;
	bool echo_ecn;
	bool need_ack;
	/**
	 * @pingpong, @ack_held, @done_at: ping-pong detection (§4.3): the
	 * application answers the peer's messages within the ACK delay, so the
	 * ACK of a completed message waits for the answer to ride on (@ack_held:
	 * one does); a held ACK that has to go alone ends it. @done_at: when the
	 * latest message from the peer completed.
	 */
	uint8_t pingpong;
	bool ack_held;
	uint64_t done_at;
	/**
	 * @grant_node, @grant_on, @grant_seen: the peer counts among the senders
	 * sharing our grant budget (§4.10, rd->granted), its latest data packet
	 * came at @grant_seen. @grant_join: it joined, and the ACK that carries
	 * its grant has not left yet; @grant_at: when it left (0: no round trip
	 * being timed); @grant_psn: the last PSN the peer sends before that ACK
	 * reaches it; @grant_rtt: the smoothed time from such an ACK to the data
	 * it released; @grant_given: the grant our latest ACK to it carried,
	 * while counted (in rd->grant_total).
	 */
	struct braid_dlist grant_node;
	bool grant_on, grant_join;
	uint32_t grant_psn, grant_given;
	uint64_t grant_seen, grant_at, grant_rtt;
	/** @cts_ids, @cts_sent, @cts_n: rendezvous messages with a buffer, waiting for their data. */
	uint32_t cts_ids[RD_CTS_MAX];
	uint64_t cts_sent[RD_CTS_MAX];
	/** @cts_tries: sends of each CTS since data last came (its repeat interval doubles). */
	uint8_t cts_tries[RD_CTS_MAX];
	/** @cts_first: when each CTS was first sent (0: not yet; UINT64_MAX: its RTT sampled). */
	uint64_t cts_first[RD_CTS_MAX];
	uint32_t cts_n;
	/* scheduling */
	uint64_t deadline;
	size_t heap_idx;
	bool ready;
	struct braid_dlist ready_node;
	/** @ctr: the peer's counters, since the flow was attached. */
	struct braid_rd_peer_ctr ctr;
	/** @fc_stalled: data waits for the receiver's window (counted once per stall). */
	bool fc_stalled;
	/** @stranger, @stranger_node: made for a packet of a peer not proven yet (counted in
	 * rd->unproven_flows, listed in rd->strangers) until the peer proves itself. */
	bool stranger;
	struct braid_dlist stranger_node;
	/** @silent: nothing ever came from the peer (conn->epoch 0; counted in rd->silent_flows). */
	bool silent;
	struct rd_txpkt *tx;		/* window slots */
	struct rd_pathrack *prack;	/* one per path */
	struct braid_pathset paths;	/* last: flexible */
};

/**
 * struct rd_idle - an idle peer in 32 bytes (§4.9): its conn's numbering and
 * incarnations, kept in rd->conns (tagged RD_IDLE_TAG, and RD_IDLE_UNPROVEN for a
 * peer not proven) once the conn has had nothing going for the idle time; the conn, its reference on the domain's
 * shared peer entry and its traffic state are given back. The next packet to or
 * from the peer makes a conn of it again, numbering where it left off.
 */
struct rd_idle {
	uint64_t key;
	uint32_t snd_nxt, next_msg_id, rcv_nxt, match_next;
	uint32_t epoch, my_epoch;
};
/* what an idle record keeps of its conn (field names shared with struct rd_conn) */
#define RD_IDLE_FIELDS(X) X(snd_nxt) X(next_msg_id) X(rcv_nxt) X(match_next) X(epoch) X(my_epoch)
/* the conn and idle pools' size without a peer limit (max_peers 0): memory is the bound */
#define RD_PEERS_UNBOUNDED	(1u << 26)
#define RD_IDLE_TAG	((uintptr_t)1)
#define RD_IDLE_UNPROVEN	((uintptr_t)2)	/* with RD_IDLE_TAG: the peer is not proven */
#define RD_IDLE_BITS	((uintptr_t)15)	/* pool objects are 16-byte aligned */
/* with RD_IDLE_TAG: the record's age in rounds of the forget walk (0-3) */
#define RD_IDLE_AGE_SHIFT	2
#define RD_IDLE_AGE	((uintptr_t)12)

/** What an engine keeps per peer it has ever exchanged packets with (small, malloc'd on first contact). */
struct rd_conn {
	uint64_t key;
	uint32_t ip;
	uint16_t port;
	/** @peer: the shared table entry (a reference is held). */
	struct braid_peer *peer;
	uint32_t snd_nxt, next_msg_id;
	uint32_t rcv_nxt, match_next;
	/** @sendq: sends with bytes not yet cut into packets. */
	struct braid_dlist sendq;
	/** @paused: rendezvous sends waiting for the receiver's CTS (§4.6). */
	struct braid_dlist paused;
	/** @rma_ops: RMA requests (and delivery-complete sends) to this peer not yet answered
	 * (§4.7), oldest first; @waiting: how many of them have nothing left in flight. */
	struct braid_dlist rma_ops;
	uint32_t waiting;
	struct rd_flow *flow;
	/** @epoch: the peer's incarnation as this endpoint knows it; 0 while unknown (§4.1). */
	uint32_t epoch;
	/**
	 * @my_epoch: our incarnation as this peer knows it: cfg.epoch, later by
	 * one each time we gave up on the peer (peer timeout) and started afresh
	 * (§4.9), so that the peer starts afresh too.
	 */
	uint32_t my_epoch;
	/**
	 * @verified: the peer proved that it receives at its address in
	 * incarnation @epoch: it answered our challenge (§4.9). Until then its
	 * messages match receives only once complete, and the conn may be evicted.
	 */
	bool verified;
	/** @chal_epoch, @chal_cookie, @chal_at: our latest challenge: the incarnation
	 * it asks about, its cookie and when it went, while @chal_out. */
	uint32_t chal_epoch, chal_cookie;
	uint64_t chal_at;
	bool chal_out;
	/** @chal_tries: repeats of the challenge about @chal_epoch (each waits twice as long). */
	uint8_t chal_tries;
	/** @lru: in rd->unproven, least recently heard from first, while not verified; once
	 * verified, in rd->resting while it has no flow. */
	struct braid_dlist lru;
	/** @msgs: messages (struct rd_msg) from the peer alive anywhere: the conn stays while any is. */
	uint32_t msgs;
	/** @took: we accepted (and acknowledged) data from the peer: it may not be forgotten at once. */
	bool took;
	/** @peer_took: the peer acknowledged a packet of ours (a record woken counts as both). */
	bool peer_took;
};

#endif /* BRAID_RD_CONN_H */
