/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_int.h: the reliable-datagram engine's internal state, shared by its files (not a public header): the engine itself and the calls between its files; its objects are in braid_rd_send.h (sender), braid_rd_msg.h (receiver) and braid_rd_conn.h (per peer). */
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
#include "braid_rd_send.h"
#include "braid_rd_msg.h"
#include "braid_rd_conn.h"

/*
 * A helper of the per-message path inlined into its callers whatever the
 * compiler's size limits: its call, register saves and argument moves cost
 * a good part of what its body does.
 */
#define RD_HOT_INLINE	inline __attribute__((always_inline))

/* heap memory given back since the last malloc_trim() that makes another worth it */
#define RD_TRIM_BYTES	(256u << 10)
/* the RTO doubles at most this many times (8x): a live peer's silence (heavy
 * random loss, a host that was not scheduled for a while) must not leave the
 * flow waiting long after it answers again; the peer timeout, not the backoff,
 * decides that a peer is gone, and after an RTO the window is small */
#define RD_RTO_BACKOFF_MAX	3

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
	struct braid_pool sends, msgs, stages, flows, injects;
	/** @stages_small: staging for small payloads (an 8-byte message took a 64 KiB
	 * packet buffer: 257 of them filled loopback's whole staging budget) */
	struct braid_pool stages_small;
	/** @resps: the engine's own sends (RMA and delivery answers): never short of one because
	 * the application's sends took them all (two peers full of requests to each other) */
	struct braid_pool resps;
	/**
	 * @rxq: where its messages find receives: @own_rxq, or a queue shared
	 * with other engines (cfg.rxq); @rxq_node: in @rxq's engines.
	 */
	struct braid_rd_rxq *rxq;
	struct braid_rd_rxq own_rxq;
	struct braid_dlist rxq_node;
	/** @rma_pend: RMA requests received, due, waiting for a send, a buffer or ring room. */
	struct braid_dlist rma_pend;
	/**
	 * @sends_done: sends the outgoing side is done with whose completion it
	 * leaves to its caller (rd_sends_finish), in order, by their rlink: RMA
	 * requests answered and then acknowledged, and every send
	 * rd_out_fail_sends() failed. Empty between the engine's calls.
	 */
	struct braid_dlist sends_done;
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
	/** @local_heap: staging buffers taken from malloc for messages handed whole (§7.4). */
	uint32_t local_heap;
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
	/**
	 * @granted: the senders counted active (§4.10), by the time of their
	 * latest packet, oldest first (rd_flow.grant_node; counted in
	 * stats.grant_senders); @grant_pkts: the grant budget in packets of our
	 * MTU (cfg.grant_bytes; 0: no grants); @grant_total: the latest grants
	 * of those senders, summed (rd_flow.grant_given).
	 */
	struct braid_dlist granted;
	uint32_t grant_pkts;
	uint64_t grant_total;
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

/*
 * The calls between the engine's files, by the file that defines them. The
 * outgoing side (braid_rd_out.c) is a leaf: it calls only the engine's base
 * and braid_rd_conn.c; what its callers must do next (reschedule a flow,
 * complete the sends it hands back, write the ACK it placed) they do.
 */

/* braid_rd_engine.c: the engine's base (ready list, completions, staging, drops) */
/* @f has something to send: on the ready list, behind the others (inline: each message asks). */
static inline void rd_flow_ready(struct braid_rd *rd, struct rd_flow *f)
{
	if (!f->ready) {
		f->ready = true;
		braid_dlist_insert_tail(&f->ready_node, &rd->ready);
	}
}
/*
 * The completion ring's next entry, for the caller to fill and then count
 * (rd_comp_commit), or NULL when the ring is full. Inline: every operation
 * completes once, written in place.
 */
static inline struct braid_rd_comp *rd_comp_slot(struct braid_rd *rd)
{
	uint32_t i = rd->comp_head + rd->comp_count;

	if (rd->comp_count == rd->comp_cap)
		return NULL;
	return &rd->comps[i < rd->comp_cap ? i : i - rd->comp_cap];
}
static inline void rd_comp_commit(struct braid_rd *rd)
{
	rd->comp_count++;
}
/* Push completion @c (false: the ring is full). */
static inline bool rd_comp_push(struct braid_rd *rd, const struct braid_rd_comp *c)
{
	struct braid_rd_comp *slot = rd_comp_slot(rd);

	if (!slot)
		return false;
	*slot = *c;
	rd_comp_commit(rd);
	return true;
}
/*
 * The operations' places in the completion ring: its first half (the other
 * is for the events of RMA targeting us, braid_rd_rma.c). Each operation
 * held in a pool will make one completion, and each completion not taken
 * yet holds its place: a new operation is taken only while one is free, so
 * that no completion ever finds the ring full, however late the caller
 * takes them. Inline: every send and receive posted asks.
 */
static inline size_t rd_comp_room(const struct braid_rd *rd)
{
	size_t held = rd->comp_count + rd->sends.in_use +
		      (rd->rxq == &rd->own_rxq ? rd->own_rxq.recvs.in_use : 0);

	return held < rd->comp_cap / 2 ? rd->comp_cap / 2 - held : 0;
}
void rd_sends_finish(struct braid_rd *rd, int err, int prov_errno);
void rd_stage_put(struct braid_rd *rd, struct rd_stage *s);
/* At close: what the receive side holds outside the engine's pools (braid_rd_in.c). */
void rd_in_close(struct braid_rd *rd);
int rd_drop(struct braid_rd *rd, enum braid_drop_reason r);
int rd_drop_at(struct braid_rd *rd, struct rd_flow *f, enum braid_drop_reason r);
uint32_t rd_random(struct braid_rd *rd);
static inline uint32_t rd_usec(uint64_t ns) { return (uint32_t)(ns / 1000); }

/* braid_rd_conn.c: conns and flows */
struct rd_conn *rd_conn_find(struct braid_rd *rd, uint64_t key, bool create, uint64_t now);
/*
 * The conn of peer @key (@create: made or woken if need be). A stream's packets
 * and ACKs come from one peer: its conn again, no map walk (every conn that goes
 * clears rd->hot first: conn_release). Inline: every send and packet asks.
 */
static inline struct rd_conn *rd_conn_get(struct braid_rd *rd, uint64_t key, bool create,
					  uint64_t now)
{
	if (rd->hot && rd->hot_key == key)
		return rd->hot;
	return rd_conn_find(rd, key, create, now);
}
/* A packet came from the peer of @c now: its liveness (shared: other endpoints' engines read it),
 * and, not proven yet, its place among the unproven (the latest heard from last). */
static inline void rd_conn_touch(struct braid_rd *rd, struct rd_conn *c, uint64_t now)
{
	__atomic_store_n(&c->peer->last_active, now, __ATOMIC_RELAXED);
	if (!c->verified) {
		braid_dlist_remove(&c->lru);
		braid_dlist_insert_tail(&c->lru, &rd->unproven);
	}
}
void rd_conn_free(struct braid_rd *rd, struct rd_conn *c);
bool rd_conn_evictable(const struct braid_rd *rd, const struct rd_conn *c, uint64_t now);
bool rd_conn_numbered(const struct rd_conn *c);
bool rd_conn_rest(struct braid_rd *rd, struct rd_conn *c);
struct rd_idle *rd_idle_of(void *v);
void rd_fresh_epoch_after(struct braid_rd *rd, uint32_t epoch);
void rd_flow_detach(struct braid_rd *rd, struct rd_flow *f);
struct rd_flow *rd_flow_new(struct braid_rd *rd, struct rd_conn *conn, bool inbound, uint64_t now);
/* @conn's flow, made now if it has none (NULL: none can be had). Inline: every packet of data
 * and every send asks, and all but the first find it. */
static inline struct rd_flow *rd_flow_attach(struct braid_rd *rd, struct rd_conn *conn,
					     bool inbound, uint64_t now)
{
	return conn->flow ? conn->flow : rd_flow_new(rd, conn, inbound, now);
}
void rd_flow_fail(struct braid_rd *rd, struct rd_flow *flow, int err, int prov_errno);
uint64_t rd_flow_worst_rto(const struct rd_flow *flow, bool busy);

/* braid_rd_timer.c: the deadline heap */
void rd_flow_schedule_at(struct braid_rd *rd, struct rd_flow *flow);
void rd_heap_remove(struct braid_rd *rd, struct rd_flow *f);
bool rd_heap_room(struct braid_rd *rd);

/* braid_rd_proof.c: proof of incarnation, restarts, forgetting (protocol.md §4.9) */
uint64_t rd_chal_deadline(const struct braid_rd *rd, const struct rd_flow *f);
void rd_conn_challenge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now);
int rd_conn_epoch_judge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now);
/*
 * §4.9: a packet from @conn's address claiming the peer's incarnation is
 * @epoch. The first word from a peer is believed at once (0-RTT) and proven
 * meanwhile; any other incarnation only once it answers a challenge. Return:
 * 0 to take the packet, or a negative drop reason. Inline: every packet of a
 * proven peer claims the incarnation it proved.
 */
static inline int rd_conn_epoch_check(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch,
				      uint64_t now)
{
	if (conn->verified && epoch == conn->epoch && epoch)
		return 0;
	return rd_conn_epoch_judge(rd, conn, epoch, now);
}
void rd_conn_send_reset(struct braid_rd *rd, struct rd_conn *conn, uint64_t now);
int rd_input_chal(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		  uint64_t now);
void rd_forget_walk(struct braid_rd *rd, uint64_t now);

/* braid_rd_out.c (outgoing: sends, packets, ACK processing, loss recovery) */
void rd_out_header_only(struct braid_rd_out *out, size_t hdr_len, uint32_t ip, uint16_t port,
			int32_t route);
void rd_out_control(struct braid_rd *rd, struct rd_flow *flow, struct braid_rd_out *out,
		    size_t hdr_len, int32_t route);
/* (after either: the caller completes what rd->sends_done holds) */
void rd_out_ack_input(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_ack_view *a,
		      uint64_t now);
void rd_out_piggy_ack(struct braid_rd *rd, struct rd_flow *flow, uint32_t ack_psn, uint64_t now);
void rd_out_cts_input(struct braid_rd *rd, struct rd_conn *conn, uint32_t msg_id);
int rd_out_flow(struct braid_rd *rd, struct rd_flow *flow, uint64_t now, struct braid_rd_out *out,
		int n, int max, int *ack);
void rd_out_timer(struct braid_rd *rd, struct rd_flow *flow, uint64_t now);
uint64_t rd_out_deadline(const struct braid_rd *rd, const struct rd_flow *flow);
void rd_out_fail_sends(struct braid_rd *rd, struct rd_conn *conn);
struct rd_send *rd_out_new_send(struct braid_rd *rd, struct rd_conn *conn, uint32_t flags,
				void *context);
int rd_out_start(struct braid_rd *rd, uint64_t peer, uint32_t flags, void *context,
		 const struct iovec *iov, size_t cnt, uint64_t len, uint64_t now,
		 struct rd_send **opp);
/*
 * A BRAID_RD_STAGED request's ring (braid_rd_send.staged_len): checked
 * (-FI_EINVAL: not staged, not one entry, shorter than the message and than
 * braid_rd_stage_ring()), *@len the message's length; then set on its op
 * when the message goes round it.
 */
int rd_out_ring_check(const struct braid_rd *rd, uint32_t flags, const struct iovec *iov,
		      size_t cnt, uint64_t staged_len, uint64_t *len);
void rd_out_ring_set(struct rd_send *op, const struct iovec *iov, uint64_t len);
void rd_out_queue(struct braid_rd *rd, struct rd_send *op, uint64_t now);
void rd_out_finish(struct braid_rd *rd, struct rd_send *op, int err, int prov_errno);
void rd_out_release(struct braid_rd *rd, struct rd_send *op);
/* Sends wait for the peer with nothing in flight: rendezvous sends for a CTS
 * (§4.6), RMA requests for their answer (§4.7). */
static inline bool rd_out_waiting(const struct rd_conn *conn)
{
	return !braid_dlist_empty(&conn->paused) || conn->waiting;
}
/* Nothing to send or in flight, and no send waiting for the peer (inline: every schedule asks). */
static inline bool rd_out_idle(const struct rd_flow *f, const struct rd_conn *conn)
{
	/* sends waiting for the peer keep the flow (not the peer timeout) */
	return braid_dlist_empty(&f->txorder) && braid_dlist_empty(&f->retxq) &&
	       braid_dlist_empty(&conn->sendq) && !rd_out_waiting(conn);
}

/*
 * Put @flow in the deadline heap at its next deadline, or out of it when it
 * has none (braid_rd_timer.c). Inline: a flow with nothing in flight, owed or
 * awaited either way (a stream's receiving side once each message is
 * delivered) has none, and needs no look at each side's timers.
 */
static inline void rd_flow_schedule(struct braid_rd *rd, struct rd_flow *f)
{
	if (f->msgs_live || f->cts_n || f->ack_deadline || !rd_out_idle(f, f->conn)) {
		rd_flow_schedule_at(rd, f);
		return;
	}
	f->deadline = UINT64_MAX;
	if (f->heap_idx != SIZE_MAX)
		rd_heap_remove(rd, f);
}

/* braid_rd_in.c (incoming: data, reassembly, matching, ACK generation) */
int rd_in_data(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_data_view *v,
	       bool ecn, uint64_t now);
void rd_in_write_ack(struct braid_rd *rd, struct rd_flow *flow, struct braid_rd_out *out,
		     uint64_t now);
int rd_in_write_cts(struct braid_rd *rd, struct rd_flow *flow, uint64_t now,
		    struct braid_rd_out *out, int max);
bool rd_in_idle(const struct rd_flow *flow);
void rd_in_match_posted(struct braid_rd *rd, struct rd_recv *recv);
int rd_rxq_construct(struct braid_rd_rxq *q, uint32_t max_recvs);
void rd_in_reset(struct braid_rd *rd, struct rd_conn *conn, int err, int prov_errno);
uint32_t rd_in_rwnd(const struct braid_rd *rd, const struct rd_flow *flow);
void rd_in_room(struct braid_rd *rd);
void rd_in_forget(struct braid_rd *rd, struct rd_flow *flow);
void rd_in_verified(struct braid_rd *rd, struct rd_conn *conn, uint64_t now);
uint64_t rd_in_deadline(const struct braid_rd *rd, const struct rd_flow *flow);
bool rd_in_timer(struct braid_rd *rd, struct rd_flow *flow, uint64_t now);

/* braid_rd_grant.c (receiver grants, §4.10) */
/* A data packet that is not the last of its message (and not a rendezvous message's first):
 * its sender has more to send now. */
static inline bool rd_grant_more(const struct braid_rd_data_view *v)
{
	return (uint64_t)v->offset + v->payload_len < v->msg_len && !(v->flags & BRAID_RD_F_RDV);
}
bool rd_grant_arrive(struct braid_rd *rd, struct rd_flow *f, const struct braid_rd_data_view *v,
		     uint64_t now);
/*
 * A data packet from the sender of @f: it may join the active senders (true:
 * it joined now, and waits for its grant: acknowledge at once). Inline: a
 * sender of one-packet messages (a ping-pong) has nothing to note.
 */
static inline bool rd_grant_note(struct braid_rd *rd, struct rd_flow *f,
				 const struct braid_rd_data_view *v, uint64_t now)
{
	if (!rd->grant_pkts || (!f->grant_on && !f->grant_at && !rd_grant_more(v)))
		return false;
	return rd_grant_arrive(rd, f, v, now);
}
/* The grant of the sender of @f now, in packets (cfg.window: no limit). */
uint32_t rd_grant_peek(const struct braid_rd *rd, const struct rd_flow *f);
/* The rwnd of an ACK to @f leaving now, of the receive window @room: the grant, if smaller. */
uint32_t rd_grant_sent(struct braid_rd *rd, struct rd_flow *f, uint32_t room, uint64_t now);
/* The sender of @f leaves the active set (its flow's receiving state goes). */
void rd_grant_forget(struct braid_rd *rd, struct rd_flow *f);

/* braid_rd_rma.c (RMA and atomics, §4.7) */
int rd_rma_in_where(struct braid_rd *rd, const struct rd_msg *m, const struct braid_rd_data_view *v,
		    struct iovec *iov, int max);
bool rd_rma_in_open(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v);
void rd_rma_in_place(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v);
void rd_rma_in_settle(struct braid_rd *rd, struct rd_msg *m, uint64_t now);
void rd_rma_pend_run(struct braid_rd *rd, uint64_t now);
void rd_rma_delivered(struct braid_rd *rd, struct rd_msg *m);
void rd_rma_pend_drop(struct braid_rd *rd, struct rd_conn *conn);
void rd_rma_finish(struct braid_rd *rd, struct rd_send *op, int err, int prov_errno);

/*
 * How long the receiving side may hold an ACK back (§4.3): the configured
 * delay, at most a quarter of the RTT where one is known (either
 * direction). The sending side widens its loss windows by the peer's.
 */
static inline uint64_t rd_ack_delay(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t rtt = f->min_rtt ? f->min_rtt : f->cts_rtt;
	uint64_t d = rd->cfg.ack_delay_ns;

	/* (a ping-pong's held ACK waits for the answer: the echoed hold time
	 * keeps the sender's RTT true, so it may wait the whole delay) */
	if (rtt && rtt / 4 < d && !f->pingpong)
		d = rtt / 4;
	return d;
}

/*
 * How long the peer of @f may be silent before it counts as gone, either
 * way: the configured timeout, never less than 16 RTOs' worth of the
 * slowest path (a 50 ms fabric is not dead), never more than 4x the
 * configured timeout (one absurd sample must not make a dead peer wait for
 * minutes).
 */
static inline uint64_t rd_peer_timeout(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t t = rd->cfg.peer_timeout_ns, w = rd_flow_worst_rto(f, false) * 16;

	if (w > 4 * t)
		w = 4 * t;
	return w > t ? w : t;
}

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
