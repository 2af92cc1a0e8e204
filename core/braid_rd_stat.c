/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_stat.c: the RD engine's peer and path rows of a counter snapshot (braid_counters.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "braid_rd_int.h"

/* gauges, one function per entry of BRAID_RD_PEER_GAUGES and BRAID_RD_PATH_GAUGES */
static uint64_t peer_cwnd(const struct braid_rd *rd, const struct rd_flow *f)
{
	return rd->cfg.cc->cwnd(&f->cc);
}

static uint64_t peer_peer_rwnd(const struct braid_rd *rd, const struct rd_flow *f)
{
	(void)rd;
	return f->peer_rwnd;
}

static uint64_t peer_rwnd(const struct braid_rd *rd, const struct rd_flow *f)
{
	return rd_in_rwnd(rd, f);
}

static uint64_t peer_inflight(const struct braid_rd *rd, const struct rd_flow *f)
{
	(void)rd;
	return f->inflight;
}

static uint64_t peer_srtt_ns(const struct braid_rd *rd, const struct rd_flow *f)
{
	(void)rd;
	return f->srtt;
}

static uint64_t peer_min_rtt_ns(const struct braid_rd *rd, const struct rd_flow *f)
{
	(void)rd;
	return f->min_rtt;
}

static uint64_t peer_sendq(const struct braid_rd *rd, const struct rd_flow *f)
{
	const struct braid_dlist *it;
	uint64_t n = 0;

	(void)rd;
	braid_dlist_foreach(&f->conn->sendq, it)
		n++;
	braid_dlist_foreach(&f->conn->paused, it)
		n++;
	return n;
}

static uint64_t peer_verified(const struct braid_rd *rd, const struct rd_flow *f)
{
	(void)rd;
	return f->conn->verified;
}

static uint64_t path_entropy(const struct rd_flow *f, uint32_t i)
{
	return f->paths.p[i].entropy;
}

static uint64_t path_state(const struct rd_flow *f, uint32_t i)
{
	return braid_path_is_sick(&f->paths, i);
}

static uint64_t path_srtt_ns(const struct rd_flow *f, uint32_t i)
{
	return f->paths.p[i].srtt_ns;
}

static uint64_t path_rttvar_ns(const struct rd_flow *f, uint32_t i)
{
	return f->paths.p[i].rttvar_ns;
}

static uint64_t path_min_rtt_ns(const struct rd_flow *f, uint32_t i)
{
	return f->paths.p[i].min_rtt_ns;
}

static uint64_t path_loss_ppm(const struct rd_flow *f, uint32_t i)
{
	return (uint64_t)(f->paths.p[i].loss * 1e6f + 0.5f);
}

static uint64_t path_ecn_ppm(const struct rd_flow *f, uint32_t i)
{
	return (uint64_t)(f->paths.p[i].ecn * 1e6f + 0.5f);
}

#define ONE(f, k, u, m)		+ 1
#define PEER_G(f, k, u, m)	*v++ = peer_##f(rd, fl);
#define PATH_G(f, k, u, m)	*v++ = path_##f(fl, i);

size_t braid_rd_snapshot_peers(const struct braid_rd *rd, void *buf, size_t len, uint32_t *peers)
{
	const size_t n_peer = sizeof(struct braid_rd_peer_ctr) / 8 + (0 BRAID_RD_PEER_GAUGES(ONE));
	const size_t n_path = sizeof(struct braid_rd_path_ctr) / 8 + (0 BRAID_RD_PATH_GAUGES(ONE));
	const size_t rec = sizeof(struct braid_ctr_peer_rec) +
			   8 * (n_peer + (size_t)rd->cfg.paths * n_path);
	const struct braid_dlist *it;
	size_t off = 0;

	*peers = 0;
	braid_dlist_foreach(&rd->active, it) {
		const struct rd_flow *fl = braid_container_of(it, struct rd_flow, active_node);
		struct braid_ctr_peer_rec *p = (struct braid_ctr_peer_rec *)((uint8_t *)buf + off);
		struct in_addr a = { .s_addr = htonl(fl->conn->ip) };
		char ip[INET_ADDRSTRLEN];
		uint64_t *v;
		uint32_t i;

		if (len - off < rec)
			break;
		memset(p, 0, sizeof(*p));
		p->size = (uint32_t)rec;
		p->paths = fl->paths.n;
		inet_ntop(AF_INET, &a, ip, sizeof(ip));
		snprintf(p->addr, sizeof(p->addr), "%s:%u", ip, fl->conn->port);
		memcpy(p->v, &fl->ctr, sizeof(fl->ctr));
		v = p->v + sizeof(fl->ctr) / 8;
		BRAID_RD_PEER_GAUGES(PEER_G)
		for (i = 0; i < fl->paths.n; i++) {
			memcpy(v, &fl->prack[i].ctr, sizeof(fl->prack[i].ctr));
			v += sizeof(fl->prack[i].ctr) / 8;
			BRAID_RD_PATH_GAUGES(PATH_G)
		}
		off += rec;
		(*peers)++;
	}
	return off;
}
