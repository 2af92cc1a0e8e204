/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_scen.c: the simulator's profiles and scenarios: on 1,024 (or 64) hosts a permutation, an all-to-all, a 64-to-1 incast, a ToR-spine link failing mid-run, one lossy link; on the namespace fabric's 8-host leaf-spine (wire-8) streams in a permutation, a 7-to-1 incast, a black-holed spine link, a lossy one. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "fabsim_bench.h"

#define US	1000ULL
#define MS	1000000ULL

const char *const fabsim_scenario_names[] = {
	"permutation", "alltoall", "incast", "failure", "lossy", NULL,
};

const char *const fabsim_wire_scenario_names[] = {
	"permutation", "incast", "blackhole", "lossy", NULL,
};

const char *const fabsim_profile_names[] = { "dc", "dc-small", "wire-8", NULL };

/*
 * dc: 100 Gbit/s hosts, ToR-spine links of 200 Gbit/s (non-blocking when
 * spines = hosts_per_tor / 2), 1 us a link, 512 KiB a port, ECN above
 * 100 KiB, 66 bytes of framing (Ethernet 14 + FCS 4 + IPv4 20 + UDP 8 +
 * preamble and gap 20), no MTU (4 KiB packets).
 */
void fabsim_shape_default(struct fabsim_shape *s, bool small)
{
	*s = (struct fabsim_shape){
		.profile = small ? "dc-small" : "dc", .scenarios = fabsim_scenario_names,
		.tors = 32, .hosts_per_tor = 32, .spines = 16,
		.host_bps = 100000000000ULL, .fabric_bps = 200000000000ULL, .link_delay_ns = 1000,
		.queue_bytes = 512 << 10, .ecn_bytes = 100 << 10, .overhead = 66,
		.perm_flows = 4, .perm_size = 1 << 20,
		.a2a_hosts = 64, .a2a_size = 64 << 10,
		.incast_senders = 64, .incast_size = 256 << 10,
		.fail_at_ns = 150 * US, .reroute_ns = 50 * MS,
		.loss = 0.01,
		.limit_ns = 10000 * MS,
	};
	if (small) {
		s->tors = 8;
		s->hosts_per_tor = 8;
		s->spines = 4;
		s->a2a_hosts = 16;
	}
}

/*
 * wire-8: tools/fabric's leaf-spine of namespaces: host hX on leaf
 * ((X-1) mod 2)+1 (here hosts 0-3 under ToR 0 are h1, h3, h5, h7 and hosts
 * 4-7 under ToR 1 are h2, h4, h6, h8), each leaf joined to 4 spines, every
 * link at 50 Mbit/s (4 x 50 up per leaf against 4 hosts x 50: non-
 * blocking) behind a tbf of 20 ms of queue at its rate, no ECN, MTU 1500;
 * tbf on a veth counts the Ethernet header, IPv4 and UDP (42 bytes) per
 * packet. 50 us a link stands in for the namespaces' forwarding. Routing
 * never reacts to a failure. RD as the provider sets it up: RTO floor
 * 1 ms, tail-loss probe floor 300 us. Streams of 64 KiB messages, 64
 * outstanding, as tools/ab's 64 KiB streams.
 */
static void shape_wire8(struct fabsim_shape *s)
{
	*s = (struct fabsim_shape){
		.profile = "wire-8", .scenarios = fabsim_wire_scenario_names,
		.tors = 2, .hosts_per_tor = 4, .spines = 4,
		.host_bps = 50000000ULL, .fabric_bps = 50000000ULL,
		.link_delay_ns = 50 * US, .queue_ns = 20 * MS, .overhead = 42, .mtu = 1500,
		.opts = { .rd_rto_min_ns = 1 * MS, .rd_tlp_min_ns = 300 * US },
		.incast_senders = 7, .incast_size = 4 << 20,
		.stream_bytes = 16 << 20, .stream_msg = 64 << 10, .stream_window = 64,
		.tick_ns = 10 * MS,
		.fail_at_ns = 200 * MS, .reroute_ns = 0,
		.loss = 0.01,
		.limit_ns = 30000 * MS,
	};
}

int fabsim_shape_profile(struct fabsim_shape *s, const char *name)
{
	if (!strcmp(name, "dc") || !strcmp(name, "dc-small"))
		fabsim_shape_default(s, !strcmp(name, "dc-small"));
	else if (!strcmp(name, "wire-8"))
		shape_wire8(s);
	else
		return -FI_ENOENT;
	return 0;
}

bool fabsim_scenario_known(const struct fabsim_shape *shape, const char *name)
{
	for (int i = 0; shape->scenarios[i]; i++)
		if (!strcmp(name, shape->scenarios[i]))
			return true;
	return false;
}

/* a port's queue limit on a link of @rate_bps */
static uint64_t port_queue(const struct fabsim_shape *s, uint64_t rate_bps)
{
	if (s->no_drop)
		return 0;
	if (s->queue_ns)
		return (uint64_t)((unsigned __int128)rate_bps * s->queue_ns / 8000000000ULL);
	return s->queue_bytes;
}

static void net_cfg(const struct fabsim_shape *s, uint64_t seed, struct braid_fabsim_cfg *c)
{
	*c = (struct braid_fabsim_cfg){
		.tors = s->tors, .hosts_per_tor = s->hosts_per_tor, .spines = s->spines,
		.host = { .rate_bps = s->host_bps, .delay_ns = s->link_delay_ns,
			  .queue_bytes = port_queue(s, s->host_bps), .ecn_bytes = s->ecn_bytes },
		.fabric = { .rate_bps = s->fabric_bps, .delay_ns = s->link_delay_ns,
			    .queue_bytes = port_queue(s, s->fabric_bps), .ecn_bytes = s->ecn_bytes },
		.overhead = s->overhead,
		.reroute_ns = s->reroute_ns,
		.seed = seed,
		.mtu = s->mtu,
	};
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static struct fabsim_flow *flows_alloc(struct fabsim_scenario *sc, size_t n)
{
	sc->flows = calloc(n ? n : 1, sizeof(*sc->flows));
	sc->nflows = 0;
	return sc->flows;
}

static struct fabsim_flow *flow_add(struct fabsim_scenario *sc, int src, int dst, uint64_t size,
				    uint64_t start)
{
	struct fabsim_flow *f = &sc->flows[sc->nflows];

	*f = (struct fabsim_flow){ .src = src, .dst = dst, .id = (uint32_t)sc->nflows,
				   .size = size, .start_ns = start, .next = -1 };
	sc->nflows++;
	return f;
}

/* a random permutation of the hosts where nobody sends under its own ToR */
static int *cross_permutation(const struct fabsim_shape *s, uint64_t seed)
{
	int n = s->tors * s->hosts_per_tor, i, j, t, bad;
	int *p = malloc((size_t)n * sizeof(*p));
	uint64_t x = seed | 1;

	if (!p)
		return NULL;
	for (i = 0; i < n; i++)
		p[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = (int)(rnd(&x) % (uint64_t)(i + 1));
		t = p[i], p[i] = p[j], p[j] = t;
	}
	/* swap away every same-ToR pair with a random partner that stays valid */
	do {
		bad = 0;
		for (i = 0; i < n; i++) {
			if (p[i] / s->hosts_per_tor != i / s->hosts_per_tor)
				continue;
			bad++;
			j = (int)(rnd(&x) % (uint64_t)n);
			if (p[j] / s->hosts_per_tor != i / s->hosts_per_tor &&
			    p[i] / s->hosts_per_tor != j / s->hosts_per_tor)
				t = p[i], p[i] = p[j], p[j] = t;
		}
	} while (bad && s->tors > 1);
	return p;
}

/* every host sends perm_flows flows of perm_size, one after another, to its partner */
static int build_permutation(struct fabsim_scenario *sc, const struct fabsim_shape *s, uint64_t seed)
{
	int n = s->tors * s->hosts_per_tor, h, k;
	int *p = cross_permutation(s, seed);

	if (!p || !flows_alloc(sc, (size_t)n * (size_t)s->perm_flows)) {
		free(p);
		return -FI_ENOMEM;
	}
	for (h = 0; h < n; h++)
		for (k = 0; k < s->perm_flows; k++) {
			struct fabsim_flow *f = flow_add(sc, h, p[h], s->perm_size, k ? UINT64_MAX : 0);

			if (k + 1 < s->perm_flows)
				f->next = (int64_t)sc->nflows;
		}
	free(p);
	snprintf(sc->what, sizeof(sc->what),
		 "each of %d hosts sends %d x %llu KiB in turn to a random partner under another ToR",
		 n, s->perm_flows, (unsigned long long)(s->perm_size >> 10));
	return 0;
}

/* the i-th of @m hosts spread over the ToRs: ToR i % tors, its host i / tors */
static int spread_host(const struct fabsim_shape *s, int i, int tor0)
{
	int tors = s->tors - tor0;

	return (tor0 + i % tors) * s->hosts_per_tor + (i / tors) % s->hosts_per_tor;
}

static int build_alltoall(struct fabsim_scenario *sc, const struct fabsim_shape *s)
{
	int m = s->a2a_hosts, i, j;

	if (m > s->tors * s->hosts_per_tor)
		m = s->tors * s->hosts_per_tor;
	if (!flows_alloc(sc, (size_t)m * (size_t)(m - 1)))
		return -FI_ENOMEM;
	/* every pair at once; each host's sends in an order of its own (i + 1, i + 2, ...) */
	for (j = 1; j < m; j++)
		for (i = 0; i < m; i++)
			flow_add(sc, spread_host(s, i, 0), spread_host(s, (i + j) % m, 0), s->a2a_size, 0);
	snprintf(sc->what, sizeof(sc->what),
		 "%d hosts (spread over the ToRs) each send %llu KiB to each other, all at once",
		 m, (unsigned long long)(s->a2a_size >> 10));
	return 0;
}

static int build_incast(struct fabsim_scenario *sc, const struct fabsim_shape *s)
{
	int m = s->incast_senders, i;

	if (m > (s->tors - 1) * s->hosts_per_tor)
		m = (s->tors - 1) * s->hosts_per_tor;
	if (!flows_alloc(sc, (size_t)m))
		return -FI_ENOMEM;
	for (i = 0; i < m; i++)
		flow_add(sc, spread_host(s, i, 1), 0, s->incast_size, 0);
	snprintf(sc->what, sizeof(sc->what),
		 "%d hosts under other ToRs each send %llu KiB to host 0 at once", m,
		 (unsigned long long)(s->incast_size >> 10));
	return 0;
}

/*
 * a stream of @bytes from @src to @dst: messages of stream_msg (the last
 * one shorter), stream_window of them at the start, each of the rest
 * started when the one stream_window before it is delivered
 */
static void stream_add(struct fabsim_scenario *sc, const struct fabsim_shape *s, int src, int dst,
		       uint64_t bytes)
{
	uint64_t n = (bytes + s->stream_msg - 1) / s->stream_msg, k;
	size_t base = sc->nflows;

	for (k = 0; k < n; k++) {
		uint64_t size = k + 1 < n ? s->stream_msg : bytes - k * s->stream_msg;
		struct fabsim_flow *f = flow_add(sc, src, dst, size,
						 k < (uint64_t)s->stream_window ? 0 : UINT64_MAX);

		if (k + (uint64_t)s->stream_window < n)
			f->next = (int64_t)(base + k + (uint64_t)s->stream_window);
	}
}

static size_t stream_msgs(const struct fabsim_shape *s, uint64_t bytes)
{
	return (size_t)((bytes + s->stream_msg - 1) / s->stream_msg);
}

/* every host streams stream_bytes to a random partner under another ToR, all at once */
static int build_wire_permutation(struct fabsim_scenario *sc, const struct fabsim_shape *s,
				  uint64_t seed)
{
	int n = s->tors * s->hosts_per_tor, h;
	int *p = cross_permutation(s, seed);

	if (!p || !flows_alloc(sc, (size_t)n * stream_msgs(s, s->stream_bytes))) {
		free(p);
		return -FI_ENOMEM;
	}
	for (h = 0; h < n; h++)
		stream_add(sc, s, h, p[h], s->stream_bytes);
	free(p);
	/* every stream crosses a spine: the hosts' rate, or the ToRs' uplinks if less */
	sc->capacity_bps = (uint64_t)n * s->host_bps;
	if ((uint64_t)s->tors * (uint64_t)s->spines * s->fabric_bps < sc->capacity_bps)
		sc->capacity_bps = (uint64_t)s->tors * (uint64_t)s->spines * s->fabric_bps;
	snprintf(sc->what, sizeof(sc->what),
		 "each of %d hosts streams %llu MiB (%llu KiB messages, %d outstanding) to a random "
		 "partner under another ToR, all at once", n,
		 (unsigned long long)(s->stream_bytes >> 20), (unsigned long long)(s->stream_msg >> 10),
		 s->stream_window);
	return 0;
}

/* incast_senders hosts (every other host at most) stream incast_size each into host 0 */
static int build_wire_incast(struct fabsim_scenario *sc, const struct fabsim_shape *s)
{
	int m = s->incast_senders, i;

	if (m > s->tors * s->hosts_per_tor - 1)
		m = s->tors * s->hosts_per_tor - 1;
	if (!flows_alloc(sc, (size_t)m * stream_msgs(s, s->incast_size)))
		return -FI_ENOMEM;
	for (i = 1; i <= m; i++)
		stream_add(sc, s, i, 0, s->incast_size);
	sc->rx_host = 0;
	sc->capacity_bps = s->host_bps;
	snprintf(sc->what, sizeof(sc->what),
		 "%d hosts stream %llu MiB each (%llu KiB messages, %d outstanding) into host 0 at once",
		 m, (unsigned long long)(s->incast_size >> 20), (unsigned long long)(s->stream_msg >> 10),
		 s->stream_window);
	return 0;
}

/* mark the flows that may cross the bad link: those from or to its ToR */
static void mark_bad_tor(struct fabsim_scenario *sc, const struct fabsim_shape *s)
{
	size_t i;

	for (i = 0; i < sc->nflows; i++) {
		struct fabsim_flow *f = &sc->flows[i];

		f->marked = f->src / s->hosts_per_tor == sc->bad_tor ||
			    f->dst / s->hosts_per_tor == sc->bad_tor;
	}
}

int fabsim_scenario_build(const char *name, const struct fabsim_shape *s, uint64_t seed,
			  struct fabsim_scenario *sc)
{
	size_t len;
	int ret;

	memset(sc, 0, sizeof(*sc));
	if (!fabsim_scenario_known(s, name))
		return -FI_ENOENT;
	net_cfg(s, seed, &sc->net);
	sc->bad_tor = sc->bad_spine = -1;
	sc->rx_host = -1;
	sc->limit_ns = s->limit_ns;
	sc->opts = s->opts;
	sc->opts.seed = seed;
	if (s->scenarios == fabsim_wire_scenario_names) {
		sc->streams = true;
		sc->tick_ns = s->tick_ns;
		sc->ref_ns = s->fail_at_ns;
		if (!strcmp(name, "incast"))
			ret = build_wire_incast(sc, s);
		else
			ret = build_wire_permutation(sc, s, seed);
	} else if (!strcmp(name, "permutation") || !strcmp(name, "failure") || !strcmp(name, "lossy")) {
		ret = build_permutation(sc, s, seed);
	} else if (!strcmp(name, "alltoall")) {
		ret = build_alltoall(sc, s);
	} else {
		ret = build_incast(sc, s);
	}
	if (ret)
		return ret;
	for (int i = 0; s->scenarios[i]; i++)
		if (!strcmp(name, s->scenarios[i]))
			sc->name = s->scenarios[i];
	len = strlen(sc->what);
	if (!strcmp(name, "failure") || !strcmp(name, "blackhole")) {
		sc->bad_tor = sc->bad_spine = 0;
		sc->fail_at_ns = s->fail_at_ns;
		snprintf(sc->what + len, sizeof(sc->what) - len,
			 "; ToR 0 - spine 0 fails at %llu %s%s",
			 (unsigned long long)(s->fail_at_ns % MS ? s->fail_at_ns / US : s->fail_at_ns / MS),
			 s->fail_at_ns % MS ? "us" : "ms",
			 s->reroute_ns ? ", routed around after" : ", never routed around");
		len = strlen(sc->what);
		if (s->reroute_ns)
			snprintf(sc->what + len, sizeof(sc->what) - len, " %llu ms",
				 (unsigned long long)(s->reroute_ns / MS));
	} else if (!strcmp(name, "lossy")) {
		sc->bad_tor = sc->bad_spine = 0;
		sc->loss = s->loss;
		snprintf(sc->what + len, sizeof(sc->what) - len,
			 "; ToR 0 - spine 0 drops %.1f%% each way", 100 * s->loss);
	}
	if (sc->bad_tor >= 0)
		mark_bad_tor(sc, s);
	return 0;
}

int fabsim_scenario_apply(const struct fabsim_scenario *sc, struct braid_fabsim *net)
{
	int up, down, ret;

	if (sc->bad_tor < 0)
		return 0;
	up = braid_fabsim_link(net, BRAID_FABSIM_TOR_UP, sc->bad_tor, sc->bad_spine);
	down = braid_fabsim_link(net, BRAID_FABSIM_SPINE_DOWN, sc->bad_tor, sc->bad_spine);
	if (sc->fail_at_ns) {
		ret = braid_fabsim_schedule(net, sc->fail_at_ns, up, false);
		return ret ? ret : braid_fabsim_schedule(net, sc->fail_at_ns, down, false);
	}
	ret = braid_fabsim_set_loss(net, up, sc->loss);
	return ret ? ret : braid_fabsim_set_loss(net, down, sc->loss);
}

void fabsim_scenario_free(struct fabsim_scenario *sc)
{
	free(sc->flows);
	sc->flows = NULL;
}
