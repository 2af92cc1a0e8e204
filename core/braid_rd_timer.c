/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_timer.c: the RD engine's time: the deadline heap (one entry per active flow, never per packet), the timer call that serves it (ACK delay, challenges, each direction's timer), and the sweep that rests and evicts quiet peers and gives memory back. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "braid_rd_int.h"

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

void rd_heap_remove(struct braid_rd *rd, struct rd_flow *f)
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

/* rd_flow_schedule()'s look at each side's timers (every one UINT64_MAX: out of the heap). */
void rd_flow_schedule_at(struct braid_rd *rd, struct rd_flow *f)
{
	uint64_t d = rd_out_deadline(rd, f), c = rd_in_deadline(rd, f);
	size_t i;

	if (c < d)
		d = c;
	c = rd_chal_deadline(rd, f);
	if (c < d)
		d = c;
	if (f->ack_deadline && f->ack_deadline < d)
		d = f->ack_deadline;
	if (d == UINT64_MAX) {
		f->deadline = d;
		rd_heap_remove(rd, f);
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

/* Room in the deadline heap for one more flow (it holds at most the active ones). */
bool rd_heap_room(struct braid_rd *rd)
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

/* resting or unproven peers looked at per sweep, at most (each list) */
#define RD_SWEEP_UNPROVEN	4096

/* Flows quiet either way for cfg.idle_ns go, and with them their proven peers'
 * conns (rd_conn_rest). Return: the bytes of conns and shared entries freed. */
static size_t sweep_flows(struct braid_rd *rd, uint64_t now)
{
	struct braid_dlist *it, *tmp;
	size_t freed = 0;

	braid_dlist_foreach_safe(&rd->active, it, tmp) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);
		uint64_t since = f->last_rx > f->last_tx ? f->last_rx : f->last_tx;

		if (f->last_progress > since)
			since = f->last_progress;
		if (now - since >= rd->cfg.idle_ns && !f->ready && !f->need_ack &&
		    rd_out_idle(f, f->conn) && rd_in_idle(f)) {
			struct rd_conn *c = f->conn;

			rd_flow_detach(rd, f);
			if (c->verified && rd_conn_rest(rd, c))
				freed += sizeof(*c) + sizeof(struct braid_peer);
		}
	}
	return freed;
}

/* Proven peers without a flow, quiet for cfg.idle_ns, rest: whose flow went
 * another way (reclaimed for room, failed), or that were proven after it went;
 * the oldest first. Return: the bytes freed. */
static size_t sweep_resting(struct braid_rd *rd, uint64_t now)
{
	struct braid_dlist *it, *tmp;
	size_t freed = 0;
	int scan = 0;

	braid_dlist_foreach_safe(&rd->resting, it, tmp) {
		struct rd_conn *c = braid_container_of(it, struct rd_conn, lru);
		uint64_t last = __atomic_load_n(&c->peer->last_active, __ATOMIC_RELAXED);

		if (now - last < rd->cfg.idle_ns || ++scan > RD_SWEEP_UNPROVEN)
			break;
		if (rd_conn_rest(rd, c))
			freed += sizeof(*c) + sizeof(struct braid_peer);
	}
	return freed;
}

/* Unproven peers quiet for cfg.idle_ns go: to a record if anything was numbered
 * either way, else whole. Return: the bytes freed. */
static size_t sweep_unproven(struct braid_rd *rd, uint64_t now)
{
	struct braid_dlist *it, *tmp;
	size_t freed = 0;
	int scan = 0;

	/* the least recently heard from first: stop at the first heard from lately */
	braid_dlist_foreach_safe(&rd->unproven, it, tmp) {
		struct rd_conn *c = braid_container_of(it, struct rd_conn, lru);
		uint64_t last = __atomic_load_n(&c->peer->last_active, __ATOMIC_RELAXED);

		if (now - last < rd->cfg.idle_ns || ++scan > RD_SWEEP_UNPROVEN)
			break;
		if (c->flow)
			continue;
		if (rd_conn_numbered(c)) {
			/* numbering to resume: a record (forgotten, its next message would
			 * wait for ones delivered long ago) */
			if (!rd_conn_rest(rd, c))
				continue;
		} else {
			if (!rd_conn_evictable(rd, c, now))
				continue;
			braid_map_remove(&rd->conns, c->key);
			rd_conn_free(rd, c);
		}
		freed += sizeof(*c) + sizeof(struct braid_peer);
	}
	return freed;
}

/* The pools give whole free chunks back, and malloc's heap its free pages once
 * it is worth it (@freed: the bytes of conns and entries that went besides). */
static void sweep_trim(struct braid_rd *rd, size_t freed)
{
	size_t before = braid_rd_pool_bytes(rd);

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
}

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
	size_t freed = sweep_flows(rd, now);

	freed += sweep_resting(rd, now);
	freed += sweep_unproven(rd, now);
	if (freed)
		braid_peer_table_shrink(rd->peers);	/* the shared entries of conns that went */
	sweep_trim(rd, freed);
	rd->sweep_at = rd->stats.flows_active || !braid_dlist_empty(&rd->unproven) ||
		       !braid_dlist_empty(&rd->resting) ? now + rd->cfg.idle_ns / 4 : UINT64_MAX;
	if (rd->cfg.forget_ns && rd->stats.peers_idle && rd->forget_at == UINT64_MAX)
		rd->forget_at = now + rd->cfg.forget_ns;
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
		if (rd_chal_deadline(rd, f) <= now)
			rd_conn_challenge(rd, f->conn, f->conn->chal_epoch, now);
		/* CTS to repeat, a silent sender of half-received messages; it may fail the flow */
		if (rd_in_timer(rd, f, now))
			rd_out_timer(rd, f, now);
		/* rd_out_timer may have failed (detached) the flow */
		if (f->heap_idx != SIZE_MAX && rd->heap[f->heap_idx].f == f)
			rd_flow_schedule(rd, f);
	}
}
