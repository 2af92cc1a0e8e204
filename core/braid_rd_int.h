/* braid_rd_int.h: the reliable-datagram engine's internal state, shared by its files (not a public header). */
#ifndef BRAID_RD_INT_H
#define BRAID_RD_INT_H

#include "braid/braid_list.h"
#include "braid/braid_map.h"
#include "braid/braid_pool.h"
#include "braid_cc.h"
#include "braid_path.h"
#include "braid_peer.h"
#include "braid_rd.h"
#include "braid_seq.h"

#define RD_CTS_MAX	16
/* heap memory given back since the last malloc_trim() that makes another worth it */
#define RD_TRIM_BYTES	(256u << 10)
/* the RTO doubles at most this many times (8x): a live peer's silence (heavy
 * random loss, a host that was not scheduled for a while) must not leave the
 * flow waiting long after it answers again; the peer timeout, not the backoff,
 * decides that a peer is gone, and after an RTO the window is small */
#define RD_RTO_BACKOFF_MAX	3

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
};

/** Per-path loss detection state of a flow (RACK per path, protocol.md §4.5). */
struct rd_pathrack {
	/** @inflight: this path's in-flight packets, transmit order. */
	struct braid_dlist inflight;
	/** @rack_seq, @rack_rtt: the latest-sent packet acknowledged on this path, and its RTT. */
	uint32_t rack_seq;
	bool has_rack;
	uint64_t rack_rtt;
	/** @ctr: the path slot's counters (they outlive re-draws: a slot is a row). */
	struct braid_rd_path_ctr ctr;
};

/** Staged payload: data that arrived before its message had a buffer (pool: stage_pkts). */
struct rd_stage {
	struct rd_stage *next;
	uint32_t off, len;
	/** @small: from stages_small (RD_STAGE_SMALL bytes of data), else from stages (a packet's). */
	bool small;
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
	/** @node: in the engine's unexpected list once its matching turn passed with no receive. */
	struct braid_dlist node;
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
};

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

/* resends a second to peers never heard from, all together (flow_rto) */
#define RD_SILENT_RTX_PER_S	10000

/* §4.9: flows strangers' packets may hold at once (at most half of max_flows) */
#define RD_STRANGER_FLOWS	128

/* challenges and responses waiting for braid_rd_output (§4.9) */
#define RD_CTL_MAX	64

/** A header-only control packet owed to an address (a challenge or its response). */
struct rd_ctl {
	struct braid_rd_chal_view v;
	uint32_t ip;
	uint16_t port;
};

/** An entry of the deadline heap: a flow and its deadline (compared without reading the flow). */
struct rd_heap_ent {
	uint64_t deadline;
	struct rd_flow *f;
};

struct braid_rd {
	struct braid_rd_config cfg;
	struct braid_peer_table *peers;
	/** @conns: key -> struct rd_conn. */
	struct braid_map conns;
	/** @hot, @hot_key: the conn rd_conn_get found last (NULL: none); cleared when a conn goes. */
	struct rd_conn *hot;
	uint64_t hot_key;
	struct braid_pool sends, recvs, msgs, stages, flows, injects;
	/** @stages_small: staging for small payloads (an 8-byte message took a 64 KiB
	 * packet buffer: 257 of them filled loopback's whole staging budget) */
	struct braid_pool stages_small;
	/** @resps: the engine's own sends (RMA and delivery answers): never short of one because
	 * the application's sends took them all (two peers full of requests to each other) */
	struct braid_pool resps;
	/** @posted_msg, @posted_tagged: posted receives, in post order. */
	struct braid_dlist posted_msg, posted_tagged;
	/** @unexpected: complete or arriving messages that matched no receive. */
	struct braid_dlist unexpected;
	/** @rma_pend: RMA requests received, due, waiting for a send, a buffer or ring room. */
	struct braid_dlist rma_pend;
	struct braid_dlist active;	/* flows with state */
	struct braid_dlist ready;	/* flows with something to send now */
	/** @heap: flows by deadline (@heap_cap entries, grown with the active flows). */
	struct rd_heap_ent *heap;
	size_t heap_n, heap_cap;
	/** @comps: completion ring. */
	struct braid_rd_comp *comps;
	uint32_t comp_head, comp_count, comp_cap;
	uint64_t rng;
	/** @chal_rng: cookies' generator without cfg.random (its own: path choices stay as they were). */
	uint64_t chal_rng;
	/** @refused_n: flows with @refused set. */
	uint32_t refused_n;
	/** @in_route: the route of the packet braid_rd_input_from() is handling, or -1. */
	int32_t in_route;
	/**
	 * @in_arrived: when the packets handed in now reached this host, or no
	 * earlier (braid_rd_arrived()); 0: not known (no host absence is known).
	 */
	uint64_t in_arrived;
	/** @in_placed: its payload is in place already (braid_rd_input_placed()). */
	bool in_placed;
	size_t flow_size;
	/**
	 * @slot_mask: a flow's window rings (tx, rcv_bits, msgs) have
	 * slot_mask + 1 slots, the power of two at or above cfg.window: a PSN's
	 * or message's slot is a mask, not a division per packet.
	 */
	uint32_t slot_mask;
	/** @conn_pool: conns, sized at open (cfg.max_peers; none: malloc'd, unbounded). */
	struct braid_pool conn_pool;
	/** @idle_pool: struct rd_idle, the idle proven peers (max_peers, or unbounded without). */
	struct braid_pool idle_pool;
	/**
	 * @fresh_epoch: our incarnation to a peer we have no state for: cfg.epoch,
	 * later than any incarnation a peer we forgot (evicted) after it numbered
	 * anything with us knows (§4.9).
	 */
	uint32_t fresh_epoch;
	/** @trim_debt: heap bytes given back since malloc_trim() last ran (rd_sweep);
	 * @trim_again: trim at the next sweep too. */
	size_t trim_debt;
	bool trim_again;
	/** @unproven: conns not verified (§4.9), least recently heard from first. */
	struct braid_dlist unproven;
	/** @resting: proven conns without traffic state (by their lru), oldest first: rd_sweep
	 * makes idle records of them (a proven conn is here exactly while it has no flow). */
	struct braid_dlist resting;
	/**
	 * @unproven_flows: flows made for packets of peers not proven yet
	 * (strangers), at most RD_STRANGER_FLOWS: flows this endpoint makes to
	 * send are bounded by max_flows only.
	 */
	uint32_t unproven_flows;
	/** @strangers: those flows (what reclaiming one for a stranger looks through). */
	struct braid_dlist strangers;
	/** @silent_flows: flows to peers never heard from (their resends share a budget). */
	uint32_t silent_flows;
	/** @sweep_at: when idle flows are looked for next (cfg.idle_ns; UINT64_MAX: none to look at). */
	uint64_t sweep_at;
	/**
	 * @forget_at: when the walk over the idle records goes on (cfg.forget_ns;
	 * UINT64_MAX: no record); @forget_pos: the map slot it is at (SIZE_MAX:
	 * between rounds), in a map of @forget_cap slots; @forgot: records went
	 * this round (the map shrinks at its end); @forget_key: the secret of
	 * the stateless cookies that ask a peer to forget (§4.9).
	 */
	uint64_t forget_at;
	size_t forget_pos, forget_cap;
	bool forgot;
	unsigned char forget_key[16];
	/** @ctl: challenges and responses to send (a ring). */
	struct rd_ctl ctl[RD_CTL_MAX];
	uint32_t ctl_head, ctl_n;
	struct braid_rd_stats stats;
};

/*
 * Counting (braid_counters.h): an event is counted once, where it happens,
 * into the endpoint's row and, by its list, its peer's (flow @f; may be
 * NULL: no peer row) and its path's (slot @i of @f).
 */
#define RD_COUNT_EP(rd, name, n)	((rd)->stats.name += (n))
#define RD_COUNT(rd, f, name, n) do {						\
		uint64_t n_ = (n);						\
		struct rd_flow *f_ = (f);					\
		(rd)->stats.name += n_;						\
		if (f_)								\
			f_->ctr.name += n_;					\
	} while (0)
#define RD_COUNT_PATH(rd, f, i, name, n) do {					\
		uint64_t n_ = (n);						\
		struct rd_flow *f_ = (f);					\
		(rd)->stats.name += n_;						\
		f_->ctr.name += n_;						\
		f_->prack[i].ctr.name += n_;					\
	} while (0)

/* flows strangers may hold (RD_STRANGER_FLOWS, at most half of max_flows) */
static inline uint32_t rd_stranger_flows(const struct braid_rd *rd)
{
	uint32_t half = (rd->cfg.max_flows + 1) / 2;

	return half < RD_STRANGER_FLOWS ? half : RD_STRANGER_FLOWS;
}

/* Free a message record (it no longer holds its conn). */
static inline void rd_msg_release(struct braid_rd *rd, struct rd_msg *m)
{
	m->conn->msgs--;
	braid_pool_release(&rd->msgs, m);
}

/* braid_rd_engine.c */
/* braid_rd_conn.c: conns and flows */
struct rd_conn *rd_conn_get(struct braid_rd *rd, uint64_t key, bool create, uint64_t now);
void rd_conn_touch(struct braid_rd *rd, struct rd_conn *c, uint64_t now);
void rd_conn_free(struct braid_rd *rd, struct rd_conn *c);
bool rd_conn_evictable(const struct braid_rd *rd, const struct rd_conn *c, uint64_t now);
bool rd_conn_numbered(const struct rd_conn *c);
bool rd_conn_rest(struct braid_rd *rd, struct rd_conn *c);
struct rd_idle *rd_idle_of(void *v);
void rd_fresh_epoch_after(struct braid_rd *rd, uint32_t epoch);
void rd_flow_detach(struct braid_rd *rd, struct rd_flow *f);
struct rd_flow *rd_flow_attach(struct braid_rd *rd, struct rd_conn *conn, bool inbound,
			       uint64_t now);
void rd_flow_fail(struct braid_rd *rd, struct rd_flow *flow, int err, int prov_errno);
/* braid_rd_proof.c: proof of incarnation, restarts, forgetting (protocol.md §4.9) */
uint64_t rd_chal_deadline(const struct braid_rd *rd, const struct rd_flow *f);
void rd_conn_challenge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now);
int rd_conn_epoch_check(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now);
void rd_conn_send_reset(struct braid_rd *rd, struct rd_conn *conn, uint64_t now);
int rd_input_chal(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		  uint64_t now);
void rd_forget_walk(struct braid_rd *rd, uint64_t now);
uint32_t rd_random(struct braid_rd *rd);

/* the deadline heap */
void rd_flow_schedule(struct braid_rd *rd, struct rd_flow *flow);
void rd_heap_remove(struct braid_rd *rd, struct rd_flow *f);
bool rd_heap_room(struct braid_rd *rd);
void rd_flow_ready(struct braid_rd *rd, struct rd_flow *flow);
bool rd_comp_push(struct braid_rd *rd, const struct braid_rd_comp *c);
/* room in the completion ring for one more application operation (braid_rd_engine.c) */
size_t rd_comp_room(const struct braid_rd *rd);
int rd_drop(struct braid_rd *rd, enum braid_drop_reason r);
int rd_drop_at(struct braid_rd *rd, struct rd_flow *f, enum braid_drop_reason r);
void rd_out_control(struct braid_rd *rd, struct rd_flow *flow, struct braid_rd_out *out,
		    size_t hdr_len, int32_t route);
static inline uint32_t rd_usec(uint64_t ns) { return (uint32_t)(ns / 1000); }
uint64_t rd_ack_delay(const struct braid_rd *rd, const struct rd_flow *flow);
uint64_t rd_peer_timeout(const struct braid_rd *rd, const struct rd_flow *flow);

/* braid_rd_out.c (outgoing: sends, packets, ACK processing, loss recovery) */
void rd_out_ack_input(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_ack_view *a,
		      uint64_t now);
void rd_out_piggy_ack(struct braid_rd *rd, struct rd_flow *flow, uint32_t ack_psn, uint64_t now);
int rd_out_flow(struct braid_rd *rd, struct rd_flow *flow, uint64_t now, struct braid_rd_out *out,
		int max);
void rd_out_timer(struct braid_rd *rd, struct rd_flow *flow, uint64_t now);
uint64_t rd_out_deadline(const struct braid_rd *rd, const struct rd_flow *flow);
bool rd_out_idle(const struct rd_flow *flow, const struct rd_conn *conn);
void rd_out_fail_sends(struct braid_rd *rd, struct rd_conn *conn, int err, int prov_errno);
struct rd_send *rd_out_new_send(struct braid_rd *rd, struct rd_conn *conn, uint32_t flags,
				void *context);
int rd_out_start(struct braid_rd *rd, uint64_t peer, uint32_t flags, void *context,
		 const struct iovec *iov, size_t cnt, uint64_t len, uint64_t now,
		 struct rd_send **opp);
void rd_out_queue(struct braid_rd *rd, struct rd_send *op, uint64_t now);
void rd_out_send_done(struct braid_rd *rd, struct rd_send *op);
void rd_out_release(struct braid_rd *rd, struct rd_send *op);
bool rd_out_waiting(const struct rd_conn *conn);

/* braid_rd_rma.c (RMA and atomics, §4.7) */
struct rd_msg;
int rd_rma_in_where(struct braid_rd *rd, const struct rd_msg *m, const struct braid_rd_data_view *v,
		    struct iovec *iov, int max);
bool rd_rma_in_open(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v);
void rd_rma_in_place(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v);
void rd_rma_in_settle(struct braid_rd *rd, struct rd_msg *m, uint64_t now);
void rd_rma_pend_run(struct braid_rd *rd, uint64_t now);
void rd_rma_delivered(struct braid_rd *rd, struct rd_msg *m);
void rd_rma_pend_drop(struct braid_rd *rd, struct rd_conn *conn);
void rd_rma_finish(struct braid_rd *rd, struct rd_send *op, int err, int prov_errno);

/* braid_rd_in.c (incoming: data, reassembly, matching, ACK generation) */
int rd_in_data(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_data_view *v,
	       bool ecn, uint64_t now);
void rd_in_write_ack(struct braid_rd *rd, struct rd_flow *flow, struct braid_rd_out *out,
		     uint64_t now);
bool rd_in_idle(const struct rd_flow *flow);
void rd_in_match_posted(struct braid_rd *rd, struct rd_recv *recv);
void rd_in_reset(struct braid_rd *rd, struct rd_conn *conn, int err, int prov_errno);
uint32_t rd_in_rwnd(const struct braid_rd *rd, const struct rd_flow *flow);
void rd_stage_put(struct braid_rd *rd, struct rd_stage *s);
void rd_in_room(struct braid_rd *rd);
void rd_in_forget(struct braid_rd *rd, struct rd_flow *flow);
void rd_in_verified(struct braid_rd *rd, struct rd_conn *conn, uint64_t now);
int rd_in_write_cts(struct braid_rd *rd, struct rd_flow *flow, uint64_t now,
		    struct braid_rd_out *out, int max);
uint64_t rd_in_deadline(const struct braid_rd *rd, const struct rd_flow *flow);
bool rd_in_timer(struct braid_rd *rd, struct rd_flow *flow, uint64_t now);
void rd_out_cts_input(struct braid_rd *rd, struct rd_conn *conn, uint32_t msg_id);

/* The window ring slot of PSN or message id @x (struct braid_rd's slot_mask). */
static inline uint32_t rd_slot(const struct braid_rd *rd, uint32_t x)
{
	return x & rd->slot_mask;
}

/* Bits of a flow's window rings (rcv_bits, msg_done). */
static inline bool bit_test(const uint64_t *b, uint32_t i) { return b[i / 64] >> (i % 64) & 1; }
static inline void bit_set(uint64_t *b, uint32_t i) { b[i / 64] |= 1ULL << (i % 64); }
static inline void bit_clear(uint64_t *b, uint32_t i) { b[i / 64] &= ~(1ULL << (i % 64)); }

#endif /* BRAID_RD_INT_H */
