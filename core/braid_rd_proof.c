/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_proof.c: the RD engine's proof of a peer's incarnation, its restarts and the forgetting of quiet pairs (protocol.md §4.9): challenges and their stateless answers, epoch checks, the control ring, the walk over idle records. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "braid_rd_int.h"
#include "braid/braid_errno.h"

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
uint64_t rd_chal_deadline(const struct braid_rd *rd, const struct rd_flow *f)
{
	const struct rd_conn *c = f->conn;

	if (c->verified || !c->chal_out || !f->msgs_live || c->chal_tries >= RD_CHAL_TIMER_TRIES)
		return UINT64_MAX;
	return c->chal_at + chal_wait(rd, c);
}

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
		rd_out_fail_sends(rd, conn);
		rd_sends_finish(rd, FI_ECONNRESET, BRAID_PERR_PEER_RESTARTED);
		rd_rma_pend_drop(rd, conn);
		conn->snd_nxt = conn->next_msg_id = 0;
		conn->rcv_nxt = conn->match_next = 0;
	}
	conn->epoch = epoch;
}

/* Tell a peer that sent to an earlier incarnation of us who we are now (§4.2 rule 3). */
void rd_conn_send_reset(struct braid_rd *rd, struct rd_conn *conn, uint64_t now)
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

/*
 * Ask the peer's address whether incarnation @epoch lives there (§4.9). A
 * challenge about the same incarnation repeats its cookie (an answer to any
 * copy proves it, however long the round trip) and is repeated no sooner than
 * the initial RTO, doubling up to the largest RTO: a flood of claims costs at
 * most one small packet each, fewer and fewer.
 */
void rd_conn_challenge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now)
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

/* rd_conn_epoch_check() of an incarnation not the proven one (or of a peer not proven). */
int rd_conn_epoch_judge(struct braid_rd *rd, struct rd_conn *conn, uint32_t epoch, uint64_t now)
{
	if (!conn->epoch) {
		conn->epoch = epoch;
		if (conn->flow && conn->flow->silent) {
			conn->flow->silent = false;	/* heard from: its own RTO again */
			rd->silent_flows--;
		}
		rd_conn_challenge(rd, conn, epoch, now);
		return 0;
	}
	if (epoch == conn->epoch) {
		if (!conn->verified)
			rd_conn_challenge(rd, conn, epoch, now);	/* the first may have been lost */
		return 0;
	}
	if (conn->verified && braid_seq_lt(epoch, conn->epoch))
		return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
	rd_conn_challenge(rd, conn, epoch, now);
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
		rd_flow_detach(rd, c->flow);
	}
	if (!rd_conn_rest(rd, c))
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
void rd_forget_walk(struct braid_rd *rd, uint64_t now)
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
		struct rd_idle *idle = rd_idle_of(v);
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
	struct rd_idle *idle = rd_idle_of(val);
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
		r.confirm = forget_cookie(rd, rd_idle_of(val));
	} else {
		r.src_epoch = rd->fresh_epoch;	/* nothing of the asker here */
	}
	r.cookie = v->cookie;
	ctl_push(rd, src_ip, v->src_port, &r);
	rd->stats.forget_rx++;
	return 0;
}

/* An RD_CHALLENGE (§4.9): answer one addressed to us; believe a response that answers ours. */
int rd_input_chal(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
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
		struct rd_idle *idle = rd_idle_of(braid_map_get(&rd->conns, key));

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
	rd_conn_touch(rd, conn, now);
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
