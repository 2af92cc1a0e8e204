/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_out.c: the RD engine's outgoing side, a leaf below the engine's base and conns: sends cut into packets, sprayed; ACKs taken; time-based loss detection; retransmission (protocol.md §4.5). */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_iov.h"
#include "braid_rd_int.h"
#include "braid/braid_errno.h"

static inline struct rd_txpkt *tx_slot(struct braid_rd *rd, struct rd_flow *f, uint32_t psn)
{
	return &f->tx[rd_slot(rd, psn)];
}

static bool op_in_sendq(const struct rd_send *op)
{
	return op->node.next != &op->node;
}

/* rd_out_release(), inline for out_finish() */
static RD_HOT_INLINE void out_release(struct braid_rd *rd, struct rd_send *op)
{
	if (op->waiting)
		op->conn->waiting--;
	if (op->inject)
		braid_pool_release(&rd->injects, op->inject);
	if (op->stage)
		rd_stage_put(rd, op->stage);
	braid_pool_release((op->flags & BRAID_RD_INTERNAL) ? &rd->resps : &rd->sends, op);
}

void rd_out_release(struct braid_rd *rd, struct rd_send *op)
{
	out_release(rd, op);
}

/*
 * @op is done with here, its completion left to the caller (in
 * rd->sends_done, by its rlink, behind those handed back before it).
 */
static void send_hand_back(struct braid_rd *rd, struct rd_send *op)
{
	braid_dlist_remove(&op->rlink);
	braid_dlist_insert_tail(&op->rlink, &rd->sends_done);
}

/* A send's completion, not an RMA request's (rd_rma_finish), and its record goes
 * (inline for send_done(), every send's end; rd_out_finish() for the others). */
static RD_HOT_INLINE void out_finish(struct braid_rd *rd, struct rd_send *op, int err,
				     int prov_errno)
{
	/* written in place (a full ring, which a send's held place rules out, takes none) */
	struct braid_rd_comp *c = (op->flags & BRAID_RD_INTERNAL) ? NULL : rd_comp_slot(rd);

	if (c) {
		*c = (struct braid_rd_comp){
			.context = op->context,
			.flags = BRAID_RD_COMP_SEND |
				 ((op->flags & BRAID_RD_TAGGED) ? BRAID_RD_COMP_TAGGED : 0) |
				 (!err && (op->flags & BRAID_RD_NO_COMP) ?
				  BRAID_RD_COMP_SILENT : 0),
			.err = err,
			.prov_errno = prov_errno,
			.len = op->len,
			.tag = op->tag,
			.peer = op->conn->key,
		};
		rd_comp_commit(rd);
	}
	if (!(op->flags & BRAID_RD_INTERNAL)) {
		if (!err)
			RD_COUNT(rd, op->conn->flow, msgs_sent, 1);
	}
	braid_dlist_remove(&op->rlink);	/* a delivery-complete send */
	out_release(rd, op);
}

void rd_out_finish(struct braid_rd *rd, struct rd_send *op, int err, int prov_errno)
{
	out_finish(rd, op, err, prov_errno);
}

/*
 * Every packet of @op was acknowledged: it is done, unless it waits for an
 * answer (§4.7: an RMA request, a delivery-complete send). An RMA request
 * answered already is handed back: the caller has the RMA side complete it
 * (rd_sends_finish).
 */
static RD_HOT_INLINE void send_done(struct braid_rd *rd, struct rd_send *op)
{
	if (!braid_dlist_empty(&op->rlink) && !op->resp_done) {
		op->waiting = true;
		op->conn->waiting++;
		return;
	}
	if (op->rma.op && op->rma.op != BRAID_RMA_RESP)
		send_hand_back(rd, op);
	else
		out_finish(rd, op, 0, 0);
}

/* rd_out_new_send(), inline for the application's sends (rd_out_start) */
static inline struct rd_send *out_new_send(struct braid_rd *rd, struct rd_conn *conn,
					   uint32_t flags, void *context)
{
	struct rd_send *op;

	/* (an engine-made response completes nowhere: it needs no place in the ring) */
	if (!(flags & BRAID_RD_INTERNAL) && !rd_comp_room(rd))
		return NULL;
	op = braid_pool_alloc_head((flags & BRAID_RD_INTERNAL) ? &rd->resps : &rd->sends,
				   RD_SEND_HEAD);
	if (!op)
		return NULL;
	op->flags = flags;
	op->context = context;
	op->conn = conn;
	/* (one comparison per packet cut: an op not staged is ready throughout) */
	op->staged = (flags & BRAID_RD_STAGED) ? 0 : UINT64_MAX;
	braid_dlist_init(&op->rlink);
	return op;
}

struct rd_send *rd_out_new_send(struct braid_rd *rd, struct rd_conn *conn, uint32_t flags,
				void *context)
{
	return out_new_send(rd, conn, flags, context);
}

/*
 * The start of every application send and RMA request: the peer's conn and
 * flow, an op from the application's pool, its payload (@iov itself, or with
 * BRAID_RD_INJECT a copy). Return: 0 and *@opp, -FI_ENOMEM, -FI_EAGAIN.
 */
/* (inline for braid_rd_send(); rd_out_start() for the RMA side) */
static RD_HOT_INLINE int out_start(struct braid_rd *rd, uint64_t peer, uint32_t flags,
				   void *context, const struct iovec *iov, size_t cnt, uint64_t len,
				   uint64_t now, struct rd_send **opp)
{
	struct rd_conn *conn = rd_conn_get(rd, peer, true, now);
	struct rd_send *op;

	if (!conn)
		return -FI_ENOMEM;
	if (!rd_flow_attach(rd, conn, false, now))
		return -FI_EAGAIN;
	op = out_new_send(rd, conn, flags, context);
	if (!op)
		return -FI_EAGAIN;
	op->len = len;
	if (!(flags & BRAID_RD_INJECT)) {
		braid_iov_copy(op->iov, iov, cnt);	/* a 0-byte message may have no iov at all */
		op->iov_count = cnt;
	} else {
		op->inject = braid_pool_alloc_raw(&rd->injects);	/* the payload is copied in */
		if (!op->inject) {
			braid_pool_release(&rd->sends, op);
			return -FI_EAGAIN;
		}
		braid_iov_gather(iov, cnt, op->inject);
		op->iov[0].iov_base = op->inject;
		op->iov[0].iov_len = len;
		op->iov_count = 1;
	}
	*opp = op;
	return 0;
}

int rd_out_start(struct braid_rd *rd, uint64_t peer, uint32_t flags, void *context,
		 const struct iovec *iov, size_t cnt, uint64_t len, uint64_t now,
		 struct rd_send **opp)
{
	return out_start(rd, peer, flags, context, iov, cnt, len, now, opp);
}

size_t braid_rd_stage_ring(const struct braid_rd *rd)
{
	return (size_t)rd->cfg.window * RD_SEG(rd);
}

int rd_out_ring_check(const struct braid_rd *rd, uint32_t flags, const struct iovec *iov,
		      size_t cnt, uint64_t staged_len, uint64_t *len)
{
	if (!(flags & BRAID_RD_STAGED) || cnt != 1)
		return -FI_EINVAL;
	/* (longer than the ring: it goes round, and must be long enough to) */
	if (staged_len > iov[0].iov_len && iov[0].iov_len < braid_rd_stage_ring(rd))
		return -FI_EINVAL;
	if (staged_len < iov[0].iov_len)
		return -FI_EINVAL;
	*len = staged_len;
	return 0;
}

void rd_out_ring_set(struct rd_send *op, const struct iovec *iov, uint64_t len)
{
	if (len > iov[0].iov_len)
		op->ring = iov[0].iov_len;
}

static bool grant_lapsed(const struct braid_rd *rd, const struct rd_flow *f, uint64_t now);

/* Number @op and queue it behind the conn's other sends (the conn has its flow).
 * (inline for braid_rd_send(); rd_out_queue() for the RMA side) */
static inline void out_queue(struct braid_rd *rd, struct rd_send *op, uint64_t now)
{
	struct rd_conn *conn = op->conn;
	struct rd_flow *f = conn->flow;

	op->msg_id = conn->next_msg_id++;
	op->rdv = !op->rma.op && rd->cfg.rdv_threshold && op->len > rd->cfg.rdv_threshold;
	if (op->rdv)
		RD_COUNT(rd, f, rdv_msgs, 1);
	if (rd_out_idle(f, conn)) {
		/* §4.10: idle for an RTO, the flow's grant lapses (the receiver has
		 * counted it out; its share went to others): the unscheduled window
		 * again until the receiver's next ACK (as TCP restarts after idle) */
		if (f->granted && grant_lapsed(rd, f, now))
			f->granted = false;
		f->last_progress = now;	/* the peer timeout counts from the first packet */
	}
	/* the application answers the peer's messages at once: a ping-pong (§4.3) */
	if (!(op->flags & BRAID_RD_INTERNAL) && f->done_at &&
	    now - f->done_at <= 2 * rd->cfg.ack_delay_ns && f->pingpong < 8)
		f->pingpong++;
	braid_dlist_insert_tail(&op->node, &conn->sendq);
	rd_flow_ready(rd, f);
}

void rd_out_queue(struct braid_rd *rd, struct rd_send *op, uint64_t now)
{
	out_queue(rd, op, now);
}

int braid_rd_send(struct braid_rd *rd, const struct braid_rd_send *req, uint64_t now)
{
	struct rd_send *op;
	uint64_t len;
	int ret;

	if (!req || req->iov_count > BRAID_RD_IOV_MAX || (req->iov_count && !req->iov) ||
	    !req->peer || !braid_iov_valid(req->iov, req->iov_count) ||
	    (req->flags & BRAID_RD_INTERNAL) || ((req->flags & BRAID_RD_STAGED) &&
	    (!rd->cfg.stage || (req->flags & BRAID_RD_INJECT))))
		return -FI_EINVAL;
	len = braid_iov_len(req->iov, req->iov_count);
	if (__builtin_expect(req->staged_len != 0, 0) &&
	    rd_out_ring_check(rd, req->flags, req->iov, req->iov_count, req->staged_len, &len))
		return -FI_EINVAL;
	if (len > rd->cfg.max_msg_size)
		return -FI_EMSGSIZE;
	if ((req->flags & BRAID_RD_INJECT) && len > rd->cfg.inject_size)
		return -FI_EMSGSIZE;
	ret = out_start(rd, req->peer, req->flags, req->context, req->iov, req->iov_count, len, now,
			&op);
	if (ret)
		return ret;
	if (__builtin_expect(req->staged_len != 0, 0))
		rd_out_ring_set(op, req->iov, len);
	if (req->flags & BRAID_RD_DELIVERY)	/* it waits for the RESP */
		braid_dlist_insert_tail(&op->rlink, &op->conn->rma_ops);
	op->tag = req->tag;
	op->data = req->data;
	out_queue(rd, op, now);
	return 0;
}

/* ---- messages handed whole to local peers (protocol.md §7.4) ---- */

bool braid_rd_local_ready(struct braid_rd *rd, uint64_t peer)
{
	/* (no conn, or an idle one: nothing of ours to it is on its way) */
	struct rd_conn *conn = rd_conn_get(rd, peer, false, 0);

	if (!rd_comp_room(rd) || !braid_dlist_empty(&rd->rma_pend))
		return false;
	if (!conn)
		return true;
	return braid_dlist_empty(&conn->rma_ops) && (!conn->flow || rd_out_idle(conn->flow, conn));
}

void braid_rd_local_hdr_of(const struct braid_rd_send *req, uint64_t len,
			   struct braid_rd_local_hdr *h)
{
	*h = (struct braid_rd_local_hdr){
		.version = BRAID_RD_LOCAL_VERSION,
		.flags = ((req->flags & BRAID_RD_TAGGED) ? BRAID_RD_F_TAGGED : 0) |
			 ((req->flags & BRAID_RD_CQ_DATA) ? BRAID_RD_F_CQ_DATA : 0),
		.len = (uint32_t)len,
		.tag = req->tag,
		.data = (req->flags & BRAID_RD_CQ_DATA) ? req->data : 0,
	};
}

void braid_rd_local_sent(struct braid_rd *rd, const struct braid_rd_send *req, uint64_t len,
			 struct braid_rd_comp *comp)
{
	/* (braid_rd_local_ready: the ring has room) */
	struct braid_rd_comp *c = comp ? comp : rd_comp_slot(rd);
	struct rd_conn *conn = rd_conn_get(rd, req->peer, false, 0);

	if (c) {
		*c = (struct braid_rd_comp){
			.context = req->context,
			.flags = BRAID_RD_COMP_SEND |
				 ((req->flags & BRAID_RD_TAGGED) ? BRAID_RD_COMP_TAGGED : 0) |
				 ((req->flags & BRAID_RD_NO_COMP) ? BRAID_RD_COMP_SILENT : 0),
			.len = len,
			.tag = req->tag,
			.peer = req->peer,
		};
		if (!comp)
			rd_comp_commit(rd);
	}
	RD_COUNT(rd, conn ? conn->flow : NULL, msgs_sent, 1);
}

/* ---- timers ---- */

/*
 * Every timer scales from measured RTTs (protocol.md §4.5): the flow's and
 * each path's. The configured floors only cover the hosts' scheduling
 * jitter; nothing is tuned to one fabric's RTT.
 */

/* The RTO from the worst RTO of the paths in use (rd_flow_worst_rto(f, true)) and the
 * peer timeout (rd_peer_timeout()), which a caller that needs them too has already. */
static uint64_t flow_rto_of(const struct braid_rd *rd, const struct rd_flow *f, uint64_t worst,
			    uint64_t peer_timeout)
{
	uint64_t rto = worst, cap = peer_timeout / 16;

	if (!rto)
		rto = rd->cfg.rto_init_ns;
	if (rto < rd->cfg.rto_min_ns)
		rto = rd->cfg.rto_min_ns;
	rto <<= f->rto_backoff;
	if (rto > rd->cfg.rto_max_ns)
		rto = rd->cfg.rto_max_ns;
	/* probe many times within the peer timeout, so a live peer behind heavy loss is heard */
	if (rto > cap)
		rto = cap;
	/* peers never heard from at all resend, together, at most RD_SILENT_RTX_PER_S times a
	 * second: ten thousand unreachable peers must not take the CPU from the live ones
	 * (they still fail at the peer timeout, which does not depend on the RTO) */
	if (f->silent && rto < (uint64_t)rd->silent_flows * (1000000000ULL / RD_SILENT_RTX_PER_S))
		rto = (uint64_t)rd->silent_flows * (1000000000ULL / RD_SILENT_RTX_PER_S);
	return rto;
}

static uint64_t flow_rto(const struct braid_rd *rd, const struct rd_flow *f)
{
	return flow_rto_of(rd, f, rd_flow_worst_rto(f, true), rd_peer_timeout(rd, f));
}

/*
 * §4.10: the flow, idle, has neither sent nor heard an ACK for an RTO: its
 * grant lapsed. (Cheap first: a ping-pong's idle gaps are far below the RTO
 * floor.)
 */
static bool grant_lapsed(const struct braid_rd *rd, const struct rd_flow *f, uint64_t now)
{
	uint64_t last = f->last_tx > f->last_progress ? f->last_tx : f->last_progress;

	return now - last >= rd->cfg.rto_min_ns && now - last >= flow_rto(rd, f);
}

/* When the RTO (@rto) fires: a whole RTO with no acknowledgement of anything new, and the
 * oldest packet in flight at least that old. */
static uint64_t rto_deadline(const struct rd_flow *f, const struct rd_txpkt *head, uint64_t rto)
{
	uint64_t start = head->tx_time > f->last_ack ? head->tx_time : f->last_ack;

	return start + rto;
}

/*
 * When the next keepalive of rendezvous sends waiting for a CTS is due (§4.6):
 * an eighth of the configured peer timeout after the last probe or ACK (the
 * configured timeout, not this side's RTT-stretched one: the receiver, with no
 * RTT of its own, fails half-received messages after the configured one).
 */
static uint64_t probe_deadline(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t from = f->probe_at > f->last_progress ? f->probe_at : f->last_progress;

	return from + rd->cfg.peer_timeout_ns / 8;
}

/*
 * The next send waits for the message window (§4.2 rule 5): it starts a
 * message @window or more past the oldest one not wholly acknowledged. The
 * receiver could hold no slot for it (the oldest may be a rendezvous message
 * waiting for its receive, §4.6) and would drop its packets, whose PSNs would
 * then hold the PSN window shut for the oldest's own remaining packets.
 */
static inline bool sendq_held(const struct braid_rd *rd, const struct rd_conn *conn)
{
	const struct rd_send *op;

	if (braid_dlist_empty(&conn->sendq))
		return false;
	op = braid_container_of(conn->sendq.next, struct rd_send, node);
	/* (a message that has started, a rendezvous one back after its CTS, goes on) */
	return op->msg_id - conn->flow->msg_una >= rd->cfg.window && !op->next_off &&
	       !op->pkts_out && !op->cut_done;
}

/* Data in flight or queued to go: the peer must answer within the peer timeout.
 * (Sends held by the message window wait for the oldest message, which is in
 * flight or waits for the peer itself: a rendezvous CTS, probed, §4.6.) */
static inline bool out_busy(const struct braid_rd *rd, const struct rd_flow *f,
		     const struct rd_conn *conn)
{
	return !braid_dlist_empty(&f->txorder) || !braid_dlist_empty(&f->retxq) ||
	       (!braid_dlist_empty(&conn->sendq) && !sendq_held(rd, conn));
}

/* The oldest RMA request whose packets were all acknowledged and that waits for its answer. */
static const struct rd_send *rma_waiting(const struct rd_conn *conn)
{
	const struct braid_dlist *it;

	for (it = conn->rma_ops.next; it != &conn->rma_ops; it = it->next) {
		const struct rd_send *op = braid_container_of(it, struct rd_send, rlink);

		if (op->waiting)
			return op;
	}
	return NULL;
}

void rd_out_cts_input(struct braid_rd *rd, struct rd_conn *conn, uint32_t msg_id)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&conn->paused, it) {
		struct rd_send *op = braid_container_of(it, struct rd_send, node);

		if (op->msg_id != msg_id)
			continue;
		op->cts = true;
		/* first in line: it was next when it paused */
		braid_dlist_remove(&op->node);
		braid_dlist_insert_head(&op->node, &conn->sendq);
		rd_flow_ready(rd, conn->flow);
		return;
	}
	/* still queued (its first packet not cut yet) or a repeated CTS */
	braid_dlist_foreach(&conn->sendq, it) {
		struct rd_send *op = braid_container_of(it, struct rd_send, node);

		if (op->msg_id == msg_id)
			op->cts = true;
	}
}

/*
 * Tail loss probe timeout: two RTTs after the last transmission (RACK-TLP,
 * RFC 8985), or srtt + 4 rttvar where the RTT varies more (QUIC's PTO, RFC
 * 9002 §6.2.1): a host's scheduling or a shared link's queue that delays
 * ACKs by more than an RTT would otherwise fire probes whose originals
 * arrive (protocol.md §4.5).
 */
static uint64_t flow_pto(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t pto, var;

	if (!f->srtt || f->tlp_out || braid_dlist_empty(&f->txorder))
		return UINT64_MAX;
	var = f->srtt + 4 * f->rttvar;
	pto = (var > 2 * f->srtt ? var : 2 * f->srtt) + rd_ack_delay(rd, f);
	if (pto < rd->cfg.tlp_min_ns)
		pto = rd->cfg.tlp_min_ns;
	return f->last_tx + pto;
}

/* Cross-path window: longer than any path's RTT can plausibly be (@worst:
 * rd_flow_worst_rto(f, true)). */
static uint64_t global_wnd(const struct braid_rd *rd, const struct rd_flow *f, uint64_t worst)
{
	uint64_t w = f->rack_rtt + f->min_rtt / 4, t = worst;

	if (t > w)
		w = t;
	return (w + rd_ack_delay(rd, f)) * (1 + f->reo_mult);
}

/* Same-path window: packets on one path stay in order but for jitter. */
static uint64_t path_wnd(const struct braid_rd *rd, const struct rd_flow *f, uint32_t path)
{
	const struct braid_path *p = &f->paths.p[path];
	uint64_t w = (p->min_rtt_ns ? p->min_rtt_ns : f->min_rtt) / 4, v = p->rttvar_ns;

	/* + the receiver's ACK delay: the earlier packet's ACK may be held back;
	 * widened while retransmissions keep proving spurious */
	return ((v > w ? v : w) + rd_ack_delay(rd, f)) * (1 + f->reo_mult);
}

/*
 * Silence window of a path (protocol.md §4.5, dead paths): its oldest packet
 * in flight is this old, nothing sent after it on the same path was
 * acknowledged, and a packet sent after it on another path was: the path
 * has died (or is far slower than it was). The path's srtt plus the larger of
 * four variations and half an srtt, plus the ACK delay (the flow's srtt
 * before the path has a sample; UINT64_MAX before any RTT is known), at least
 * the jitter floor: under two of its RTTs where the floor allows. It does not
 * wait for the cross-path window, which follows the slowest path.
 */
static uint64_t silence_wnd(const struct braid_rd *rd, const struct rd_flow *f, uint32_t path)
{
	const struct braid_path *p = &f->paths.p[path];
	uint64_t r = p->srtt_ns ? p->srtt_ns : f->srtt, v = p->srtt_ns ? p->rttvar_ns : f->rttvar;
	uint64_t w;

	if (!r)
		return UINT64_MAX;
	w = r + (4 * v > r / 2 ? 4 * v : r / 2) + rd_ack_delay(rd, f);
	if (w < rd->cfg.tlp_min_ns)
		w = rd->cfg.tlp_min_ns;
	/* widened by spurious retransmissions, but less than the reorder windows:
	 * a dead path must still be found before the RTO */
	return w * (1 + (f->reo_mult < 2 ? f->reo_mult : 2));
}

/* Path @i has gone silent by @now (see silence_wnd). */
static bool path_silent(const struct braid_rd *rd, const struct rd_flow *f, uint32_t i,
			uint64_t *when)
{
	const struct rd_pathrack *pr = &f->prack[i];
	const struct rd_txpkt *p;
	uint64_t w;

	if (braid_dlist_empty(&pr->inflight) || f->paths.n < 2)
		return false;
	p = braid_container_of(pr->inflight.next, struct rd_txpkt, plink);
	if (!braid_seq_lt(p->tx_seq, f->rack_seq) ||
	    (pr->has_rack && braid_seq_lt(p->tx_seq, pr->rack_seq)))
		return false;	/* nothing later acked, or the path itself answers */
	w = silence_wnd(rd, f, i);
	if (w == UINT64_MAX)
		return false;	/* no RTT known yet: silence cannot be judged */
	*when = p->tx_time + w;
	return true;
}

/* A zero window holds back packets with nothing in flight to bring an ACK. */
static bool zero_window_waits(const struct rd_flow *f)
{
	return !f->peer_rwnd && !f->inflight &&
	       (!braid_dlist_empty(&f->retxq) || !braid_dlist_empty(&f->conn->sendq));
}

uint64_t rd_out_deadline(const struct braid_rd *rd, const struct rd_flow *f)
{
	bool idle = rd_out_idle(f, f->conn);
	/* (each walks the paths: once each here) */
	uint64_t d = UINT64_MAX, pt = idle ? 0 : rd_peer_timeout(rd, f);
	uint32_t i;

	if (!braid_dlist_empty(&f->txorder)) {
		const struct rd_txpkt *head =
			braid_container_of(f->txorder.next, struct rd_txpkt, link);
		uint64_t worst = rd_flow_worst_rto(f, true), t = flow_pto(rd, f);

		d = rto_deadline(f, head, flow_rto_of(rd, f, worst, pt));
		if (t < d)
			d = t;
		if (braid_seq_lt(head->tx_seq, f->rack_seq)) {
			t = head->tx_time + global_wnd(rd, f, worst);
			if (t < d)
				d = t;
		}
		for (i = 0; i < f->paths.n; i++) {
			const struct rd_pathrack *pr = &f->prack[i];
			const struct rd_txpkt *ph;
			uint64_t r;

			if (braid_dlist_empty(&pr->inflight))
				continue;
			if (path_silent(rd, f, i, &r) && r < d)
				d = r;
			ph = braid_container_of(pr->inflight.next, struct rd_txpkt, plink);
			if (!pr->has_rack || !braid_seq_lt(ph->tx_seq, pr->rack_seq))
				continue;
			r = ph->tx_time + pr->rack_rtt + path_wnd(rd, f, i);
			if (r < d)
				d = r;
		}
	}
	if (!idle && f->last_progress + pt < d)
		d = f->last_progress + pt;
	if (zero_window_waits(f) && !f->zwp_due && f->zwp_at < d)
		d = f->zwp_at;
	if (!out_busy(rd, f, f->conn) && rd_out_waiting(f->conn) && !f->probe_due &&
	    probe_deadline(rd, f) < d)
		d = probe_deadline(rd, f);
	return d;
}

/*
 * Move an in-flight packet to the retransmit queue, lost for reason @why
 * (enum rd_loss; counted against the path it went by unless the receiver
 * refused it, which is no loss of the path's).
 */
static void pkt_requeue(struct braid_rd *rd, struct rd_flow *f, struct rd_txpkt *p, uint8_t why)
{
	p->why = why;
	/* a probe's resend: the transmission it replaces, for the probe-answered rule (§4.5) */
	p->probed_path = why == RD_LOSS_TLP || why == RD_LOSS_RTO ? p->path : RD_NO_PATH;
	p->probed_entropy = f->paths.p[p->path].entropy;
	p->probed_us = rd_usec(p->tx_time);
	if (why != RD_LOSS_REFUSED)
		RD_COUNT_PATH(rd, f, p->path, lost_pkts, 1);
	braid_dlist_remove(&p->link);
	braid_dlist_remove(&p->plink);
	braid_dlist_insert_tail(&p->link, &f->retxq);
	p->state = RD_PKT_LOST;
	f->inflight--;
}

/* A packet lost on its path: requeue it and count it against the path. */
static void pkt_lost(struct braid_rd *rd, struct rd_flow *f, struct rd_txpkt *p, uint8_t why)
{
	pkt_requeue(rd, f, p, why);
	if (braid_path_lost(&f->paths, p->path, rd->cfg.path_health))
		RD_COUNT_PATH(rd, f, p->path, path_redraws, 1);
}

/*
 * Path @i went silent: everything in flight on it is resent on the other
 * paths now, not after the RTO, and the slot moves to a fresh route. One
 * path's death is not the flow's congestion: the window is not cut.
 */
static void path_dead(struct braid_rd *rd, struct rd_flow *f, uint32_t i)
{
	struct rd_pathrack *pr = &f->prack[i];

	while (!braid_dlist_empty(&pr->inflight))
		pkt_requeue(rd, f, braid_container_of(pr->inflight.next, struct rd_txpkt, plink),
			    RD_LOSS_DEAD);
	pr->has_rack = false;
	RD_COUNT_PATH(rd, f, i, path_deaths, 1);
	if (rd->cfg.path_health) {
		braid_path_redraw(&f->paths, i);
		RD_COUNT_PATH(rd, f, i, path_redraws, 1);
	} else {
		braid_path_lost(&f->paths, i, false);
	}
}

/*
 * Time-based loss detection (RACK, protocol.md §4.5), in two forms:
 *  - per path: packets on one path arrive in order but for jitter, so a
 *    packet is lost once a packet sent after it on the same path was
 *    acknowledged and its RTT plus the path's jitter window has passed;
 *  - across paths: once a packet sent after it on any path was acknowledged
 *    and longer than any path's RTT (srtt + 4 rttvar) has passed (this
 *    catches a path that died, which acknowledges nothing at all).
 * Both lists are in transmit order, so each walk stops at the first packet
 * that is not (yet) lost.
 */
static void detect_loss(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	uint64_t gw;
	bool any = false, dead = false;
	uint32_t i;

	if (braid_dlist_empty(&f->txorder))
		return;		/* nothing in flight: nothing lost, no path silent */
	/* dead paths first: a silent path's packets go elsewhere with no CC reaction */
	for (i = 0; i < f->paths.n; i++) {
		uint64_t when;

		if (path_silent(rd, f, i, &when) && when <= now) {
			path_dead(rd, f, i);
			dead = true;
		}
	}
	gw = global_wnd(rd, f, rd_flow_worst_rto(f, true));
	for (i = 0; i < f->paths.n; i++) {
		struct rd_pathrack *pr = &f->prack[i];
		uint64_t pw;

		if (braid_dlist_empty(&pr->inflight) || !pr->has_rack)
			continue;
		pw = path_wnd(rd, f, i);
		while (!braid_dlist_empty(&pr->inflight)) {
			struct rd_txpkt *p = braid_container_of(pr->inflight.next, struct rd_txpkt, plink);

			if (!braid_seq_lt(p->tx_seq, pr->rack_seq) || p->tx_time + pr->rack_rtt + pw > now)
				break;
			pkt_lost(rd, f, p, RD_LOSS_RACK);
			RD_COUNT(rd, f, rack_losses, 1);
			RD_COUNT(rd, f, rack_path_losses, 1);
			any = true;
		}
	}
	while (!braid_dlist_empty(&f->txorder)) {
		struct rd_txpkt *p = braid_container_of(f->txorder.next, struct rd_txpkt, link);

		uint64_t when;

		if (!braid_seq_lt(p->tx_seq, f->rack_seq) || p->tx_time + gw > now)
			break;
		if (path_silent(rd, f, p->path, &when)) {
			/* the oldest packet of a path that answers nothing: the path, not
			 * this packet, is what was lost */
			path_dead(rd, f, p->path);
			dead = true;
			continue;
		}
		pkt_lost(rd, f, p, RD_LOSS_RACK);
		RD_COUNT(rd, f, rack_losses, 1);
		any = true;
	}
	if (any)
		rd->cfg.cc->on_loss(&f->cc, f->srtt, now);
	if (any || dead)
		rd_flow_ready(rd, f);
}

void rd_out_timer(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	struct rd_conn *conn = f->conn;

	if (!rd_out_idle(f, conn) && now >= f->last_progress + rd_peer_timeout(rd, f)) {
		rd->stats.peers_failed++;
		rd_flow_fail(rd, f, FI_EHOSTUNREACH, BRAID_PERR_PEER_UNREACHABLE);
		return;
	}
	/* a zero window with nothing in flight: the probe is due (the next one an RTO on) */
	if (zero_window_waits(f) && !f->zwp_due && now >= f->zwp_at) {
		f->zwp_due = true;
		f->zwp_at = now + flow_rto(rd, f);
		rd_flow_ready(rd, f);
	}
	/* rendezvous sends waiting for a CTS and nothing else going: ask the peer for a
	 * sign of life now and then (§4.6), so a dead receiver fails them in bounded time */
	if (!out_busy(rd, f, conn) && rd_out_waiting(conn) && !f->probe_due &&
	    now >= probe_deadline(rd, f)) {
		f->probe_due = true;
		rd_flow_ready(rd, f);
	}
	detect_loss(rd, f, now);
	if (!braid_dlist_empty(&f->txorder)) {
		struct rd_txpkt *head = braid_container_of(f->txorder.next, struct rd_txpkt, link);

		if (now >= rto_deadline(f, head, flow_rto(rd, f))) {
			/* no ACK for a whole RTO: everything in flight is presumed lost
			 * (RFC 5681 §3.1, RFC 8985 §6.3); back off. (Paths silent by now
			 * were declared dead by detect_loss just above.) */
			while (!braid_dlist_empty(&f->txorder))
				pkt_requeue(rd, f, braid_container_of(f->txorder.next,
								      struct rd_txpkt, link),
					    RD_LOSS_RTO);
			RD_COUNT(rd, f, rto_fires, 1);
			if (!f->rto_at)
				f->rto_at = now;
			else
				f->heard_path = -1;	/* its probe went unanswered too */
			if (now - f->last_progress >= flow_rto(rd, f)) {
				/* silence from the peer for a whole RTO: back off, halve */
				/* before any RTT sample the RTO is a guess: search up
				 * to 1024x; after, at most RD_RTO_BACKOFF_MAX doublings */
				if (f->rto_backoff < (f->srtt ? RD_RTO_BACKOFF_MAX : 10))
					f->rto_backoff++;
				else if (f->srtt)
					f->rto_backoff = RD_RTO_BACKOFF_MAX;
				rd->cfg.cc->on_rto(&f->cc, now);
			} else {
				/* the peer answers (its ACKs carry nothing new: the packets
				 * and ACKs of this window were lost): heavy loss, not a dead
				 * or congested peer; losses are judged by delay, as any loss */
				rd->cfg.cc->on_loss(&f->cc, f->srtt, now);
			}
			rd_flow_ready(rd, f);
		} else if (now >= flow_pto(rd, f)) {
			/* nothing sent for two RTTs and no ACK: probe with the oldest packet,
			 * so a lost tail is found in RTTs, not RTOs (no backoff, no CC cut) */
			pkt_lost(rd, f, head, RD_LOSS_TLP);
			f->tlp_out = true;
			RD_COUNT(rd, f, tlp_probes, 1);
			rd_flow_ready(rd, f);
		}
	}
}

/* ---- acknowledgements ---- */

/* BRAID_PATH_UNHEARD times the packets an ACK acknowledges (at least one). */
static inline uint32_t unheard_limit(const struct rd_flow *f)
{
	uint32_t b = f->ack_batch > 16 ? f->ack_batch : 16;
	uint32_t l = BRAID_PATH_UNHEARD * b / 16;

	return l < UINT16_MAX ? l : UINT16_MAX;
}

/*
 * Path @i's packets arrive but no ACK echoes them (BRAID_PATH_UNHEARD): move
 * it. Not a path already sick: a slow one is seldom the latest arrival an
 * ACK echoes, and is skipped already.
 */
static void path_one_way(struct braid_rd *rd, struct rd_flow *f, uint32_t i)
{
	f->paths.p[i].unheard = 0;
	if (!rd->cfg.path_health || f->paths.n < 2 || braid_path_is_sick(&f->paths, i))
		return;
	braid_path_redraw(&f->paths, i);
	RD_COUNT_PATH(rd, f, i, path_redraws, 1);
}

/* A packet is delivered: free its slot, finish its op when it was the last. */
static RD_HOT_INLINE void pkt_acked(struct braid_rd *rd, struct rd_flow *f, struct rd_txpkt *p,
				    uint64_t now)
{
	struct rd_send *op = p->op;

	f->conn->peer_took = true;
	if (p->state == RD_PKT_INFLIGHT) {
		struct rd_pathrack *pr = &f->prack[p->path];

		f->inflight--;
		if (!p->retx && (!pr->has_rack || braid_seq_gt(p->tx_seq, pr->rack_seq))) {
			pr->has_rack = true;
			pr->rack_seq = p->tx_seq;
			pr->rack_rtt = now - p->tx_time;
			pr->rack_tx = p->tx_time;
		}
	}
	braid_dlist_remove(&p->link);
	braid_dlist_remove(&p->plink);
	braid_path_acked(&f->paths.p[p->path], false);
	RD_COUNT_PATH(rd, f, p->path, acked_pkts, 1);
	if (++f->paths.p[p->path].unheard >= unheard_limit(f))
		path_one_way(rd, f, p->path);
	/* RACK advances only on a packet sent once: the ACK of a retransmitted one may
	 * be its original's, and would make every packet sent before the
	 * retransmission look overtaken (RFC 8985 §6.2 step 2) */
	if (!p->retx && (braid_seq_gt(p->tx_seq, f->rack_seq) || !f->rack_xmit)) {
		f->rack_seq = p->tx_seq;
		f->rack_xmit = p->tx_time;
		f->rack_rtt = now - p->tx_time;
	}
	p->state = RD_PKT_FREE;
	p->op = NULL;
	if (--op->pkts_out == 0 && op->cut_done) {
		/* wholly at the receiver: the message window moves past it */
		if (op->msg_id != f->msg_una) {
			bit_set(f->msg_done, rd_slot(rd, op->msg_id));
		} else {
			f->msg_una++;
			while (bit_test(f->msg_done, rd_slot(rd, f->msg_una)))
				bit_clear(f->msg_done, rd_slot(rd, f->msg_una++));
		}
		send_done(rd, op);
	}
}

static void advance_una(struct braid_rd *rd, struct rd_flow *f)
{
	struct rd_conn *conn = f->conn;

	while (f->snd_una != conn->snd_nxt && tx_slot(rd, f, f->snd_una)->state == RD_PKT_FREE)
		f->snd_una++;
}

/* Acknowledge every packet before @cum. Return: how many were newly acked. */
static uint32_t ack_cum(struct braid_rd *rd, struct rd_flow *f, uint32_t cum, uint64_t now)
{
	uint32_t n = 0, psn;
	bool freed = true;

	if (braid_seq_gt(cum, f->conn->snd_nxt) || braid_seq_le(cum, f->snd_una))
		return 0;
	for (psn = f->snd_una; psn != cum; psn++) {
		struct rd_txpkt *p = tx_slot(rd, f, psn);

		if (p->state == RD_PKT_FREE)
			continue;
		if (p->psn == psn) {
			pkt_acked(rd, f, p, now);
			n++;
		} else {
			freed = false;
		}
	}
	if (freed)
		f->snd_una = cum;	/* every slot before it is free now */
	advance_una(rd, f);
	return n;
}

void rd_out_piggy_ack(struct braid_rd *rd, struct rd_flow *f, uint32_t ack_psn, uint64_t now)
{
	uint32_t n = ack_cum(rd, f, ack_psn, now);

	if (n) {
		f->last_progress = now;
		f->last_ack = now;
		f->rto_backoff = 0;
		f->tlp_out = false;
		if (f->rto_at) {
			/* no echo to judge the RTO by: it stands */
			rd->cfg.cc->rto_verdict(&f->cc, false);
			f->rto_at = 0;
		}
		rd->cfg.cc->on_ack(&f->cc, n, 0, 0, f->min_rtt, false, now);
		detect_loss(rd, f, now);
		rd_flow_ready(rd, f);
	}
}

/*
 * How much of the RTT sample @rtt the two hosts were away from the wire
 * (§4.5): the receiver's hold (its absence before it read the packet, and
 * any ACK delay) and our own absence before we read the ACK (since it
 * arrived, or the wire was last read empty). No queue in the fabric caused it and no smaller
 * window shortens it: congestion control leaves it out. Timers keep the
 * whole sample: they must wait for absent hosts.
 */
static uint64_t sample_away(const struct braid_rd *rd, const struct braid_rd_ack_view *a,
			    uint64_t rtt, uint64_t now)
{
	uint64_t away = (uint64_t)a->hold_us * 1000;

	if (rd->in_arrived && now > rd->in_arrived)
		away += now - rd->in_arrived;
	return away < rtt ? away : rtt;
}

/*
 * The receiver counts the duplicates it got from us. New ones mean packets
 * we declared lost had arrived after all: widen the reorder windows
 * (RFC 8985 §7.2, DSACK's role); narrow them again after 16 RTTs with no new one.
 */
static void ack_reorder(struct braid_rd *rd, struct rd_flow *f, uint32_t dups, uint64_t now)
{
	if (braid_seq_gt(dups, f->peer_dups)) {
		/* once a round trip at most (RFC 8985 §7.2): one burst of early
		 * retransmissions is one piece of evidence, not one per ACK */
		if (f->reo_mult < 8 && now - f->reo_raised_at >= f->srtt) {
			f->reo_mult++;
			f->reo_raised_at = now;
		}
		f->reo_decay_at = now + 16 * (f->srtt ? f->srtt : rd->cfg.rto_init_ns);
	} else if (f->reo_mult && now >= f->reo_decay_at) {
		f->reo_mult--;
		f->reo_decay_at = now + 16 * (f->srtt ? f->srtt : rd->cfg.rto_init_ns);
	}
	f->peer_dups = dups;
}

/*
 * The base RTT that exact sample @rtt of packet @p is judged against: a full
 * packet's, the flow's lowest full-packet sample; a smaller one's, the
 * flow's lowest of any (the slowest link's serialization of a full packet is
 * no queue). Per flow, not per path: the paths of a sprayed flow differ in
 * their queues, which is what is measured, far more than in their length;
 * a path that is longer still loses nothing, since a round is judged on its
 * smallest queueing delay, which the shorter paths give.
 */
static uint64_t sample_base(const struct braid_rd *rd, struct rd_flow *f,
			    const struct rd_txpkt *p, uint64_t rtt)
{
	uint64_t base;

	if (2 * p->len >= rd->cfg.mtu - RD_HDR_LEN(p->op)) {
		if (!f->min_rtt_full || rtt < f->min_rtt_full)
			f->min_rtt_full = rtt;
		return f->min_rtt_full;
	}
	base = f->min_rtt;
	return base && base < rtt ? base : rtt;
}

/*
 * The echo's RTT sample, 0 when there is none. The echo names the
 * transmission that triggered the ACK (its send timestamp), so a sample is
 * never ambiguous, retransmission or not (the role of TCP timestamps against
 * Karn's problem): if it is the packet's latest transmission, its slot tells
 * the path and the exact send time; if an earlier one, the path is unknown
 * and the microsecond echo still gives the flow a sample (so a flow whose
 * every packet was resent too early, on a path far slower than the first
 * guess, still learns its RTT). *@base: the base RTT the sample is judged
 * against (sample_base()), 0 when unknown. *@probed: when the echo names a
 * probe's resend, the transmission it replaced (struct rd_txpkt @probed_path;
 * probed->path RD_NO_PATH otherwise).
 */
static uint64_t ack_rtt_sample(struct braid_rd *rd, struct rd_flow *f, const struct rd_conn *conn,
			       const struct braid_rd_ack_view *a, bool ecn, uint64_t now,
			       uint64_t *base, struct rd_probed *probed)
{
	struct rd_txpkt *p;
	uint32_t us;

	*base = 0;
	probed->path = RD_NO_PATH;
	if (!braid_seq_ge(a->echo_psn, f->snd_una) || !braid_seq_lt(a->echo_psn, conn->snd_nxt))
		return 0;
	p = tx_slot(rd, f, a->echo_psn);
	if (p->state == RD_PKT_FREE || p->psn != a->echo_psn)
		return 0;
	if (rd_usec(p->tx_time) == a->echo_time && now > p->tx_time &&
	    now - p->tx_time < 60ULL * 1000 * 1000 * 1000) {
		uint64_t rtt = now - p->tx_time;

		braid_path_rtt(&f->paths.p[p->path], rtt, now);
		*base = sample_base(rd, f, p, rtt);
		f->heard_path = p->path;
		f->heard_entropy = f->paths.p[p->path].entropy;
		f->paths.p[p->path].unheard = 0;
		if (ecn)
			braid_path_acked(&f->paths.p[p->path], true);
		if (p->retx && p->probed_path != RD_NO_PATH) {
			*probed = (struct rd_probed){ .path = p->probed_path,
						      .entropy = p->probed_entropy,
						      .us = p->probed_us };
			p->probed_path = RD_NO_PATH;
		}
		return rtt;
	}
	us = rd_usec(now) - a->echo_time;
	return us && us < 60u * 1000 * 1000 ? (uint64_t)us * 1000 : 0;
}

/*
 * The probe-answered rule (protocol.md §4.5): an ACK echoed a probe's resend (a
 * tail loss probe, or a resend after an RTO, on another path), so it reached the
 * receiver while the transmission it replaced, on @pb's path, had not. With a
 * window of a few packets a probe is how most losses into a dead path are
 * found, and it takes the lost packet off its path, where the silence rule
 * would have judged it. Unless the path has delivered something sent as late,
 * it is sick at once (braid_path_suspect()): the chooser gives its turns to
 * the others, but for probes, until something it carries is acknowledged, and
 * one more loss on it moves the slot to a fresh route. A path that was only
 * queueing longer than the probe took loses a few turns; a dead one takes no
 * more of the flow's packets into the hole.
 */
static void probe_answered(struct braid_rd *rd, struct rd_flow *f, const struct rd_probed *pb,
			   uint64_t now)
{
	const struct rd_pathrack *pr;
	uint64_t tx = now - (uint64_t)(uint32_t)(rd_usec(now) - pb->us) * 1000;

	if (!rd->cfg.path_health || pb->path >= f->paths.n || f->paths.n < 2 ||
	    f->paths.p[pb->path].entropy != pb->entropy)
		return;		/* no path health, one path, or re-drawn since (its route is gone) */
	pr = &f->prack[pb->path];
	if (pr->has_rack && pr->rack_tx >= tx)
		return;		/* it delivered something sent as late: one packet lost */
	braid_path_suspect(&f->paths.p[pb->path]);
	RD_COUNT(rd, f, probe_suspects, 1);
}

/* The flow's smoothed RTT, variation and minimum take sample @rtt (RFC 6298). */
static void flow_rtt(struct rd_flow *f, uint64_t rtt)
{
	if (!f->min_rtt || rtt < f->min_rtt)
		f->min_rtt = rtt;
	if (!f->srtt) {
		f->srtt = rtt;
		f->rttvar = rtt / 2;
	} else {
		uint64_t err = rtt > f->srtt ? rtt - f->srtt : f->srtt - rtt;

		f->rttvar = f->rttvar - f->rttvar / 4 + err / 4;
		f->srtt = f->srtt - f->srtt / 8 + rtt / 8;
	}
}

/* The SACK bits (bit i is PSN cum + 1 + i): packets newly acknowledged by them. */
static uint32_t ack_sack(struct braid_rd *rd, struct rd_flow *f, const struct rd_conn *conn,
			 const struct braid_rd_ack_view *a, uint64_t now)
{
	uint32_t i, n = 0;
	uint32_t limit = rd->cfg.window < BRAID_RD_SACK_BITS ? rd->cfg.window : BRAID_RD_SACK_BITS;

	/* only bits of PSNs sent and not yet acknowledged can mean anything */
	if (braid_seq_ge(a->cum_psn, conn->snd_nxt))
		limit = 0;
	else if (braid_seq_ge(a->cum_psn, f->snd_una) && conn->snd_nxt - a->cum_psn < limit)
		limit = conn->snd_nxt - a->cum_psn;
	for (i = 0; i + 1 < limit; i++) {
		uint32_t psn = a->cum_psn + 1 + i;
		struct rd_txpkt *p;

		if (!a->sack[i / 8]) {
			i |= 7;		/* a byte of no bits */
			continue;
		}
		if (!(a->sack[i / 8] & (1u << (i % 8))))
			continue;
		if (braid_seq_lt(psn, f->snd_una) || braid_seq_ge(psn, conn->snd_nxt))
			continue;
		p = tx_slot(rd, f, psn);
		if (p->state != RD_PKT_FREE && p->psn == psn) {
			pkt_acked(rd, f, p, now);
			n++;
		}
	}
	return n;
}

/*
 * A zero window (§4.2 rule 6): the echoed packet was refused for want of
 * buffer, not lost. It waits in the retransmit queue, with no congestion or
 * path penalty, until the receiver's window update (or the probe an RTO
 * later, should the update be lost). The receiver refuses in arrival order:
 * what we sent up to the refused packet and is still unacknowledged met a
 * full receiver too.
 */
static void ack_zero_window(struct braid_rd *rd, struct rd_flow *f, const struct rd_conn *conn,
			    uint32_t echo_psn, uint64_t now)
{
	if (braid_seq_ge(echo_psn, f->snd_una) && braid_seq_lt(echo_psn, conn->snd_nxt)) {
		struct rd_txpkt *p = tx_slot(rd, f, echo_psn);

		if (p->state == RD_PKT_INFLIGHT && p->psn == echo_psn) {
			uint32_t last = p->tx_seq;

			while (!braid_dlist_empty(&f->txorder)) {
				struct rd_txpkt *q = braid_container_of(f->txorder.next,
									struct rd_txpkt, link);

				if (braid_seq_gt(q->tx_seq, last))
					break;
				pkt_requeue(rd, f, q, RD_LOSS_REFUSED);
			}
		}
	}
	f->zwp_at = now + flow_rto(rd, f);
	f->zwp_due = false;
}

/*
 * Eifel (RFC 3522): the first ACK of new data after an RTO that echoes a
 * packet sent before it shows the packets were late, not lost (a host that
 * was not scheduled, a stalled queue): the RTO's window cut is undone.
 */
static void ack_rto_verdict(struct braid_rd *rd, struct rd_flow *f, uint32_t echo_time)
{
	bool spurious = (int32_t)(echo_time - rd_usec(f->rto_at)) < 0;

	rd->cfg.cc->rto_verdict(&f->cc, spurious);
	if (spurious) {
		RD_COUNT(rd, f, rto_spurious, 1);
		f->rto_backoff = 0;
	}
	f->rto_at = 0;
}

void rd_out_ack_input(struct braid_rd *rd, struct rd_conn *conn, const struct braid_rd_ack_view *a,
		      uint64_t now)
{
	struct rd_flow *f = conn->flow;
	bool ecn = a->flags & BRAID_RD_ACK_F_ECN_CE;
	struct rd_probed probed;
	uint64_t rtt, base;
	uint32_t n;

	if (ecn)
		RD_COUNT(rd, f, ecn_echoes, 1);
	/* the receiver's window, its grant included (§4.10; no more than ours) */
	f->peer_rwnd = a->rwnd < rd->cfg.window ? a->rwnd : rd->cfg.window;
	f->granted = true;
	f->unsched_held = false;
	ack_reorder(rd, f, a->dups, now);
	rtt = ack_rtt_sample(rd, f, conn, a, ecn, now, &base, &probed);
	if (rtt)
		flow_rtt(f, rtt);
	n = ack_cum(rd, f, a->cum_psn, now);
	n += ack_sack(rd, f, conn, a, now);
	if (n) {
		uint32_t nb = n < 4000 ? n * 16 : 64000;

		f->ack_batch = (uint16_t)((f->ack_batch * 7 + nb) / 8);
	}
	advance_una(rd, f);
	if (probed.path != RD_NO_PATH)
		probe_answered(rd, f, &probed, now);
	if (!a->rwnd)
		ack_zero_window(rd, f, conn, a->echo_psn, now);
	/* any ACK shows the peer alive, even one that refuses data for lack of
	 * buffer (rwnd 0): the peer timeout measures silence, not slowness */
	f->last_progress = now;
	if (f->rto_at && n)
		ack_rto_verdict(rd, f, a->echo_time);
	if (n) {
		f->last_ack = now;
		f->rto_backoff = 0;
		f->tlp_out = false;
	}
	rd->cfg.cc->on_ack(&f->cc, n, rtt, sample_away(rd, a, rtt, now), base ? base : f->min_rtt,
			   ecn, now);
	detect_loss(rd, f, now);
	if (n || !braid_dlist_empty(&f->retxq) || !braid_dlist_empty(&conn->sendq))
		rd_flow_ready(rd, f);
}

/* ---- packet building ---- */

/* A header-only packet of @hdr_len bytes (written in out->hdr) to @ip:@port, back by @route. */
void rd_out_header_only(struct braid_rd_out *out, size_t hdr_len, uint32_t ip, uint16_t port,
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

/*
 * A header-only packet to the flow's peer (ACK, CTS, probe): back by @route
 * when it answers a packet whose route is known, else on a path of the flow's
 * own choosing.
 */
void rd_out_control(struct braid_rd *rd, struct rd_flow *f, struct braid_rd_out *out,
		    size_t hdr_len, int32_t route)
{
	rd_out_header_only(out, hdr_len, f->conn->ip, f->conn->port, route);
	if (route >= 0)
		return;
	out->path = (uint16_t)braid_pathset_pick(&f->paths, rd->cfg.path_health, -1);
	out->entropy = f->paths.p[out->path].entropy;
}

/* A ring's bytes [off, off + len): one piece, or two where the ring wraps. */
static int gather_ring(const struct rd_send *op, uint64_t off, size_t len, struct iovec *iov)
{
	uint64_t at = off % op->ring, first = op->ring - at < len ? op->ring - at : len;

	iov[0].iov_base = (uint8_t *)op->iov[0].iov_base + at;
	iov[0].iov_len = first;
	if (first == len)
		return 1;
	iov[1].iov_base = op->iov[0].iov_base;
	iov[1].iov_len = len - first;
	return 2;
}

/* Gather [off, off + len) of the op's buffers into @out's payload iovs. */
static RD_HOT_INLINE void gather(const struct rd_send *op, uint64_t off, size_t len,
				 struct braid_rd_out *out)
{
	out->payload_len = len;
	out->payload_iovcnt = __builtin_expect(op->ring != 0, 0) ?
				      gather_ring(op, off, len, out->payload) :
				      braid_iov_slice(op->iov, op->iov_count, off, len, out->payload,
						      BRAID_RD_IOV_MAX);
}

/*
 * The RD_DATA (RD_RMA) header of @op's packet @psn at @off, written into
 * @buf field by field from the op, its conn and @now (no view in between:
 * each value goes to its place as it is read). @flags: besides ACK and the
 * op's own (CQ_DATA, TAGGED, DC; RDV on a rendezvous send's first packet).
 * Return: its length.
 */
static RD_HOT_INLINE size_t data_hdr_write(const struct braid_rd *rd, const struct rd_flow *f,
					   const struct rd_send *op, uint32_t psn, uint32_t off,
					   uint64_t now, uint8_t flags, void *buf)
{
	const struct rd_conn *conn = f->conn;
	struct braid_rd_rma_hdr *r = buf;
	struct braid_rd_data_hdr *h = &r->d;
	size_t len = op->rma.op ? sizeof(*r) : sizeof(*h);

	flags |= BRAID_RD_F_ACK | ((op->flags & BRAID_RD_CQ_DATA) ? BRAID_RD_F_CQ_DATA : 0) |
		 ((op->flags & BRAID_RD_TAGGED) ? BRAID_RD_F_TAGGED : 0) |
		 ((op->flags & BRAID_RD_DELIVERY) ? BRAID_RD_F_DC : 0) |
		 (op->rdv && off == 0 ? BRAID_RD_F_RDV : 0) |
		 (__builtin_expect(op->bad, 0) && !op->rma.op ? BRAID_RD_F_BAD : 0);
	braid_base_hdr_write(&h->base, op->rma.op ? BRAID_PKT_RD_RMA : BRAID_PKT_RD_DATA, flags,
			     rd->cfg.local_port, (uint16_t)len);
	h->src_epoch = htobe32(conn->my_epoch);
	h->dst_epoch = htobe32(conn->epoch);
	h->psn = htobe32(psn);
	h->ack_psn = htobe32(conn->rcv_nxt);
	h->msg_id = htobe32(op->msg_id);
	h->offset = htobe32(off);
	h->msg_len = htobe32((uint32_t)op->len);
	h->tx_time = htobe32(rd_usec(now));
	h->tag = htobe64(op->tag);
	h->cq_data = htobe64((op->flags & BRAID_RD_CQ_DATA) ? op->data : 0);
	if (op->rma.op)
		braid_rd_rma_fields_write(r, &op->rma);
	return len;
}

/* A resend of @p went (@n 1) or was taken back unsent (@n -1): by its path, and by why it was lost. */
static void count_retx(struct braid_rd *rd, struct rd_flow *f, const struct rd_txpkt *p, int n)
{
	RD_COUNT_PATH(rd, f, p->path, retx_pkts, (uint64_t)(int64_t)n);
	RD_COUNT_PATH(rd, f, p->path, retx_bytes, (uint64_t)((int64_t)n * p->len));
	switch (p->why) {
	case RD_LOSS_RACK: RD_COUNT(rd, f, retx_rack, (uint64_t)(int64_t)n); break;
	case RD_LOSS_TLP: RD_COUNT(rd, f, retx_tlp, (uint64_t)(int64_t)n); break;
	case RD_LOSS_RTO: RD_COUNT(rd, f, retx_rto, (uint64_t)(int64_t)n); break;
	case RD_LOSS_DEAD: RD_COUNT(rd, f, retx_dead, (uint64_t)(int64_t)n); break;
	default: RD_COUNT(rd, f, retx_refused, (uint64_t)(int64_t)n); break;
	}
}

static RD_HOT_INLINE void emit(struct braid_rd *rd, struct rd_flow *f, struct rd_txpkt *p,
			       uint64_t now, struct braid_rd_out *out)
{
	struct rd_send *op = p->op;

	/*
	 * §4.2 "Lent payloads": the first transmission of the application's data
	 * (a send's or a write's, not an inject's copy, a read's answer or an
	 * atomic's operands) to a peer heard acknowledging within the wait bound:
	 * an operation fails no sooner than a peer timeout after its last
	 * acknowledgement, so whatever was lent is then older than the bound
	 */
	out->lend = rd->cfg.lend_min && !p->retx && p->len >= rd->cfg.lend_min &&
		    !(op->flags & (BRAID_RD_INTERNAL | BRAID_RD_INJECT)) &&
		    (!op->rma.op || op->rma.op == BRAID_RMA_WRITE) &&
		    f->last_ack && now >= f->last_ack && now - f->last_ack <= BRAID_RD_LENT_WAIT_NS;
	out->frame_len = 0;
	out->gso_cont = false;
	out->hdr_len = (uint16_t)data_hdr_write(rd, f, op, p->psn, p->off, now,
						(p->retx ? BRAID_RD_F_RETX : 0) |
						(out->lend ? BRAID_RD_F_LENT : 0), out->hdr);
	gather(op, p->off, p->len, out);
	out->dst_ip = f->conn->ip;
	out->dst_port = f->conn->port;
	out->path = p->path;
	out->entropy = f->paths.p[p->path].entropy;
	out->reply_route = BRAID_RD_ROUTE_NONE;
	f->paths.p[p->path].sent++;
	p->tx_time = now;
	p->tx_seq = ++f->tx_counter;
	f->last_tx = now;
	RD_COUNT_PATH(rd, f, p->path, tx_data, 1);
	RD_COUNT_PATH(rd, f, p->path, tx_bytes, p->len);
}

/*
 * The rendezvous keepalive (§4.6): the header of the oldest waiting send's
 * first packet again, with no payload. The receiver has it (it was
 * acknowledged), so it drops it as a duplicate and acknowledges at once: an
 * ACK that proves the peer alive. A restarted peer answers with its new
 * epoch instead (§4.2 rule 3).
 */
static void probe_write(struct braid_rd *rd, struct rd_flow *f, uint64_t now,
			struct braid_rd_out *out)
{
	const struct rd_send *op = braid_dlist_empty(&f->conn->paused) ? rma_waiting(f->conn) :
		braid_container_of(f->conn->paused.next, struct rd_send, node);
	size_t len = data_hdr_write(rd, f, op, op->first_psn, 0, now,
				    BRAID_RD_F_RETX | BRAID_RD_F_RDV, out->hdr);

	rd_out_control(rd, f, out, len, BRAID_RD_ROUTE_NONE);
	RD_COUNT(rd, f, rdv_probes, 1);
}

static uint32_t send_allowance(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	uint32_t cwnd = rd->cfg.cc->cwnd(&f->cc);
	uint32_t rwnd = f->peer_rwnd;

	/* zero window: one probe at a time, an RTO after the last refusal (the
	 * receiver's window update normally comes first) */
	if (!rwnd)
		return !f->inflight && f->zwp_due ? 1 : 0;
	if (cwnd > rwnd)
		cwnd = rwnd;
	/* §4.10: before the receiver's first word, the unscheduled window only */
	if (!f->granted && rd->cfg.unsched_pkts && cwnd > rd->cfg.unsched_pkts)
		cwnd = rd->cfg.unsched_pkts;
	return f->inflight < cwnd ? cwnd - f->inflight : 0;
}

/* The datagram rd_out_flow is filling (§4.8). */
struct rd_bundle {
	/** @first: out index of its first packet; -1: none open. */
	int first;
	int count;
	/** @bytes: its length as a bundle (header, each record's length field and bytes). */
	size_t bytes;
	/** @path: the path it goes by; -1: not chosen yet (an ACK alone so far). */
	int path;
};

/* Frame the open bundle's packets as one datagram, if it has several. */
static void bundle_close(struct braid_rd *rd, struct rd_flow *f, struct braid_rd_out *out,
			 struct rd_bundle *b)
{
	int i;

	if (b->first >= 0 && b->count >= 2) {
		for (i = b->first; i < b->first + b->count; i++) {
			struct braid_rd_out *o = &out[i];
			size_t rec = o->hdr_len + o->payload_len;
			uint8_t *fr = o->frame;

			if (i == b->first) {
				braid_rd_bundle_hdr_write(fr, rd->cfg.local_port);
				fr += BRAID_RD_BUNDLE_HDR;
			}
			fr[0] = (uint8_t)(rec >> 8);
			fr[1] = (uint8_t)rec;
			o->frame_len = (uint8_t)(fr + BRAID_RD_BUNDLE_REC - o->frame);
			if (o->reply_route >= 0) {
				/* a held-back ACK rides with the data: by the data's path */
				o->reply_route = BRAID_RD_ROUTE_NONE;
				o->path = (uint16_t)b->path;
				o->entropy = f->paths.p[b->path].entropy;
			}
		}
		rd->stats.tx_bundles++;
	}
	b->first = -1;
}

/*
 * The path of the next data packet, @rec bytes at out[@n] (§4.8): the open
 * bundle's, when the packet fits in it and may go by its path; else it
 * opens a bundle of its own. @want: the path it must take (-1: any);
 * @avoid: one it should not (-1: none).
 */
static inline uint16_t bundle_place(struct braid_rd *rd, struct rd_flow *f, struct rd_bundle *b,
			     struct braid_rd_out *out, int n, size_t rec, int want, int avoid)
{
	bool join = rd->cfg.bundle && b->first >= 0 && b->count < BRAID_RD_BUNDLE_MAX &&
		    b->bytes + BRAID_RD_BUNDLE_REC + rec <= rd->cfg.mtu &&
		    (b->path < 0 || ((want < 0 || want == b->path) && b->path != avoid));

	if (!join) {
		bundle_close(rd, f, out, b);
		*b = (struct rd_bundle){ .first = n, .bytes = BRAID_RD_BUNDLE_HDR, .path = -1 };
	}
	if (b->path < 0)
		b->path = want >= 0 ? want :
			  (int)braid_pathset_pick(&f->paths, rd->cfg.path_health, avoid);
	b->count++;
	b->bytes += BRAID_RD_BUNDLE_REC + rec;
	return (uint16_t)b->path;
}

/* the run of full-size packets being filled for one GSO write, @cap long at most */
struct gso_run {
	int first, count, path, cap;
};

/* a GSO run carries at most this share of the congestion window (1/2) */
#define RD_GSO_CWND_SHARE	2

/*
 * How long a GSO run of flow @f may be: the wire's limit, and at most half
 * the congestion window (at least one packet), so that a window is still
 * sprayed over two paths or more, and a window of three packets or fewer
 * packet by packet: a run is one route, and where flows share a fabric's
 * links at windows of a few packets, a window sent down one route at a time
 * queues on one link while others idle (protocol.md §4.8, runs).
 */
static inline int gso_cap(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint32_t c = rd->cfg.cc->cwnd(&f->cc) / RD_GSO_CWND_SHARE;

	if (c < 1)
		c = 1;
	return c < rd->cfg.gso_segs ? (int)c : (int)rd->cfg.gso_segs;
}

/*
 * How many data packets may go now (send_allowance()), counting a
 * flow-control stall when data waits for the receiver's window. A lost
 * packet never waits for cwnd room held by packets that may be lost too:
 * one retransmission goes out per ACK or timer event regardless (not into a
 * zero window: refused packets wait for it to open).
 */
static uint32_t flow_allowance(struct braid_rd *rd, struct rd_flow *f, uint64_t now)
{
	const struct rd_conn *conn = f->conn;
	uint32_t allow = send_allowance(rd, f, now);
	bool fc = (!braid_dlist_empty(&conn->sendq) || !braid_dlist_empty(&f->retxq)) &&
		  f->inflight >= f->peer_rwnd;

	if (fc && !f->fc_stalled)
		RD_COUNT(rd, f, fc_stalls, 1);
	f->fc_stalled = fc;
	if (!allow && !braid_dlist_empty(&f->retxq) && f->peer_rwnd)
		allow = 1;
	return allow;
}

/*
 * The ACK's place, out[@n]: addressed (back by the route of the packet it
 * echoes, else on a path of the flow's), opening the bundle @b that data
 * may join (§4.8). The receiving side writes it (rd_in_write_ack).
 */
static void out_ack(struct braid_rd *rd, struct rd_flow *f, struct rd_bundle *b,
		    struct braid_rd_out *out, int n)
{
	*b = (struct rd_bundle){ .first = n, .count = 1, .path = -1,
				 .bytes = BRAID_RD_BUNDLE_HDR + BRAID_RD_BUNDLE_REC +
					  sizeof(struct braid_rd_ack_hdr) };
	rd_out_control(rd, f, &out[n], sizeof(struct braid_rd_ack_hdr), f->echo_route);
}

/*
 * The path a resend must take: a probe (a tail loss probe, or a resend after
 * a timeout) goes by the route last heard from both ways (rd_flow
 * @heard_path) while its slot still holds that route; -1: any.
 */
static inline int probe_path(const struct rd_flow *f, const struct rd_txpkt *p)
{
	if ((p->why != RD_LOSS_TLP && p->why != RD_LOSS_RTO) || f->heard_path < 0 ||
	    f->paths.p[f->heard_path].entropy != f->heard_entropy)
		return -1;
	return f->heard_path;
}

/* Retransmissions into out[@n..@max), each on another path than it was lost on
 * (a probe on the path last heard from). */
static int out_retransmits(struct braid_rd *rd, struct rd_flow *f, struct rd_bundle *b,
			   struct braid_rd_out *out, int n, int max, uint32_t *allow, uint64_t now)
{
	while (n < max && *allow && !braid_dlist_empty(&f->retxq)) {
		struct rd_txpkt *p = braid_container_of(f->retxq.next, struct rd_txpkt, link);
		size_t rec = RD_HDR_LEN(p->op) + p->len;

		braid_dlist_remove(&p->link);
		if (p->unsent) {
			/* the wire was full last time: same packet, same path */
			p->unsent = false;
			p->path = bundle_place(rd, f, b, out, n, rec, p->path, -1);
		} else {
			int want = probe_path(f, p);

			p->path = bundle_place(rd, f, b, out, n, rec, want, want < 0 ? p->path : -1);
			p->retx++;
			if (p->path == p->probed_path)
				p->probed_path = RD_NO_PATH;	/* (the same path: it tells nothing) */
		}
		p->state = RD_PKT_INFLIGHT;
		braid_dlist_insert_tail(&p->link, &f->txorder);
		braid_dlist_insert_tail(&p->plink, &f->prack[p->path].inflight);
		f->inflight++;
		(*allow)--;
		emit(rd, f, p, now, &out[n++]);
		if (p->retx)
			count_retx(rd, f, p, 1);
	}
	return n;
}

/*
 * The path of new packet @p, @seg payload bytes, at out[@n]: a full packet
 * goes by the path of the GSO run before it, if it continues one, so the
 * wire writes the run at once; another joins or opens a bundle.
 */
static inline uint16_t new_packet_path(struct braid_rd *rd, struct rd_flow *f, struct rd_bundle *b,
				struct gso_run *g, struct braid_rd_out *out, int n,
				const struct rd_send *op, uint32_t seg)
{
	if (rd->cfg.gso_segs > 1 && RD_HDR_LEN(op) + seg == rd->cfg.mtu) {
		bundle_close(rd, f, out, b);
		if (g->first >= 0 && g->first + g->count == n && g->count < g->cap) {
			g->count++;
		} else {
			g->first = n;
			g->count = 1;
			g->path = (int)braid_pathset_pick(&f->paths, rd->cfg.path_health, -1);
		}
		return (uint16_t)g->path;
	}
	return bundle_place(rd, f, b, out, n, RD_HDR_LEN(op) + seg, -1, -1);
}

/* New data into out[@n..@max), within the window, cwnd and the receiver's window. */
static int out_new_data(struct braid_rd *rd, struct rd_flow *f, struct rd_bundle *b,
			struct braid_rd_out *out, int n, int max, uint32_t allow, uint64_t now)
{
	struct rd_conn *conn = f->conn;
	struct gso_run g = { -1, 0, -1, gso_cap(rd, f) };

	while (n < max && allow && !braid_dlist_empty(&conn->sendq) &&
	       conn->snd_nxt - f->snd_una < rd->cfg.window) {
		struct rd_send *op = braid_container_of(conn->sendq.next, struct rd_send, node);
		struct rd_txpkt *p = tx_slot(rd, f, conn->snd_nxt);
		uint64_t left = op->len - op->next_off, max = op->rma.op ? RD_RMA_SEG(rd) : RD_SEG(rd);
		uint32_t seg = (uint32_t)(left < max ? left : max);

		if (!op->next_off && op->msg_id - f->msg_una >= rd->cfg.window && !op->pkts_out &&
		    !op->cut_done)
			break;	/* held by the message window (sendq_held()) */
		if (!op->next_off)
			op->first_psn = conn->snd_nxt;
		if (__builtin_expect(op->next_off + seg > op->staged, 0))
		{
			op->staged = rd->cfg.stage(rd->cfg.stage_ctx, op->context, op->next_off, seg);
			op->bad |= op->staged == BRAID_RD_STAGE_FAILED;
		}
		p->op = op;
		p->psn = conn->snd_nxt++;
		p->off = (uint32_t)op->next_off;
		p->len = seg;
		p->retx = 0;
		p->probed_path = RD_NO_PATH;
		p->state = RD_PKT_INFLIGHT;
		p->path = new_packet_path(rd, f, b, &g, out, n, op, seg);
		braid_dlist_insert_tail(&p->link, &f->txorder);
		braid_dlist_insert_tail(&p->plink, &f->prack[p->path].inflight);
		f->inflight++;
		allow--;
		op->next_off += seg;
		op->pkts_out++;
		if (op->next_off == op->len) {
			op->cut_done = true;
			braid_dlist_remove(&op->node);
		} else if (op->rdv && !op->cts) {
			/* §4.6: the first packet goes; the rest waits for the receiver's CTS,
			 * and the messages behind it go on meanwhile */
			braid_dlist_remove(&op->node);
			braid_dlist_insert_tail(&op->node, &conn->paused);
		}
		emit(rd, f, p, now, &out[n]);	/* (gso_cont false) */
		if (g.first >= 0)
			out[n].gso_cont = g.first < n && g.first + g.count == n + 1;
		n++;
	}
	return n;
}

/*
 * The flow's packets into out[@n..@max) (§4.8): a rendezvous probe, the ACK's
 * place (*@ack: its index, -1: none), retransmissions, new data. Return:
 * the index after the last.
 */
int rd_out_flow(struct braid_rd *rd, struct rd_flow *f, uint64_t now, struct braid_rd_out *out,
		int n, int max, int *ack)
{
	struct rd_conn *conn = f->conn;
	struct rd_bundle b = { .first = -1, .path = -1 };
	uint32_t allow;
	bool data_next;

	*ack = -1;
	if (f->probe_due && n < max) {
		/* the wait may have ended since the timer asked (a CTS came) */
		if (!out_busy(rd, f, conn) && rd_out_waiting(conn)) {
			probe_write(rd, f, now, &out[n++]);
			f->probe_at = now;
		}
		f->probe_due = false;
	}
	allow = flow_allowance(rd, f, now);
	data_next = allow && (!braid_dlist_empty(&f->retxq) ||
			      (!braid_dlist_empty(&conn->sendq) &&
			       conn->snd_nxt - f->snd_una < rd->cfg.window));
	/* the ACK when due, or earlier when data goes back now: it rides with it (§4.8) */
	if (f->need_ack && (f->ack_now || (rd->cfg.bundle && data_next)) && n < max) {
		*ack = n;
		out_ack(rd, f, &b, out, n++);
	}
	n = out_retransmits(rd, f, &b, out, n, max, &allow, now);
	n = out_new_data(rd, f, &b, out, n, max, allow, now);
	bundle_close(rd, f, out, &b);
	/* §4.10: data left waiting for the receiver's first ACK (counted once a wait) */
	if (!f->granted && !f->unsched_held && rd->cfg.unsched_pkts &&
	    f->inflight >= rd->cfg.unsched_pkts && !braid_dlist_empty(&conn->sendq)) {
		f->unsched_held = true;
		RD_COUNT(rd, f, unsched_waits, 1);
	}
	return n;
}

/*
 * The peer failed: every send to it leaves the wire and is handed back, in
 * the order they finish, for the caller to complete with the failure
 * (rd_sends_finish).
 */
void rd_out_fail_sends(struct braid_rd *rd, struct rd_conn *conn)
{
	struct rd_flow *f = conn->flow;
	struct braid_dlist *it;
	uint32_t i;

	if (f) {
		for (i = 0; i <= rd->slot_mask; i++) {
			struct rd_txpkt *p = &f->tx[i];
			struct rd_send *op = p->op;

			if (p->state == RD_PKT_FREE)
				continue;
			braid_dlist_remove(&p->link);
			braid_dlist_remove(&p->plink);
			p->state = RD_PKT_FREE;
			p->op = NULL;
			if (--op->pkts_out == 0 && !op_in_sendq(op))
				send_hand_back(rd, op);
		}
		f->inflight = 0;
		f->snd_una = conn->snd_nxt;
	}
	while ((it = braid_dlist_pop_head(&conn->sendq)) || (it = braid_dlist_pop_head(&conn->paused))) {
		struct rd_send *op = braid_container_of(it, struct rd_send, node);

		if (op->pkts_out)
			continue;	/* its packets' slots finish it: already failed above */
		send_hand_back(rd, op);
	}
	/* RMA requests delivered but not answered */
	while ((it = braid_dlist_pop_head(&conn->rma_ops)))
		send_hand_back(rd, braid_container_of(it, struct rd_send, rlink));
}

void braid_rd_unsent(struct braid_rd *rd, const struct braid_rd_out *out, int n)
{
	int i;

	/* walk backwards so the packets keep their order at the head of the queue */
	for (i = n - 1; i >= 0; i--) {
		struct braid_rd_data_view v;
		struct rd_conn *conn = rd_conn_get(rd, braid_peer_key(out[i].dst_ip,
								       out[i].dst_port), false, 0);
		struct rd_flow *f = conn ? conn->flow : NULL;
		struct rd_txpkt *p;

		if (!f)
			continue;
		if (((const struct braid_base_hdr *)out[i].hdr)->type == BRAID_PKT_RD_ACK) {
			f->need_ack = true;
			f->ack_now = true;
			RD_COUNT(rd, f, tx_acks, -1);
			rd_flow_ready(rd, f);
			continue;
		}
		if (braid_rd_data_decode(out[i].hdr, out[i].hdr_len, &v))
			continue;
		p = tx_slot(rd, f, v.psn);
		if (p->state != RD_PKT_INFLIGHT || p->psn != v.psn)
			continue;
		braid_dlist_remove(&p->link);
		braid_dlist_remove(&p->plink);
		braid_dlist_insert_head(&p->link, &f->retxq);
		p->state = RD_PKT_LOST;
		f->inflight--;
		RD_COUNT_PATH(rd, f, p->path, tx_data, -1);
		RD_COUNT_PATH(rd, f, p->path, tx_bytes, -(uint64_t)p->len);
		if (p->retx)	/* a retransmission that never left: counted when it does */
			count_retx(rd, f, p, -1);
		p->unsent = true;
		rd_flow_ready(rd, f);
	}
}
