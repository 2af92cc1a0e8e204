/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_engine.c: the RD engine end to end over the sim: delivery, ordering, errors (core/braid_rd_engine.c). */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rd_harness.h"
#include "braid/braid_errno.h"

#define MS 1000000ULL

static struct braid_rd_config base_cfg(void)
{
	struct braid_rd_config c;

	braid_rd_config_default(&c);
	c.mtu = 1472;
	c.paths = 8;
	c.epoch = 1;
	return c;
}

static struct braid_sim_path_cfg clean_path(void)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 2000 };

	return p;
}

static size_t count_comps(struct h_node *nd, uint32_t flag, int err)
{
	size_t i, n = 0;

	for (i = 0; i < nd->ncomps; i++)
		if ((nd->comps[i].flags & flag) && nd->comps[i].err == err)
			n++;
	return n;
}

struct want { int node; uint32_t flag; size_t n; };

static bool have(struct harness *h, void *arg)
{
	struct want *w = arg;

	return count_comps(&h->nodes[w->node], w->flag, 0) >= w->n;
}

Test(braid_rd_open, rejects_bad_config)
{
	struct braid_peer_table *t;
	struct braid_rd_config c = base_cfg();
	struct braid_rd *rd;

	cr_assert_eq(braid_peer_table_open(&t, 16, NULL), 0);
	c.epoch = 0;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	c.window = BRAID_RD_MAX_WINDOW + 1;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	c.paths = 0;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	c.init_cwnd = 0;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	c.init_cwnd = c.window + 1;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	c.mtu = 64;
	cr_assert_eq(braid_rd_open(&c, t, &rd), -FI_EINVAL);
	c = base_cfg();
	cr_assert_eq(braid_rd_open(&c, t, &rd), 0);
	braid_rd_close(rd);
	braid_peer_table_close(t);
}

Test(braid_rd_send, delivers_sizes_in_order)
{
	struct braid_sim_path_cfg p = clean_path();
	struct braid_rd_config c = base_cfg();
	static uint8_t src[64][9000], dst[64][9000];
	size_t sizes[64];
	struct harness h;
	int i;

	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 7), 0);
	for (i = 0; i < 64; i++) {
		struct iovec riov = { dst[i], sizeof(dst[i]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)(uintptr_t)(i + 1) };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, 0), 0);
	}
	for (i = 0; i < 64; i++) {
		struct iovec siov;
		struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1),
					   .context = (void *)(uintptr_t)(100 + i) };

		sizes[i] = (size_t)(i * 137) % 9000;
		memset(src[i], i + 1, sizes[i]);
		siov.iov_base = src[i];
		siov.iov_len = sizes[i];
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, 0), 0);
	}
	struct want w = { 1, BRAID_RD_COMP_RECV, 64 };
	cr_assert(h_run(&h, 1000 * MS, have, &w), "all 64 messages arrive");
	w = (struct want){ 0, BRAID_RD_COMP_SEND, 64 };
	cr_assert(h_run(&h, 1000 * MS, have, &w), "all 64 sends complete");
	/* FI_ORDER_SAS: receive i got message i */
	for (i = 0; i < 64; i++) {
		struct braid_rd_comp *cp = &h.nodes[1].comps[i];
		int k = (int)(uintptr_t)cp->context - 1;

		cr_assert_eq(cp->len, sizes[k]);
		cr_assert_eq(memcmp(dst[k], src[k], sizes[k]), 0, "message %d intact", k);
		cr_assert_eq(cp->peer, h_key(0));
	}
	h_fini(&h);
}
