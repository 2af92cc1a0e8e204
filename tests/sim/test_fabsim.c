/* SPDX-License-Identifier: BSD-2-Clause */
/* test_fabsim.c: behaviour of the leaf-spine fabric simulator (sim/braid_fabsim.c), of real RD and RC engines driven on it (sim/fabsim), and of bench/fabsim's wire-8 scenarios and report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "fabsim_bench.h"

#define US	1000ULL
#define MS	1000000ULL
/* a run's transports with the engines' defaults and seed @s */
#define SEED(s)	(&(struct fabsim_opts){ .seed = (s) })

/* 4 ToRs x 4 hosts, 2 spines; 10/20 Gbit/s, 1 us a link; 64 KiB queues marking above 16 KiB */
static struct braid_fabsim_cfg small_cfg(void)
{
	return (struct braid_fabsim_cfg){
		.tors = 4, .hosts_per_tor = 4, .spines = 2,
		.host = { .rate_bps = 10000000000ULL, .delay_ns = 1000, .queue_bytes = 65536,
			  .ecn_bytes = 16384 },
		.fabric = { .rate_bps = 20000000000ULL, .delay_ns = 1000, .queue_bytes = 65536,
			    .ecn_bytes = 16384 },
		.overhead = 64, .seed = 7,
	};
}

static struct braid_fabsim *open_small(const struct braid_fabsim_cfg *c)
{
	struct braid_fabsim *fs;

	cr_assert_eq(braid_fabsim_open(c, &fs), 0);
	return fs;
}

/* run the fabric alone until it is empty; count deliveries (and CE-marked ones) per host */
static size_t drain_until(struct braid_fabsim *fs, uint64_t until, size_t *per_host, size_t *ce)
{
	struct braid_fabsim_pkt p;
	size_t n = 0;

	while (braid_fabsim_step(fs, until, &p)) {
		n++;
		if (per_host)
			per_host[p.dst]++;
		if (ce && p.ecn_ce)
			(*ce)++;
	}
	return n;
}

static size_t drain(struct braid_fabsim *fs, size_t *per_host, size_t *ce)
{
	return drain_until(fs, UINT64_MAX, per_host, ce);
}

Test(fabsim, open__bad_shapes_refused)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;

	c.spines = 0;
	cr_assert_eq(braid_fabsim_open(&c, &fs), -FI_EINVAL);
	c = small_cfg();
	c.fabric.rate_bps = 0;
	cr_assert_eq(braid_fabsim_open(&c, &fs), -FI_EINVAL);
	c = small_cfg();
	fs = open_small(&c);
	cr_assert_eq(braid_fabsim_hosts(fs), 16);
	cr_assert_eq(braid_fabsim_tor_of(fs, 5), 1);
	cr_assert_eq(braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 4, 0), -FI_EINVAL);
	cr_assert_eq(braid_fabsim_send(fs, 0, 0, 16, 1, "x", 1), -FI_EINVAL);
	braid_fabsim_close(fs);
}

/* different entropies take different spines, one entropy one spine, both directions */
Test(fabsim, ecmp__entropies_spread_and_hash_is_symmetric)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;
	struct braid_fabsim_pkt p;
	int used[2] = { 0, 0 };
	uint8_t buf[100] = { 0 };
	uint16_t e;

	c.spines = 2;
	fs = open_small(&c);
	cr_assert_eq(braid_fabsim_route(fs, 0, 1, 5), -1, "same ToR: no spine");
	for (e = 0; e < 64; e++) {
		int s = braid_fabsim_route(fs, 0, 9, e);

		cr_assert(s == 0 || s == 1);
		used[s]++;
		cr_assert_eq(braid_fabsim_route(fs, 9, 0, e), s, "the hash is symmetric");
		/* the packet really crosses the spine the route names */
		cr_assert_eq(braid_fabsim_send(fs, braid_fabsim_now(fs), 0, 9, e, buf, sizeof(buf)), 0);
		cr_assert_eq(braid_fabsim_step(fs, UINT64_MAX, &p), 1);
		cr_assert_eq(p.spine, s);
		cr_assert_eq(p.entropy, e);
		cr_assert_eq(braid_fabsim_send(fs, braid_fabsim_now(fs), 9, 0, e, buf, sizeof(buf)), 0);
		cr_assert_eq(braid_fabsim_step(fs, UINT64_MAX, &p), 1);
		cr_assert_eq(p.spine, s, "a reply with the same entropy comes back the same way");
	}
	cr_assert_gt(used[0], 16);
	cr_assert_gt(used[1], 16);
	braid_fabsim_close(fs);
}

/* a FIFO at the link rate: the n-th packet of a burst arrives n serialisations later */
Test(fabsim, link__serialisation_and_delay)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	struct braid_fabsim_pkt p;
	uint8_t buf[1186] = { 0 };	/* + 64 overhead = 1250 B = 1 us at 10 Gbit/s */
	int i;

	for (i = 0; i < 3; i++)
		cr_assert_eq(braid_fabsim_send(fs, 0, 0, 1, 0, buf, sizeof(buf)), 0);
	/* NIC 1 us + 1 us, ToR port 1 us + 1 us: the first at 4 us, then one every 1 us */
	for (i = 0; i < 3; i++) {
		cr_assert_eq(braid_fabsim_step(fs, UINT64_MAX, &p), 1);
		cr_assert_eq(p.at, (4 + (uint64_t)i) * US, "packet %d at %lu", i, (unsigned long)p.at);
		cr_assert_eq(p.len, sizeof(buf));
	}
	braid_fabsim_close(fs);
}

/* 12 senders at once into one host: its ToR port queues, marks above 16 KiB, drops above 64 KiB */
Test(fabsim, queue__ecn_above_threshold_and_drop_tail)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;
	const struct braid_fabsim_link_stats *st;
	uint8_t buf[4032] = { 0 };	/* 4096 B on the wire */
	size_t per_host[16] = { 0 }, ce = 0, got;
	int link, h, k;

	/* a fabric fast and deep enough that only the last queue fills */
	c.fabric.rate_bps = 400000000000ULL;
	c.fabric.queue_bytes = 0;
	fs = open_small(&c);
	link = braid_fabsim_link(fs, BRAID_FABSIM_HOST_DOWN, 0, 0);

	for (h = 4; h < 16; h++)
		for (k = 0; k < 4; k++)
			cr_assert_eq(braid_fabsim_send(fs, 0, h, 0, (uint16_t)k, buf, sizeof(buf)), 0);
	got = drain(fs, per_host, &ce);
	st = braid_fabsim_link_stats(fs, link);
	cr_assert_eq(st->pkts, 48);
	cr_assert_gt(st->drops_queue, 0, "48 x 4 KiB at once overflow a 64 KiB queue");
	cr_assert_eq(got + st->drops_queue, 48, "every packet delivered or dropped by the queue");
	cr_assert_gt(ce, 0);
	cr_assert_eq(ce, st->ecn_marks, "each mark made by that queue arrives");
	cr_assert_lt(ce, got, "packets that found a short queue are not marked");
	cr_assert_leq(st->max_backlog, c.host.queue_bytes);
	cr_assert_gt(st->max_backlog, c.host.ecn_bytes);
	braid_fabsim_close(fs);
}

/* random loss on one link only */
Test(fabsim, link__loss)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	int link = braid_fabsim_link(fs, BRAID_FABSIM_HOST_DOWN, 1, 0);
	uint8_t buf[64] = { 0 };
	size_t per_host[16] = { 0 };
	int i;

	cr_assert_eq(braid_fabsim_set_loss(fs, link, 0.5), 0);
	cr_assert_eq(braid_fabsim_set_loss(fs, link, 1.5), -FI_EINVAL);
	for (i = 0; i < 1000; i++) {
		cr_assert_eq(braid_fabsim_send(fs, (uint64_t)i * 10 * US, 0, 1, 0, buf, sizeof(buf)), 0);
		cr_assert_eq(braid_fabsim_send(fs, (uint64_t)i * 10 * US, 0, 2, 0, buf, sizeof(buf)), 0);
		drain(fs, per_host, NULL);
	}
	cr_assert_eq(per_host[2], 1000);
	cr_assert(per_host[1] > 400 && per_host[1] < 600, "%zu of 1000 through 50%% loss", per_host[1]);
	cr_assert_eq(braid_fabsim_link_stats(fs, link)->drops_loss, 1000 - per_host[1]);
	braid_fabsim_close(fs);
}

/* a failed link black-holes its routes until routing reacts, then they avoid it, until it is back */
Test(fabsim, link__failure_and_reroute)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;
	uint8_t buf[64] = { 0 };
	int up, e = -1, k;

	c.reroute_ns = 50 * US;
	fs = open_small(&c);
	up = braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 0, 0);
	for (k = 0; k < 64 && e < 0; k++)
		if (braid_fabsim_route(fs, 0, 4, (uint16_t)k) == 0)
			e = k;
	cr_assert_geq(e, 0);
	cr_assert_eq(braid_fabsim_schedule(fs, 10 * US, up, false), 0);
	cr_assert_eq(braid_fabsim_schedule(fs, 200 * US, up, true), 0);
	/* in flight when it fails: lost */
	cr_assert_eq(braid_fabsim_send(fs, 9 * US, 0, 4, (uint16_t)e, buf, sizeof(buf)), 0);
	cr_assert_eq(drain_until(fs, 15 * US, NULL, NULL), 0);
	cr_assert_eq(braid_fabsim_link_stats(fs, up)->drops_down, 1);
	/* before routing reacts: black-holed; after: the other spine */
	cr_assert_eq(braid_fabsim_send(fs, 20 * US, 0, 4, (uint16_t)e, buf, sizeof(buf)), 0);
	cr_assert_eq(drain_until(fs, 60 * US, NULL, NULL), 0);
	cr_assert_eq(braid_fabsim_link_stats(fs, up)->drops_down, 2);
	cr_assert_eq(braid_fabsim_send(fs, 70 * US, 0, 4, (uint16_t)e, buf, sizeof(buf)), 0);
	cr_assert_eq(braid_fabsim_route(fs, 0, 4, (uint16_t)e), 1);
	cr_assert_eq(drain_until(fs, 150 * US, NULL, NULL), 1);
	/* back up at 200 us: the old route again */
	cr_assert_eq(drain(fs, NULL, NULL), 0);
	cr_assert_eq(braid_fabsim_send(fs, 300 * US, 0, 4, (uint16_t)e, buf, sizeof(buf)), 0);
	cr_assert_eq(drain(fs, NULL, NULL), 1);
	cr_assert_eq(braid_fabsim_route(fs, 0, 4, (uint16_t)e), 0);
	braid_fabsim_close(fs);
}

/* ---- engines on the fabric ---- */

/* host h sends @per flows of @size, one after another, to a host two ToRs on */
static struct fabsim_flow *permutation(int hosts, int per_tor, int per, uint64_t size, size_t *n)
{
	struct fabsim_flow *f = calloc((size_t)(hosts * per), sizeof(*f));
	int h, k;

	for (h = 0; h < hosts; h++) {
		for (k = 0; k < per; k++) {
			struct fabsim_flow *x = &f[h * per + k];

			x->src = h;
			x->dst = (h + 2 * per_tor) % hosts;
			x->id = (uint32_t)(h * per + k);
			x->size = size + (uint64_t)k * 1000;	/* sizes that end mid-packet */
			x->start_ns = k ? UINT64_MAX : 0;
			x->next = k + 1 < per ? h * per + k + 1 : -1;
		}
	}
	*n = (size_t)(hosts * per);
	return f;
}

static void check_all_intact(const struct fabsim_run *run)
{
	size_t i;

	cr_assert_eq(run->finished, run->nflows);
	cr_assert_eq(run->failed, 0, "%zu flows failed", run->failed);
	for (i = 0; i < run->nflows; i++) {
		const struct fabsim_flow *f = &run->flows[i];

		cr_assert(f->intact, "flow %zu: err %d", i, f->err);
		cr_assert_geq(f->recv_ns, f->start_ns);
		cr_assert_geq(f->sent_ns, f->start_ns);
	}
}

static void run_permutation(const struct fabsim_transport *tp, const struct braid_fabsim_cfg *c)
{
	struct braid_fabsim *fs = open_small(c);
	struct fabsim_run run;
	size_t n;
	struct fabsim_flow *f = permutation(16, 4, 3, 100000, &n);

	cr_assert_eq(fabsim_run_open(&run, fs, tp, f, n, SEED(11)), 0);
	cr_assert_eq(fabsim_run_go(&run, 100 * MS), 0);
	check_all_intact(&run);
	fabsim_run_close(&run);
	braid_fabsim_close(fs);
	free(f);
}

/*
 * A run works on its own copy of the flows: chained flows (a closed loop)
 * get their start times and lose their links as a run goes, and a second
 * run of the same scenario (braid_fabsim runs RD, then RC, on one flow
 * table) must start from the scenario's schedule, not the first run's. The
 * same transport run twice gives the same times, flow for flow.
 */
Test(fabsim, a_second_run_of_the_same_flows_starts_from_their_schedule)
{
	struct braid_fabsim_cfg c = small_cfg();
	size_t n, i;
	struct fabsim_flow *f = permutation(16, 4, 3, 100000, &n);
	uint64_t *first = calloc(n, sizeof(*first));

	for (int k = 0; k < 2; k++) {
		struct braid_fabsim *fs = open_small(&c);
		struct fabsim_run run;

		cr_assert_eq(fabsim_run_open(&run, fs, &fabsim_rc, f, n, SEED(11)), 0);
		cr_assert_eq(fabsim_run_go(&run, 100 * MS), 0);
		check_all_intact(&run);
		for (i = 0; i < n; i++) {
			if (!k)
				first[i] = run.flows[i].recv_ns;
			else
				cr_assert_eq(run.flows[i].recv_ns, first[i],
					     "flow %zu: delivered at %llu ns in the first run, %llu in the second",
					     i, (unsigned long long)first[i],
					     (unsigned long long)run.flows[i].recv_ns);
		}
		fabsim_run_close(&run);
		braid_fabsim_close(fs);
	}
	/* the schedule itself is untouched: loops still chained, later flows unscheduled */
	for (i = 0; i < n; i++)
		cr_assert_eq(f[i].start_ns, i % 3 ? UINT64_MAX : 0);
	free(first);
	free(f);
}

Test(fabsim, rd__permutation_completes_intact)
{
	struct braid_fabsim_cfg c = small_cfg();

	run_permutation(&fabsim_rd, &c);
}

Test(fabsim, rc__permutation_completes_intact)
{
	struct braid_fabsim_cfg c = small_cfg();

	run_permutation(&fabsim_rc, &c);
}

/* with 2% loss on every ToR-spine link both still deliver every byte */
Test(fabsim, rd_rc__lossy_fabric_completes_intact)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;
	int t, s;

	for (int tp = 0; tp < 2; tp++) {
		fs = open_small(&c);
		for (t = 0; t < c.tors; t++)
			for (s = 0; s < c.spines; s++) {
				braid_fabsim_set_loss(fs, braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, t, s), 0.02);
				braid_fabsim_set_loss(fs, braid_fabsim_link(fs, BRAID_FABSIM_SPINE_DOWN, t, s), 0.02);
			}
		struct fabsim_run run;
		size_t n;
		struct fabsim_flow *f = permutation(16, 4, 2, 60000, &n);

		cr_assert_eq(fabsim_run_open(&run, fs, tp ? &fabsim_rc : &fabsim_rd, f, n, SEED(3)), 0);
		cr_assert_eq(fabsim_run_go(&run, 2000 * MS), 0, "%s", tp ? "rc" : "rd");
		check_all_intact(&run);
		fabsim_run_close(&run);
		braid_fabsim_close(fs);
		free(f);
	}
}

/*
 * ToR 0's link to spine 0 fails for good (routing never reacts) while
 * every host of ToR 0 streams to ToR 2 and back: RD moves its traffic to
 * spine 1 and every flow completes; the dead link swallows only what was
 * sent before each path was found dead.
 */
Test(fabsim, rd__failed_link_moves_traffic)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	int up = braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 0, 0);
	int down = braid_fabsim_link(fs, BRAID_FABSIM_SPINE_DOWN, 0, 0);
	int up1 = braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 0, 1);
	struct fabsim_counters cnt;
	struct fabsim_run run;
	uint64_t before_up, before_up1;
	size_t n;
	struct fabsim_flow *f = permutation(16, 4, 6, 200000, &n);

	cr_assert_eq(braid_fabsim_schedule(fs, 200 * US, up, false), 0);
	cr_assert_eq(braid_fabsim_schedule(fs, 200 * US, down, false), 0);
	cr_assert_eq(fabsim_run_open(&run, fs, &fabsim_rd, f, n, SEED(5)), 0);
	cr_assert_eq(fabsim_run_go(&run, 200 * US), -FI_ETIMEDOUT);
	before_up = braid_fabsim_link_stats(fs, up)->pkts;
	before_up1 = braid_fabsim_link_stats(fs, up1)->pkts;
	cr_assert_gt(before_up, 100, "spine 0 carried RD traffic before the failure");
	cr_assert_eq(fabsim_run_go(&run, 1000 * MS), 0);
	check_all_intact(&run);
	/* after the failure: far more went by spine 1 than into the dead link (each path
	 * found dead is re-drawn, and a fresh entropy may hash onto spine 0 again) */
	run.tp->counters(&run, &cnt);
	cr_assert_gt(braid_fabsim_link_stats(fs, up1)->pkts - before_up1,
		     10 * (braid_fabsim_link_stats(fs, up)->pkts - before_up));
	cr_assert_gt(cnt.retx_pkts, 0, "what the dead link swallowed was sent again");
	fabsim_run_close(&run);
	braid_fabsim_close(fs);
	free(f);
}

/* the same failure: an RC connection hashed onto the dead link has no other route, and times out */
Test(fabsim, rc__failed_link_strands_its_connections)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	struct fabsim_run run;
	size_t n, i, failed = 0;
	struct fabsim_flow *f = permutation(16, 4, 6, 200000, &n);

	braid_fabsim_schedule(fs, 200 * US, braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 0, 0), false);
	braid_fabsim_schedule(fs, 200 * US, braid_fabsim_link(fs, BRAID_FABSIM_SPINE_DOWN, 0, 0), false);
	cr_assert_eq(fabsim_run_open(&run, fs, &fabsim_rc, f, n, SEED(5)), 0);
	fabsim_run_go(&run, 5000 * MS);
	cr_assert_eq(run.finished, n);
	for (i = 0; i < n; i++) {
		/* timed out, flushed, or (the next flow of its loop) posted to the QP in error */
		const struct fabsim_flow *x = &run.flows[i];

		cr_assert(x->intact || x->err == FI_ETIMEDOUT || x->err == FI_ECANCELED ||
			  x->err == FI_EOPBADSTATE,
			  "flow %zu: err %d", i, x->err);
		failed += !x->intact;
	}
	cr_assert_eq(run.corrupt, 0);
	cr_assert_gt(failed, 0, "some connection of ToR 0 hashes onto spine 0");
	fabsim_run_close(&run);
	braid_fabsim_close(fs);
	free(f);
}

/* ---- the fabric's MTU and busy time ---- */

Test(fabsim, mtu__limits_datagrams)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs;
	static uint8_t buf[2000];

	c.mtu = 100;
	cr_assert_eq(braid_fabsim_open(&c, &fs), -FI_EINVAL, "an MTU under IPv4's 576");
	c = small_cfg();
	fs = open_small(&c);
	cr_assert_eq(braid_fabsim_max_dgram(fs), BRAID_FABSIM_MAX_PKT, "no MTU: up to 64 KiB");
	braid_fabsim_close(fs);
	c.mtu = 1500;
	fs = open_small(&c);
	cr_assert_eq(braid_fabsim_max_dgram(fs), 1472, "1500 less IPv4 and UDP");
	cr_assert_eq(braid_fabsim_send(fs, 0, 0, 4, 1, buf, 1473), -FI_EMSGSIZE);
	cr_assert_eq(braid_fabsim_send(fs, 0, 0, 4, 1, buf, 1472), 0);
	cr_assert_eq(drain(fs, NULL, NULL), 1);
	braid_fabsim_close(fs);
}

/* a link is busy for the serialisation of what it takes, not for what it drops */
Test(fabsim, link__busy_time_is_serialisation)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	int nic = braid_fabsim_link(fs, BRAID_FABSIM_HOST_UP, 0, 0);
	int port = braid_fabsim_link(fs, BRAID_FABSIM_HOST_DOWN, 1, 0);
	uint8_t buf[1186] = { 0 };	/* + 64 overhead = 1250 B = 1 us at 10 Gbit/s */
	int i;

	cr_assert_eq(braid_fabsim_set_loss(fs, port, 1.0), 0);
	for (i = 0; i < 3; i++)
		cr_assert_eq(braid_fabsim_send(fs, 0, 0, 1, 0, buf, sizeof(buf)), 0);
	cr_assert_eq(drain(fs, NULL, NULL), 0);
	cr_assert_eq(braid_fabsim_link_stats(fs, nic)->busy_ns, 3 * US);
	cr_assert_eq(braid_fabsim_link_stats(fs, port)->busy_ns, 0);
	braid_fabsim_close(fs);
}

/* ---- the wire-8 profile (bench/fabsim's scenarios) ---- */

/* wire-8 with shorter streams and an earlier failure, for quick runs */
static struct fabsim_shape wire8(void)
{
	struct fabsim_shape s;

	cr_assert_eq(fabsim_shape_profile(&s, "wire-8"), 0);
	/* links of 200 Mbit/s: what these tests check does not depend on the rate, and RC,
	 * without congestion control, keeps its streams whole there */
	s.host_bps = s.fabric_bps = 200000000ULL;
	s.stream_bytes = 2 << 20;
	s.incast_size = 1 << 20;
	s.fail_at_ns = 40 * MS;
	return s;
}

Test(fabsim, wire8__profile_is_the_namespace_fabric)
{
	struct fabsim_shape s;
	struct fabsim_scenario sc;
	uint64_t sent[8] = { 0 }, got[8] = { 0 };
	size_t i;

	cr_assert_eq(fabsim_shape_profile(&s, "nope"), -FI_ENOENT);
	cr_assert_eq(fabsim_shape_profile(&s, "wire-8"), 0);
	cr_assert(fabsim_scenario_known(&s, "blackhole"));
	cr_assert(!fabsim_scenario_known(&s, "alltoall"), "the 8-host profile has no all-to-all");
	cr_assert_eq(fabsim_scenario_build("failure", &s, 1, &sc), -FI_ENOENT);
	cr_assert_eq(fabsim_scenario_build("permutation", &s, 1, &sc), 0);
	cr_assert_eq(sc.net.tors, 2);
	cr_assert_eq(sc.net.hosts_per_tor, 4);
	cr_assert_eq(sc.net.spines, 4);
	cr_assert_eq(sc.net.host.rate_bps, 50000000ULL);
	cr_assert_eq(sc.net.fabric.rate_bps, 50000000ULL);
	cr_assert_eq(sc.net.fabric.queue_bytes, 125000, "20 ms at 50 Mbit/s");
	cr_assert_eq(sc.net.host.queue_bytes, 125000);
	cr_assert_eq(sc.net.fabric.ecn_bytes, 0, "tbf marks nothing");
	cr_assert_eq(sc.net.mtu, 1500);
	cr_assert_eq(sc.net.reroute_ns, 0, "routing never reacts");
	cr_assert_eq(sc.capacity_bps, 400000000ULL, "8 hosts, 2 x 4 uplinks of 50 Mbit/s");
	for (i = 0; i < sc.nflows; i++) {
		cr_assert_neq(sc.flows[i].src / 4, sc.flows[i].dst / 4, "every stream crosses a spine");
		sent[sc.flows[i].src] += sc.flows[i].size;
		got[sc.flows[i].dst] += sc.flows[i].size;
	}
	for (i = 0; i < 8; i++) {
		cr_assert_eq(sent[i], s.stream_bytes, "host %zu sends one stream", i);
		cr_assert_eq(got[i], s.stream_bytes, "host %zu receives one stream", i);
	}
	fabsim_scenario_free(&sc);
}

/* scenario @name of @s run by @tp to its end on a fresh fabric; the caller closes both */
static void wire8_run(const struct fabsim_shape *s, const char *name,
		      const struct fabsim_transport *tp, struct fabsim_scenario *sc,
		      struct braid_fabsim **fs, struct fabsim_run *run)
{
	cr_assert_eq(fabsim_scenario_build(name, s, 1, sc), 0);
	cr_assert_eq(braid_fabsim_open(&sc->net, fs), 0);
	cr_assert_eq(fabsim_scenario_apply(sc, *fs), 0);
	cr_assert_eq(fabsim_run_open(run, *fs, tp, sc->flows, sc->nflows, &sc->opts), 0);
	fabsim_run_go(run, sc->limit_ns);
}

static void wire8_close(struct fabsim_scenario *sc, struct braid_fabsim *fs, struct fabsim_run *run)
{
	fabsim_run_close(run);
	braid_fabsim_close(fs);
	fabsim_scenario_free(sc);
}

/*
 * RD's packets fill the 1500-byte MTU, RC's carry its 1024-byte IB MTU (the
 * fabric refuses anything larger, so every byte arriving proves they fit),
 * and RD sprays every stream of the permutation over all 4 spines.
 */
Test(fabsim, wire8__permutation_fits_the_mtu_and_rd_uses_every_spine)
{
	struct fabsim_shape s = wire8();
	struct fabsim_scenario sc;
	struct braid_fabsim *fs;
	struct fabsim_run run;
	struct fabsim_counters cnt;
	int t, sp;

	for (t = 0; t < 2; t++) {
		const struct fabsim_transport *tp = t ? &fabsim_rc : &fabsim_rd;

		wire8_run(&s, "permutation", tp, &sc, &fs, &run);
		check_all_intact(&run);
		/* first sends: 8 streams of 2 MiB in 64 KiB messages, each message in packets of
		 * 1416 bytes (RD: 1472 less its 56-byte header) or 1024 (RC's IB MTU) */
		run.tp->counters(&run, &cnt);
		cr_assert_eq(cnt.data_pkts - cnt.retx_pkts, 8 * 32 * (tp == &fabsim_rd ? 47 : 64),
			     "%s: %llu packets sent first", tp->name,
			     (unsigned long long)(cnt.data_pkts - cnt.retx_pkts));
		if (tp == &fabsim_rd) {
			for (int tor = 0; tor < 2; tor++) {
				uint64_t n[4], all = 0;

				for (sp = 0; sp < 4; sp++) {
					n[sp] = braid_fabsim_link_stats(fs, braid_fabsim_link(
						fs, BRAID_FABSIM_TOR_UP, tor, sp))->pkts;
					all += n[sp];
				}
				for (sp = 0; sp < 4; sp++)
					cr_assert_gt(n[sp] * 10, all, "ToR %d: spine %d took %llu of %llu",
						     tor, sp, (unsigned long long)n[sp],
						     (unsigned long long)all);
			}
		}
		wire8_close(&sc, fs, &run);
	}
}

/* 7 streams into host 0: every message arrives whole with either transport, and the report sees its link */
Test(fabsim, wire8__incast_delivers_every_byte)
{
	struct fabsim_shape s = wire8();
	struct fabsim_scenario sc;
	struct braid_fabsim *fs;
	struct fabsim_run run;
	struct fabsim_result r;

	for (int t = 0; t < 2; t++) {
		uint64_t got = 0;
		size_t i;

		wire8_run(&s, "incast", t ? &fabsim_rc : &fabsim_rd, &sc, &fs, &run);
		check_all_intact(&run);
		for (i = 0; i < run.nflows; i++) {
			cr_assert_eq(run.flows[i].dst, 0);
			got += run.flows[i].size;
		}
		cr_assert_eq(got, 7 * s.incast_size);
		cr_assert_eq(fabsim_result_collect(&r, &sc, &run, NULL, NULL, NULL), 0);
		cr_assert(r.streams);
		cr_assert_eq(r.nstreams, 7);
		cr_assert_eq(r.recovered, 7);
		cr_assert(r.rx_busy > 0 && r.rx_busy <= 1.0, "busy %f", r.rx_busy);
		cr_assert_gt(r.goodput_bps, 0);
		cr_assert_leq(r.goodput_bps, (double)s.host_bps, "no more than the receiver's link");
		wire8_close(&sc, fs, &run);
	}
}

/*
 * A spine link black-holed mid-run, routing never reacting: the dead link
 * keeps swallowing what is hashed onto it, and RD still delivers every
 * stream whole by moving its paths.
 */
Test(fabsim, wire8__blackhole_without_reroute_rd_completes)
{
	struct fabsim_shape s = wire8();
	struct fabsim_scenario sc;
	struct braid_fabsim *fs;
	struct fabsim_run run;
	struct fabsim_result r;
	int up, e, hashed = 0;

	/* long enough a stream for 5 ticks before the failure and some after */
	s.stream_bytes = 4 << 20;
	s.fail_at_ns = 120 * MS;
	wire8_run(&s, "blackhole", &fabsim_rd, &sc, &fs, &run);
	check_all_intact(&run);
	up = braid_fabsim_link(fs, BRAID_FABSIM_TOR_UP, 0, 0);
	cr_assert_gt(braid_fabsim_link_stats(fs, up)->drops_down, 0, "the black hole swallowed packets");
	for (e = 0; e < 64; e++)
		hashed += braid_fabsim_route(fs, 0, 4, (uint16_t)e) == 0;
	cr_assert_gt(hashed, 0, "routing still hashes onto the dead spine");
	cr_assert_eq(fabsim_result_collect(&r, &sc, &run, NULL, NULL, NULL), 0);
	cr_assert_eq(r.recovered, 8);
	cr_assert_geq(r.stall_ns, 0);
	cr_assert_gt(r.before_bps, 0);
	cr_assert_gt(r.after_bps, 0);
	wire8_close(&sc, fs, &run);
}

/* ---- the report's stall, from a timeline made by hand ---- */

static void no_counters(struct fabsim_run *run, struct fabsim_counters *c)
{
	(void)run;
	*c = (struct fabsim_counters){ 0 };
}

static const struct fabsim_transport fake_tp = { .name = "fake", .counters = no_counters };

/*
 * One stream delivering 1 KiB every millisecond for a second, but nothing
 * from 300 to 420 ms: measured around 300 ms with 10 ms ticks, the stall
 * is the 12 empty ticks, and the goodput before and after (the stall left
 * out) are both 8.192 Mbit/s.
 */
Test(fabsim, report__stall_and_goodput_around_a_gap)
{
	struct braid_fabsim_cfg c = small_cfg();
	struct braid_fabsim *fs = open_small(&c);
	struct fabsim_scenario sc = { .name = "gap", .streams = true, .tick_ns = 10 * MS,
				      .ref_ns = 300 * MS, .rx_host = -1, .capacity_bps = 10000000 };
	struct fabsim_flow flows[1000];
	struct fabsim_run run = { .net = fs, .tp = &fake_tp, .flows = flows, .now = 1000 * MS };
	struct fabsim_result r;
	size_t n = 0;

	for (uint64_t t = 1; t <= 1000; t++) {
		if (t > 300 && t <= 420)
			continue;
		flows[n] = (struct fabsim_flow){ .src = 0, .dst = 4, .id = (uint32_t)n, .size = 1024,
						 .start_ns = 0, .recv_ns = t * MS - 1, .intact = true };
		n++;
	}
	run.nflows = n;
	cr_assert_eq(fabsim_result_collect(&r, &sc, &run, NULL, NULL, NULL), 0);
	cr_assert_eq(r.nstreams, 1);
	cr_assert_eq(r.stall_ns, 120 * (int64_t)MS, "stall %lld ns", (long long)r.stall_ns);
	cr_assert_float_eq(r.before_bps, 8192000.0, 1.0, "before %f", r.before_bps);
	cr_assert_float_eq(r.after_bps, 8192000.0, 1.0, "after %f", r.after_bps);
	cr_assert_float_eq(r.goodput_bps, n * 1024 * 8e9 / (1000 * MS - 1), 1.0);
	braid_fabsim_close(fs);
}
