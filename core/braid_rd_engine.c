/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_engine.c: the RD engine's frame: configuration, open/close, packet input dispatch, output scheduling (each side's packets of a flow), and the base its other files share: the ready list, completions, staging given back, drop counts. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_rd_int.h"
#include "braid/braid_errno.h"
#include "braid/braid_hash.h"

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
	cfg->unsched_pkts = 1;
	cfg->grant_bytes = 256 << 10;
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

/*
 * Complete the sends the outgoing side handed back (rd->sends_done), in
 * order, with @err (0: as answered, or as acknowledged): an RMA request
 * through the RMA side, any other send through the outgoing side.
 */
void rd_sends_finish(struct braid_rd *rd, int err, int prov_errno)
{
	struct braid_dlist *it;

	while ((it = braid_dlist_pop_head(&rd->sends_done))) {
		struct rd_send *op = braid_container_of(it, struct rd_send, rlink);

		if (op->rma.op && op->rma.op != BRAID_RMA_RESP)
			rd_rma_finish(rd, op, err, prov_errno);
		else
			rd_out_finish(rd, op, err, prov_errno);
	}
}

int braid_rd_poll(struct braid_rd *rd, struct braid_rd_comp *comps, int max)
{
	uint32_t head = rd->comp_head, count = rd->comp_count;
	int n = 0;

	/* (the ring's place in locals: @comps, the caller's, might be anywhere) */
	while (n < max && count) {
		comps[n++] = rd->comps[head];
		if (++head == rd->comp_cap)
			head = 0;
		count--;
	}
	/* emptied: start again at the front, so that a ring read as fast as it fills
	 * keeps touching its first pages only (not all of it, a page at a time) */
	rd->comp_head = count ? head : 0;
	rd->comp_count = count;
	return n;
}

bool braid_rd_comps_waiting(const struct braid_rd *rd)
{
	return rd->comp_count != 0;
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
	size_t ring = rd_comp_room(rd);

	*sends = rd->sends.count - rd->sends.in_use;
	*recvs = braid_rd_rxq_room(rd->rxq);
	if (*sends > ring)
		*sends = ring;
	if (rd->rxq == &rd->own_rxq && *recvs > ring)
		*recvs = ring;	/* a shared queue's receives complete where their message lands */
}

/*
 * A staging buffer (a payload staged for its message, an atomic's fetched
 * values) goes back to its pool; the receiving side hears of the room
 * (rd_in_room: the flows it refused may get their window update).
 */
void rd_stage_put(struct braid_rd *rd, struct rd_stage *s)
{
	if (s->heap) {
		/* a message handed whole, kept beyond the pools (protocol.md §7.4) */
		rd->local_heap--;
		free(s);
		return;
	}
	braid_pool_release(s->small ? &rd->stages_small : &rd->stages, s);
	rd_in_room(rd);
}

bool braid_rd_local_over(const struct braid_rd *rd)
{
	return rd->local_heap != 0;
}

/* A 32-bit random number (cfg.random, or splitmix64 for tests). */
uint32_t rd_random(struct braid_rd *rd)
{
	if (rd->cfg.random)
		return rd->cfg.random();
	return (uint32_t)braid_splitmix64(&rd->chal_rng);	/* tests only (cfg.random) */
}

/* ---- open / close ---- */

/* Small staging buffers: 16 per packet buffer, 256 to 8192 of them (at most 2 MiB). */
static uint32_t rd_small_stages(const struct braid_rd_config *cfg)
{
	uint64_t n = (uint64_t)cfg->stage_pkts * 16;

	return n < 256 ? 256 : n > 8192 ? 8192 : (uint32_t)n;
}

/* The configuration's limits (braid_rd.h): each count at least one, each size in range. */
static bool config_valid(const struct braid_rd_config *cfg)
{
	return cfg->epoch && cfg->mtu >= 128 && cfg->mtu <= 65535 && cfg->paths &&
	       cfg->paths <= BRAID_RD_MAX_PATHS && cfg->window &&
	       cfg->window <= BRAID_RD_MAX_WINDOW && cfg->init_cwnd &&
	       cfg->init_cwnd <= cfg->window && cfg->unsched_pkts <= cfg->window &&
	       cfg->max_flows && cfg->max_sends &&
	       cfg->max_recvs && cfg->max_msgs && cfg->stage_pkts &&
	       cfg->max_msg_size <= 0xffffffffULL && cfg->inject_size <= cfg->max_msg_size &&
	       cfg->rto_min_ns && cfg->rto_min_ns <= cfg->rto_max_ns;
}

/* The engine's settings, lists and sizes, from @cfg (nothing allocated). */
static void rd_construct(struct braid_rd *rd, const struct braid_rd_config *cfg,
			 struct braid_peer_table *peers)
{
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
	braid_dlist_init(&rd->sends_done);
	braid_dlist_init(&rd->active);
	braid_dlist_init(&rd->ready);
	braid_dlist_init(&rd->unproven);
	braid_dlist_init(&rd->resting);
	braid_dlist_init(&rd->strangers);
	braid_dlist_init(&rd->granted);
	if (cfg->grant_bytes) {
		uint64_t g = cfg->grant_bytes / (cfg->mtu - sizeof(struct braid_rd_data_hdr));

		rd->grant_pkts = g < 1 ? 1 : g > UINT32_MAX ? UINT32_MAX : (uint32_t)g;
	}
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
}

/* The completion ring, the receive queue and the pools, sized at open. Return: 0, -FI_ENOMEM. */
static int rd_pools_construct(struct braid_rd *rd, const struct braid_rd_config *cfg)
{
	size_t stage_size = sizeof(struct rd_stage) + RD_SEG(rd);
	int ret;

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
	return ret;
}

int braid_rd_open(const struct braid_rd_config *cfg, struct braid_peer_table *peers,
		  struct braid_rd **out)
{
	struct braid_rd *rd;
	int ret;

	if (!cfg || !peers || !out || !config_valid(cfg))
		return -FI_EINVAL;
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -FI_ENOMEM;
	rd_construct(rd, cfg, peers);
	ret = rd_pools_construct(rd, cfg);
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

		if (!c || !braid_map_get(&rd->conns, rd->conns.keys[i]) || rd_idle_of(c))
			continue;	/* an idle peer's record goes with its pool */
		braid_peer_put_evict(c->peer);
	}
	if (rd->rxq)
		braid_rd_rxq_leave(rd);	/* its messages leave a shared queue, which stays */
	rd_in_close(rd);
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

int braid_rd_input(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		   bool ecn_ce, uint64_t now)
{
	return braid_rd_input_from(rd, pkt, len, src_ip, BRAID_RD_ROUTE_NONE, ecn_ce, now);
}

/* An RD_DATA or RD_RMA packet: from a peer of ours, to this incarnation (§4.2 rule 3). */
static int input_data(struct braid_rd *rd, const void *pkt, size_t len, int type, uint32_t src_ip,
		      bool ecn_ce, uint64_t now)
{
	struct braid_rd_data_view dv;
	struct rd_conn *conn;
	int ret;

	ret = braid_rd_data_decode_typed(pkt, len, type, &dv);
	if (ret)
		return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
	/* nor more payload than a packet of our MTU carries (a staging buffer's size) */
	if (dv.msg_len > rd->cfg.max_msg_size || dv.payload_len > RD_SEG(rd))
		return rd_drop(rd, BRAID_DROP_BAD_LEN);
	conn = rd_conn_get(rd, braid_peer_key(src_ip, dv.src_port), true, now);
	if (!conn)
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	rd_conn_touch(rd, conn, now);
	ret = rd_conn_epoch_check(rd, conn, dv.src_epoch, now);
	if (ret)
		return ret;
	if (dv.dst_epoch && dv.dst_epoch != conn->my_epoch) {
		/* §4.2 rule 3: meant for our previous incarnation */
		if (braid_seq_lt(dv.dst_epoch, conn->my_epoch))
			rd_conn_send_reset(rd, conn, now);
		return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
	}
	return rd_in_data(rd, conn, &dv, ecn_ce, now);
}

/* An RD_ACK: the outgoing side takes it, then the flow's deadline moves. */
static int input_ack(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		     uint64_t now)
{
	struct braid_rd_ack_view av;
	struct rd_conn *conn;
	int ret;

	ret = braid_rd_ack_decode(pkt, len, &av);
	if (ret)
		return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
	conn = rd_conn_get(rd, braid_peer_key(src_ip, av.src_port), false, now);
	if (!conn)
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	if (av.dst_epoch != conn->my_epoch)
		return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
	rd_conn_touch(rd, conn, now);
	ret = rd_conn_epoch_check(rd, conn, av.src_epoch, now);
	if (ret)
		return ret;
	RD_COUNT(rd, conn->flow, rx_acks, 1);
	if (!conn->flow)
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	conn->flow->last_rx = now;
	rd_out_ack_input(rd, conn, &av, now);
	if (!braid_dlist_empty(&rd->sends_done))
		rd_sends_finish(rd, 0, 0);	/* answered RMA requests it acknowledged */
	rd_flow_schedule(rd, conn->flow);
	return 0;
}

/* An RD_CTS (§4.6): a rendezvous send may go on. */
static int input_cts(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
		     uint64_t now)
{
	uint32_t src_epoch, dst_epoch, msg_id;
	struct rd_conn *conn;
	uint16_t port;
	int ret;

	ret = braid_rd_cts_decode(pkt, len, &port, &src_epoch, &dst_epoch, &msg_id);
	if (ret)
		return rd_drop(rd, (enum braid_drop_reason)(-ret - 1));
	conn = rd_conn_get(rd, braid_peer_key(src_ip, port), false, now);
	if (!conn || !conn->flow)
		return rd_drop(rd, BRAID_DROP_NO_STATE);
	if (dst_epoch != conn->my_epoch)
		return rd_drop_at(rd, conn->flow, BRAID_DROP_STALE_EPOCH);
	rd_conn_touch(rd, conn, now);
	/* a CTS may overtake the first ACK: it may teach us the epoch */
	ret = rd_conn_epoch_check(rd, conn, src_epoch, now);
	if (ret)
		return ret;
	conn->flow->last_rx = now;
	RD_COUNT(rd, conn->flow, cts_rx, 1);
	rd_out_cts_input(rd, conn, msg_id);
	rd_flow_schedule(rd, conn->flow);
	return 0;
}

/* One RD packet, alone in its datagram or a record of a bundle (§4.8). */
static int rd_input_one(struct braid_rd *rd, const void *pkt, size_t len, uint32_t src_ip,
			bool ecn_ce, uint64_t now)
{
	int type = braid_base_hdr_check(pkt, len);

	if (type < 0)
		return rd_drop(rd, (enum braid_drop_reason)(-type - 1));
	if (type == BRAID_PKT_RD_DATA || type == BRAID_PKT_RD_RMA)
		return input_data(rd, pkt, len, type, src_ip, ecn_ce, now);
	if (type == BRAID_PKT_RD_ACK)
		return input_ack(rd, pkt, len, src_ip, now);
	if (type == BRAID_PKT_RD_CTS)
		return input_cts(rd, pkt, len, src_ip, now);
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

/* ---- output ---- */

int braid_rd_out_dgram(const struct braid_rd_out *out, int n, struct iovec *iov, int max_iov,
		       int *iovcnt, size_t *len, size_t *seg)
{
	bool gso = n > 1 && out[1].gso_cont;
	size_t total = 0;
	int i, k = 0;

	if (seg)
		*seg = gso ? out[0].hdr_len + out[0].payload_len : 0;
	for (i = 0; i < n; i++) {
		const struct braid_rd_out *o = &out[i];

		if (i && !(gso ? o->gso_cont : o->frame_len == BRAID_RD_BUNDLE_REC))
			break;
		if (k + o->payload_iovcnt + 2 > max_iov)
			break;
		if (o->frame_len) {
			iov[k].iov_base = (void *)o->frame;
			iov[k++].iov_len = o->frame_len;
		}
		iov[k].iov_base = (void *)o->hdr;
		iov[k++].iov_len = o->hdr_len;
		/* (one, nearly always: no call) */
		for (int j = 0; j < o->payload_iovcnt; j++)
			iov[k++] = o->payload[j];
		total += o->frame_len + o->hdr_len + o->payload_len;
	}
	*len = total;
	*iovcnt = k;
	return i;
}

/*
 * One flow's packets into out[0..@max): the receiving side's CTS, then the
 * outgoing side's (§4.8), among them the place of the ACK, which the
 * receiving side writes. Return: how many.
 */
static int flow_output(struct braid_rd *rd, struct rd_flow *f, uint64_t now,
		       struct braid_rd_out *out, int max)
{
	int ack, n = rd_in_write_cts(rd, f, now, out, max);

	n = rd_out_flow(rd, f, now, out, n, max, &ack);
	if (ack >= 0)
		rd_in_write_ack(rd, f, &out[ack], now);
	return n;
}

int braid_rd_output(struct braid_rd *rd, uint64_t now, struct braid_rd_out *out, int max)
{
	struct braid_dlist *it;
	int n = 0;

	/* challenges and their answers first (§4.9): header-only, to a home port */
	for (; n < max && rd->ctl_n; n++) {
		const struct rd_ctl *c = &rd->ctl[rd->ctl_head];

		braid_rd_chal_write((struct braid_rd_cts_hdr *)out[n].hdr, &c->v);
		rd_out_header_only(&out[n], sizeof(struct braid_rd_cts_hdr), c->ip, c->port, c->port);
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
		got = flow_output(rd, f, now, out + n, max - n);
		n += got;
		if (n == max && got) {
			/* it may have more: keep it ready, behind the others (round robin) */
			rd_flow_ready(rd, f);
		}
		rd_flow_schedule(rd, f);
	}
	return n;
}

void braid_rd_arrived(struct braid_rd *rd, uint64_t when)
{
	rd->in_arrived = when;
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
