/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_rd_bench.c: benchmark of the RD engine alone (no sockets): message rate
 * through two engines back to back, goodput against loss over the sim fabric
 * with spraying versus one path, a sick path, and idle state per peer.
 *
 *   braid_rd_bench [--quick] [--rate-only] [-h|--help]
 *
 * Time in the goodput runs is the sim's virtual time, so the numbers do not
 * depend on how busy this machine is; the message rate is wall-clock time and
 * does.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid_cli.h"
#include "rd_direct.h"
#include "rd_harness.h"
#include "braid_rd_int.h"

#define MS 1000000ULL

static double wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- message rate: 64-byte messages through a sender and a receiver engine ---- */

static void bench_rate(long nmsg)
{
	struct braid_rd_config c;
	struct direct d;
	static uint8_t sbuf[64], rbuf[256][64];
	struct braid_rd_comp comps[256];
	long sent = 0, recvd = 0, posted = 0;
	double t0, t1;

	braid_rd_config_default(&c);
	c.mtu = 65507;
	c.max_sends = 512;
	c.max_recvs = 512;
	if (direct_open(&d, &c))
		exit(1);
	t0 = wall_ns();
	while (recvd < nmsg) {
		int i, n;

		while (posted - recvd < 256 && posted < nmsg) {
			struct iovec iov = { rbuf[posted % 256], 64 };
			struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .flags = 0 };

			if (braid_rd_post_recv(d.rd[1], &r, d.now))
				break;
			posted++;
		}
		for (i = 0; i < 128 && sent < nmsg; i++) {
			struct iovec iov = { sbuf, 64 };
			struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = d.key[1],
						   .flags = BRAID_RD_NO_COMP };

			if (braid_rd_send(d.rd[0], &s, d.now))
				break;
			sent++;
		}
		direct_pump(&d);
		while ((n = braid_rd_poll(d.rd[1], comps, 256)) > 0)
			recvd += n;
		while (braid_rd_poll(d.rd[0], comps, 256) > 0)
			;
	}
	t1 = wall_ns();
	printf("message rate (64 B, sender + receiver engine on one core, no loss):\n");
	printf("  %ld messages in %.3f s: %.2f M msg/s, %.0f ns per message\n", nmsg,
	       (t1 - t0) / 1e9, nmsg / ((t1 - t0) / 1e9) / 1e6, (t1 - t0) / nmsg);
	printf("  packets: %lu data, %lu acks\n\n",
	       (unsigned long)braid_rd_get_stats(d.rd[0])->tx_data,
	       (unsigned long)braid_rd_get_stats(d.rd[1])->tx_acks);
	direct_close(&d);
}

/* ---- goodput over the sim ---- */

struct stream {
	struct harness *h;
	size_t msg;
	int inflight;
	long done_bytes;
	size_t seen_recv;
};

static uint8_t stream_src[1 << 20], stream_dst[64][1 << 20];

static void stream_refill(struct stream *s)
{
	struct h_node *rx = &s->h->nodes[1], *tx = &s->h->nodes[0];
	size_t i;

	/* count receives that completed, re-post them, keep sends in flight */
	for (i = s->seen_recv; i < rx->ncomps; i++) {
		struct braid_rd_comp *c = &rx->comps[i];
		size_t slot = (size_t)(uintptr_t)c->context - 1;
		struct iovec iov = { stream_dst[slot], s->msg };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .context = c->context };

		if (!c->err)
			s->done_bytes += (long)c->len;
		braid_rd_post_recv(rx->rd, &r, s->h->now);
	}
	s->seen_recv = rx->ncomps;
	if (rx->ncomps > H_MAX_COMPS - 1024) {
		rx->ncomps = 0;
		s->seen_recv = 0;
	}
	while (tx->ncomps) {
		tx->ncomps--;
		s->inflight--;
	}
	while (s->inflight < 16) {
		struct iovec iov = { stream_src, s->msg };
		struct braid_rd_send snd = { .iov = &iov, .iov_count = 1, .peer = h_key(1) };

		if (braid_rd_send(tx->rd, &snd, s->h->now))
			break;
		s->inflight++;
	}
}

/*
 * One goodput run: 8 sim paths of 10 Gbit/s, 10 us each way; the sender keeps
 * 16 messages of @msg bytes in flight for @dur of virtual time.
 * @loss_all: loss on every path; @bad_path/@bad_loss: one path's loss;
 * @paths: engine paths (1 = no spraying); @health: path health on.
 */
static uint64_t rate_gbps = 10;
#define SICK_SEEDS 5
#define SICK_NIC 100	/* Gbit/s: each host's link; the fabric behind it has 8 x 25 */

static double goodput_at(size_t msg, double loss_all, int bad_path, double bad_loss, int paths,
			 bool health, uint64_t dur, uint64_t seed, struct braid_rd_stats *st,
			 uint64_t nic_gbps)
{
	struct braid_sim_path_cfg p = { .delay_ns = 10000, .jitter_ns = 1000,
					.rate_bps = rate_gbps * 1000000000ULL, .loss = loss_all };
	struct braid_rd_config c;
	struct harness h;
	struct stream s = { &h, msg, 0, 0, 0 };
	int i;

	braid_rd_config_default(&c);
	c.mtu = 4096;
	c.paths = (uint32_t)paths;
	c.path_health = health;
	c.epoch = 1;
	c.seed = seed;
	if (getenv("BENCH_CC_NONE"))
		c.cc = &braid_cc_none;
	c.stage_pkts = 8192;
	if (h_init(&h, 2, 8, &p, &c, seed))
		exit(1);
	for (i = 0; i < 2; i++)
		braid_sim_set_node_rate(h.sim, i, nic_gbps * 1000000000ULL);
	if (bad_path >= 0) {
		struct braid_sim_path_cfg b = p;

		b.loss = bad_loss;
		braid_sim_set_path(h.sim, bad_path, &b);
	}
	for (i = 0; i < 64; i++) {
		struct iovec iov = { stream_dst[i], msg };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1, .context = (void *)(uintptr_t)(i + 1) };

		braid_rd_post_recv(h.nodes[1].rd, &r, 0);
	}
	/* warm up 1 ms, then measure */
	while (h.now < 1 * MS) {
		stream_refill(&s);
		h_step(&h, 1 * MS);
	}
	/* goodput: distinct payload bytes the receiver accepted (duplicates excluded) */
	uint64_t rx0 = braid_rd_get_stats(h.nodes[1].rd)->rx_bytes;
	while (h.now < 1 * MS + dur) {
		stream_refill(&s);
		if (!h_step(&h, 1 * MS + dur))
			break;
	}
	stream_refill(&s);
	uint64_t rx1 = braid_rd_get_stats(h.nodes[1].rd)->rx_bytes;
	if (st)
		*st = *braid_rd_get_stats(h.nodes[0].rd);
	if (getenv("BENCH_DEBUG")) {
		const struct braid_rd_stats *r = braid_rd_get_stats(h.nodes[1].rd);

		fprintf(stderr, "  [rx drops:");
		for (int k = 0; k < BRAID_DROP_MAX; k++)
			if (r->drops[k])
				fprintf(stderr, " %s=%lu", braid_drop_reason_str(k), (unsigned long)r->drops[k]);
		fprintf(stderr, "; rack %lu (path %lu) rto %lu]\n",
			(unsigned long)braid_rd_get_stats(h.nodes[0].rd)->rack_losses,
			(unsigned long)braid_rd_get_stats(h.nodes[0].rd)->rack_path_losses,
			(unsigned long)braid_rd_get_stats(h.nodes[0].rd)->rto_fires);
		fprintf(stderr, "  [route packets:");
		for (int k = 0; k < 8; k++)
			fprintf(stderr, " %lu", (unsigned long)braid_sim_path_stats(h.sim, k)->sent);
		fprintf(stderr, "]\n");
	}
	h_fini(&h);
	return (double)(rx1 - rx0) * 8.0 / (double)dur;	/* Gbit/s (bits per ns) */
}

static double goodput(size_t msg, double loss_all, int bad_path, double bad_loss, int paths,
		      bool health, uint64_t dur, uint64_t seed, struct braid_rd_stats *st)
{
	return goodput_at(msg, loss_all, bad_path, bad_loss, paths, health, dur, seed, st, 0);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_rd_bench [--quick] [--rate-only]\n"
		"Benchmarks braid's RD engine alone (no sockets): message rate through two engines\n"
		"back to back, goodput against loss on the simulated fabric (sprayed and on one\n"
		"path), a sick path, and the state kept per peer.\n"
		"  --quick      shorter runs (5 ms of virtual time, 200,000 messages)\n"
		"  --rate-only  the message rate only (200,000 messages)\n"
		"  -h, --help   this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' }, { "rate-only", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	bool quick = false, rate_only = false;
	uint64_t dur;
	double losses[] = { 0, 0.001, 0.01, 0.02, 0.05, 0.10, 0.20 };
	struct braid_rd_stats st;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q': quick = true; break;
		case 'r': rate_only = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_rd_bench", argc, argv))
		return BRAID_CLI_EXIT_USAGE;
	dur = (quick ? 5 : 20) * MS;
	bench_rate(quick || rate_only ? 200000 : 1000000);
	if (rate_only)
		return 0;

	printf("goodput against loss on every path (sim: 8 paths x 10 Gbit/s, 10 us, 1 MiB messages,\n"
	       "%llu ms virtual time; single path = one path of the same fabric):\n",
	       (unsigned long long)(dur / MS));
	printf("  %-6s %14s %9s %14s %9s %10s\n", "loss", "sprayed Gb/s", "vs clean",
	       "1 path Gb/s", "vs clean", "retx");
	double clean_spray = 0, clean_one = 0;
	for (i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		double g8 = goodput(1 << 20, losses[i], -1, 0, 16, true, dur, 42, &st);
		double g1 = goodput(1 << 20, losses[i], -1, 0, 1, false, dur, 42, NULL);

		if (i == 0) {
			clean_spray = g8;
			clean_one = g1;
		}
		printf("  %5.1f%% %14.2f %8.0f%% %14.2f %8.0f%% %10lu\n", losses[i] * 100, g8,
		       100 * g8 / clean_spray, g1, 100 * g1 / clean_one,
		       (unsigned long)st.retx_pkts);
	}

	printf("\none of 8 paths drops 50%% (the rest clean; paths of 25 Gbit/s behind a 100 Gbit/s host\n"
	       "link at each end, so the fabric has capacity to spare and the cost measured is the loss):\n");
	rate_gbps = 25;
	{
		/* five seeds: one run's ratio moves by a few points with the seed */
		double base = 0, base_off = 0, health = 0, nohealth = 0, one_clean, one_bad;
		double fab_base = 0, fab_health = 0;
		unsigned long redraws = 0;
		uint64_t seed;

		for (seed = 1; seed <= SICK_SEEDS; seed++) {
			base += goodput_at(1 << 20, 0, -1, 0, 16, true, dur, seed, NULL, SICK_NIC);
			base_off += goodput_at(1 << 20, 0, -1, 0, 16, false, dur, seed, NULL, SICK_NIC);
			health += goodput_at(1 << 20, 0, 3, 0.5, 16, true, dur, seed, &st, SICK_NIC);
			redraws += st.path_redraws;
			nohealth += goodput_at(1 << 20, 0, 3, 0.5, 16, false, dur, seed, NULL, SICK_NIC);
			/* no host link: the flow fills the fabric, so it loses the bad path's capacity too */
			fab_base += goodput_at(1 << 20, 0, -1, 0, 16, true, dur, seed, NULL, 0);
			fab_health += goodput_at(1 << 20, 0, 3, 0.5, 16, true, dur, seed, NULL, 0);
		}
		one_clean = goodput(1 << 20, 0, -1, 0, 1, false, dur, 7, NULL);
		/* a single-path flow whose one path is the bad one (engine path 0 -> sim path 0) */
		one_bad = goodput(1 << 20, 0, 0, 0.5, 1, false, dur, 7, NULL);
		printf("  (means over %d seeds)\n", SICK_SEEDS);
		printf("  sprayed, path health on:  %6.2f Gb/s = %5.1f%% of clean (%lu redraws)\n",
		       health / SICK_SEEDS, 100 * health / base, redraws);
		printf("  sprayed, path health off: %6.2f Gb/s = %5.1f%% of clean\n", nohealth / SICK_SEEDS,
		       100 * nohealth / base_off);
		printf("  without the host link limit (the flow fills the fabric; 1/8 of its capacity is gone):\n"
		       "  sprayed, path health on:  %6.2f Gb/s = %5.1f%% of clean\n", fab_health / SICK_SEEDS,
		       100 * fab_health / fab_base);
		printf("  single path, on the bad path: %6.2f Gb/s = %5.1f%% of its clean %.2f Gb/s\n",
		       one_bad, 100 * one_bad / one_clean, one_clean);
	}

	printf("\nstate per peer (struct sizes; bench/braid_peers.sh measures it whole):\n");
	printf("  an idle peer: its idle record (struct rd_idle) %zu bytes + 16 bytes of map slot\n"
	       "    (its conn goes, and the shared entry unless another endpoint holds it)\n",
	       sizeof(struct rd_idle));
	printf("  a peer with work or recent traffic: struct rd_conn %zu bytes + 16 of map slot +\n"
	       "    the shared peer-table entry (struct braid_peer) %zu bytes\n",
	       sizeof(struct rd_conn), sizeof(struct braid_peer));
	printf("  an active flow adds %zu bytes (window state, pooled)\n",
	       (size_t)(sizeof(struct rd_flow) + 16 * sizeof(struct braid_path) + 256 * (sizeof(struct rd_txpkt) + 8) + 2 * 32));
	return 0;
}
