/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_scen.c: the simulator's scenarios: a permutation, an all-to-all, a 64-to-1 incast, a ToR-spine link failing mid-run, one lossy link. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "fabsim_bench.h"

#define US	1000ULL
#define MS	1000000ULL

const char *const fabsim_scenario_names[] = {
	"permutation", "alltoall", "incast", "failure", "lossy", NULL,
};

void fabsim_shape_default(struct fabsim_shape *s, bool small)
{
	*s = (struct fabsim_shape){
		.tors = 32, .hosts_per_tor = 32, .spines = 16,
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

/* 100 Gbit/s hosts, ToR-spine links of 200 Gbit/s (non-blocking when spines = hosts_per_tor / 2),
 * 1 us a link, 512 KiB a port, ECN above 100 KiB */
static void net_cfg(const struct fabsim_shape *s, uint64_t seed, struct braid_fabsim_cfg *c)
{
	*c = (struct braid_fabsim_cfg){
		.tors = s->tors, .hosts_per_tor = s->hosts_per_tor, .spines = s->spines,
		.host = { .rate_bps = 100000000000ULL, .delay_ns = 1000, .queue_bytes = 512 << 10,
			  .ecn_bytes = 100 << 10 },
		.fabric = { .rate_bps = 200000000000ULL, .delay_ns = 1000, .queue_bytes = 512 << 10,
			    .ecn_bytes = 100 << 10 },
		.overhead = 66,	/* Ethernet 14 + FCS 4 + IPv4 20 + UDP 8 + preamble and gap 20 */
		.reroute_ns = s->reroute_ns,
		.seed = seed,
	};
	if (s->no_drop)
		c->host.queue_bytes = c->fabric.queue_bytes = 0;
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
	net_cfg(s, seed, &sc->net);
	sc->bad_tor = sc->bad_spine = -1;
	sc->limit_ns = s->limit_ns;
	if (!strcmp(name, "permutation") || !strcmp(name, "failure") || !strcmp(name, "lossy"))
		ret = build_permutation(sc, s, seed);
	else if (!strcmp(name, "alltoall"))
		ret = build_alltoall(sc, s);
	else if (!strcmp(name, "incast"))
		ret = build_incast(sc, s);
	else
		return -FI_ENOENT;
	if (ret)
		return ret;
	for (int i = 0; fabsim_scenario_names[i]; i++)
		if (!strcmp(name, fabsim_scenario_names[i]))
			sc->name = fabsim_scenario_names[i];
	len = strlen(sc->what);
	if (!strcmp(name, "failure")) {
		sc->bad_tor = sc->bad_spine = 0;
		sc->fail_at_ns = s->fail_at_ns;
		snprintf(sc->what + len, sizeof(sc->what) - len,
			 "; ToR 0 - spine 0 fails at %llu us%s",
			 (unsigned long long)(s->fail_at_ns / US),
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
