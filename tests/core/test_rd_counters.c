/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_counters.c: the RD engine's counter table (braid_counters.h): rows that add up, counted at the right scope, a dead path seen in its own row. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_harness.h"
#include "braid/braid_counters.h"

#define MS 1000000ULL
#define NMSG 200
#define MAXSZ 9000
#define SNAP (256 * 1024)

static uint64_t snap_buf[SNAP / 8];

/* the index of @name in a row of @scope, asserted */
static int idx(const char *name, unsigned int scope)
{
	int i = braid_ctr_find(name, scope);

	cr_assert_geq(i, 0, "%s is in the rows of scope %u", name, scope);
	return i;
}

struct snap {
	const struct braid_rd_stats *ep;
	uint32_t peers, n_peer, n_path;
	const struct braid_ctr_peer_rec *peer;	/* the first */
};

static void snap_take(struct braid_rd *rd, struct snap *s)
{
	size_t len = braid_rd_snapshot_peers(rd, snap_buf, sizeof(snap_buf), &s->peers);

	s->ep = braid_rd_get_stats(rd);
	s->n_peer = braid_ctr_row_len(BRAID_SCOPE_PEER);
	s->n_path = braid_ctr_row_len(BRAID_SCOPE_PATH);
	s->peer = (const struct braid_ctr_peer_rec *)snap_buf;
	cr_assert(s->peers == 0 || len == s->peers * s->peer->size, "records of one size each");
}

static const uint64_t *path_row(const struct snap *s, uint32_t i)
{
	return s->peer->v + s->n_peer + (size_t)i * s->n_path;
}

static uint64_t peer_val(const struct snap *s, const char *name)
{
	return s->peer->v[idx(name, BRAID_SCOPE_PEER)];
}

static uint64_t path_val(const struct snap *s, uint32_t i, const char *name)
{
	return path_row(s, i)[idx(name, BRAID_SCOPE_PATH)];
}

/* The endpoint row of an engine with one peer equals that peer's row; paths add up to the peer. */
static void check_adds_up(struct braid_rd *rd, const char *who)
{
	static const char *const path_ctrs[] = { "rd.tx_data", "rd.tx_bytes", "rd.retx_pkts",
		"rd.retx_bytes", "rd.acked_pkts", "rd.lost_pkts", "rd.path_deaths", "rd.path_redraws" };
	static const char *const peer_ctrs[] = { "rd.rx_data", "rd.rx_bytes", "rd.tx_acks",
		"rd.rx_acks", "rd.msgs_sent", "rd.msgs_received", "rd.rack_losses", "rd.tlp_probes",
		"rd.rto_fires", "rd.drop.duplicate" };
	const struct braid_ctr_desc *t;
	uint64_t ep[sizeof(struct braid_rd_stats) / 8];
	struct snap s;
	size_t i, n = braid_ctr_table(&t);
	uint32_t k;

	snap_take(rd, &s);
	cr_assert_eq(s.peers, 1, "%s: one peer record", who);
	cr_assert_eq(s.peer->paths, 4, "%s: a row per path", who);
	memcpy(ep, s.ep, sizeof(ep));
	/* every counter kept per peer: the endpoint's value is the one peer's */
	for (i = 0; i < n; i++) {
		int pi, ei = 0;

		if (!(t[i].scopes & BRAID_SCOPE_PEER) || t[i].kind != BRAID_CTR_COUNTER)
			continue;
		pi = idx(t[i].name, BRAID_SCOPE_PEER);
		/* rd's row starts after the endpoint group (ep.*) in the endpoint's row */
		ei = idx(t[i].name, BRAID_SCOPE_EP) - idx("rd.tx_data", BRAID_SCOPE_EP);
		cr_assert_eq(s.peer->v[pi], ep[ei], "%s: %s: peer %lu, endpoint %lu", who, t[i].name,
			     (unsigned long)s.peer->v[pi], (unsigned long)ep[ei]);
	}
	/* the path counters of the paths add up to the peer's */
	for (i = 0; i < sizeof(path_ctrs) / sizeof(path_ctrs[0]); i++) {
		uint64_t sum = 0;

		for (k = 0; k < s.peer->paths; k++)
			sum += path_val(&s, k, path_ctrs[i]);
		cr_assert_eq(sum, peer_val(&s, path_ctrs[i]), "%s: %s: paths %lu, peer %lu", who,
			     path_ctrs[i], (unsigned long)sum, (unsigned long)peer_val(&s, path_ctrs[i]));
	}
	for (i = 0; i < sizeof(peer_ctrs) / sizeof(peer_ctrs[0]); i++)
		(void)peer_val(&s, peer_ctrs[i]);
	/* every resend has one cause */
	cr_assert_eq(s.ep->retx_rack + s.ep->retx_tlp + s.ep->retx_rto + s.ep->retx_dead +
		     s.ep->retx_refused, s.ep->retx_pkts,
		     "%s: causes %lu + %lu + %lu + %lu + %lu = resends %lu", who,
		     (unsigned long)s.ep->retx_rack, (unsigned long)s.ep->retx_tlp,
		     (unsigned long)s.ep->retx_rto, (unsigned long)s.ep->retx_dead,
		     (unsigned long)s.ep->retx_refused, (unsigned long)s.ep->retx_pkts);
	cr_assert_leq(s.ep->acked_pkts, s.ep->tx_data, "%s: acknowledged <= sent", who);
	cr_assert_leq(s.ep->retx_pkts, s.ep->tx_data, "%s: resends are sends", who);
}

struct want { size_t recv, send; };

static bool done(struct harness *h, void *arg)
{
	const struct want *w = arg;
	size_t r = 0, s = 0, i;

	for (i = 0; i < h->nodes[1].ncomps; i++)
		r += !!(h->nodes[1].comps[i].flags & BRAID_RD_COMP_RECV);
	for (i = 0; i < h->nodes[0].ncomps; i++)
		s += !!(h->nodes[0].comps[i].flags & BRAID_RD_COMP_SEND);
	return r >= w->recv && s >= w->send;
}

/* NMSG messages node 0 -> node 1 over 4 paths of @p; @down: sim path 2 dies at 2 ms. */
static void run(struct harness *h, const struct braid_sim_path_cfg *p, bool down, uint64_t seed)
{
	static uint8_t src[MAXSZ], dst[NMSG][MAXSZ];
	struct braid_rd_config c;
	struct want w = { NMSG, NMSG };
	int i;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.entropies = 4;	/* slot i on sim path i until it moves; a move lands on another */
	c.epoch = 1;
	c.seed = seed;
	c.peer_timeout_ns = 10000 * MS;
	cr_assert_eq(h_init(h, 2, 4, p, &c, seed), 0);
	if (down)
		cr_assert_eq(braid_sim_schedule(h->sim, 2 * MS, BRAID_SIM_PATH_DOWN, 2), 0);
	memset(src, 0x5a, sizeof(src));
	for (i = 0; i < NMSG; i++) {
		struct iovec riov = { dst[i], MAXSZ };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };

		cr_assert_eq(braid_rd_post_recv(h->nodes[1].rd, &r, 0), 0);
	}
	for (i = 0; i < NMSG; i++) {
		struct iovec siov = { src, (size_t)(i * 977) % MAXSZ };
		struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1) };

		cr_assert_eq(braid_rd_send(h->nodes[0].rd, &s, h->now), 0);
		if (i % 16 == 15)
			h_run(h, h->now + 200000, NULL, NULL);
	}
	cr_assert(h_run(h, 60000 * MS, done, &w), "every message delivered");
	h_run(h, h->now + 20 * MS, NULL, NULL);	/* the last ACKs land */
}

Test(rd_counters, table_is_whole_and_unique)
{
	const struct braid_ctr_desc *t;
	size_t n = braid_ctr_table(&t), i, j;

	cr_assert_gt(n, 100);
	for (i = 0; i < n; i++) {
		cr_assert(t[i].name && *t[i].name && t[i].unit && *t[i].unit && t[i].help &&
			  *t[i].help, "entry %zu has a name, unit and meaning", i);
		cr_assert(t[i].scopes && t[i].scopes <= 7, "%s: scopes", t[i].name);
		cr_assert(t[i].kind == BRAID_CTR_COUNTER || t[i].kind == BRAID_CTR_GAUGE);
		cr_assert_lt(strlen(t[i].name), 48, "%s fits the published file", t[i].name);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(t[i].name, t[j].name, "one entry per name");
	}
	/* the rows are the structs the engines count into */
	cr_assert_eq(braid_ctr_row_len(BRAID_SCOPE_PATH),
		     sizeof(struct braid_rd_path_ctr) / 8 + 7, "path counters, 7 gauges");
	cr_assert_eq(idx("rd.tx_data", BRAID_SCOPE_PATH), 0);
	cr_assert_eq(idx("rd.tx_data", BRAID_SCOPE_PEER), 0);
	cr_assert_eq(idx("rd.drop.duplicate", BRAID_SCOPE_PEER),
		     (int)(offsetof(struct braid_rd_peer_ctr, drops[BRAID_DROP_DUPLICATE]) / 8));
	cr_assert_eq(idx("rd.peers", BRAID_SCOPE_EP) - idx("rd.tx_data", BRAID_SCOPE_EP),
		     (int)(offsetof(struct braid_rd_stats, peers) / 8));
	cr_assert_eq(braid_ctr_find("rd.path.srtt_ns", BRAID_SCOPE_EP), -1, "a path gauge only");
	cr_assert_eq(braid_ctr_find("rd.cwnd", BRAID_SCOPE_EP), -1, "a peer gauge only");
	cr_assert_eq(braid_ctr_find("no.such", BRAID_SCOPE_EP), -1);
}

Test(rd_counters, rows_add_up_under_loss_duplication_and_reordering, .timeout = 60)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 2000, .loss = 0.03,
					.dup = 0.02, .dup_gap_ns = 1500, .reorder = 0.1,
					.reorder_ns = 20000 };
	struct harness h;
	struct snap s;

	run(&h, &p, false, 7);
	check_adds_up(h.nodes[0].rd, "sender");
	check_adds_up(h.nodes[1].rd, "receiver");
	snap_take(h.nodes[0].rd, &s);
	cr_assert_gt(s.ep->retx_pkts, 0, "3%% loss: resends");
	cr_assert_gt(s.ep->lost_pkts, 0);
	cr_assert_eq(s.ep->msgs_sent, NMSG);
	cr_assert_eq(braid_rd_get_stats(h.nodes[1].rd)->msgs_received, NMSG);
	cr_assert_gt(braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_DUPLICATE], 0,
		     "2%% duplication: duplicates dropped");
	cr_assert_gt(peer_val(&s, "rd.srtt_ns"), 0, "an RTT");
	cr_assert_gt(peer_val(&s, "rd.cwnd"), 0);
	cr_assert_eq(peer_val(&s, "rd.verified"), 1, "the peer answered its challenge");
	cr_assert_str_eq(s.peer->addr, "127.1.0.2:7000");
	for (uint32_t k = 0; k < 4; k++) {
		cr_assert_gt(path_val(&s, k, "rd.tx_data"), 0, "path %u carried data", k);
		cr_assert_gt(path_val(&s, k, "rd.path.srtt_ns"), 0, "path %u has an RTT", k);
		cr_assert_leq(path_val(&s, k, "rd.path.min_rtt_ns"), path_val(&s, k, "rd.path.srtt_ns") +
			      path_val(&s, k, "rd.path.rttvar_ns") * 4);
		cr_assert_leq(path_val(&s, k, "rd.path.loss_ppm"), 1000000);
	}
	h_fini(&h);
}

Test(rd_counters, a_dead_path_shows_in_its_own_row, .timeout = 60)
{
	struct braid_sim_path_cfg p = { .delay_ns = 20000, .jitter_ns = 2000 };
	struct harness h;
	struct snap s;
	uint32_t k;

	run(&h, &p, true, 11);
	check_adds_up(h.nodes[0].rd, "sender");
	snap_take(h.nodes[0].rd, &s);
	cr_assert_geq(path_val(&s, 2, "rd.path_deaths"), 1, "slot 2 (sim path 2) died");
	cr_assert_geq(path_val(&s, 2, "rd.path_redraws"), 1, "and moved");
	cr_assert_neq(path_val(&s, 2, "rd.path.entropy"), 2, "to another route");
	cr_assert_gt(path_val(&s, 2, "rd.lost_pkts"), 0, "its packets were lost");
	for (k = 0; k < 4; k++)
		if (k != 2)
			cr_assert_eq(path_val(&s, k, "rd.path_deaths"), 0, "slot %u lived", k);
	cr_assert_gt(s.ep->retx_dead, 0, "resends of the dead path's packets");
	cr_assert_eq(s.ep->path_deaths, path_val(&s, 2, "rd.path_deaths"));
	h_fini(&h);
}
