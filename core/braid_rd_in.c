/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_in.c: the RD engine's incoming side: PSN window, placement at offset, reassembly, SAS matching, ACK generation (protocol.md §4.2-§4.3). */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rd_int.h"
#include "braid/braid_errno.h"


/* Copy @len bytes to offset @off of a receive, truncating at its capacity. */
static void recv_copy(struct rd_recv *r, uint64_t off, const uint8_t *src, size_t len)
{
	if (off >= r->capacity)
		return;
	if (len > r->capacity - off)
		len = (size_t)(r->capacity - off);
	braid_iov_scatter(r->iov, r->iov_count, off, src, len);
}

static bool msg_complete(const struct rd_msg *m)
{
	return m->received == m->len;
}

/*
 * Buffer freed: the flows whose data we refused for want of it get a window
 * update at once (§4.3), so their senders resend now instead of at their
 * next probe.
 */
void rd_in_room(struct braid_rd *rd)
{
	struct braid_dlist *it;
	bool big, small;

	if (!rd->refused_n)
		return;
	/* not for every buffer freed: once an eighth of the staging the refused data
	 * needs is free (as TCP's receiver avoids the silly window syndrome, RFC 1122
	 * 4.2.3.3) */
	big = rd->stages.count - rd->stages.in_use >= (rd->stages.count + 7) / 8;
	small = rd->stages_small.count - rd->stages_small.in_use >=
		(rd->stages_small.count + 7) / 8;
	if (!big && !small)
		return;
	braid_dlist_foreach(&rd->active, it) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);

		if (!f->refused || !(f->refused_small ? small || big : big))
			continue;
		f->refused = false;
		rd->refused_n--;
		f->wupdate = true;
		f->need_ack = true;
		f->ack_now = true;
		rd_flow_ready(rd, f);
	}
}

/* A flow's receive state goes: it owes no window update any more. */
void rd_in_forget(struct braid_rd *rd, struct rd_flow *f)
{
	if (f->refused)
		rd->refused_n--;
	f->refused = false;
	f->wupdate = false;
	rd_grant_forget(rd, f);
}

/* Staging for @len bytes: a small buffer when it fits one, else a packet's. */
static struct rd_stage *stage_get(struct braid_rd *rd, size_t len)
{
	struct rd_stage *s = len <= RD_STAGE_SMALL ? braid_pool_alloc_raw(&rd->stages_small) : NULL;

	if (s) {
		s->small = true;
		s->heap = false;
		return s;
	}
	s = braid_pool_alloc_raw(&rd->stages);	/* filled by the caller */
	if (s) {
		s->small = false;
		s->heap = false;
	}
	return s;
}



static void stage_free_all(struct braid_rd *rd, struct rd_msg *m)
{
	while (m->stage) {
		struct rd_stage *s = m->stage;

		m->stage = s->next;
		rd_stage_put(rd, s);
	}
}

/*
 * A message is done with at this end (delivered, or dropped by FI_DISCARD):
 * free it, or, when its sender asked for delivery complete, hand it to the
 * RMA side, which answers the sender and then frees it (§4.7).
 */
static inline void msg_done(struct braid_rd *rd, struct rd_msg *m)
{
	stage_free_all(rd, m);
	if (m->hflags & BRAID_RD_F_DC)
		rd_rma_delivered(rd, m);
	else
		rd_msg_release(rd, m);
}

/* Deliver a complete, matched message and free it. */
static RD_HOT_INLINE void msg_deliver(struct braid_rd *rd, struct rd_msg *m, int err,
				       int prov_errno)
{
	struct rd_recv *r = m->recv;
	/* written in place (a full ring, which a receive's held place rules out, keeps none) */
	struct braid_rd_comp spare, *c = rd_comp_slot(rd) ?: &spare;

	*c = (struct braid_rd_comp){
		.context = r->context,
		.flags = BRAID_RD_COMP_RECV |
			 ((m->hflags & BRAID_RD_F_TAGGED) ? BRAID_RD_COMP_TAGGED : 0) |
			 ((m->hflags & BRAID_RD_F_CQ_DATA) ? BRAID_RD_COMP_CQ_DATA : 0),
		.err = err,
		.prov_errno = prov_errno,
		.len = m->len < r->capacity ? m->len : (size_t)r->capacity,
		.buf = r->iov_count ? r->iov[0].iov_base : NULL,
		.tag = m->tag,
		.data = m->data,
		.peer = m->peer,
	};

	if (__builtin_expect(m->bad, 0) && !err) {
		/* its sender could not read its bytes (§4.2): they are not delivered */
		c->err = FI_EIO;
		c->prov_errno = BRAID_PERR_SENDER_BAD;
	} else if (!err && m->len > r->capacity) {
		c->err = FI_ETRUNC;
		c->prov_errno = BRAID_PERR_TRUNC;
		c->olen = m->len - r->capacity;
	}
	if (!c->err && (r->flags & BRAID_RD_NO_COMP))
		c->flags |= BRAID_RD_COMP_SILENT;
	if (r->parent && --r->parent->refs == 0 && r->parent->retired) {
		/* the last message in a retired multi-receive buffer hands it back */
		c->flags |= BRAID_RD_COMP_MULTI_RECV;
		c->flags &= ~BRAID_RD_COMP_SILENT;
		braid_pool_release(&rd->rxq->recvs, r->parent);
	}
	if (c != &spare)
		rd_comp_commit(rd);
	braid_pool_release(&rd->rxq->recvs, r);
	if (err) {	/* the peer failed or restarted: nobody to answer */
		stage_free_all(rd, m);
		rd_msg_release(rd, m);
		return;
	}
	RD_COUNT(rd, m->conn->flow, msgs_received, 1);
	msg_done(rd, m);
}

/*
 * Take @r (posted) for message @m. A plain receive leaves the posted list; a
 * multi-receive buffer gives @m its next free part (a child record) and
 * leaves the list only when less than its floor is left.
 * Return: the record to bind, or NULL (no record free for the part).
 */
static struct rd_recv *recv_take(struct braid_rd *rd, struct rd_recv *r, const struct rd_msg *m)
{
	struct rd_recv *part;
	uint64_t room;

	if (!(r->flags & BRAID_RD_MULTI)) {
		braid_dlist_remove(&r->node);
		return r;
	}
	part = braid_pool_alloc_head(&rd->rxq->recvs, RD_RECV_HEAD);
	if (!part)
		return NULL;
	room = r->capacity - r->used;
	part->iov[0].iov_base = (uint8_t *)r->iov[0].iov_base + r->used;
	part->iov[0].iov_len = m->len < room ? m->len : room;
	part->iov_count = 1;
	part->capacity = part->iov[0].iov_len;
	part->flags = r->flags & ~BRAID_RD_MULTI;
	part->context = r->context;
	part->parent = r;
	r->used += part->capacity;
	r->refs++;
	if (r->capacity - r->used < r->min_free) {
		r->retired = true;
		braid_dlist_remove(&r->node);
	}
	return part;
}

/* ---- rendezvous (§4.6): CTS for messages that have a buffer ---- */

/* How long a CTS waits for its data before it goes again: two of the receiver's RTTs
 * (CTS to data, or the flow's own), doubling with each repeat (at most 8x), and
 * never longer than a 16th of the peer timeout: a lost CTS must not stall a
 * live sender for long. */
static uint64_t cts_retry(const struct braid_rd *rd, const struct rd_flow *f, uint32_t i)
{
	uint64_t rtt = f->cts_rtt ? f->cts_rtt : f->srtt, t = 2 * rtt;
	uint64_t cap = rd_peer_timeout(rd, f) / 16;
	uint32_t k = f->cts_tries[i] > 1 ? f->cts_tries[i] - 1u : 0;

	if (!rtt)
		t = rd->cfg.rto_init_ns;
	if (t < rd->cfg.rto_min_ns)
		t = rd->cfg.rto_min_ns;
	t <<= k < 3 ? k : 3;
	return t < cap ? t : cap;
}

/* Ask for the rest of rendezvous message @m (it has somewhere to go now). */
static void cts_want(struct braid_rd *rd, struct rd_msg *m)
{
	struct rd_flow *f = m->conn ? m->conn->flow : NULL;
	uint32_t i;

	if (!m->rdv || !f)
		return;
	for (i = 0; i < f->cts_n; i++)
		if (f->cts_ids[i] == m->msg_id)
			return;
	if (f->cts_n == RD_CTS_MAX)
		return;	/* found again by cts_refill when an entry frees */
	f->cts_ids[f->cts_n] = m->msg_id;
	f->cts_sent[f->cts_n] = 0;
	f->cts_tries[f->cts_n] = 0;
	f->cts_first[f->cts_n] = 0;
	f->cts_n++;
	rd_flow_ready(rd, f);
}

static void cts_refill(struct braid_rd *rd, struct rd_flow *f)
{
	uint32_t i;

	for (i = 0; i <= rd->slot_mask && f->cts_n < RD_CTS_MAX; i++) {
		struct rd_msg *m = f->msgs[i];

		if (m && m->rdv && (m->recv || m->discard) && !msg_complete(m))
			cts_want(rd, m);
	}
}

/* Message @msg_id needs no CTS any more (complete, or gone). */
static void cts_done(struct braid_rd *rd, struct rd_flow *f, uint32_t msg_id)
{
	uint32_t i;

	for (i = 0; i < f->cts_n; i++) {
		if (f->cts_ids[i] != msg_id)
			continue;
		f->cts_n--;
		f->cts_ids[i] = f->cts_ids[f->cts_n];
		f->cts_sent[i] = f->cts_sent[f->cts_n];
		f->cts_tries[i] = f->cts_tries[f->cts_n];
		f->cts_first[i] = f->cts_first[f->cts_n];
		if (f->cts_n == RD_CTS_MAX - 1)
			cts_refill(rd, f);
		return;
	}
}

/* Data of @msg_id arrived: the CTS got through; the next repeat can wait. The
 * time from its first sending to the first data is an RTT sample of the
 * receiver's own (an upper bound when the CTS was repeated: safe for a repeat
 * timer, which is all it is used for). */
static void cts_touch(struct rd_flow *f, uint32_t msg_id, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < f->cts_n; i++) {
		if (f->cts_ids[i] != msg_id || !f->cts_sent[i])
			continue;
		if (f->cts_first[i] && f->cts_first[i] != UINT64_MAX && now > f->cts_first[i]) {
			uint64_t r = now - f->cts_first[i];

			/* a CTS sent once gives a true sample; a repeated one only a
			 * first guess (loss inflates it) */
			if (f->cts_tries[i] == 1 && f->cts_rtt)
				f->cts_rtt = f->cts_rtt - f->cts_rtt / 8 + r / 8;
			else if (f->cts_tries[i] == 1 || !f->cts_rtt)
				f->cts_rtt = r;
		}
		f->cts_first[i] = UINT64_MAX;	/* one sample per CTS */
		f->cts_sent[i] = now;
		f->cts_tries[i] = 0;
	}
}

int rd_in_write_cts(struct braid_rd *rd, struct rd_flow *f, uint64_t now,
		    struct braid_rd_out *out, int max)
{
	struct rd_conn *conn = f->conn;
	uint32_t i;
	int n = 0;

	for (i = 0; i < f->cts_n && n < max; i++) {
		if (f->cts_sent[i])
			continue;	/* sent; rd_in_timer makes it due again */
		braid_rd_cts_write((struct braid_rd_cts_hdr *)out[n].hdr, rd->cfg.local_port,
				   conn->my_epoch, conn->epoch, f->cts_ids[i]);
		rd_out_control(rd, f, &out[n], sizeof(struct braid_rd_cts_hdr), f->data_route);
		f->cts_sent[i] = now;
		if (!f->cts_first[i])
			f->cts_first[i] = now;
		if (f->cts_tries[i] < UINT8_MAX)
			f->cts_tries[i]++;
		RD_COUNT(rd, f, cts_tx, 1);
		n++;
	}
	return n;
}

bool rd_in_timer(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	bool any = false;
	uint32_t i;

	/*
	 * Messages half-received from a peer that has sent nothing for the peer
	 * timeout: the sender is gone (killed, or cut off). Receives bound to them
	 * fail instead of waiting forever, and the peer is treated as failed.
	 */
	if (f->msgs_live && now >= f->last_rx + rd_peer_timeout(rd, f)) {
		rd->stats.peers_failed++;
		rd_flow_fail(rd, f, FI_EHOSTUNREACH, BRAID_PERR_PEER_UNREACHABLE);
		return false;
	}
	/* a CTS not answered by data within the retry time goes again (with the next output) */
	for (i = 0; i < f->cts_n; i++) {
		if (f->cts_sent[i] && now >= f->cts_sent[i] + cts_retry(rd, f, i)) {
			f->cts_sent[i] = 0;
			any = true;
		}
	}
	if (any)
		rd_flow_ready(rd, f);
	return true;
}

uint64_t rd_in_deadline(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t d = UINT64_MAX;
	uint32_t i;

	if (f->msgs_live)
		d = f->last_rx + rd_peer_timeout(rd, f);
	/* CTS never sent yet go out with the flow's next output (it is on the ready
	 * list); only the repeats are timed */
	for (i = 0; i < f->cts_n; i++) {
		uint64_t t = f->cts_sent[i] + cts_retry(rd, f, i);

		if (f->cts_sent[i] && t < d)
			d = t;
	}
	return d;
}

/* Give a message its receive: staged bytes move into the buffer. */
static inline void msg_bind(struct braid_rd *rd, struct rd_msg *m, struct rd_recv *r)
{
	struct rd_stage *s;

	m->recv = r;
	if (m->rdv)
		cts_want(rd, m);
	for (s = m->stage; s; s = s->next)
		recv_copy(r, s->off, s->data, s->len);
	stage_free_all(rd, m);
}

static bool recv_matches(const struct rd_recv *r, const struct rd_msg *m)
{
	if (r->peer && r->peer != m->peer)
		return false;
	if (!(r->flags & BRAID_RD_TAGGED))
		return true;
	return ((r->tag ^ m->tag) & ~r->ignore) == 0;
}

/* The posted receive @m takes (a multi-receive buffer's part), or NULL: none matches. */
static inline struct rd_recv *msg_find_recv(struct braid_rd *rd, const struct rd_msg *m)
{
	struct braid_dlist *q = (m->hflags & BRAID_RD_F_TAGGED) ? &rd->rxq->posted_tagged :
								  &rd->rxq->posted_msg;
	struct braid_dlist *it;

	braid_dlist_foreach(q, it) {
		struct rd_recv *r = braid_container_of(it, struct rd_recv, node);

		if (recv_matches(r, m))
			return recv_take(rd, r, m);
	}
	return NULL;
}

/* @m found no receive: it waits in the unexpected list. */
static inline void msg_unexpected(struct braid_rd *rd, struct rd_msg *m)
{
	m->unexpected = true;
	braid_dlist_insert_tail(&m->node, &rd->rxq->unexpected);
	RD_COUNT(rd, m->conn->flow, unexp_msgs, 1);
	RD_COUNT(rd, m->conn->flow, unexp_bytes, m->len);
}

/* The message's turn to match came (sender order, FI_ORDER_SAS). */
static inline void msg_match(struct braid_rd *rd, struct rd_msg *m)
{
	struct rd_recv *take;

	m->matched = true;
	if (m->rma.op)
		return;	/* RMA (§4.7): no receive; its turn orders its execution */
	take = msg_find_recv(rd, m);
	if (take)
		msg_bind(rd, m, take);
	else
		msg_unexpected(rd, m);
}

/* Free the window slot of a message that needs it no more. */
static void slot_release(struct braid_rd *rd, struct rd_flow *f, struct rd_msg *m)
{
	struct rd_msg **slot = &f->msgs[rd_slot(rd, m->msg_id)];

	if (*slot == m) {
		*slot = NULL;
		f->msgs_live--;
	}
}

/* A message whose turn came or whose last byte arrived: deliver it if it can be. */
static RD_HOT_INLINE void msg_settle(struct braid_rd *rd, struct rd_flow *f, struct rd_msg *m,
				      uint64_t now)
{
	if (m->rdv && msg_complete(m))
		cts_done(rd, f, m->msg_id);
	if (!m->matched || !msg_complete(m))
		return;
	slot_release(rd, f, m);
	if (m->discard) {
		msg_done(rd, m);
	} else if (m->rma.op) {
		rd_rma_in_settle(rd, m, now);	/* it owns the message now */
	} else if (m->recv) {
		msg_deliver(rd, m, 0, 0);
	}
	/* else: complete and unexpected; it waits in its queue's unexpected list for a receive */
}

/* Match messages in order, as far as they have arrived. */
static void match_in_order(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	struct rd_conn *conn = f->conn;

	for (;;) {
		struct rd_msg *m = f->msgs[rd_slot(rd, conn->match_next)];

		if (!m || m->msg_id != conn->match_next || m->matched)
			return;
		/* §4.9: an unproven peer's message takes a receive only whole: a
		 * stranger can then neither hold a receive half-filled nor fail it */
		if (!conn->verified && !m->rma.op && !msg_complete(m))
			return;
		conn->match_next++;
		msg_match(rd, m);
		msg_settle(rd, f, m, now);
	}
}

/* The peer proved its address (§4.9): its messages held back may match now. */
void rd_in_verified(struct braid_rd *rd, struct rd_conn *conn, uint64_t now)
{
	struct rd_flow *f = conn->flow;

	if (!f)
		return;
	match_in_order(rd, f, now);
}

/* The receive window's room (§4.3), before any grant. */
static uint32_t in_room(const struct braid_rd *rd)
{
	/* the packets we can surely take now: as many as packet staging has room
	 * for (small payloads have buffers of their own besides; data for a posted
	 * receive needs none, but which messages will find one is not known here) */
	size_t room = rd->stages.count - rd->stages.in_use;

	/* nor more than the wire's receive queue holds (§4.3) */
	if (rd->cfg.rx_queue_pkts && room > rd->cfg.rx_queue_pkts)
		room = rd->cfg.rx_queue_pkts;
	return room < rd->cfg.window ? (uint32_t)room : rd->cfg.window;
}

uint32_t rd_in_rwnd(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint32_t room = in_room(rd), g = rd_grant_peek(rd, f);

	return g < room ? g : room;
}

static inline void ack_soon(struct braid_rd *rd, struct rd_flow *f, bool now_, uint64_t now)
{
	f->need_ack = true;
	if (now_ || ++f->ack_count >= 2) {
		f->ack_now = true;
		rd_flow_ready(rd, f);
	} else if (!f->ack_deadline) {
		f->ack_deadline = now + rd_ack_delay(rd, f);
	}
	rd_flow_schedule(rd, f);
}

/* Packets of one message must agree; overlapping offsets would overrun. */
static bool msg_agrees(const struct rd_msg *m, const struct braid_rd_data_view *v)
{
	return m->len == v->msg_len && m->tag == v->tag && m->rma.op == v->rma.op &&
	       m->rma.ref == v->rma.ref && m->rma.rkey == v->rma.rkey &&
	       m->rma.raddr == v->rma.raddr &&
	       m->hflags == (v->flags & (BRAID_RD_F_TAGGED | BRAID_RD_F_CQ_DATA | BRAID_RD_F_DC)) &&
	       (uint64_t)m->received + v->payload_len <= m->len;
}

/* §4.2 rule 4: @psn was received already (behind rcv_nxt, or marked in the window). */
static bool psn_taken(const struct braid_rd *rd, const struct rd_conn *conn,
		      const struct rd_flow *f, uint32_t psn)
{
	int32_t d = braid_seq_diff(psn, conn->rcv_nxt);

	return d < 0 || (d < (int32_t)rd->cfg.window && bit_test(f->rcv_bits, rd_slot(rd, psn)));
}

/*
 * A LENT packet (§4.2 "Lent payloads") that waited in this host longer than
 * BRAID_RD_LENT_WAIT_NS: its payload may have been read from the sender's
 * memory after the sender's operation failed. Not known when it arrived:
 * taken (a wire that cannot time arrivals never meets a lent payload).
 */
static bool lent_stale(const struct braid_rd *rd, const struct braid_rd_data_view *v, uint64_t now)
{
	return (v->flags & BRAID_RD_F_LENT) && rd->in_arrived && now > rd->in_arrived &&
	       now - rd->in_arrived > BRAID_RD_LENT_WAIT_NS;
}

/* The packet an ACK will echo (§4.3): its PSN, send time, route and mark. */
static void echo_note(const struct braid_rd *rd, struct rd_flow *f,
		      const struct braid_rd_data_view *v, bool ecn)
{
	f->echo_psn = v->psn;
	f->echo_time = v->tx_time;
	f->echo_route = rd->in_route;
	f->echo_ecn = ecn;
	f->echo_rx = rd->in_arrived;
}

/* A packet whose PSN was taken already (§4.2 rules 4-5): dropped, ACKed soon. */
static int in_duplicate(struct braid_rd *rd, struct rd_flow *f, const struct braid_rd_data_view *v,
			bool ecn, uint64_t now)
{
	/* the ACK owed for packets taken since the last one keeps echoing them:
	 * a copy read in the same pass as its original (this host was away while
	 * both came) must not make the sender's RTO look real (§4.5, Eifel) */
	if (!f->need_ack)
		echo_note(rd, f, v, ecn);
	/* a rendezvous keepalive probe (§4.6) is a duplicate by design: not a sign
	 * of a spurious retransmission, so not counted for the sender's windows */
	if (!((v->flags & BRAID_RD_F_RDV) && (v->flags & BRAID_RD_F_RETX) && !v->payload_len))
		f->rx_dups++;
	ack_soon(rd, f, true, now);
	return rd_drop_at(rd, f, BRAID_DROP_DUPLICATE);
}

/*
 * The message packet @v belongs to, from its slot in the message window, or
 * a new one (*@created). NULL with *@drop the reason to drop it, or with
 * *@drop BRAID_DROP_MAX when no message record was free (refused, §4.2).
 */
static struct rd_msg *in_msg(struct braid_rd *rd, struct rd_flow *f,
			     const struct braid_rd_data_view *v, bool *created,
			     enum braid_drop_reason *drop)
{
	struct rd_conn *conn = f->conn;
	uint32_t w = rd->cfg.window;
	int32_t d = braid_seq_diff(v->msg_id, conn->match_next);
	struct rd_msg **slot = &f->msgs[rd_slot(rd, v->msg_id)], *m = *slot;

	*created = false;
	*drop = BRAID_DROP_MAX;
	if (m && m->msg_id != v->msg_id) {
		*drop = BRAID_DROP_OUT_OF_WINDOW;
		return NULL;
	}
	if (m) {
		if (!msg_agrees(m, v)) {
			*drop = BRAID_DROP_BAD_LEN;
			return NULL;
		}
		return m;
	}
	if (d < 0 || d >= (int32_t)w) {
		*drop = d < 0 ? BRAID_DROP_BAD_LEN : BRAID_DROP_OUT_OF_WINDOW;
		return NULL;
	}
	m = braid_pool_alloc_head(&rd->msgs, sizeof(*m));	/* (a constant size: inline) */
	if (!m)
		return NULL;
	braid_dlist_init(&m->node);
	m->rd = rd;
	m->conn = conn;
	conn->msgs++;
	m->peer = conn->key;
	m->msg_id = v->msg_id;
	m->len = v->msg_len;
	m->tag = v->tag;
	m->data = v->cq_data;
	m->hflags = v->flags & (BRAID_RD_F_TAGGED | BRAID_RD_F_CQ_DATA | BRAID_RD_F_DC);
	if (v->rma.op && !rd_rma_in_open(rd, m, v)) {
		rd_msg_release(rd, m);
		*drop = BRAID_DROP_BAD_LEN;
		return NULL;
	}
	*slot = m;
	f->msgs_live++;
	*created = true;
	return m;
}

/*
 * §4.2 rules 6-7: place @v's payload, or stage it until its message is
 * matched. Return: false when there was no staging buffer (a message
 * created for the packet is forgotten again).
 */
static bool in_place(struct braid_rd *rd, struct rd_flow *f, struct rd_msg *m,
		     const struct braid_rd_data_view *v, bool created)
{
	struct rd_stage *s;

	if (rd->in_placed)
		return true;	/* braid_rd_place() found it a place, and the wire put it there */
	if (m->discard)
		return true;	/* FI_DISCARD: count the bytes, keep none */
	if (m->rma.op == BRAID_RMA_WRITE || m->rma.op == BRAID_RMA_RESP) {
		rd_rma_in_place(rd, m, v);	/* straight into memory, from any path (§4.7) */
		return true;
	}
	if (m->recv) {
		recv_copy(m->recv, v->offset, v->payload, v->payload_len);
		return true;
	}
	if (!v->payload_len)
		return true;
	s = stage_get(rd, v->payload_len);
	if (!s) {
		if (created && !m->matched) {
			f->msgs[rd_slot(rd, v->msg_id)] = NULL;
			f->msgs_live--;
			rd_msg_release(rd, m);
		}
		return false;
	}
	s->off = v->offset;
	s->len = (uint32_t)v->payload_len;
	memcpy(s->data, v->payload, v->payload_len);
	s->next = m->stage;
	m->stage = s;
	return true;
}

/* Mark @psn taken and advance the cumulative point. Return: whether it left a gap. */
static bool psn_mark(struct braid_rd *rd, struct rd_flow *f, struct rd_conn *conn, uint32_t psn)
{
	bool gap = psn != conn->rcv_nxt;

	conn->took = true;
	if (!gap)
		conn->rcv_nxt++;	/* in order: its bit would be set and cleared at once */
	else
		bit_set(f->rcv_bits, rd_slot(rd, psn));
	while (bit_test(f->rcv_bits, rd_slot(rd, conn->rcv_nxt))) {
		bit_clear(f->rcv_bits, rd_slot(rd, conn->rcv_nxt));
		conn->rcv_nxt++;
	}
	return gap;
}

/* Refused for want of buffer: an ACK with rwnd 0 now, a window update once
 * there is room again (rd_in_room). */
static int in_refused(struct braid_rd *rd, struct rd_flow *f, const struct braid_rd_data_view *v,
		      bool ecn, uint64_t now)
{
	if (!f->refused) {
		f->refused = true;
		rd->refused_n++;
	}
	f->refused_small = v->payload_len <= RD_STAGE_SMALL;
	echo_note(rd, f, v, ecn);
	ack_soon(rd, f, true, now);
	return rd_drop_at(rd, f, BRAID_DROP_NO_BUFFER);
}

int rd_in_data(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_data_view *v,
	       bool ecn, uint64_t now)
{
	struct rd_flow *f = rd_flow_attach(rd, conn, true, now);
	enum braid_drop_reason drop;
	bool created, gap, done, hold, joined;
	struct rd_msg *m;

	if (!f) {
		RD_COUNT_EP(rd, rx_data, 1);
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	}
	RD_COUNT(rd, f, rx_data, 1);
	if (ecn)
		RD_COUNT(rd, f, rx_ce, 1);
	f->last_rx = now;
	if (rd->in_route >= 0)
		f->data_route = rd->in_route;
	/* (an ack_psn at or behind snd_una acknowledges nothing new: the receiving
	 * side of a one-way stream, every packet) */
	if ((v->flags & BRAID_RD_F_ACK) && braid_seq_gt(v->ack_psn, f->snd_una)) {
		rd_out_piggy_ack(rd, f, v->ack_psn, now);
		if (!braid_dlist_empty(&rd->sends_done))
			rd_sends_finish(rd, 0, 0);	/* answered RMA requests it acknowledged */
	}
	/* the header was copied when sent, the payload perhaps not: it is not
	 * taken (nor acknowledged: the sender, if alive, sends it again) */
	if (lent_stale(rd, v, now))
		return rd_drop_at(rd, f, BRAID_DROP_STALE_LENT);
	/* §4.10: a sender with more to send joins the active senders */
	joined = rd_grant_note(rd, f, v, now);
	/* §4.2 rules 4-5: the PSN window */
	if (psn_taken(rd, conn, f, v->psn))
		return in_duplicate(rd, f, v, ecn, now);
	if (braid_seq_diff(v->psn, conn->rcv_nxt) >= (int32_t)rd->cfg.window)
		return rd_drop_at(rd, f, BRAID_DROP_OUT_OF_WINDOW);
	m = in_msg(rd, f, v, &created, &drop);
	if (!m)
		return drop == BRAID_DROP_MAX ? in_refused(rd, f, v, ecn, now) :
						rd_drop_at(rd, f, drop);
	if ((v->flags & BRAID_RD_F_RDV) && !v->rma.op)
		m->rdv = true;
	else if (m->rdv)
		cts_touch(f, m->msg_id, now);
	/* its turn to match (an unproven peer's message waits in staging until
	 * whole, §4.9: match_in_order below) */
	if (v->msg_id == conn->match_next && !m->matched && (conn->verified || m->rma.op)) {
		conn->match_next++;
		msg_match(rd, m);
	}
	if (!in_place(rd, f, m, v, created))
		return in_refused(rd, f, v, ecn, now);
	m->received += (uint32_t)v->payload_len;
	m->bad |= !!(v->flags & BRAID_RD_F_BAD);
	RD_COUNT(rd, f, rx_bytes, v->payload_len);
	gap = psn_mark(rd, f, conn, v->psn);
	echo_note(rd, f, v, ecn);

	done = msg_complete(m);
	msg_settle(rd, f, m, now);
	/* (only with a message whose turn may have come) */
	if (f->msgs[rd_slot(rd, conn->match_next)])
		match_in_order(rd, f, now);
	/*
	 * ACK at once on a gap, when this packet filled one (RFC 5681 §4.2), and
	 * when it completed its message: the sender's completion waits for it, and
	 * with manual progress the receiver may not be polled again soon.
	 */
	if (done)
		f->done_at = now;
	/* ...except in a ping-pong (§4.3): the answer comes within the ACK delay,
	 * and the ACK rides on it (§4.8); a late answer lets the ACK go at its deadline */
	hold = done && f->pingpong && rd->cfg.bundle && !gap && conn->rcv_nxt - v->psn == 1;
	if (hold)
		f->ack_held = true;
	/* a sender that joined the active senders waits for its grant (§4.10) */
	ack_soon(rd, f, gap || conn->rcv_nxt - v->psn > 1 || (done && !hold) || (joined && !done),
		 now);
	return 0;
}

/*
 * How long the echoed packet may have waited here before its ACK leaves at
 * @now (§4.3 hold_us): since it reached this host (or the wire was last read
 * empty before it was read).
 * A host that was away (descheduled, computing) or held the ACK back shows
 * it, so the sender does not read our absence as its fabric's queueing.
 */
static uint32_t ack_hold_us(const struct rd_flow *f, uint64_t now)
{
	uint64_t us;

	if (!f->echo_rx || now <= f->echo_rx)
		return 0;
	us = (now - f->echo_rx) / 1000;
	return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/*
 * The ACK the flow owes (§4.3), written into @out's header, which the
 * outgoing side placed and addressed (it rides with data when it can,
 * §4.8): the ACK is no longer owed.
 */
void rd_in_write_ack(struct braid_rd *rd, struct rd_flow *f, struct braid_rd_out *out,
		     uint64_t now)
{
	struct rd_conn *conn = f->conn;
	uint32_t w = rd->cfg.window, words = (rd->slot_mask + 64) / 64, i;
	struct braid_rd_ack_view a = {
		.src_port = rd->cfg.local_port,
		.flags = f->echo_ecn ? BRAID_RD_ACK_F_ECN_CE : 0,
		.src_epoch = conn->my_epoch,
		.dst_epoch = conn->epoch,
		.cum_psn = conn->rcv_nxt,
		.echo_psn = f->echo_psn,
		.echo_time = f->echo_time,
		.rwnd = f->refused ? 0 : rd_grant_sent(rd, f, in_room(rd), now),
		.dups = f->rx_dups,
		.hold_us = ack_hold_us(f, now),
	};

	if (f->wupdate) {
		/* a window update answers no packet: it echoes one already acknowledged,
		 * which gives the sender no RTT sample (the wait for room is not a round trip) */
		a.echo_psn = conn->rcv_nxt - 1;
		a.echo_time = 0;
		a.hold_us = 0;
		f->wupdate = false;
	}

	memset(a.sack, 0, sizeof(a.sack));
	/* nothing beyond cum_psn has arrived (the usual case): no bit to look at */
	for (i = 0; i < words && !f->rcv_bits[i]; i++)
		;
	for (i = i < words ? 0 : w; i + 1 < w && i < BRAID_RD_SACK_BITS; i++) {
		if (bit_test(f->rcv_bits, rd_slot(rd, conn->rcv_nxt + 1 + i)))
			a.sack[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	braid_rd_ack_write((struct braid_rd_ack_hdr *)out->hdr, &a);
	RD_COUNT(rd, f, tx_acks, 1);
	f->ack_now = false;
	f->ack_held = false;
	f->need_ack = false;
	f->ack_count = 0;
	f->ack_deadline = 0;
}

bool rd_in_idle(const struct rd_flow *f)
{
	return f->msgs_live == 0;
}

/* The peer restarted or died: drop what was being reassembled from it. */
void rd_in_reset(struct braid_rd *rd, struct rd_conn *conn, int err, int prov_errno)
{
	struct rd_flow *f = conn->flow;
	uint32_t i;

	if (!f)
		return;
	for (i = 0; i <= rd->slot_mask; i++) {
		struct rd_msg *m = f->msgs[i];

		if (!m)
			continue;
		f->msgs[i] = NULL;
		if (m->unexpected)
			braid_dlist_remove(&m->node);
		if (m->recv) {
			msg_deliver(rd, m, err, prov_errno);
		} else {
			stage_free_all(rd, m);
			rd_msg_release(rd, m);
		}
	}
	f->msgs_live = 0;
	f->cts_n = 0;
	rd_in_forget(rd, f);
	memset(f->rcv_bits, 0, ((rd->slot_mask + 64) / 64) * sizeof(uint64_t));
	f->need_ack = false;
	f->ack_now = false;
	f->ack_deadline = 0;
}

/* ---- messages local peers hand whole (protocol.md §7.4) ---- */

/*
 * The payload of an unexpected message handed whole, staged in as many
 * buffers as it takes (a packet's bytes each). Return: false, none staged,
 * when the buffers ran out.
 */
static bool local_stage(struct braid_rd *rd, struct rd_msg *m, const uint8_t *payload, size_t len)
{
	size_t seg = RD_SEG(rd), off;

	for (off = 0; off < len; off += seg) {
		size_t n = len - off < seg ? len - off : seg;
		struct rd_stage *s = stage_get(rd, n);

		if (!s) {
			/* beyond the pools: its sender already counts it sent, and the
			 * ring must move (the peer's ACKs may wait behind it); the caller
			 * asks local peers to hand no more whole (braid_rd_local_over) */
			s = malloc(sizeof(*s) + n);
			if (!s) {
				stage_free_all(rd, m);
				return false;
			}
			s->small = false;
			s->heap = true;
			rd->local_heap++;
		}
		s->off = (uint32_t)off;
		s->len = (uint32_t)n;
		memcpy(s->data, payload + off, n);
		s->next = m->stage;
		m->stage = s;
	}
	return true;
}

int braid_rd_local_input(struct braid_rd *rd, uint64_t peer, const void *rec, size_t len,
			 uint64_t now)
{
	const uint8_t *payload = (const uint8_t *)rec + sizeof(struct braid_rd_local_hdr);
	struct braid_rd_local_hdr h;
	struct rd_recv *take;
	struct rd_conn *conn;
	struct rd_msg *m;

	if (len < sizeof(h))
		return -FI_EINVAL;
	memcpy(&h, rec, sizeof(h));	/* (its sender may change the bytes meanwhile) */
	if (h.version != BRAID_RD_LOCAL_VERSION || h.pad ||
	    (h.flags & ~(BRAID_RD_F_TAGGED | BRAID_RD_F_CQ_DATA)) || h.len != len - sizeof(h) ||
	    h.len > rd->cfg.max_msg_size)
		return -FI_EINVAL;
	conn = rd_conn_get(rd, peer, true, now);
	if (!conn)
		return -FI_EAGAIN;
	m = braid_pool_alloc_head(&rd->msgs, sizeof(*m));
	if (!m)
		return -FI_EAGAIN;
	braid_dlist_init(&m->node);
	m->rd = rd;
	m->conn = conn;
	conn->msgs++;
	m->peer = conn->key;
	m->len = m->received = h.len;
	m->tag = h.tag;
	m->data = h.data;
	m->hflags = h.flags;
	m->matched = true;
	take = msg_find_recv(rd, m);
	if (take) {
		m->recv = take;
		recv_copy(take, 0, payload, h.len);
		msg_deliver(rd, m, 0, 0);
		return 0;
	}
	if (!local_stage(rd, m, payload, h.len)) {
		rd_msg_release(rd, m);
		return -FI_EAGAIN;
	}
	msg_unexpected(rd, m);
	return 0;
}

/* ---- receive queues (braid_rd.h), and the receives posted to them ---- */

/* Its lists; with @max_recvs, records too (0: a queue with none, which takes no receive). */
int rd_rxq_construct(struct braid_rd_rxq *q, uint32_t max_recvs)
{
	braid_dlist_init(&q->posted_msg);
	braid_dlist_init(&q->posted_tagged);
	braid_dlist_init(&q->unexpected);
	braid_dlist_init(&q->engines);
	return max_recvs ? braid_pool_construct(&q->recvs, sizeof(struct rd_recv), max_recvs) : 0;
}

int braid_rd_rxq_open(uint32_t max_recvs, struct braid_rd_rxq **out)
{
	struct braid_rd_rxq *q;
	int ret;

	if (!out || !max_recvs)
		return -FI_EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -FI_ENOMEM;
	ret = rd_rxq_construct(q, max_recvs);
	if (ret) {
		free(q);
		return ret;
	}
	*out = q;
	return 0;
}

int braid_rd_rxq_close(struct braid_rd_rxq *q)
{
	if (!q)
		return 0;
	if (!braid_dlist_empty(&q->engines))
		return -FI_EBUSY;
	braid_pool_destruct(&q->recvs);
	free(q);
	return 0;
}

size_t braid_rd_rxq_room(const struct braid_rd_rxq *q)
{
	return q->recvs.count - q->recvs.in_use;
}

/* The FI_ECANCELED completion of receive @r (a @tagged one, of tag @tag). */
static struct braid_rd_comp recv_canceled(const struct rd_recv *r, bool tagged, uint64_t tag)
{
	return (struct braid_rd_comp){
		.context = r->context,
		.flags = BRAID_RD_COMP_RECV | (tagged ? BRAID_RD_COMP_TAGGED : 0),
		.err = FI_ECANCELED,
		.prov_errno = BRAID_PERR_CANCELED,
		.buf = r->iov_count ? r->iov[0].iov_base : NULL,
		.tag = tag,
	};
}

/*
 * Engine @rd stops drawing from its shared queue (braid_rd_rxq_leave()): its
 * unexpected messages leave the queue (no receive posted there takes them
 * now), and the receives its messages being received had taken complete
 * FI_ECANCELED on it: they are given back, not lost with the engine.
 */
static void rd_in_detach(struct braid_rd *rd)
{
	struct braid_rd_rxq *q = rd->rxq;
	struct braid_dlist *it, *tmp;
	uint32_t i;

	braid_dlist_foreach_safe(&q->unexpected, it, tmp) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);

		if (m->rd != rd)
			continue;
		braid_dlist_remove(&m->node);
		m->unexpected = false;
		stage_free_all(rd, m);	/* (those from malloc, §7.4, do not go with the pools) */
	}
	braid_dlist_foreach(&rd->active, it) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);

		for (i = 0; i <= rd->slot_mask; i++) {
			struct rd_msg *m = f->msgs[i];
			struct rd_recv *r = m ? m->recv : NULL;
			struct braid_rd_comp c;

			if (!r)
				continue;
			c = recv_canceled(r, m->hflags & BRAID_RD_F_TAGGED, m->tag);
			if (r->parent && --r->parent->refs == 0 && r->parent->retired) {
				/* the last part of a retired multi-receive buffer hands it back */
				c.flags |= BRAID_RD_COMP_MULTI_RECV;
				braid_pool_release(&q->recvs, r->parent);
			}
			rd_comp_push(rd, &c);
			braid_pool_release(&q->recvs, r);
			m->recv = NULL;
			m->discard = true;
		}
	}
}

void rd_in_close(struct braid_rd *rd)
{
	struct braid_dlist *it;

	/* the staging of messages handed whole kept from malloc (§7.4): the rest goes
	 * with the pools */
	if (!rd->local_heap)
		return;
	braid_dlist_foreach(&rd->rxq->unexpected, it) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);

		if (m->rd == rd)
			stage_free_all(rd, m);
	}
}

void braid_rd_rxq_leave(struct braid_rd *rd)
{
	if (rd->rxq == &rd->own_rxq)
		return;
	rd_in_detach(rd);
	braid_dlist_remove(&rd->rxq_node);
	/* an empty queue of its own, with no room: it takes no receive any more */
	rd->rxq = &rd->own_rxq;
}

/*
 * A receive record from @req: NULL with *@ret set on bad arguments, an
 * empty pool, or (@owner: the engine whose own queue @q is) no place left
 * in @owner's completion ring (rd_comp_room). A shared queue's receives
 * complete on whichever engine their message reaches: none is reserved.
 */
static RD_HOT_INLINE struct rd_recv *recv_new(struct braid_rd_rxq *q,
					      const struct braid_rd *owner,
					      const struct braid_rd_recv *req, int *ret)
{
	struct rd_recv *r;

	if (!req || req->iov_count > BRAID_RD_IOV_MAX || (req->iov_count && !req->iov) ||
	    !braid_iov_valid(req->iov, req->iov_count)) {
		*ret = -FI_EINVAL;
		return NULL;
	}
	/* (completions not taken fill the operations' places) */
	r = !owner || rd_comp_room(owner) ? braid_pool_alloc_head(&q->recvs, RD_RECV_HEAD) : NULL;
	if (!r) {
		*ret = -FI_EAGAIN;
		return NULL;
	}
	braid_iov_copy(r->iov, req->iov, req->iov_count);
	r->iov_count = req->iov_count;
	r->capacity = braid_iov_len(req->iov, req->iov_count);
	r->peer = req->peer;
	r->tag = req->tag;
	r->ignore = req->ignore;
	r->flags = req->flags;
	r->context = req->context;
	*ret = 0;
	return r;
}

/* The engine whose own queue @q is, or NULL (a shared queue). */
static const struct braid_rd *rxq_owner(const struct braid_rd_rxq *q)
{
	const struct braid_rd *rd;

	if (braid_dlist_empty(&q->engines) || q->engines.next->next != &q->engines)
		return NULL;
	rd = braid_container_of(q->engines.next, struct braid_rd, rxq_node);
	return q == &rd->own_rxq ? rd : NULL;
}

int braid_rd_rxq_post(struct braid_rd_rxq *q, const struct braid_rd_recv *req, uint64_t now)
{
	struct braid_dlist *it, *tmp;
	struct rd_recv *r;
	int ret;

	r = recv_new(q, rxq_owner(q), req, &ret);
	if (!r)
		return ret;

	if (r->flags & BRAID_RD_MULTI) {
		if (r->iov_count != 1) {
			braid_pool_release(&q->recvs, r);
			return -FI_EINVAL;
		}
		r->min_free = req->min_free;
	}
	/* the posted list first, so recv_take can take a multi-receive off it */
	braid_dlist_insert_tail(&r->node,
				(r->flags & BRAID_RD_TAGGED) ? &q->posted_tagged : &q->posted_msg);
	/* unexpected messages, oldest first (a multi-receive buffer takes several),
	 * each received on the engine it arrived at */
	braid_dlist_foreach_safe(&q->unexpected, it, tmp) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);
		struct rd_recv *take;

		if (m->claim || !!(m->hflags & BRAID_RD_F_TAGGED) != !!(r->flags & BRAID_RD_TAGGED) ||
		    !recv_matches(r, m))
			continue;
		take = recv_take(m->rd, r, m);
		if (!take)
			break;
		braid_dlist_remove(&m->node);
		m->unexpected = false;
		msg_bind(m->rd, m, take);
		if (msg_complete(m))
			msg_deliver(m->rd, m, 0, 0);
		if (take == r || r->retired)
			break;
	}
	/* a new receive is room too: refused data of a message it matches lands in it */
	braid_dlist_foreach(&q->engines, it)
		rd_in_room(braid_container_of(it, struct braid_rd, rxq_node));
	(void)now;
	return 0;
}

int braid_rd_post_recv(struct braid_rd *rd, const struct braid_rd_recv *req, uint64_t now)
{
	return braid_rd_rxq_post(rd->rxq, req, now);
}

int braid_rd_rxq_cancel(struct braid_rd_rxq *q, void *context, struct braid_rd *report)
{
	struct braid_dlist *lists[2] = { &q->posted_msg, &q->posted_tagged };
	struct braid_dlist *it;
	int l;

	for (l = 0; l < 2; l++) {
		braid_dlist_foreach(lists[l], it) {
			struct rd_recv *r = braid_container_of(it, struct rd_recv, node);
			struct braid_rd_comp c = recv_canceled(r, r->flags & BRAID_RD_TAGGED, r->tag);

			if (r->context != context)
				continue;
			braid_dlist_remove(&r->node);
			if (r->refs) {
				/* parts still filling: the last of them hands the buffer back */
				r->retired = true;
			} else {
				if (r->flags & BRAID_RD_MULTI)
					c.flags |= BRAID_RD_COMP_MULTI_RECV;
				braid_pool_release(&q->recvs, r);
			}
			if (report)
				rd_comp_push(report, &c);
			return 0;
		}
	}
	return -FI_ENOENT;
}

int braid_rd_cancel(struct braid_rd *rd, void *context)
{
	return braid_rd_rxq_cancel(rd->rxq, context, rd);
}

/* ---- FI_PEEK / FI_CLAIM / FI_DISCARD (fi_tagged(3)) ---- */

/* The message's slot, if it still has one (incomplete or not yet matched). */
static struct rd_flow *msg_flow(struct rd_msg *m)
{
	return m->conn ? m->conn->flow : NULL;
}

/* Drop an unexpected message now, or once its last bytes are absorbed. */
static void msg_discard(struct braid_rd *rd, struct rd_msg *m)
{
	struct rd_flow *f = msg_flow(m);

	braid_dlist_remove(&m->node);
	m->unexpected = false;
	m->claim = NULL;
	m->discard = true;
	stage_free_all(rd, m);
	if (!msg_complete(m))
		cts_want(rd, m);	/* a rendezvous sender must still send the rest, absorbed */
	if (msg_complete(m)) {
		if (f)
			slot_release(rd, f, m);
		msg_done(rd, m);
	}
}

int braid_rd_peek(struct braid_rd *rd, const struct braid_rd_recv *req, uint32_t mode,
		  uint64_t now)
{
	struct braid_rd_comp c = { 0 };
	struct braid_dlist *it;
	struct rd_msg *found = NULL;
	struct rd_recv probe, *r;
	struct braid_rd *at;
	int ret;

	if (!req || !(mode & (BRAID_RD_PEEK | BRAID_RD_CLAIM)) ||
	    (mode & ~(BRAID_RD_PEEK | BRAID_RD_CLAIM | BRAID_RD_DISCARD)))
		return -FI_EINVAL;
	memset(&probe, 0, sizeof(probe));
	probe.peer = req->peer;
	probe.tag = req->tag;
	probe.ignore = req->ignore;
	probe.flags = req->flags;
	braid_dlist_foreach(&rd->rxq->unexpected, it) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);

		if (mode & BRAID_RD_PEEK) {
			if (m->claim || !!(m->hflags & BRAID_RD_F_TAGGED) !=
			    !!(req->flags & BRAID_RD_TAGGED) || !recv_matches(&probe, m))
				continue;
		} else if (m->claim != req->context) {
			continue;
		}
		found = m;
		break;
	}
	c.context = req->context;
	c.flags = BRAID_RD_COMP_RECV | ((req->flags & BRAID_RD_TAGGED) ? BRAID_RD_COMP_TAGGED : 0);
	if (!found) {
		c.err = FI_ENOMSG;
		c.prov_errno = BRAID_PERR_OK;
		c.tag = req->tag;
		return rd_comp_push(rd, &c) ? 0 : -FI_EAGAIN;
	}
	/* what is done to the message completes on the engine it arrived at */
	at = found->rd;
	c.flags |= (found->hflags & BRAID_RD_F_CQ_DATA) ? BRAID_RD_COMP_CQ_DATA : 0;
	c.tag = found->tag;
	c.data = found->data;
	c.peer = found->peer;
	if (mode & BRAID_RD_PEEK) {
		c.len = found->len;
		if (!rd_comp_push(at, &c))
			return -FI_EAGAIN;
		if (mode & BRAID_RD_DISCARD)
			msg_discard(at, found);
		else if (mode & BRAID_RD_CLAIM)
			found->claim = req->context;
		return 0;
	}
	if (mode & BRAID_RD_DISCARD) {
		if (!rd_comp_push(at, &c))
			return -FI_EAGAIN;
		msg_discard(at, found);
		return 0;
	}
	/* the paired FI_CLAIM receive: the claimed message goes into its buffers */
	r = recv_new(rd->rxq, rxq_owner(rd->rxq), req, &ret);
	if (!r)
		return ret;
	braid_dlist_remove(&found->node);
	found->unexpected = false;
	found->claim = NULL;
	msg_bind(at, found, r);
	if (msg_complete(found))
		msg_deliver(at, found, 0, 0);
	(void)now;
	return 0;
}

void braid_rd_flush_acks(struct braid_rd *rd)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&rd->active, it) {
		struct rd_flow *f = braid_container_of(it, struct rd_flow, active_node);

		if (f->need_ack) {
			f->ack_now = true;
			rd_flow_ready(rd, f);
		}
	}
}

/*
 * Where the payload of a packet rd_in_data() would take now goes, when that
 * is an application buffer: the part of a matched receive, a WRITE's region,
 * a RESP's result buffers. Only for packets of a message an earlier packet
 * opened (the first packet of each goes the usual way), in the window, not
 * received yet, agreeing with their message: everything rd_in_data() checks
 * before it places a payload.
 */
/* The peer @v is from, when it has traffic state and @v is of its incarnations with us. */
static struct rd_conn *place_conn(struct braid_rd *rd, const struct braid_rd_data_view *v,
				  uint32_t src_ip)
{
	struct rd_conn *conn = rd_conn_get(rd, braid_peer_key(src_ip, v->src_port), false, 0);

	if (!conn || !conn->flow || v->dst_epoch != conn->my_epoch || v->src_epoch != conn->epoch)
		return NULL;
	return conn;
}

static int place_view(struct braid_rd *rd, const struct braid_rd_data_view *v, uint32_t src_ip,
		      struct iovec *iov, int max, uint64_t now)
{
	uint32_t w = rd->cfg.window;
	struct rd_conn *conn;
	struct rd_flow *f;
	struct rd_msg *m;
	int32_t d;

	if (!v->payload_len || v->msg_len > rd->cfg.max_msg_size || lent_stale(rd, v, now))
		return 0;
	conn = place_conn(rd, v, src_ip);
	if (!conn)
		return 0;
	f = conn->flow;
	if (psn_taken(rd, conn, f, v->psn) || braid_seq_diff(v->psn, conn->rcv_nxt) >= (int32_t)w)
		return 0;
	m = f->msgs[rd_slot(rd, v->msg_id)];
	if (!m && v->rma.op == BRAID_RMA_WRITE) {
		/* a write's first packet: the message it opens (a slot and a record
		 * free) is checked against the key for all its length, so the region is known */
		d = braid_seq_diff(v->msg_id, conn->match_next);
		if (d < 0 || d >= (int32_t)w || rd->msgs.in_use >= rd->msgs.count)
			return 0;
		return rd_rma_in_where(rd, NULL, v, iov, max);
	}
	if (!m || m->msg_id != v->msg_id || !msg_agrees(m, v) || m->discard)
		return 0;
	if (m->rma.op == BRAID_RMA_WRITE || m->rma.op == BRAID_RMA_RESP)
		return rd_rma_in_where(rd, m, v, iov, max);
	if (m->rma.op || !m->recv || v->offset + v->payload_len > m->recv->capacity)
		return 0;
	return braid_iov_slice(m->recv->iov, m->recv->iov_count, v->offset, v->payload_len, iov, max);
}

/* The header of an RD_DATA or RD_RMA datagram of @len bytes, decoded. Return: 0 or -1. */
static int place_decode(const void *hdr, size_t hdr_len, size_t len, struct braid_rd_data_view *v)
{
	if (hdr_len < sizeof(struct braid_rd_data_hdr) || len <= hdr_len ||
	    (((const uint8_t *)hdr)[2] == BRAID_PKT_RD_RMA && hdr_len < sizeof(struct braid_rd_rma_hdr)) ||
	    braid_rd_data_decode(hdr, len, v))
		return -1;
	return 0;
}

int braid_rd_place(struct braid_rd *rd, const void *hdr, size_t hdr_len, size_t len,
		   uint32_t src_ip, struct iovec *iov, int max, uint64_t now)
{
	struct braid_rd_data_view v;

	if (place_decode(hdr, hdr_len, len, &v))
		return 0;
	return place_view(rd, &v, src_ip, iov, max, now);
}

bool braid_rd_is_dup(struct braid_rd *rd, const void *hdr, size_t hdr_len, size_t len,
		     uint32_t src_ip)
{
	struct braid_rd_data_view v;
	struct rd_conn *conn;

	if (place_decode(hdr, hdr_len, len, &v))
		return false;
	conn = place_conn(rd, &v, src_ip);
	return conn && psn_taken(rd, conn, conn->flow, v.psn);
}
