/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_pingpong.c: ping-pong latency test with a per-iteration data check over DGRAM or RDM endpoints. */
#include "ft_common.h"

#include <stdio.h>
#include <string.h>

#define PP_DEFAULT_SIZE  64
#define PP_DEFAULT_ITERS 1000

static const char pp_about[] =
	"Ping-pong between a server and a client over FI_EP_DGRAM or FI_EP_RDM\n"
	"with fi_send/fi_recv. The client sends its address in a HELLO message\n"
	"(retried on DGRAM), the server inserts it and acknowledges, then the\n"
	"client sends ITERS pings per size and the server answers each with a\n"
	"pong. Every message carries a pattern that depends on the size, the\n"
	"iteration and the direction, and every received one is checked, so\n"
	"lost, stale, duplicated or corrupted data fails the test. Prints one\n"
	"line per size: bytes, iterations, average half round trip (the\n"
	"pattern fill and check included), PASS or FAIL.";

/* Everything one run needs besides the common context. */
struct pp {
	struct ft_ctx ctx;
	struct ft_opts opts;
	struct ft_op rx;          /* the one receive: pings (server) or pongs (client) */
	struct ft_op tx;          /* the one send */
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
};

/* Pattern of message (size index, iteration, direction: 0 ping, 1 pong). */
static uint64_t pp_seed(size_t si, size_t size, long it, int dir)
{
	return ft_seed(0x7070, (si << 32) | size, (uint64_t)it, (uint64_t)dir);
}

/*
 * Wait for the posted receive to bring the message of seed and size; a
 * late handshake duplicate (DGRAM) is handled and the receive reposted.
 */
static int pp_wait_msg(struct pp *pp, size_t size, uint64_t seed, long it)
{
	struct ft_ctx *ctx = &pp->ctx;
	struct fi_cq_data_entry comp;
	const char *what = ft_is_server(&pp->opts) ? "a ping" : "a pong";
	char *payload = ft_op_payload(&pp->rx, ctx->prefix);
	enum ft_dup dup;
	fi_addr_t src;
	size_t len;
	ssize_t bad;
	int ret;

	for (;;) {
		ret = ft_wait_op(ctx, &ctx->rxcq, &pp->rx, &comp, &src, what);
		if (ret)
			return ret;
		if (!(comp.flags & FI_RECV)) {
			ft_fail(ctx, "%s: receive completion flags %s lack FI_RECV", what,
				fi_tostr(&comp.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		if (ctx->prefix && comp.len <= ctx->prefix) {
			/* FI_MSG_PREFIX: a provider packet without data. */
			ret = ft_post_recv(ctx, &pp->rx);
			if (ret)
				return ret;
			continue;
		}
		len = comp.len - ctx->prefix;
		bad = len == size ? ft_check(payload, len, seed) : 0;
		if (bad < 0) {
			/* FI_SOURCE (when granted): the sender is the peer we inserted. */
			if (ctx->source && src != ctx->peer) {
				ft_fail(ctx, "%s: iteration %ld: FI_SOURCE: fi_cq_readfrom gave "
					"source fi_addr 0x%llx, but the peer was inserted as 0x%llx",
					what, it, (unsigned long long)src,
					(unsigned long long)ctx->peer);
				return -FI_EOTHER;
			}
			return 0;
		}
		dup = ft_handshake_dup(ctx, payload, len);
		if (dup != FT_DUP_NONE) {
			/* Repost first: the peer's next message may be on its way. */
			ret = ft_post_recv(ctx, &pp->rx);
			if (!ret && dup == FT_DUP_HELLO)
				ret = ft_hello_server_ack(ctx);
			if (ret)
				return ret;
			continue;
		}
		if (len != size) {
			ft_fail(ctx, "%s: iteration %ld: received %zu bytes, expected %zu",
				what, it, len, size);
		} else {
			ft_fail(ctx, "%s: iteration %ld, %zu bytes: data mismatch at offset %zd: "
				"0x%02x, expected 0x%02x", what, it, size, bad,
				(unsigned char)payload[bad], ft_pattern_byte(seed, (size_t)bad));
		}
		return -FI_EOTHER;
	}
}

static int pp_send(struct pp *pp, size_t size, uint64_t seed)
{
	struct ft_ctx *ctx = &pp->ctx;
	int ret;

	ft_fill(ft_op_payload(&pp->tx, ctx->prefix), size, seed);
	ret = ft_post_send(ctx, &pp->tx, size);
	if (ret)
		return ret;
	return ft_wait_op(ctx, &ctx->txcq, &pp->tx, NULL, NULL,
			  ft_is_server(&pp->opts) ? "the send of a pong" : "the send of a ping");
}

/* One size: iters round trips. last says no message follows this size. */
static int pp_run_size(struct pp *pp, int si, bool last, double *usec)
{
	struct ft_ctx *ctx = &pp->ctx;
	size_t size = pp->sizes[si];
	long it, iters = pp->opts.iters;
	uint64_t t0 = ft_now_ns();
	int ret;

	for (it = 0; it < iters; it++) {
		if (ft_is_server(&pp->opts)) {
			/* The receive for this ping is already posted. */
			ret = pp_wait_msg(pp, size, pp_seed(si, size, it, 0), it);
			if (ret)
				return ret;
			/* Post the next receive before the client can send again. */
			if (!last || it + 1 < iters) {
				ret = ft_post_recv(ctx, &pp->rx);
				if (ret)
					return ret;
			}
			ret = pp_send(pp, size, pp_seed(si, size, it, 1));
			if (ret)
				return ret;
		} else {
			ret = ft_post_recv(ctx, &pp->rx);
			if (ret)
				return ret;
			ret = pp_send(pp, size, pp_seed(si, size, it, 0));
			if (ret)
				return ret;
			ret = pp_wait_msg(pp, size, pp_seed(si, size, it, 1), it);
			if (ret)
				return ret;
		}
	}
	*usec = (double)(ft_now_ns() - t0) / 1000.0 / (double)iters / 2.0;
	return 0;
}

static int pp_run(struct pp *pp)
{
	static const struct ft_want want[] = { { .caps = FI_MSG } };
	struct ft_ctx *ctx = &pp->ctx;
	size_t max = 0, cap, region;
	double usec;
	int si, ret;

	ret = ft_setup(ctx, &pp->opts, want, 1);
	if (ret)
		return ret == -FI_ENODATA ? FT_EXIT_USAGE : FT_EXIT_FAIL;
	pp->nsizes = ft_parse_sizes(&pp->opts, ctx->max_payload, PP_DEFAULT_SIZE,
				    pp->sizes, FT_MAX_SIZES);
	if (pp->nsizes < 0)
		return FT_EXIT_USAGE;
	for (si = 0; si < pp->nsizes; si++)
		if (pp->sizes[si] > max)
			max = pp->sizes[si];
	/* Room for a late handshake duplicate in every receive. */
	cap = max > FT_CTRL_SIZE ? max : FT_CTRL_SIZE;
	region = (ft_op_region(ctx, cap, 1, 0) + 63) & ~(size_t)63;
	ret = ft_alloc_buf(ctx, 2 * region);
	if (ret)
		return FT_EXIT_FAIL;
	ft_op_init(ctx, &pp->rx, "ping-pong receive", ctx->buf, cap, 1, NULL, 0);
	ft_op_init(ctx, &pp->tx, "ping-pong send", ctx->buf + region, cap, 1, NULL, 0);
	ft_print_info(ctx);
	ctx->config = ft_config_hash(0x7070, pp->sizes, pp->nsizes, pp->opts.iters);

	if (ft_is_server(&pp->opts)) {
		ret = ft_hello_server_wait(ctx);
		if (!ret)
			ret = ft_post_recv(ctx, &pp->rx);
		if (!ret)
			ret = ft_hello_server_ack(ctx);
	} else {
		ret = ft_hello_client(ctx);
	}
	if (ret)
		return FT_EXIT_FAIL;
	ft_debug(ctx, "address exchange done");

	printf("%-10s %-10s %-16s %s\n", "bytes", "iters", "half-RTT(us)", "result");
	for (si = 0; si < pp->nsizes; si++) {
		ret = pp_run_size(pp, si, si + 1 == pp->nsizes, &usec);
		if (ret) {
			printf("%-10zu %-10ld %-16s %s\n", pp->sizes[si], pp->opts.iters, "-", "FAIL");
			return FT_EXIT_FAIL;
		}
		printf("%-10zu %-10ld %-16.2f %s\n", pp->sizes[si], pp->opts.iters, usec, "PASS");
		fflush(stdout);
	}
	return FT_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static struct pp pp;
	int ret;

	ft_parse_opts(&pp.opts, argc, argv, pp_about);
	if (!pp.opts.iters)
		pp.opts.iters = PP_DEFAULT_ITERS;
	ret = pp_run(&pp);
	ft_teardown(&pp.ctx);
	printf("%s: %s %s over %s: %s\n", pp.opts.prog,
	       ft_is_server(&pp.opts) ? "server" : "client",
	       ft_ep_type_str(pp.opts.ep_type),
	       pp.opts.prov_name ? pp.opts.prov_name : "(any provider)",
	       ret == FT_EXIT_PASS ? "PASS" : "FAIL");
	return ret;
}
