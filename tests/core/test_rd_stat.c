/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_stat.c: the RD engine's peer records of a counter snapshot (braid_rd_snapshot_peers, core/braid_rd_stat.c): their size, order, truncation, address, and gauges that agree with the engine. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_harness.h"
#include "braid/braid_counters.h"

#define US 1000ULL
#define MS 1000000ULL
#define SNAP (64 * 1024)

static uint64_t snap[SNAP / 8];

static struct braid_rd_config base_cfg(uint32_t paths)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.paths = paths;
	c.epoch = 1;
	c.bundle = false;
	return c;
}

/* the size braid_rd.h promises each record of an engine of @paths paths */
static size_t rec_size(uint32_t paths)
{
	return sizeof(struct braid_ctr_peer_rec) +
	       8 * (braid_ctr_row_len(BRAID_SCOPE_PEER) +
		    (size_t)paths * braid_ctr_row_len(BRAID_SCOPE_PATH));
}

static const struct braid_ctr_peer_rec *rec_at(size_t i, uint32_t paths)
{
	return (const struct braid_ctr_peer_rec *)((const uint8_t *)snap + i * rec_size(paths));
}

static uint64_t peer_v(const struct braid_ctr_peer_rec *r, const char *name)
{
	int i = braid_ctr_find(name, BRAID_SCOPE_PEER);

	cr_assert_geq(i, 0, "%s is a peer value", name);
	return r->v[i];
}

static uint64_t path_v(const struct braid_ctr_peer_rec *r, uint32_t k, const char *name)
{
	int i = braid_ctr_find(name, BRAID_SCOPE_PATH);

	cr_assert_geq(i, 0, "%s is a path value", name);
	return r->v[braid_ctr_row_len(BRAID_SCOPE_PEER) + k * braid_ctr_row_len(BRAID_SCOPE_PATH) + i];
}

/* A snapshot of @rd into the first @len bytes of snap (the rest marked): bytes written. */
static size_t take(const struct braid_rd *rd, size_t len, uint32_t *peers)
{
	memset(snap, 0xab, sizeof(snap));
	*peers = 12345;
	return braid_rd_snapshot_peers(rd, snap, len, peers);
}

/* No byte of snap from @from on was written. */
static void untouched_from(size_t from)
{
	const uint8_t *b = (const uint8_t *)snap;

	for (size_t i = from; i < sizeof(snap); i++)
		cr_assert_eq(b[i], 0xab, "byte %zu past the records written", i);
}

/* An engine with no traffic state has no record, and writes nothing. */
Test(braid_rd_snapshot_peers, an_engine_without_traffic_writes_nothing)
{
	struct braid_rd_config c = base_cfg(4);
	struct braid_peer_table *t;
	struct braid_rd *rd;
	uint32_t peers;

	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	cr_assert_eq(take(rd, sizeof(snap), &peers), 0);
	cr_assert_eq(peers, 0);
	untouched_from(0);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

struct count { int node; size_t sends; };

static bool sends_done(struct harness *h, void *arg)
{
	const struct count *w = arg;
	size_t i, n = 0;

	for (i = 0; i < h->nodes[w->node].ncomps; i++)
		n += !!(h->nodes[w->node].comps[i].flags & BRAID_RD_COMP_SEND);
	return n >= w->sends;
}

/* Node 0 sends @n2 messages to node 2, then @n1 to node 1 (unexpected there), all completed. */
static void three_nodes(struct harness *h, struct braid_rd_config *c, int n2, int n1)
{
	static uint8_t buf[64];
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US, .jitter_ns = 1 * US };
	struct count w = { 0, (size_t)(n1 + n2) };
	int k;

	cr_assert_eq(h_init(h, 3, 4, &p, c, 9), 0);
	for (k = 0; k < n2 + n1; k++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(k < n2 ? 2 : 1) };

		cr_assert_eq(braid_rd_send(h->nodes[0].rd, &s, h->now), 0);
		h_run(h, h->now + 5 * US, NULL, NULL);	/* the flow to node 2 is made first */
	}
	cr_assert(h_run(h, h->now + 1000 * MS, sends_done, &w), "every send completed");
	h_run(h, h->now + 5 * MS, NULL, NULL);
}

/*
 * One record per peer with traffic state, in the order the flows were made,
 * each of the size braid_rd.h gives (its path rows included), the bytes
 * written their sum; each peer's counters are its own, and add up to the
 * endpoint's.
 */
Test(braid_rd_snapshot_peers, a_record_per_peer_sized_as_promised_in_the_order_made,
     .timeout = 60)
{
	static const char *const per_peer[] = { "rd.tx_data", "rd.tx_bytes", "rd.msgs_sent",
		"rd.rx_acks", "rd.acked_pkts" };
	struct braid_rd_config c = base_cfg(4);
	const struct braid_rd_stats *ep;
	const struct braid_ctr_peer_rec *r2, *r1;
	struct harness h;
	uint32_t peers;
	size_t i;

	three_nodes(&h, &c, 3, 5);
	cr_assert_eq(take(h.nodes[0].rd, sizeof(snap), &peers), 2 * rec_size(4));
	cr_assert_eq(peers, 2);
	untouched_from(2 * rec_size(4));
	r2 = rec_at(0, 4);
	r1 = rec_at(1, 4);
	cr_assert_eq(r2->size, rec_size(4));
	cr_assert_eq(r1->size, rec_size(4));
	cr_assert_eq(r2->paths, 4);
	cr_assert_eq(r1->paths, 4);
	cr_assert_str_eq(r2->addr, "127.1.0.3:7000", "node 2's flow was made first");
	cr_assert_str_eq(r1->addr, "127.1.0.2:7000");
	cr_assert_eq(peer_v(r2, "rd.msgs_sent"), 3);
	cr_assert_eq(peer_v(r1, "rd.msgs_sent"), 5);
	ep = braid_rd_get_stats(h.nodes[0].rd);
	for (i = 0; i < sizeof(per_peer) / sizeof(per_peer[0]); i++) {
		int e = braid_ctr_find(per_peer[i], BRAID_SCOPE_EP) -
			braid_ctr_find("rd.tx_data", BRAID_SCOPE_EP);
		uint64_t sum = peer_v(r1, per_peer[i]) + peer_v(r2, per_peer[i]);

		cr_assert_eq(sum, ((const uint64_t *)ep)[e], "%s: the peers' sum is the endpoint's",
			     per_peer[i]);
	}
	cr_assert_eq(ep->flows_active, 2);
	h_fini(&h);
}

/*
 * As many whole records as fit: a buffer one byte short of a record takes
 * none, one of one and a half records takes one; nothing is written past
 * the records, and *peers counts those written.
 */
Test(braid_rd_snapshot_peers, whole_records_as_many_as_fit, .timeout = 60)
{
	struct braid_rd_config c = base_cfg(3);
	struct harness h;
	uint32_t peers;
	size_t one = rec_size(3);

	three_nodes(&h, &c, 1, 1);
	cr_assert_eq(take(h.nodes[0].rd, one - 8, &peers), 0);
	cr_assert_eq(peers, 0);
	untouched_from(0);
	cr_assert_eq(take(h.nodes[0].rd, one, &peers), one);
	cr_assert_eq(peers, 1);
	cr_assert_str_eq(rec_at(0, 3)->addr, "127.1.0.3:7000", "the first made");
	untouched_from(one);
	cr_assert_eq(take(h.nodes[0].rd, one + one / 2 / 8 * 8, &peers), one);
	cr_assert_eq(peers, 1);
	untouched_from(one);
	cr_assert_eq(take(h.nodes[0].rd, 2 * one, &peers), 2 * one);
	cr_assert_eq(peers, 2);
	h_fini(&h);
}

/* Move everything engine @from outputs now into engine !@from (@ip: the engines' addresses). */
static int pump_once(struct braid_rd *rd[2], const uint32_t ip[2], int from, uint64_t now)
{
	static uint8_t buf[65536];
	struct braid_rd_out out[64];
	int n = braid_rd_output(rd[from], now, out, 64), k;

	for (k = 0; k < n;) {
		size_t len = rd_dgram_copy(out + k, n - k, buf, &k);

		braid_rd_input(rd[!from], buf, len, ip[from], false, now);
	}
	return n;
}

/* The address of a record is the peer's, dotted, with its port: the longest fits. */
Test(braid_rd_snapshot_peers, the_address_is_the_peers_and_the_longest_fits)
{
	const uint32_t ip[2] = { 0xfffffffdu, 0xfffffffeu };
	struct braid_peer_table *t[2];
	struct braid_rd *rd[2];
	struct braid_rd_config c;
	static uint8_t buf[32];
	struct iovec iov = { buf, sizeof(buf) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1,
				   .peer = braid_peer_key(0xfffffffeu, 65535) };
	uint64_t now = 1000 * MS;
	uint32_t peers;
	int i, moved;

	for (i = 0; i < 2; i++) {
		c = base_cfg(2);
		c.local_ip = ip[i];
		c.local_port = 65535;
		c.epoch = 10 + (uint32_t)i;
		cr_assert_eq(braid_peer_table_open(&t[i], 16, NULL), 0);
		cr_assert_eq(braid_rd_open(&c, t[i], &rd[i]), 0);
	}
	cr_assert_eq(braid_rd_send(rd[0], &s, now), 0);
	do {
		now += 10 * US;
		moved = pump_once(rd, ip, 0, now) + pump_once(rd, ip, 1, now);
	} while (moved);
	cr_assert_eq(take(rd[0], sizeof(snap), &peers), rec_size(2));
	cr_assert_eq(peers, 1);
	cr_assert_str_eq(rec_at(0, 2)->addr, "255.255.255.254:65535");
	cr_assert_eq(take(rd[1], sizeof(snap), &peers), rec_size(2));
	cr_assert_str_eq(rec_at(0, 2)->addr, "255.255.255.253:65535", "the sender, as the receiver sees it");
	for (i = 0; i < 2; i++) {
		braid_rd_close(rd[i]);
		braid_peer_table_close(t[i]);
	}
}

/*
 * The gauges are the engine's state: a new flow's window is init_cwnd;
 * sends queued and not yet cut are its sendq; what went out is in flight,
 * no more than the window; acknowledged, nothing is in flight or queued,
 * and the RTTs are measured (the lowest no more than the smoothed); the
 * receiver advertises the room its staging has left (an unexpected
 * message's packet takes one), and the sender knows what it advertised.
 */
Test(braid_rd_snapshot_peers, gauges_follow_the_engine, .timeout = 60)
{
	struct braid_sim_path_cfg p = { .delay_ns = 10 * US };
	struct braid_rd_config c = base_cfg(4);
	static uint8_t msg[1000];
	struct iovec iov = { msg, sizeof(msg) };
	struct braid_rd_out out[64];
	const struct braid_ctr_peer_rec *r = rec_at(0, 4);
	struct count w = { 0, 10 };
	struct harness h;
	uint32_t peers, k;
	int i;

	c.init_cwnd = 4;
	c.unsched_pkts = 0;	/* a whole window at once (§4.10 is not tested here) */
	c.window = 128;
	c.stage_pkts = 100;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 4), 0);
	for (i = 0; i < 10; i++) {
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1) };

		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	cr_assert_eq(take(h.nodes[0].rd, sizeof(snap), &peers), rec_size(4));
	cr_assert_eq(peer_v(r, "rd.cwnd"), 4, "a new flow: init_cwnd");
	cr_assert_eq(peer_v(r, "rd.sendq"), 10, "ten sends queued");
	cr_assert_eq(peer_v(r, "rd.inflight"), 0);
	cr_assert_eq(peer_v(r, "rd.srtt_ns"), 0, "no RTT yet");
	cr_assert_eq(peer_v(r, "rd.verified"), 0, "not heard from");
	cr_assert_eq(braid_rd_output(h.nodes[0].rd, h.now, out, 64), 4, "a window's worth, lost");
	cr_assert_eq(take(h.nodes[0].rd, sizeof(snap), &peers), rec_size(4));
	cr_assert_eq(peer_v(r, "rd.inflight"), 4, "in flight: what went out");
	cr_assert_eq(peer_v(r, "rd.sendq"), 6, "the rest still queued");
	/* the losses repaired, everything delivered (unexpected: no receive posted) and acknowledged */
	cr_assert(h_run(&h, h.now + 1000 * MS, sends_done, &w), "every send completed");
	h_run(&h, h.now + 5 * MS, NULL, NULL);
	cr_assert_eq(take(h.nodes[0].rd, sizeof(snap), &peers), rec_size(4));
	cr_assert_eq(peer_v(r, "rd.inflight"), 0);
	cr_assert_eq(peer_v(r, "rd.sendq"), 0);
	cr_assert_geq(peer_v(r, "rd.min_rtt_ns"), 2 * p.delay_ns, "an RTT of the paths' delay");
	cr_assert_leq(peer_v(r, "rd.min_rtt_ns"), peer_v(r, "rd.srtt_ns"));
	cr_assert_geq(peer_v(r, "rd.cwnd"), 1);
	cr_assert_leq(peer_v(r, "rd.cwnd"), 128, "no more than the window");
	cr_assert_eq(peer_v(r, "rd.verified"), 1, "the peer proved itself");
	cr_assert_eq(peer_v(r, "rd.peer_rwnd"), 90, "the receiver's room: 100 buffers, 10 taken");
	for (k = 0; k < r->paths; k++) {
		cr_assert_eq(path_v(r, k, "rd.path.state"), 0, "path %u healthy", k);
		cr_assert_leq(path_v(r, k, "rd.path.loss_ppm"), 1000000);
		cr_assert_eq(path_v(r, k, "rd.path.ecn_ppm"), 0, "no marks");
		if (path_v(r, k, "rd.path.srtt_ns"))
			cr_assert_leq(path_v(r, k, "rd.path.min_rtt_ns"),
				      path_v(r, k, "rd.path.srtt_ns"));
	}
	cr_assert_eq(take(h.nodes[1].rd, sizeof(snap), &peers), rec_size(4));
	cr_assert_eq(peer_v(r, "rd.rwnd"), 90, "the ten messages wait, unexpected, in staging");
	cr_assert_eq(peer_v(r, "rd.msgs_received"), 0, "none received into a buffer yet");
	h_fini(&h);
}

/* Records are for peers with traffic state: once the flows rest (idle_ns), none is left. */
Test(braid_rd_snapshot_peers, rested_peers_have_no_record, .timeout = 60)
{
	struct braid_rd_config c = base_cfg(2);
	struct harness h;
	uint32_t peers;

	c.idle_ns = 2 * MS;
	three_nodes(&h, &c, 1, 1);
	h_run(&h, h.now + 20 * MS, NULL, NULL);
	cr_assert_eq(take(h.nodes[0].rd, sizeof(snap), &peers), 0);
	cr_assert_eq(peers, 0);
	cr_assert_eq(braid_rd_get_stats(h.nodes[0].rd)->flows_active, 0);
	cr_assert_eq(braid_rd_get_stats(h.nodes[0].rd)->peers, 2, "the peers are remembered still");
	h_fini(&h);
}
