/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_sim_wire.c: the simulated fabric as a wire of the provider
 * (FI_BRAID_WIRE=sim): every endpoint of the process on one lossy, seeded
 * fabric (braid_sim.c) with FI_BRAID_SIM's paths, loss, duplication,
 * reordering and delay, so tests drive the whole provider through the
 * libfabric API over a network that misbehaves on purpose, in one process.
 *
 * Like the DPDK wire, the sim wire owns one address (10.99.0.1/24, "sim0")
 * and a table of its UDP ports: each wire endpoint is a sim node and owns
 * its home port and one per route selector. A datagram crosses the sim with
 * a 4-byte prefix (source and destination port); the selector picks the sim
 * path (selector modulo the paths: a re-drawn slot lands on another path).
 * The sim's clock is the provider's (CLOCK_MONOTONIC); its delays are real.
 * One mutex guards the sim. It has no wait fd: it is polled.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "braid/braid_wire.h"
#include "braid.h"
#include "braid_iov.h"
#include "braid_sim.h"

#define SIM_WIRE_NODES		64
#define SIM_WIRE_MTU		1472
#define SIM_WIRE_PREFIX		4	/* source port, destination port */
#define SIM_WIRE_BURST		64

struct braid_simw {
	struct braid_wire wire;
	int node;
	uint16_t ports[BRAID_WIRE_MAX_PATHS + BRAID_WIRE_SPARE_MAX];
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	int err;
	struct braid_sim *sim;
	int paths;
	uint32_t ip, mask;
	struct braid_simw *node[SIM_WIRE_NODES];
	struct braid_wire_ports ports;
	uint64_t no_owner;	/* datagrams to a port nobody owns */
} sw = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

const struct braid_wire_ops braid_sim_wire_ops;

/*
 * FI_BRAID_SIM: "key=value,..." with seed, paths, loss, dup, reorder (each a
 * fraction 0..1), reorder_us, delay_us, jitter_us, rate_mbit.
 */
static int sim_parse(const char *spec, uint64_t *seed, int *paths, struct braid_sim_path_cfg *cfg)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	*seed = 1;
	*paths = 4;
	memset(cfg, 0, sizeof(*cfg));
	if (!spec || !*spec)
		return 0;
	copy = strdup(spec);
	if (!copy)
		return -FI_ENOMEM;
	for (tok = strtok_r(copy, ", ", &save); tok && !ret; tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '='), *end;
		double v;

		if (!eq) {
			ret = -FI_EINVAL;
			break;
		}
		*eq = '\0';
		v = strtod(eq + 1, &end);
		if (*end || v < 0) {
			ret = -FI_EINVAL;
			break;
		}
		if (!strcmp(tok, "seed"))
			*seed = (uint64_t)v;
		else if (!strcmp(tok, "paths") && v >= 1 && v <= 256)
			*paths = (int)v;
		else if (!strcmp(tok, "loss") && v <= 1)
			cfg->loss = v;
		else if (!strcmp(tok, "dup") && v <= 1)
			cfg->dup = v;
		else if (!strcmp(tok, "reorder") && v <= 1)
			cfg->reorder = v;
		else if (!strcmp(tok, "reorder_us"))
			cfg->reorder_ns = (uint64_t)(v * 1000);
		else if (!strcmp(tok, "delay_us"))
			cfg->delay_ns = (uint64_t)(v * 1000);
		else if (!strcmp(tok, "jitter_us"))
			cfg->jitter_ns = (uint64_t)(v * 1000);
		else if (!strcmp(tok, "rate_mbit"))
			cfg->rate_bps = (uint64_t)(v * 1e6);
		else
			ret = -FI_EINVAL;
	}
	free(copy);
	if (cfg->dup > 0)
		cfg->dup_gap_ns = cfg->delay_ns / 2 + 1000;
	if (cfg->reorder > 0 && !cfg->reorder_ns)
		cfg->reorder_ns = 20000;
	return ret;
}

static void sim_start(void)
{
	struct braid_sim_path_cfg cfg;
	uint64_t seed;

	if (sim_parse(braid_cfg.sim, &seed, &sw.paths, &cfg)) {
		BRAID_WARN(FI_LOG_CORE, "sim wire: FI_BRAID_SIM=%s: not key=value,... of seed, paths, "
			   "loss, dup, reorder, reorder_us, delay_us, jitter_us, rate_mbit\n",
			   braid_cfg.sim);
		sw.err = -FI_EINVAL;
		return;
	}
	sw.sim = braid_sim_create(seed, SIM_WIRE_NODES, sw.paths, &cfg);
	if (!sw.sim) {
		sw.err = -FI_ENOMEM;
		return;
	}
	sw.ip = htonl(0x0a630001);	/* 10.99.0.1 */
	sw.mask = htonl(0xffffff00);
	BRAID_INFO(FI_LOG_CORE, "sim wire: %d paths, seed %llu, loss %.3f, dup %.3f, reorder %.3f, "
		   "delay %llu ns\n", sw.paths, (unsigned long long)seed, cfg.loss, cfg.dup,
		   cfg.reorder, (unsigned long long)cfg.delay_ns);
}

static int sim_ready(void)
{
	pthread_once(&sw.once, sim_start);
	return sw.err;
}

static int simw_open(const struct braid_wire_params *params, struct braid_wire **wire)
{
	struct braid_simw *w;
	int ret, nsel;

	if (!params || !wire || params->paths < 1 || params->paths > BRAID_WIRE_MAX_PATHS ||
	    params->addr.sin_family != AF_INET)
		return -FI_EINVAL;
	ret = sim_ready();
	if (ret)
		return ret;
	if (params->addr.sin_addr.s_addr != htonl(INADDR_ANY) && params->addr.sin_addr.s_addr != sw.ip)
		return -FI_EADDRNOTAVAIL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -FI_ENOMEM;
	nsel = braid_wire_selectors(params->paths);
	w->wire.ops = &braid_sim_wire_ops;
	w->wire.paths = params->paths;
	w->wire.entropies = (uint32_t)nsel;
	w->wire.mtu = SIM_WIRE_MTU;
	pthread_mutex_lock(&sw.lock);
	for (w->node = 0; w->node < SIM_WIRE_NODES && sw.node[w->node]; w->node++)
		;
	if (w->node == SIM_WIRE_NODES) {
		pthread_mutex_unlock(&sw.lock);
		free(w);
		return -FI_ENOMEM;	/* every sim node is taken */
	}
	ret = braid_wire_ports_bind(&sw.ports, w, ntohs(params->addr.sin_port), w->ports, nsel);
	if (ret) {
		pthread_mutex_unlock(&sw.lock);
		free(w);
		return ret;
	}
	/* what flies to an earlier owner of this node is dropped on arrival: its port is not ours */
	sw.node[w->node] = w;
	pthread_mutex_unlock(&sw.lock);
	w->wire.name.sin_family = AF_INET;
	w->wire.name.sin_addr.s_addr = sw.ip;
	w->wire.name.sin_port = htons(w->ports[0]);
	*wire = &w->wire;
	return 0;
}

static void simw_close(struct braid_wire *wire)
{
	struct braid_simw *w = (struct braid_simw *)wire;

	pthread_mutex_lock(&sw.lock);
	braid_wire_ports_unbind(&sw.ports, w->ports, (int)wire->entropies);
	sw.node[w->node] = NULL;
	pthread_mutex_unlock(&sw.lock);
	free(w);
}

static int simw_tx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_simw *w = (struct braid_simw *)wire;
	uint8_t buf[SIM_WIRE_PREFIX + SIM_WIRE_MTU];
	uint64_t now = braid_now_ns();
	int i;

	pthread_mutex_lock(&sw.lock);
	for (i = 0; i < n; i++) {
		struct braid_pkt *pkt = &pkts[i];
		uint32_t sel = pkt->path < wire->entropies ? pkt->path : 0;
		uint16_t sport = w->ports[sel], dport = ntohs(pkt->addr.sin_port);
		struct braid_simw *to = sw.ports.owner[dport];
		size_t len = braid_iov_len(pkt->iov, (size_t)pkt->iovcnt);

		pkt->status = 0;
		if (len > SIM_WIRE_MTU) {
			pkt->status = -FI_EMSGSIZE;
			wire->tx_errors++;
			continue;
		}
		braid_iov_gather(pkt->iov, (size_t)pkt->iovcnt, buf + SIM_WIRE_PREFIX);
		wire->tx_packets++;
		if (pkt->addr.sin_addr.s_addr != sw.ip || !to) {
			sw.no_owner++;	/* nobody there: lost, as on a network */
			continue;
		}
		buf[0] = (uint8_t)(sport >> 8);
		buf[1] = (uint8_t)sport;
		buf[2] = (uint8_t)(dport >> 8);
		buf[3] = (uint8_t)dport;
		if (!len)
			continue;	/* the sim carries no empty packet; braid sends none */
		(void)braid_sim_send(sw.sim, now, w->node, to->node, (int)(sel % (uint32_t)sw.paths),
				     buf, SIM_WIRE_PREFIX + len);
	}
	pthread_mutex_unlock(&sw.lock);
	return n;
}

static int simw_rx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_simw *w = (struct braid_simw *)wire;
	struct braid_sim_pkt in[SIM_WIRE_BURST];
	int got, i, out = 0;

	if (n > SIM_WIRE_BURST)
		n = SIM_WIRE_BURST;
	if (n <= 0)
		return 0;
	pthread_mutex_lock(&sw.lock);
	got = braid_sim_recv(sw.sim, braid_now_ns(), w->node, in, n);
	for (i = 0; i < got; i++) {
		struct braid_pkt *pkt = &pkts[out];
		uint16_t sport, dport;
		size_t len;

		if (in[i].len < SIM_WIRE_PREFIX)
			continue;
		sport = (uint16_t)(in[i].data[0] << 8 | in[i].data[1]);
		dport = (uint16_t)(in[i].data[2] << 8 | in[i].data[3]);
		if (sw.ports.owner[dport] != w)
			continue;	/* the port changed hands while it flew */
		len = in[i].len - SIM_WIRE_PREFIX;
		pkt->len = len;
		pkt->flags = braid_iov_scatter(pkt->iov, (size_t)pkt->iovcnt, 0,
					       in[i].data + SIM_WIRE_PREFIX, len) < len ? BRAID_PKT_TRUNC : 0;
		if (in[i].ecn_ce)
			pkt->flags |= BRAID_PKT_ECN_CE;
		pkt->path = sw.ports.sel[dport];
		memset(&pkt->addr, 0, sizeof(pkt->addr));
		pkt->addr.sin_family = AF_INET;
		pkt->addr.sin_addr.s_addr = sw.ip;
		pkt->addr.sin_port = htons(sport);
		out++;
	}
	pthread_mutex_unlock(&sw.lock);
	wire->rx_packets += (uint64_t)out;
	return out;
}

static int simw_wait_fd(struct braid_wire *wire)
{
	(void)wire;
	return -1;
}

static int simw_iface(char *name, size_t namelen, struct in_addr *addr, struct in_addr *mask,
		      size_t *mtu)
{
	int ret = sim_ready();

	if (ret)
		return ret;
	snprintf(name, namelen, "sim0");
	addr->s_addr = sw.ip;
	mask->s_addr = sw.mask;
	*mtu = SIM_WIRE_MTU;
	return 0;
}

/* Provider unload: the sim goes, unless endpoints are still on it. */
static void simw_cleanup(void)
{
	pthread_mutex_lock(&sw.lock);
	for (int i = 0; i < SIM_WIRE_NODES; i++) {
		if (sw.node[i]) {
			pthread_mutex_unlock(&sw.lock);
			return;
		}
	}
	if (sw.sim) {
		braid_sim_destroy(sw.sim);
		sw.sim = NULL;
		sw.err = -FI_ENODEV;	/* pthread_once does not run twice */
	}
	pthread_mutex_unlock(&sw.lock);
}

const struct braid_wire_ops braid_sim_wire_ops = {
	.name = "sim",
	.polled = true,
	.open = simw_open,
	.close = simw_close,
	.tx_burst = simw_tx_burst,
	.rx_burst = simw_rx_burst,
	.wait_fd = simw_wait_fd,
	.iface = simw_iface,
	.cleanup = simw_cleanup,
};
