/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_conn.c: the RD engine's per-peer conns and their flows: creation, lookup, resting and waking (protocol.md §4.9), eviction, attach, detach and failure. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_rd_int.h"
#include "braid/braid_errno.h"

/* unproven conns looked at per eviction, at most (the busy ones go to the back) */
#define RD_EVICT_SCAN	64

/* The conn's memory, lists and shared-entry reference go (the peer's counts are the caller's). */
static void conn_release(struct braid_rd *rd, struct rd_conn *c)
{
	if (rd->hot == c)
		rd->hot = NULL;
	if (!c->verified || !c->flow)
		braid_dlist_remove(&c->lru);	/* rd->unproven, or rd->resting */
	braid_peer_put_evict(c->peer);
	braid_pool_release(&rd->conn_pool, c);
}

/* The peer is forgotten. */
void rd_conn_free(struct braid_rd *rd, struct rd_conn *c)
{
	if (c->verified)
		rd->stats.peers_verified--;
	rd->stats.peers--;
	conn_release(rd, c);
}

/*
 * An unproven conn may go (§4.9) when it has nothing of ours pending and no
 * message of its own alive outside its flow (a complete one waiting for a
 * receive, an RMA request being served); what its flow holds (messages
 * half-received, which no receive took: an unproven peer's match only whole)
 * goes with it. One that took data goes only once silent for the peer
 * timeout: by then its sender resends nothing, so no retransmission of what
 * was taken can reach a fresh conn and be taken again.
 */
bool rd_conn_evictable(const struct braid_rd *rd, const struct rd_conn *c, uint64_t now)
{
	uint32_t in_flow = c->flow ? c->flow->msgs_live : 0;

	if (!braid_dlist_empty(&c->sendq) || !braid_dlist_empty(&c->paused) ||
	    !braid_dlist_empty(&c->rma_ops) || c->msgs != in_flow ||
	    (c->flow && !rd_out_idle(c->flow, c)))
		return false;
	return !c->took ||
	       now - __atomic_load_n(&c->peer->last_active, __ATOMIC_RELAXED) >= rd->cfg.peer_timeout_ns;
}

/* Has anything been numbered either way (a fresh conn would not resume it)? */
bool rd_conn_numbered(const struct rd_conn *c)
{
	return c->snd_nxt || c->next_msg_id || c->rcv_nxt || c->match_next;
}

/* Our incarnation to peers without state becomes later than @epoch (a forgotten peer's). */
void rd_fresh_epoch_after(struct braid_rd *rd, uint32_t epoch)
{
	if (!braid_seq_gt(rd->fresh_epoch, epoch)) {
		rd->fresh_epoch = epoch + 1;
		if (!rd->fresh_epoch)
			rd->fresh_epoch = 1;
	}
}

/* §4.9: the unproven peer least recently heard from that may go, goes. */
static bool conn_evict_one(struct braid_rd *rd, uint64_t now)
{
	int i;

	for (i = 0; i < RD_EVICT_SCAN && !braid_dlist_empty(&rd->unproven); i++) {
		struct rd_conn *c = braid_container_of(rd->unproven.next, struct rd_conn, lru);

		if (!rd_conn_evictable(rd, c, now)) {
			braid_dlist_remove(&c->lru);
			braid_dlist_insert_tail(&c->lru, &rd->unproven);
			continue;
		}
		/* a peer that numbered anything with us keeps its numbering: were we to
		 * meet it again at the same incarnation, its next messages would wait
		 * for ones taken long ago (or ours be taken for old ones), in silence.
		 * Peers met from now on see a later incarnation of us (§4.9), as after
		 * giving up on a peer: either side then starts afresh on proof. */
		if (rd_conn_numbered(c))
			rd_fresh_epoch_after(rd, c->my_epoch);
		if (c->flow)
			rd_flow_fail(rd, c->flow, FI_ECONNABORTED, BRAID_PERR_PEER_UNREACHABLE);
		braid_map_remove(&rd->conns, c->key);
		rd_conn_free(rd, c);
		rd->stats.peers_evicted++;
		return true;
	}
	return false;
}

static struct rd_conn *conn_alloc(struct braid_rd *rd, uint64_t now)
{
	struct rd_conn *c = braid_pool_alloc(&rd->conn_pool);

	if (!c && conn_evict_one(rd, now))
		c = braid_pool_alloc(&rd->conn_pool);
	if (!c)
		rd_drop(rd, BRAID_DROP_PEER_CAP);
	return c;
}

/*
 * A conn for @key, numbering from 0, not proven, holding a reference on the
 * domain's shared entry for the peer (made if none): NULL without room.
 */
static struct rd_conn *conn_new(struct braid_rd *rd, uint64_t key, uint64_t now)
{
	struct braid_peer *peer = braid_peer_get(rd->peers, key, 1, NULL);
	struct rd_conn *c;

	if (!peer)
		return NULL;
	c = conn_alloc(rd, now);
	if (!c) {
		braid_peer_put_evict(peer);
		return NULL;
	}
	c->key = key;
	c->ip = (uint32_t)(key >> 16);
	c->port = (uint16_t)key;
	c->peer = peer;
	c->my_epoch = rd->fresh_epoch;
	braid_dlist_init(&c->sendq);
	braid_dlist_init(&c->paused);
	braid_dlist_init(&c->rma_ops);
	return c;
}

/* rd->conns values: a conn, or an idle record tagged RD_IDLE_TAG (| RD_IDLE_UNPROVEN) */
struct rd_idle *rd_idle_of(void *v)
{
	return (uintptr_t)v & RD_IDLE_TAG ? (struct rd_idle *)((uintptr_t)v & ~RD_IDLE_BITS) : NULL;
}

/*
 * §4.9: a peer with nothing going (no traffic state, nothing queued, no message
 * of its alive, no question about its incarnation out) is remembered in 32 bytes: its numbering and
 * incarnations (and whether it is proven, in the map's tag). Its conn and its
 * reference on the domain's shared entry go (the entry too, unless another
 * endpoint holds it). Without room for the record, the conn stays.
 * Return: true if the conn went.
 */
bool rd_conn_rest(struct braid_rd *rd, struct rd_conn *c)
{
	struct rd_idle *idle;
	uintptr_t tag = RD_IDLE_TAG | (c->verified ? 0 : RD_IDLE_UNPROVEN);

	/* a proven peer's challenge asks about a claimed restart: it waits for its answer;
	 * an unproven peer's goes (its next packet is challenged afresh, §4.9 rule 2) */
	if (c->flow || c->msgs || (c->verified && c->chal_out) ||
	    !braid_dlist_empty(&c->sendq) || !braid_dlist_empty(&c->paused) ||
	    !braid_dlist_empty(&c->rma_ops))
		return false;
	idle = braid_pool_alloc(&rd->idle_pool);
	if (!idle)
		return false;
	idle->key = c->key;
#define RD_IDLE_SAVE(field) idle->field = c->field;
	RD_IDLE_FIELDS(RD_IDLE_SAVE)
#undef RD_IDLE_SAVE
	(void)braid_map_set(&rd->conns, c->key, (void *)((uintptr_t)idle | tag));
	rd->stats.peers_idle++;
	conn_release(rd, c);	/* the peer stays, as a record */
	return true;
}

/* An idle peer (conn_rest) heard from or sent to again: a conn, numbering where it left off. */
static struct rd_conn *conn_wake(struct braid_rd *rd, void *v, uint64_t now)
{
	struct rd_idle *idle = rd_idle_of(v);
	struct rd_conn *c = conn_new(rd, idle->key, now);

	if (!c)
		return NULL;
#define RD_IDLE_LOAD(field) c->field = idle->field;
	RD_IDLE_FIELDS(RD_IDLE_LOAD)
#undef RD_IDLE_LOAD
	/* what it numbered may have been taken either way: not a first exchange */
	c->peer_took = true;
	if ((uintptr_t)v & RD_IDLE_UNPROVEN) {
		/* still to prove itself (its next packet is challenged again, §4.9 rule 2) */
		c->took = c->rcv_nxt != 0;
		braid_dlist_insert_tail(&c->lru, &rd->unproven);
	} else {
		c->verified = true;
		braid_dlist_insert_tail(&c->lru, &rd->resting);	/* until a flow attaches */
	}
	(void)braid_map_set(&rd->conns, idle->key, c);
	braid_pool_release(&rd->idle_pool, idle);
	rd->stats.peers_idle--;
	return c;
}

/* The conn of @key from the map (rd_conn_get, when it is not the one found last). */
struct rd_conn *rd_conn_find(struct braid_rd *rd, uint64_t key, bool create, uint64_t now)
{
	void *v;
	struct rd_conn *c;

	v = braid_map_get(&rd->conns, key);
	/* an idle peer is woken only to carry traffic (a packet of data either way);
	 * lookups for traffic state find none, as for any peer without a flow */
	if (rd_idle_of(v))
		return create ? conn_wake(rd, v, now) : NULL;
	if (v) {
		rd->hot = v;
		rd->hot_key = key;
	}
	if (v || !create)
		return v;
	/* first contact with this peer: from the conn pool; never in steady state */
	c = conn_new(rd, key, now);
	if (!c)
		return NULL;
	braid_dlist_insert_tail(&c->lru, &rd->unproven);
	rd->stats.peers++;
	if (braid_map_insert(&rd->conns, key, c)) {
		rd_conn_free(rd, c);
		return NULL;
	}
	return c;
}

void rd_flow_detach(struct braid_rd *rd, struct rd_flow *f)
{
	rd_in_forget(rd, f);
	rd_heap_remove(rd, f);
	if (f->ready)
		braid_dlist_remove(&f->ready_node);
	braid_dlist_remove(&f->active_node);
	if (f->stranger) {
		braid_dlist_remove(&f->stranger_node);
		rd->unproven_flows--;
	}
	if (f->silent)
		rd->silent_flows--;
	f->conn->flow = NULL;
	if (f->conn->verified)
		braid_dlist_insert_tail(&f->conn->lru, &rd->resting);
	braid_pool_release(&rd->flows, f);
	rd->stats.flows_active--;
}

/*
 * Free the state of a flow that has nothing in flight either way: any, or
 * (@unproven) a stranger's, looked for among strangers' flows only (at most
 * RD_STRANGER_FLOWS: a flood of strangers never walks the active flows).
 */
static bool flow_reclaim(struct braid_rd *rd, bool unproven)
{
	struct braid_dlist *list = unproven ? &rd->strangers : &rd->active, *it;

	braid_dlist_foreach(list, it) {
		struct rd_flow *f = unproven ?
			braid_container_of(it, struct rd_flow, stranger_node) :
			braid_container_of(it, struct rd_flow, active_node);

		if (rd_out_idle(f, f->conn) && rd_in_idle(f) && !f->need_ack) {
			rd_flow_detach(rd, f);
			return true;
		}
	}
	return false;
}

/* A conn without a flow gets one (rd_flow_attach). */
struct rd_flow *rd_flow_new(struct braid_rd *rd, struct rd_conn *conn, bool inbound, uint64_t now)
{
	bool stranger = inbound && !conn->verified;
	struct rd_flow *f;
	uint8_t *tail;
	uint32_t w = rd->cfg.window, slots = rd->slot_mask + 1;

	/* §4.9: strangers' packets hold at most RD_STRANGER_FLOWS flows (and at most
	 * half), so that strangers holding half-sent messages take neither the flows
	 * of proven peers nor more than a few MiB; the flows this endpoint makes to
	 * send (to peers that may never answer) are bounded by max_flows, memory */
	if (stranger && rd->unproven_flows >= rd_stranger_flows(rd) && !flow_reclaim(rd, true))
		return NULL;
	if (!rd_heap_room(rd))
		return NULL;
	f = braid_pool_alloc(&rd->flows);
	if (!f && flow_reclaim(rd, false))
		f = braid_pool_alloc(&rd->flows);
	if (!f)
		return NULL;
	f->conn = conn;
	f->stranger = stranger;
	braid_pathset_init(&f->paths, rd->cfg.paths, rd->cfg.entropies,
			   rd->cfg.seed ^ conn->key ^ rd->rng++);
	tail = (uint8_t *)f + sizeof(*f) + rd->cfg.paths * sizeof(struct braid_path);
	tail = (uint8_t *)(((uintptr_t)tail + 15) & ~(uintptr_t)15);
	f->tx = (struct rd_txpkt *)tail;
	tail += slots * sizeof(struct rd_txpkt);
	f->prack = (struct rd_pathrack *)tail;
	tail += rd->cfg.paths * sizeof(struct rd_pathrack);
	for (uint32_t i = 0; i < rd->cfg.paths; i++)
		braid_dlist_init(&f->prack[i].inflight);
	f->rcv_bits = (uint64_t *)tail;
	tail += ((slots + 63) / 64) * sizeof(uint64_t);
	f->msg_done = (uint64_t *)tail;
	tail += ((slots + 63) / 64) * sizeof(uint64_t);
	f->msg_una = conn->next_msg_id;	/* a flow attaches with no send of its conn numbered */
	f->msgs = (struct rd_msg **)tail;
	f->snd_una = conn->snd_nxt;
	f->peer_rwnd = w;
	braid_dlist_init(&f->txorder);
	braid_dlist_init(&f->retxq);
	f->last_progress = now;
	f->last_rx = now;
	f->echo_route = BRAID_RD_ROUTE_NONE;
	f->data_route = BRAID_RD_ROUTE_NONE;
	f->heard_path = -1;
	rd->cfg.cc->init(&f->cc, rd->cfg.init_cwnd, w, rd->cfg.cc_target_ns);
	f->heap_idx = SIZE_MAX;
	braid_dlist_init(&f->ready_node);
	braid_dlist_insert_tail(&f->active_node, &rd->active);
	if (conn->verified)
		braid_dlist_remove(&conn->lru);	/* from rd->resting */
	conn->flow = f;
	if (rd->cfg.idle_ns && rd->sweep_at == UINT64_MAX)
		rd->sweep_at = now + rd->cfg.idle_ns / 4;
	if (!conn->epoch) {
		f->silent = true;
		rd->silent_flows++;
	}
	if (stranger) {
		braid_dlist_insert_tail(&f->stranger_node, &rd->strangers);
		rd->unproven_flows++;
	}
	rd->stats.flows_active++;
	return f;
}

/*
 * The slowest path's srtt + 4 rttvar (and the flow's own), 0 before any sample.
 * With @busy, only paths that have packets in flight count (all of them if none
 * has): a path the chooser avoids keeps the statistics of its last samples,
 * which under heavy loss or host jitter can be many times the live paths'; the
 * loss timers of packets it does not carry must not wait for it.
 */
uint64_t rd_flow_worst_rto(const struct rd_flow *f, bool busy)
{
	uint64_t w = f->srtt ? f->srtt + 4 * f->rttvar : 0;
	uint32_t i;
	bool any = false;

	if (busy)
		for (i = 0; i < f->paths.n && !any; i++)
			any = !braid_dlist_empty(&f->prack[i].inflight);
	for (i = 0; i < f->paths.n; i++) {
		const struct braid_path *p = &f->paths.p[i];
		uint64_t t = (uint64_t)p->srtt_ns + 4ULL * p->rttvar_ns;

		if (any && braid_dlist_empty(&f->prack[i].inflight))
			continue;
		if (p->srtt_ns && t > w)
			w = t;
	}
	return w;
}

/* The peer stopped answering or restarted: fail everything and forget the flow. */
void rd_flow_fail(struct braid_rd *rd, struct rd_flow *f, int err, int prov_errno)
{
	struct rd_conn *conn = f->conn;

	rd_out_fail_sends(rd, conn);
	rd_sends_finish(rd, err, prov_errno);
	rd_in_reset(rd, conn, err, prov_errno);
	rd_rma_pend_drop(rd, conn);
	rd_flow_detach(rd, f);
	/* the next exchange starts a fresh sequence space for both directions */
	conn->snd_nxt = conn->next_msg_id = 0;
	conn->rcv_nxt = conn->match_next = 0;
	/*
	 * We gave up on a live-looking peer (silence), not the peer on us: it
	 * still holds the old sequence state. We become a new incarnation to it,
	 * later by one, so that it starts afresh too once we prove it (§4.9);
	 * else its cumulative ACK would "acknowledge" our fresh packets, which it
	 * drops as old, and they would be lost in silence.
	 */
	if (err != FI_ECONNRESET && err != FI_ECONNABORTED) {
		conn->my_epoch++;
		if (!conn->my_epoch)
			conn->my_epoch = 1;
	}
}
