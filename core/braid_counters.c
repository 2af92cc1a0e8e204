/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_counters.c: the counter table's descriptors, generated from braid_counters.h's lists. */
#include <string.h>

#include "braid/braid_counters.h"
#include "braid_rc.h"
#include "braid_rd.h"

#define S_EP	BRAID_SCOPE_EP
#define S_PEER	BRAID_SCOPE_PEER
#define S_PATH	BRAID_SCOPE_PATH

#define D(pfx, f, k, u, m, sc)	{ pfx #f, u, m, sc, BRAID_CTR_##k },
#define D_EP(f, k, u, m)	D("ep.", f, k, u, m, S_EP)
#define D_EP_DROP(e, n, m)	D("ep.drop.", n, COUNTER, "packets", m, S_EP)
#define D_RD_PATH(f, k, u, m)	D("rd.", f, k, u, m, S_EP | S_PEER | S_PATH)
#define D_RD_PEER(f, k, u, m)	D("rd.", f, k, u, m, S_EP | S_PEER)
#define D_RD_DROP(e, n, m)	D("rd.drop.", n, COUNTER, "packets", m, S_EP | S_PEER)
#define D_RD_EP(f, k, u, m)	D("rd.", f, k, u, m, S_EP)
#define D_RC(f, k, u, m)	D("rc.", f, k, u, m, S_EP)
#define D_RC_DROP(e, n, m)	D("rc.drop.", n, COUNTER, "packets", m, S_EP)
#define D_RD_PEER_G(f, k, u, m)	D("rd.", f, k, u, m, S_PEER)
#define D_RD_PATH_G(f, k, u, m)	D("rd.path.", f, k, u, m, S_PATH)

static const struct braid_ctr_desc table[] = {
	BRAID_EP_COUNTERS(D_EP)
	BRAID_DROP_TABLE(D_EP_DROP)
	BRAID_RD_PATH_COUNTERS(D_RD_PATH)
	BRAID_RD_PEER_COUNTERS(D_RD_PEER)
	BRAID_DROP_TABLE(D_RD_DROP)
	BRAID_RD_EP_COUNTERS(D_RD_EP)
	BRAID_RC_COUNTERS(D_RC)
	BRAID_RC_DROP_TABLE(D_RC_DROP)
	BRAID_RD_PEER_GAUGES(D_RD_PEER_G)
	BRAID_RD_PATH_GAUGES(D_RD_PATH_G)
};

#define N_TABLE		(sizeof(table) / sizeof(table[0]))

/* the rows are the structs the engines count into, laid end to end, then gauges */
_Static_assert(sizeof(struct braid_rd_path_ctr) == 8 * (0 BRAID_RD_PATH_COUNTERS(BRAID_CTR_ONE)),
	       "path counters: uint64_t each, no padding");
_Static_assert(sizeof(struct braid_rd_peer_ctr) ==
	       8 * (0 BRAID_RD_PATH_COUNTERS(BRAID_CTR_ONE) BRAID_RD_PEER_COUNTERS(BRAID_CTR_ONE) +
		    BRAID_DROP_MAX), "peer counters: uint64_t each, no padding");
_Static_assert(sizeof(struct braid_rd_stats) ==
	       sizeof(struct braid_rd_peer_ctr) + 8 * (0 BRAID_RD_EP_COUNTERS(BRAID_CTR_ONE)),
	       "RD counters: the peer's, then the endpoint's");
_Static_assert(sizeof(struct braid_rc_stats) ==
	       8 * (0 BRAID_RC_COUNTERS(BRAID_CTR_ONE) + BRAID_RC_DROP_MAX), "RC counters");

size_t braid_ctr_table(const struct braid_ctr_desc **descs)
{
	*descs = table;
	return N_TABLE;
}

uint32_t braid_ctr_row_len(unsigned int scope)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < N_TABLE; i++)
		n += (table[i].scopes & scope) != 0;
	return n;
}

int braid_ctr_find(const char *name, unsigned int scope)
{
	int n = 0;
	size_t i;

	for (i = 0; i < N_TABLE; i++) {
		if (!(table[i].scopes & scope))
			continue;
		if (!strcmp(table[i].name, name))
			return n;
		n++;
	}
	return -1;
}
