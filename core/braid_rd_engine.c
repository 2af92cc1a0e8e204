/* braid_rd_engine.c: the RD engine's frame: open/close, per-peer conns and flows, timers, output scheduling, completions. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "braid_rd_int.h"
#include "braid/braid_errno.h"

void braid_rd_config_default(struct braid_rd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 1472;
	cfg->paths = 16;
	cfg->window = 256;
	cfg->max_flows = 256;
	cfg->max_sends = 1024;
	cfg->max_recvs = 1024;
	cfg->max_msgs = 2048;
	cfg->stage_pkts = 4096;
	cfg->max_msg_size = 0xffffffffULL;
	cfg->inject_size = 1024;
	cfg->rdv_threshold = 256 * 1024;
	cfg->rto_min_ns = 200 * 1000ULL;
	cfg->rto_max_ns = 200 * 1000 * 1000ULL;
	cfg->rto_init_ns = 1000 * 1000ULL;
	cfg->peer_timeout_ns = 5ULL * 1000 * 1000 * 1000;
	cfg->ack_delay_ns = 10 * 1000ULL;
	cfg->path_health = true;
	cfg->bundle = true;
	cfg->cc = &braid_cc_swift;
	cfg->cc_target_ns = 25 * 1000ULL;
	cfg->init_cwnd = 8;
	cfg->seed = 1;
}

int rd_drop(struct braid_rd *rd, enum braid_drop_reason r)
{
	return rd_drop_at(rd, NULL, r);
}

/* A packet of the peer of flow @f (NULL: of none known) dropped: counted in its row too. */
int rd_drop_at(struct braid_rd *rd, struct rd_flow *f, enum braid_drop_reason r)
{
	RD_COUNT(rd, f, drops[r], 1);
	return -((int)r + 1);
}

bool rd_comp_push(struct braid_rd *rd, const struct braid_rd_comp *c)
{
	if (rd->comp_count == rd->comp_cap)
		return false;
	uint32_t i = rd->comp_head + rd->comp_count;

	rd->comps[i < rd->comp_cap ? i : i - rd->comp_cap] = *c;
	rd->comp_count++;
	return true;
}

int braid_rd_poll(struct braid_rd *rd, struct braid_rd_comp *comps, int max)
{
	int n = 0;

	while (n < max && rd->comp_count) {
		comps[n++] = rd->comps[rd->comp_head];
		if (++rd->comp_head == rd->comp_cap)
			rd->comp_head = 0;
		rd->comp_count--;
	}
	/* emptied: start again at the front, so that a ring read as fast as it fills
	 * keeps touching its first pages only (not all of it, a page at a time) */
	if (!rd->comp_count)
		rd->comp_head = 0;
	return n;
}

const struct braid_rd_stats *braid_rd_get_stats(const struct braid_rd *rd)
{
	return &rd->stats;
}

size_t braid_rd_pool_bytes(const struct braid_rd *rd)
{
	return braid_pool_bytes(&rd->flows) + braid_pool_bytes(&rd->stages) +
	       braid_pool_bytes(&rd->stages_small) + braid_pool_bytes(&rd->sends) +
	       braid_pool_bytes(&rd->resps) +
	       braid_pool_bytes(&rd->own_rxq.recvs) +
	       braid_pool_bytes(&rd->msgs) + braid_pool_bytes(&rd->injects) +
	       braid_pool_bytes(&rd->conn_pool) + braid_pool_bytes(&rd->idle_pool) +
	       rd->conns.cap * (sizeof(*rd->conns.keys) + sizeof(*rd->conns.vals));
}

void braid_rd_room(const struct braid_rd *rd, size_t *sends, size_t *recvs)
{
	*sends = rd->sends.count - rd->sends.in_use;
	*recvs = braid_rd_rxq_room(rd->rxq);
}

/* ---- the deadline heap (one entry per active flow, never per packet) ---- */

/*
 * Entries carry their deadline: the comparisons of a sift read the array
 * only, not the flows (with thousands of flows pending, each flow a cache
 * miss made every schedule of a busy flow cost tens of them).
 */
static void heap_set(struct braid_rd *rd, size_t i, struct rd_heap_ent e)
{
	rd->heap[i] = e;
	e.f->heap_idx = i;
}

static void heap_up(struct braid_rd *rd, size_t i)
{
	struct rd_heap_ent e = rd->heap[i];

	while (i > 0 && rd->heap[(i - 1) / 2].deadline > e.deadline) {
		heap_set(rd, i, rd->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(rd, i, e);
}

static void heap_down(struct braid_rd *rd, size_t i)
{
	struct rd_heap_ent e = rd->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = l;

		if (l >= rd->heap_n)
			break;
		if (r < rd->heap_n && rd->heap[r].deadline < rd->heap[l].deadline)
			m = r;
		if (rd->heap[m].deadline >= e.deadline)
			break;
		heap_set(rd, i, rd->heap[m]);
		i = m;
	}
	heap_set(rd, i, e);
}

static void heap_remove(struct braid_rd *rd, struct rd_flow *f)
{
	size_t i = f->heap_idx;

	if (i == SIZE_MAX)
		return;
	rd->heap_n--;
	if (i != rd->heap_n) {
		struct rd_heap_ent last = rd->heap[rd->heap_n];

		heap_set(rd, i, last);
		heap_down(rd, i);
		heap_up(rd, last.f->heap_idx);
	}
	f->heap_idx = SIZE_MAX;
}

/* How long our challenge waits for its answer before it may go again (§4.9). */
static uint64_t chal_wait(const struct braid_rd *rd, const struct rd_conn *conn)
{
	uint64_t wait = rd->cfg.rto_init_ns << (conn->chal_tries < 16 ? conn->chal_tries : 16);

	return wait > rd->cfg.rto_max_ns ? rd->cfg.rto_max_ns : wait;
}

/*
 * An unproven peer's messages wait here for its proof (§4.9): while they do,
 * our challenge is repeated on a timer, not only when the peer sends again (a
 * rendezvous sender whose RTS we acknowledged sends nothing until our CTS,
 * and a lost challenge or answer would leave both waiting for its keepalive
 * probe, an eighth of the peer timeout). RD_CHAL_TIMER_TRIES repeats at
 * most, with the challenge's own back-off: a forged first packet cannot make
 * us send more than that to the address it named.
 */
#define RD_CHAL_TIMER_TRIES 6
static uint64_t chal_deadline(const struct braid_rd *rd, const struct rd_flow *f)
{
	const struct rd_conn *c = f->conn;

	if (c->verified || !c->chal_out || !f->msgs_live || c->chal_tries >= RD_CHAL_TIMER_TRIES)
		return UINT64_MAX;
	return c->chal_at + chal_wait(rd, c);
}

void rd_flow_schedule(struct braid_rd *rd, struct rd_flow *f)
{
	uint64_t d = rd_out_deadline(rd, f), c = rd_in_deadline(rd, f);
	size_t i;

	if (c < d)
		d = c;
	c = chal_deadline(rd, f);
	if (c < d)
		d = c;
	if (f->ack_deadline && f->ack_deadline < d)
		d = f->ack_deadline;
	if (d == UINT64_MAX) {
		f->deadline = d;
		heap_remove(rd, f);
		return;
	}
	if (f->heap_idx != SIZE_MAX && d == f->deadline)
		return;		/* in place already */
	f->deadline = d;
	if (f->heap_idx == SIZE_MAX)
		f->heap_idx = rd->heap_n++;
	i = f->heap_idx;
	rd->heap[i] = (struct rd_heap_ent){ .deadline = d, .f = f };
	heap_down(rd, i);
	heap_up(rd, f->heap_idx);
}

uint64_t braid_rd_next_deadline(const struct braid_rd *rd)
{
	uint64_t d = rd->heap_n ? rd->heap[0].deadline : UINT64_MAX;

	if (rd->forget_at < d)
		d = rd->forget_at;
	return rd->sweep_at < d ? rd->sweep_at : d;
}

void rd_flow_ready(struct braid_rd *rd, struct rd_flow *f)
{
	if (!f->ready) {
		f->ready = true;
		braid_dlist_insert_tail(&f->ready_node, &rd->ready);
	}
}

/*
 * A header-only packet to the flow's peer (ACK, CTS, probe): back by @route
 * when it answers a packet whose route is known, else on a path of the flow's
 * own choosing.
 */
/* A header-only packet of @hdr_len bytes (written in out->hdr) to @ip:@port, back by @route. */
static void out_header_only(struct braid_rd_out *out, size_t hdr_len, uint32_t ip, uint16_t port,
			    int32_t route)
{
	out->frame_len = 0;
	out->gso_cont = false;
	out->lend = false;
	out->hdr_len = (uint16_t)hdr_len;
	out->payload_iovcnt = 0;
	out->payload_len = 0;
	out->dst_ip = ip;
	out->dst_port = port;
	out->reply_route = route;
	out->path = 0;
	out->entropy = 0;
}

void rd_out_control(struct braid_rd *rd, struct rd_flow *f, struct braid_rd_out *out,
		    size_t hdr_len, int32_t route)
{
	out_header_only(out, hdr_len, f->conn->ip, f->conn->port, route);
	if (route >= 0)
		return;
	out->path = (uint16_t)braid_pathset_pick(&f->paths, rd->cfg.path_health, -1);
	out->entropy = f->paths.p[out->path].entropy;
}

/* ---- conns and flows ---- */

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
static void conn_free(struct braid_rd *rd, struct rd_conn *c)
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
static bool conn_evictable(const struct braid_rd *rd, const struct rd_conn *c, uint64_t now)
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
static bool conn_numbered(const struct rd_conn *c)
{
	return c->snd_nxt || c->next_msg_id || c->rcv_nxt || c->match_next;
}

/* Our incarnation to peers without state becomes later than @epoch (a forgotten peer's). */
static void rd_fresh_epoch_after(struct braid_rd *rd, uint32_t epoch)
{
	if (!braid_seq_gt(rd->fresh_epoch, epoch)) {
		rd->fresh_epoch = epoch + 1;
		if (!rd->fresh_epoch)
			rd->fresh_epoch = 1;
	}
}

/* unproven conns looked at per eviction, at most (the busy ones go to the back) */
#define RD_EVICT_SCAN	64

/* §4.9: the unproven peer least recently heard from that may go, goes. */
static bool conn_evict_one(struct braid_rd *rd, uint64_t now)
{
	int i;

	for (i = 0; i < RD_EVICT_SCAN && !braid_dlist_empty(&rd->unproven); i++) {
		struct rd_conn *c = braid_container_of(rd->unproven.next, struct rd_conn, lru);

		if (!conn_evictable(rd, c, now)) {
			braid_dlist_remove(&c->lru);
			braid_dlist_insert_tail(&c->lru, &rd->unproven);
			continue;
		}
		/* a peer that numbered anything with us keeps its numbering: were we to
		 * meet it again at the same incarnation, its next messages would wait
		 * for ones taken long ago (or ours be taken for old ones), in silence.
		 * Peers met from now on see a later incarnation of us (§4.9), as after
		 * giving up on a peer: either side then starts afresh on proof. */
		if (conn_numbered(c))
			rd_fresh_epoch_after(rd, c->my_epoch);
		if (c->flow)
			rd_flow_fail(rd, c->flow, FI_ECONNABORTED, BRAID_PERR_PEER_UNREACHABLE);
		braid_map_remove(&rd->conns, c->key);
		conn_free(rd, c);
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
static struct rd_idle *idle_of(void *v)
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
static bool conn_rest(struct braid_rd *rd, struct rd_conn *c)
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
	struct rd_idle *idle = idle_of(v);
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

struct rd_conn *rd_conn_get(struct braid_rd *rd, uint64_t key, bool create, uint64_t now)
{
	void *v;
	struct rd_conn *c;

	/* a stream's packets and ACKs come from one peer: its conn again, no map walk
	 * (every conn that goes clears this first: conn_release) */
	if (rd->hot && rd->hot_key == key)
		return rd->hot;
	v = braid_map_get(&rd->conns, key);
	/* an idle peer is woken only to carry traffic (a packet of data either way);
	 * lookups for traffic state find none, as for any peer without a flow */
	if (idle_of(v))
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
		conn_free(rd, c);
		return NULL;
	}
	return c;
}

/* Heard from @c: it is the most recently used of the unverified. */
static void conn_touch(struct braid_rd *rd, struct rd_conn *c, uint64_t now)
{
	__atomic_store_n(&c->peer->last_active, now, __ATOMIC_RELAXED);	/* shared: other endpoints' engines */
	if (!c->verified) {
		braid_dlist_remove(&c->lru);
		braid_dlist_insert_tail(&c->lru, &rd->unproven);
	}
}

static void flow_detach(struct braid_rd *rd, struct rd_flow *f)
{
	rd_in_forget(rd, f);
	heap_remove(rd, f);
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
			flow_detach(rd, f);
			return true;
		}
	}
	return false;
}


/* Room in the deadline heap for one more flow (it holds at most the active ones). */
static bool heap_room(struct braid_rd *rd)
{
	struct rd_heap_ent *h;
	size_t cap;

	if (rd->stats.flows_active < rd->heap_cap)
		return true;
	cap = rd->heap_cap ? 2 * rd->heap_cap : 64;
	h = realloc(rd->heap, cap * sizeof(*h));
	if (!h)
		return false;
	rd->heap = h;
	rd->heap_cap = cap;
	return true;
}

struct rd_flow *rd_flow_attach(struct braid_rd *rd, struct rd_conn *conn, bool inbound,
			       uint64_t now)
{
	bool stranger = inbound && !conn->verified;
	struct rd_flow *f;
	uint8_t *tail;
	uint32_t w = rd->cfg.window, slots = rd->slot_mask + 1;

	if (conn->flow)
		return conn->flow;
	/* §4.9: strangers' packets hold at most RD_STRANGER_FLOWS flows (and at most
	 * half), so that strangers holding half-sent messages take neither the flows
	 * of proven peers nor more than a few MiB; the flows this endpoint makes to
	 * send (to peers that may never answer) are bounded by max_flows, memory */
	if (stranger && rd->unproven_flows >= rd_stranger_flows(rd) && !flow_reclaim(rd, true))
		return NULL;
	if (!heap_room(rd))
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

/* The peer stopped answering or restarted: fail everything and forget the flow. */
void rd_flow_fail(struct braid_rd *rd, struct rd_flow *f, int err, int prov_errno)
{
	struct rd_conn *conn = f->conn;

	rd_out_fail_sends(rd, conn, err, prov_errno);
	rd_in_reset(rd, conn, err, prov_errno);
	rd_rma_pend_drop(rd, conn);
	flow_detach(rd, f);
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

/* ---- open / close ---- */

/* Small staging buffers: 16 per packet buffer, 256 to 8192 of them (at most 2 MiB). */
static uint32_t rd_small_stages(const struct braid_rd_config *cfg)
{
	uint64_t n = (uint64_t)cfg->stage_pkts * 16;

	return n < 256 ? 256 : n > 8192 ? 8192 : (uint32_t)n;
}

static uint32_t rd_random(struct braid_rd *rd);

int braid_rd_open(const struct braid_rd_config *cfg, struct braid_peer_table *peers,
		  struct braid_rd **out)
{
	struct braid_rd *rd;
	size_t stage_size;
	int ret;

	if (!cfg || !peers || !out || !cfg->epoch || cfg->mtu < 128 || cfg->mtu > 65535 ||
	    !cfg->paths || cfg->paths > BRAID_RD_MAX_PATHS || !cfg->window ||
	    cfg->window > BRAID_RD_MAX_WINDOW || !cfg->init_cwnd || cfg->init_cwnd > cfg->window || !cfg->max_flows || !cfg->max_sends ||
	    !cfg->max_recvs || !cfg->max_msgs || !cfg->stage_pkts ||
	    cfg->max_msg_size > 0xffffffffULL || cfg->inject_size > cfg->max_msg_size ||
	    !cfg->rto_min_ns || cfg->rto_min_ns > cfg->rto_max_ns)
		return -FI_EINVAL;
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -FI_ENOMEM;
	rd->cfg = *cfg;
	rd->fresh_epoch = cfg->epoch;
	if (!rd->cfg.cc)
		rd->cfg.cc = &braid_cc_swift;
	if (!rd->cfg.rto_init_ns)
		rd->cfg.rto_init_ns = rd->cfg.rto_min_ns;
	/* §4.2 "Lent payloads": nothing lent where an operation could fail sooner */
	if (rd->cfg.peer_timeout_ns < BRAID_RD_LENT_PEER_MIN)
		rd->cfg.lend_min = 0;
	rd->peers = peers;
	rd->rng = cfg->seed;
	rd->chal_rng = ~cfg->seed;
	rd->in_route = BRAID_RD_ROUTE_NONE;
	braid_map_construct(&rd->conns);
	braid_dlist_init(&rd->rxq_node);
	braid_dlist_init(&rd->rma_pend);
	braid_dlist_init(&rd->active);
	braid_dlist_init(&rd->ready);
	braid_dlist_init(&rd->unproven);
	braid_dlist_init(&rd->resting);
	braid_dlist_init(&rd->strangers);
	rd->sweep_at = UINT64_MAX;
	rd->forget_at = UINT64_MAX;
	rd->forget_pos = SIZE_MAX;
	for (size_t k = 0; k < sizeof(rd->forget_key); k += 4) {
		uint32_t r = rd_random(rd);

		memcpy(rd->forget_key + k, &r, 4);
	}

	for (rd->slot_mask = 1; rd->slot_mask < cfg->window; rd->slot_mask <<= 1)
		;
	rd->flow_size = sizeof(struct rd_flow) + cfg->paths * sizeof(struct braid_path) + 16 +
			cfg->paths * sizeof(struct rd_pathrack) +
			rd->slot_mask * sizeof(struct rd_txpkt) +
			2 * ((rd->slot_mask + 63) / 64) * sizeof(uint64_t) +
			rd->slot_mask * sizeof(struct rd_msg *);
	rd->slot_mask--;
	stage_size = sizeof(struct rd_stage) + RD_SEG(rd);
	/* twice what the operations can have: the other half is for the events of
	 * RMA targeting us (§4.7), which wait while it is taken */
	rd->comp_cap = 2 * (cfg->max_sends + cfg->max_recvs);
	rd->comps = calloc(rd->comp_cap, sizeof(*rd->comps));
	ret = !rd->comps ? -FI_ENOMEM : 0;
	if (!ret)
		ret = braid_pool_construct(&rd->sends, sizeof(struct rd_send), cfg->max_sends);
	if (!ret)
		ret = braid_pool_construct(&rd->resps, sizeof(struct rd_send), cfg->max_sends);
	if (!ret)
		ret = rd_rxq_construct(&rd->own_rxq, cfg->rxq ? 0 : cfg->max_recvs);
	if (!ret) {
		/* its messages draw their receives from its own queue or the shared one */
		rd->rxq = cfg->rxq ? cfg->rxq : &rd->own_rxq;
		braid_dlist_insert_tail(&rd->rxq_node, &rd->rxq->engines);
	}
	if (!ret)
		ret = braid_pool_construct(&rd->msgs, sizeof(struct rd_msg), cfg->max_msgs);
	if (!ret)
		ret = braid_pool_construct(&rd->stages, stage_size, cfg->stage_pkts);
	if (!ret)
		ret = braid_pool_construct(&rd->stages_small, sizeof(struct rd_stage) + RD_STAGE_SMALL,
					   rd_small_stages(cfg));
	if (!ret)
		ret = braid_pool_construct(&rd->flows, rd->flow_size, cfg->max_flows);
	/* without a peer limit, pools all the same (chunks given back whole when idle,
	 * where malloc'd conns freed among other allocations would pin the heap) */
	if (!ret)
		ret = braid_pool_construct(&rd->conn_pool, sizeof(struct rd_conn),
					   cfg->max_peers ? cfg->max_peers : RD_PEERS_UNBOUNDED);
	if (!ret)
		ret = braid_pool_construct(&rd->idle_pool, sizeof(struct rd_idle),
					   cfg->max_peers ? cfg->max_peers : RD_PEERS_UNBOUNDED);
	if (!ret)
		ret = braid_pool_construct(&rd->injects, cfg->inject_size ? cfg->inject_size : 1,
					   cfg->max_sends / 4 ? cfg->max_sends / 4 : 1);
	if (ret) {
		braid_rd_close(rd);
		return ret;
	}
	*out = rd;
	return 0;
}

void braid_rd_close(struct braid_rd *rd)
{
	size_t i;

	if (!rd)
		return;
	for (i = 0; i < rd->conns.cap; i++) {
		struct rd_conn *c = rd->conns.vals ? rd->conns.vals[i] : NULL;

		if (!c || !braid_map_get(&rd->conns, rd->conns.keys[i]) || idle_of(c))
			continue;	/* an idle peer's record goes with its pool */
		braid_peer_put_evict(c->peer);
	}
	if (rd->rxq)
		braid_rd_rxq_leave(rd);	/* its messages leave a shared queue, which stays */
	braid_dlist_remove(&rd->rxq_node);
	braid_map_destruct(&rd->conns);
	braid_pool_destruct(&rd->sends);
	braid_pool_destruct(&rd->resps);
	braid_pool_destruct(&rd->own_rxq.recvs);
	braid_pool_destruct(&rd->msgs);
	braid_pool_destruct(&rd->stages);
	braid_pool_destruct(&rd->stages_small);
	braid_pool_destruct(&rd->flows);
	braid_pool_destruct(&rd->injects);
	braid_pool_destruct(&rd->conn_pool);
	braid_pool_destruct(&rd->idle_pool);
	free(rd->comps);
	free(rd->heap);
	free(rd);
}

/* ---- input ---- */

/* A restarted peer (proven, §4.9): what was in flight to or from its old self is lost. */
static void conn_restart(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch)
{
	rd->stats.peers_restarted++;
	if (!conn->took && !conn->peer_took) {
		/*
		 * Nothing was taken either way with the incarnation we knew (it
		 * acknowledged nothing of ours, we took nothing of its): it kept no
		 * numbering of ours (it dropped our first packets and then the state
		 * it had made for us), so ours goes on from where it is, to the new
		 * one, which numbers from the start as we did: no operation fails.
		 */
		conn->epoch = epoch;
		return;
	}
	if (conn->flow) {
		rd_flow_fail(rd, conn->flow, FI_ECONNRESET, BRAID_PERR_PEER_RESTARTED);
	} else {
		rd_out_fail_sends(rd, conn, FI_ECONNRESET, BRAID_PERR_PEER_RESTARTED);
		rd_rma_pend_drop(rd, conn);
		conn->snd_nxt = conn->next_msg_id = 0;
		conn->rcv_nxt = conn->match_next = 0;
	}
	conn->epoch = epoch;
}

/* Tell a peer that sent to an earlier incarnation of us who we are now (§4.2 rule 3). */
static void conn_send_reset(struct braid_rd *rd, struct rd_conn *conn, uint64_t now)
{
	struct rd_flow *f = rd_flow_attach(rd, conn, true, now);

	if (!f)
		return;
	f->echo_psn = 0;
	f->echo_time = 0;
	f->echo_rx = 0;
	f->echo_route = rd->in_route;
	f->need_ack = true;
	f->ack_now = true;
	rd_flow_ready(rd, f);
}

/* Queue a challenge or a response (§4.9); a full ring drops it (the peer asks again). */
static void ctl_push(struct braid_rd *rd, uint32_t ip, uint16_t port, const struct braid_rd_chal_view *v)
{
	struct rd_ctl *c;

	if (rd->ctl_n == RD_CTL_MAX) {
		rd->stats.ctl_full++;
		return;
	}
	c = &rd->ctl[(rd->ctl_head + rd->ctl_n++) % RD_CTL_MAX];
	c->v = *v;
	c->ip = ip;
	c->port = port;
}

static uint32_t rd_random(struct braid_rd *rd)
{
	uint64_t x;

	if (rd->cfg.random)
		return rd->cfg.random();
	x = rd->chal_rng += 0x9e3779b97f4a7c15ULL;	/* splitmix64: tests only (cfg.random) */
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(x ^ (x >> 31));
}

/*
 * Ask the peer's address whether incarnation @epoch lives there (§4.9). A
 * challenge about the same incarnation repeats its cookie (an answer to any
 * copy proves it, however long the round trip) and is repeated no sooner than
 * the initial RTO, doubling up to the largest RTO: a flood of claims costs at
 * most one small packet each, fewer and fewer.
 */
static void conn_challenge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now)
{
	struct braid_rd_chal_view v;

	if (conn->chal_out && conn->chal_epoch == epoch) {
		if (now - conn->chal_at < chal_wait(rd, conn))
			return;
		if (conn->chal_tries < 255)
			conn->chal_tries++;
	} else {
		if (conn->chal_out && now - conn->chal_at < rd->cfg.rto_init_ns)
			return;	/* another claim came just now: the first gets its answer first */
		conn->chal_out = true;
		conn->chal_epoch = epoch;
		conn->chal_cookie = rd_random(rd);
		conn->chal_tries = 0;
	}
	conn->chal_at = now;
	v = (struct braid_rd_chal_view){
		.src_port = rd->cfg.local_port,
		.src_epoch = conn->my_epoch,
		.dst_epoch = epoch,
		.cookie = conn->chal_cookie,
	};
	ctl_push(rd, conn->ip, conn->port, &v);
	rd->stats.chal_tx++;
}

/*
 * §4.9: a packet from @conn's address claiming the peer's incarnation is
 * @epoch. The first word from a peer is believed at once (0-RTT) and proven
 * meanwhile; any other incarnation only once it answers a challenge. Return:
 * 0 to take the packet, or a negative drop reason.
 */
static int conn_epoch_check(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now)
{
	if (!conn->epoch) {
		conn->epoch = epoch;
		if (conn->flow && conn->flow->silent) {
			conn->flow->silent = false;	/* heard from: its own RTO again */
			rd->silent_flows--;
		}
		conn_challenge(rd, conn, epoch, now);
		return 0;
	}
	if (epoch == conn->epoch) {
		if (!conn->verified)
			conn_challenge(rd, conn, epoch, now);	/* the first may have been lost */
		return 0;
	}
	if (conn->verified && braid_seq_lt(epoch, conn->epoch))
		return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
	conn_challenge(rd, conn, epoch, now);
	return rd_drop_at(rd, conn->flow, BRAID_DROP_UNVERIFIED);
}

/* an answer's confirm: the peer has traffic under way with us (ask again later) */
#define RD_FORGET_BUSY	0xffffffffu

/*
 * §4.9, forgetting: a pair of endpoints that has been quiet long enough gives
 * up its numbering by agreement. The cookie that asks is stateless (a keyed
 * hash of the record, which nothing changes while it rests): the record has
 * no room for one, and an answer must match the record it was asked about.
 */
static uint32_t forget_cookie(const struct braid_rd *rd, const struct rd_idle *idle)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint32_t c;

	crypto_shorthash(h, (const unsigned char *)idle, sizeof(*idle), rd->forget_key);
	memcpy(&c, h, sizeof(c));
	/* 0 and RD_FORGET_BUSY say something else in an answer's confirm */
	return c && c != RD_FORGET_BUSY ? c : 1;
}

/* The peer of an idle record is forgotten: met again, either side starts afresh. */
static void idle_forget(struct braid_rd *rd, struct rd_idle *idle, uintptr_t tag)
{
	braid_map_remove(&rd->conns, idle->key);
	/* were it to come back still numbering, its packets are for an earlier
	 * incarnation of us: refused and told, never taken for old ones */
	rd_fresh_epoch_after(rd, idle->my_epoch);
	if (!(tag & RD_IDLE_UNPROVEN))
		rd->stats.peers_verified--;
	rd->stats.peers--;
	rd->stats.peers_idle--;
	rd->stats.peers_forgotten++;
	braid_pool_release(&rd->idle_pool, idle);
	rd->forgot = true;
}

/*
 * Asked to forget: a conn with nothing under way with its peer (no message,
 * send, RMA operation or claimed restart; a flow with nothing in flight
 * either way or owed) rests as a record now, whose cookie the answer
 * carries. Return: the record's map value (tagged), or NULL if it may not.
 */
static void *conn_rest_now(struct braid_rd *rd, struct rd_conn *c)
{
	uint64_t key = c->key;

	if (c->msgs || (c->verified && c->chal_out) || !braid_dlist_empty(&c->sendq) ||
	    !braid_dlist_empty(&c->paused) || !braid_dlist_empty(&c->rma_ops))
		return NULL;
	if (c->flow) {
		if (c->flow->ready || c->flow->need_ack || !rd_out_idle(c->flow, c) ||
		    !rd_in_idle(c->flow))
			return NULL;
		flow_detach(rd, c->flow);
	}
	if (!conn_rest(rd, c))
		return NULL;
	return braid_map_get(&rd->conns, key);
}

/* Ask an idle record's peer to forget the pair's numbering with us (§4.9). */
static void forget_ask(struct braid_rd *rd, const struct rd_idle *idle)
{
	struct braid_rd_chal_view v = {
		.src_port = rd->cfg.local_port,
		.flags = BRAID_RD_CHAL_F_FORGET,
		.src_epoch = idle->my_epoch,
		.dst_epoch = idle->epoch,
		.cookie = forget_cookie(rd, idle),
	};

	ctl_push(rd, (uint32_t)(idle->key >> 16), (uint16_t)idle->key, &v);
	rd->stats.forget_tx++;
}

/* heap memory given back since the last malloc_trim() that makes another worth it */
#define RD_TRIM_BYTES	(256u << 10)

/* slots of the peer map looked at per timer call, at most */
#define RD_FORGET_SCAN	65536

/*
 * The walk over the idle records, a round every cfg.forget_ns: a record one
 * round old has rested for a whole forget_ns and its peer is asked to forget;
 * asked again a round later; forgotten alone the round after that (its peer
 * is gone, or cut off for three rounds: met again, it starts afresh, §4.9).
 * The asks go through the control ring: a walk that fills it goes on when
 * the ring has drained (an initial RTO later). At a round's end the map
 * and the record pool give back what the forgotten peers held.
 */
static void rd_forget_walk(struct braid_rd *rd, uint64_t now)
{
	size_t i, scan = 0;
	uint64_t key;

	if (rd->forget_pos == SIZE_MAX) {
		rd->forget_pos = 0;
		rd->forget_cap = rd->conns.cap;
	}
	/* a rehash moved the slots: the round ends here */
	for (i = rd->forget_cap == rd->conns.cap ? rd->forget_pos : rd->conns.cap;
	     i < rd->conns.cap; i++) {
		void *v = braid_map_at(&rd->conns, i, &key);
		struct rd_idle *idle = idle_of(v);
		uintptr_t tag = (uintptr_t)v & RD_IDLE_BITS;
		uintptr_t age = (tag & RD_IDLE_AGE) >> RD_IDLE_AGE_SHIFT;

		if (++scan > RD_FORGET_SCAN || (idle && age && rd->ctl_n == RD_CTL_MAX)) {
			rd->forget_pos = i;
			rd->forget_at = now + rd->cfg.rto_init_ns;
			return;
		}
		if (!idle)
			continue;
		if (age == 3 || (age && !idle->epoch)) {
			/* no answer to two asks (or never heard from: nothing to ask) */
			idle_forget(rd, idle, tag);
			continue;
		}
		if (age)
			forget_ask(rd, idle);
		(void)braid_map_set(&rd->conns, key, (void *)((uintptr_t)idle | (tag & ~RD_IDLE_AGE) |
							     ((age + 1) << RD_IDLE_AGE_SHIFT)));
	}
	rd->forget_pos = SIZE_MAX;
	if (rd->forgot) {
		size_t before = braid_rd_pool_bytes(rd);

		rd->forgot = false;
		(void)braid_map_shrink(&rd->conns);
		braid_pool_trim(&rd->idle_pool);
		rd->trim_debt += before - braid_rd_pool_bytes(rd);
		if (rd->trim_debt >= RD_TRIM_BYTES) {
			malloc_trim(0);
			rd->trim_debt = 0;
		}
	}
	rd->forget_at = rd->stats.peers_idle ? now + rd->cfg.forget_ns : UINT64_MAX;
}

/*
 * An RD_CHALLENGE with FORGET (§4.9), three ways. Asked: if our state for the
 * asker is that pair at rest (or can rest now), we agree and add our own
 * cookie to the answer, but keep our record until that cookie comes back (a
 * forged ask, whose answer goes to the real peer, changes nothing); with no
 * state at all we agree with nothing to add. Answered: an answer that echoes
 * the cookie our record asks with forgets it, and echoes the answerer's own
 * cookie if it added one (that echo is the third message, and forgets the
 * answerer's record by the same rule).
 */
static int rd_input_forget(struct braid_rd *rd, const struct braid_rd_chal_view *v, uint32_t src_ip,
			   uint64_t now)
{
	uint64_t key = braid_peer_key(src_ip, v->src_port);
	void *val = braid_map_get(&rd->conns, key);
	struct rd_idle *idle = idle_of(val);
	struct braid_rd_chal_view r = {
		.src_port = rd->cfg.local_port,
		.flags = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE,
		.src_epoch = v->dst_epoch,
		.dst_epoch = v->src_epoch,
	};

	if (v->flags & BRAID_RD_CHAL_F_RESPONSE) {
		if (!idle)
			return rd_drop(rd, BRAID_DROP_NO_STATE);	/* woke meanwhile, or never asked */
		if (v->dst_epoch != idle->my_epoch || v->cookie != forget_cookie(rd, idle))
			return rd_drop(rd, BRAID_DROP_UNVERIFIED);
		if (v->confirm == RD_FORGET_BUSY) {
			/* it has traffic under way with us: the record rests afresh, and is
			 * never forgotten alone while its peer says so */
			(void)braid_map_set(&rd->conns, key, (void *)((uintptr_t)val & ~RD_IDLE_AGE));
			return 0;
		}
		if (v->confirm) {
			r.src_epoch = idle->my_epoch;
			r.dst_epoch = idle->epoch;
			r.cookie = v->confirm;
			ctl_push(rd, src_ip, v->src_port, &r);
		}
		idle_forget(rd, idle, (uintptr_t)val & RD_IDLE_BITS);
		return 0;
	}
	if (val) {
		uint32_t epoch = idle ? idle->epoch : ((struct rd_conn *)val)->epoch;
		uint32_t mine = idle ? idle->my_epoch : ((struct rd_conn *)val)->my_epoch;

		/* another incarnation of the asker, or of us: not this pair */
		if (epoch != v->src_epoch || mine != v->dst_epoch) {
			rd->stats.forget_refused++;
			return rd_drop(rd, BRAID_DROP_STALE_EPOCH);
		}
		if (!idle && !(val = conn_rest_now(rd, val))) {
			/* traffic under way: the asker keeps its record (and rests it afresh) */
			rd->stats.forget_refused++;
			r.cookie = v->cookie;
			r.confirm = RD_FORGET_BUSY;
			ctl_push(rd, src_ip, v->src_port, &r);
			return 0;
		}
		/* (a record made just now is looked at too, should the echo be lost) */
		if (rd->cfg.forget_ns && rd->forget_at == UINT64_MAX)
			rd->forget_at = now + rd->cfg.forget_ns;
		r.confirm = forget_cookie(rd, idle_of(val));
	} else {
		r.src_epoch = rd->fresh_epoch;	/* nothing of the asker here */
	}
	r.cookie = v->cookie;
	ctl_push(rd, src_ip, v->src_port, &r);
	rd->stats.forget_rx++;
	return 0;
}

/* An RD_CHALLENGE (§4.9): answer one addressed to us; believe a response that answers ours. */
static int rd_input_chal(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
			 uint64_t now)
{
	struct braid_rd_chal_view v;
	struct rd_conn *conn;
	uint32_t mine;
	int ret = braid_rd_chal_decode(pkt, len, &v);

	if (ret)
		return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
	if (v.flags & BRAID_RD_CHAL_F_FORGET)
		return rd_input_forget(rd, &v, src_ip, now);
	/* our incarnation as the asker knows it (its conn's or idle record's, if we have one) */
	{
		uint64_t key = braid_peer_key(src_ip, v.src_port);
		struct rd_idle *idle = idle_of(braid_map_get(&rd->conns, key));

		conn = rd_conn_get(rd, key, false, now);
		mine = conn ? conn->my_epoch : idle ? idle->my_epoch : rd->fresh_epoch;
	}
	if (v.dst_epoch != mine)
		return rd_drop(rd, BRAID_DROP_STALE_EPOCH);
	if (!(v.flags & BRAID_RD_CHAL_F_RESPONSE)) {
		/* the answer goes to the address that asks; nothing is kept */
		struct braid_rd_chal_view r = {
			.src_port = rd->cfg.local_port,
			.flags = BRAID_RD_CHAL_F_RESPONSE,
			.src_epoch = mine,
			.dst_epoch = v.src_epoch,
			.cookie = v.cookie,
		};

		ctl_push(rd, src_ip, v.src_port, &r);
		rd->stats.chal_rx++;
		return 0;
	}
	if (!conn)
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	if (!conn->chal_out || v.src_epoch != conn->chal_epoch || v.cookie != conn->chal_cookie)
		return rd_drop(rd, BRAID_DROP_UNVERIFIED);
	conn->chal_out = false;
	rd->stats.resp_rx++;
	conn_touch(rd, conn, now);
	if (conn->epoch != v.src_epoch)
		conn_restart(rd, conn, v.src_epoch);
	if (!conn->verified) {
		conn->verified = true;
		if (conn->flow && conn->flow->stranger) {
			conn->flow->stranger = false;
			braid_dlist_remove(&conn->flow->stranger_node);
			rd->unproven_flows--;
		}
		braid_dlist_remove(&conn->lru);
		if (!conn->flow) {
			braid_dlist_insert_tail(&conn->lru, &rd->resting);
			if (rd->cfg.idle_ns && rd->sweep_at == UINT64_MAX)
				rd->sweep_at = now + rd->cfg.idle_ns / 4;
		}
		rd->stats.peers_verified++;
		rd_in_verified(rd, conn, now);
	}
	return 0;
}

int braid_rd_input(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		   bool ecn_ce, uint64_t now)
{
	return braid_rd_input_from(rd, pkt, len, src_ip, BRAID_RD_ROUTE_NONE, ecn_ce, now);
}

/* One RD packet, alone in its datagram or a record of a bundle (§4.8). */
static int rd_input_one(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
			bool ecn_ce, uint64_t now)
{
	struct braid_rd_data_view dv;
	struct braid_rd_ack_view av;
	struct rd_conn *conn;
	int type, ret;

	type = braid_base_hdr_check(pkt, len);
	if (type < 0)
		return rd_drop(rd, (enum braid_drop_reason)(-type - 1));
	if (type == BRAID_PKT_RD_DATA || type == BRAID_PKT_RD_RMA) {
		ret = braid_rd_data_decode(pkt, len, &dv);
		if (ret)
			return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
		/* nor more payload than a packet of our MTU carries (a staging buffer's size) */
		if (dv.msg_len > rd->cfg.max_msg_size || dv.payload_len > RD_SEG(rd))
			return rd_drop(rd, BRAID_DROP_BAD_LEN);
		conn = rd_conn_get(rd, braid_peer_key(src_ip, dv.src_port), true, now);
		if (!conn)
			return rd_drop(rd, BRAID_DROP_NO_STATE);
		conn_touch(rd, conn, now);
		ret = conn_epoch_check(rd, conn, dv.src_epoch, now);
		if (ret)
			return ret;
		if (dv.dst_epoch && dv.dst_epoch != conn->my_epoch) {
			/* §4.2 rule 3: meant for our previous incarnation */
			if (braid_seq_lt(dv.dst_epoch, conn->my_epoch))
				conn_send_reset(rd, conn, now);
			return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
		}
		return rd_in_data(rd, conn, &dv, ecn_ce, now);
	}
	if (type == BRAID_PKT_RD_ACK) {
		ret = braid_rd_ack_decode(pkt, len, &av);
		if (ret)
			return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
		conn = rd_conn_get(rd, braid_peer_key(src_ip, av.src_port), false, now);
		if (!conn)
			return rd_drop(rd, BRAID_DROP_NO_STATE);
		if (av.dst_epoch != conn->my_epoch)
			return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
		conn_touch(rd, conn, now);
		ret = conn_epoch_check(rd, conn, av.src_epoch, now);
		if (ret)
			return ret;
		RD_COUNT(rd, conn->flow, rx_acks, 1);
		if (!conn->flow)
			return rd_drop(rd, BRAID_DROP_NO_STATE);
		conn->flow->last_rx = now;
		rd_out_ack_input(rd, conn, &av, now);
		return 0;
	}
	if (type == BRAID_PKT_RD_CTS) {
		uint32_t src_epoch, dst_epoch, msg_id;
		uint16_t port;

		ret = braid_rd_cts_decode(pkt, len, &port, &src_epoch, &dst_epoch, &msg_id);
		if (ret)
			return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
		conn = rd_conn_get(rd, braid_peer_key(src_ip, port), false, now);
		if (!conn || !conn->flow)
			return rd_drop(rd, BRAID_DROP_NO_STATE);
		if (dst_epoch != conn->my_epoch)
			return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
		conn_touch(rd, conn, now);
		/* a CTS may overtake the first ACK: it may teach us the epoch */
		ret = conn_epoch_check(rd, conn, src_epoch, now);
		if (ret)
			return ret;
		conn->flow->last_rx = now;
		RD_COUNT(rd, conn->flow, cts_rx, 1);
		rd_out_cts_input(rd, conn, msg_id);
		rd_flow_schedule(rd, conn->flow);
		return 0;
	}
	if (type == BRAID_PKT_RD_CHALLENGE)
		return rd_input_chal(rd, pkt, len, src_ip, now);
	return rd_drop(rd, BRAID_DROP_TYPE);
}

int braid_rd_input_from(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
			int32_t src_route, bool ecn_ce, uint64_t now)
{
	const uint8_t *rec;
	size_t off = BRAID_RD_BUNDLE_HDR, rec_len;
	int n;

	rd->in_route = src_route >= 0 && src_route <= 65535 ? src_route : BRAID_RD_ROUTE_NONE;
	if (len < 3 || ((const uint8_t *)pkt)[2] != BRAID_PKT_RD_BUNDLE)
		return rd_input_one(rd, pkt, len, src_ip, ecn_ce, now);
	/* §4.8: the framing of the whole bundle first, then each record as a packet
	 * that came alone by the same route (its own checks, its own drop counts) */
	n = braid_rd_bundle_check(pkt, len);
	if (n < 0)
		return rd_drop(rd, (enum braid_drop_reason)(-n - 1));
	rd->stats.rx_bundles++;
	while (braid_rd_bundle_next(pkt, len, &off, &rec, &rec_len))
		(void)rd_input_one(rd, rec, rec_len, src_ip, ecn_ce, now);
	return 0;
}

int braid_rd_input_placed(struct braid_rd *rd, const void *hdr, size_t len, uint32_t src_ip,
			  int32_t src_route, bool ecn_ce, uint64_t now)
{
	int ret;

	rd->in_route = src_route >= 0 && src_route <= 65535 ? src_route : BRAID_RD_ROUTE_NONE;
	rd->in_placed = true;
	ret = rd_input_one(rd, hdr, len, src_ip, ecn_ce, now);
	rd->in_placed = false;
	return ret;
}

/* ---- output and timers ---- */

int braid_rd_out_dgram(const struct braid_rd_out *out, int n, struct iovec *iov, int max_iov,
		       int *iovcnt, size_t *len, size_t *seg)
{
	bool gso = n > 1 && out[1].gso_cont;
	int i, k = 0;

	*len = 0;
	if (seg)
		*seg = gso ? out[0].hdr_len + out[0].payload_len : 0;
	for (i = 0; i < n && (i == 0 || (gso ? out[i].gso_cont :
					  out[i].frame_len == BRAID_RD_BUNDLE_REC)); i++) {
		if (k + out[i].payload_iovcnt + 2 > max_iov)
			break;
		if (out[i].frame_len) {
			iov[k].iov_base = (void *)out[i].frame;
			iov[k++].iov_len = out[i].frame_len;
		}
		iov[k].iov_base = (void *)out[i].hdr;
		iov[k++].iov_len = out[i].hdr_len;
		memcpy(&iov[k], out[i].payload, (size_t)out[i].payload_iovcnt * sizeof(*iov));
		k += out[i].payload_iovcnt;
		*len += out[i].frame_len + out[i].hdr_len + out[i].payload_len;
	}
	*iovcnt = k;
	return i;
}

int braid_rd_output(struct braid_rd *rd, uint64_t now, struct braid_rd_out *out, int max)
{
	struct braid_dlist *it;
	int n = 0;

	/* challenges and their answers first (§4.9): header-only, to a home port */
	for (; n < max && rd->ctl_n; n++) {
		const struct rd_ctl *c = &rd->ctl[rd->ctl_head];

		braid_rd_chal_write((struct braid_rd_cts_hdr *)out[n].hdr, &c->v);
		out_header_only(&out[n], sizeof(struct braid_rd_cts_hdr), c->ip, c->port, c->port);
		rd->ctl_head = (rd->ctl_head + 1) % RD_CTL_MAX;
		rd->ctl_n--;
	}
	/* RMA requests that waited for a send or a buffer (§4.7) */
	if (!braid_dlist_empty(&rd->rma_pend))
		rd_rma_pend_run(rd, now);
	while (n < max && (it = braid_dlist_pop_head(&rd->ready))) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, ready_node);
		int got;

		f->ready = false;
		got = rd_out_flow(rd, f, now, out + n, max - n);
		n += got;
		if (n == max && got) {
			/* it may have more: keep it ready, behind the others (round robin) */
			rd_flow_ready(rd, f);
		}
		rd_flow_schedule(rd, f);
	}
	return n;
}

/* resting or unproven peers looked at per sweep, at most (each list) */
#define RD_SWEEP_UNPROVEN	4096

/*
 * Flows with nothing in flight either way for cfg.idle_ns go, and with them
 * their proven peers' conns (conn_rest: 32 bytes stay); unproven peers quiet
 * for the idle time go too, to a record as well if anything was numbered
 * either way, else whole. The pools (flows, staging,
 * messages, operations) give whole free chunks back: an endpoint that heard
 * from ten thousand peers once returns to about its size when they go quiet.
 * Every idle_ns / 4 while flows or unproven peers exist.
 */
static void rd_sweep(struct braid_rd *rd, uint64_t now)
{
	struct braid_dlist *it, *tmp;
	size_t before, freed = 0;
	int scan = 0;

	braid_dlist_foreach_safe(&rd->active, it, tmp) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);
		uint64_t since = f->last_rx > f->last_tx ? f->last_rx : f->last_tx;

		if (f->last_progress > since)
			since = f->last_progress;
		if (now - since >= rd->cfg.idle_ns && !f->ready && !f->need_ack &&
		    rd_out_idle(f, f->conn) && rd_in_idle(f)) {
			struct rd_conn *c = f->conn;

			flow_detach(rd, f);
			if (c->verified && conn_rest(rd, c))
				freed += sizeof(*c) + sizeof(struct braid_peer);
		}
	}
	/* proven peers whose flow went another way (reclaimed for room, failed), or that
	 * were proven after it went: the oldest first */
	braid_dlist_foreach_safe(&rd->resting, it, tmp) {
		struct rd_conn *c = braid_container_of(it, struct rd_conn, lru);
		uint64_t last = __atomic_load_n(&c->peer->last_active, __ATOMIC_RELAXED);

		if (now - last < rd->cfg.idle_ns || ++scan > RD_SWEEP_UNPROVEN)
			break;
		if (conn_rest(rd, c))
			freed += sizeof(*c) + sizeof(struct braid_peer);
	}
	scan = 0;
	/* the least recently heard from first: stop at the first heard from lately */
	braid_dlist_foreach_safe(&rd->unproven, it, tmp) {
		struct rd_conn *c = braid_container_of(it, struct rd_conn, lru);
		uint64_t last = __atomic_load_n(&c->peer->last_active, __ATOMIC_RELAXED);

		if (now - last < rd->cfg.idle_ns || ++scan > RD_SWEEP_UNPROVEN)
			break;
		if (c->flow)
			continue;
		if (conn_numbered(c)) {
			/* numbering to resume: a record (forgotten, its next message would
			 * wait for ones delivered long ago) */
			if (!conn_rest(rd, c))
				continue;
		} else {
			if (!conn_evictable(rd, c, now))
				continue;
			braid_map_remove(&rd->conns, c->key);
			conn_free(rd, c);
		}
		freed += sizeof(*c) + sizeof(struct braid_peer);
	}
	if (freed)
		braid_peer_table_shrink(rd->peers);	/* the shared entries of conns that went */
	before = braid_rd_pool_bytes(rd);
	braid_pool_trim(&rd->flows);
	braid_pool_trim(&rd->stages);
	braid_pool_trim(&rd->stages_small);
	braid_pool_trim(&rd->msgs);
	braid_pool_trim(&rd->sends);
	braid_pool_trim(&rd->resps);
	braid_pool_trim(&rd->rxq->recvs);
	braid_pool_trim(&rd->conn_pool);
	/* the chunks and conns came from malloc's heap: hand its free pages back too, once
	 * it is worth it (peers' shared entries are freed after an RCU grace period: a later
	 * sweep's trim finds them) */
	rd->trim_debt += before - braid_rd_pool_bytes(rd) + freed;
	if (rd->trim_debt >= RD_TRIM_BYTES || rd->trim_again) {
		malloc_trim(0);
		/* once more at the next sweep, for what the grace period frees meanwhile */
		rd->trim_again = rd->trim_debt >= RD_TRIM_BYTES;
		rd->trim_debt = 0;
	}
	rd->sweep_at = rd->stats.flows_active || !braid_dlist_empty(&rd->unproven) ||
		       !braid_dlist_empty(&rd->resting) ? now + rd->cfg.idle_ns / 4 : UINT64_MAX;
	if (rd->cfg.forget_ns && rd->stats.peers_idle && rd->forget_at == UINT64_MAX)
		rd->forget_at = now + rd->cfg.forget_ns;
}

void braid_rd_arrived(struct braid_rd *rd, uint64_t when)
{
	rd->in_arrived = when;
}

void braid_rd_timer(struct braid_rd *rd, uint64_t now)
{
	if (now >= rd->sweep_at)
		rd_sweep(rd, now);
	if (now >= rd->forget_at)
		rd_forget_walk(rd, now);
	while (rd->heap_n && rd->heap[0].deadline <= now) {
		struct rd_flow *f = rd->heap[0].f;

		if (f->ack_deadline && f->ack_deadline <= now) {
			f->ack_deadline = 0;
			f->ack_now = true;
			if (f->ack_held)
				f->pingpong = 0;	/* no answer in time: no ping-pong */
			rd_flow_ready(rd, f);
		}
		if (chal_deadline(rd, f) <= now)
			conn_challenge(rd, f->conn, f->conn->chal_epoch, now);
		/* CTS to repeat, a silent sender of half-received messages; it may fail the flow */
		if (rd_in_timer(rd, f, now))
			rd_out_timer(rd, f, now);
		/* rd_out_timer may have failed (detached) the flow */
		if (f->heap_idx != SIZE_MAX && rd->heap[f->heap_idx].f == f)
			rd_flow_schedule(rd, f);
	}
}

bool braid_rd_pending(const struct braid_rd *rd)
{
	const struct braid_dlist *it;

	if (!braid_dlist_empty(&rd->ready) || !braid_dlist_empty(&rd->rma_pend) || rd->ctl_n)
		return true;
	for (it = rd->active.next; it != &rd->active; it = it->next) {
		const struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);

		if (!rd_out_idle(f, f->conn) || f->need_ack)
			return true;
	}
	return false;
}
