/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_multi_ep.c: client endpoints sharing one AV and one CQ talk to one server endpoint. */
#include "ft_common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ME_DEFAULT_EPS   4
#define ME_MAX_EPS       16
#define ME_DEFAULT_SIZE  1000
#define ME_DEFAULT_ITERS 64          /* messages per endpoint and direction */
#define ME_MAX_ITERS     256
#define ME_KIND          0x6d65      /* tag: "me" in the top 16 bits */

static const char me_about[] =
	"Several endpoints (-n, default 4) on the client, all bound to one AV and\n"
	"one CQ (FI_TRANSMIT | FI_RECV), talk to the server's one endpoint over\n"
	"FI_EP_RDM (default). The client sends each endpoint's fi_getname address\n"
	"to the server, which inserts them all. Phase 1: every client endpoint\n"
	"sends ITERS tagged messages (default 64) to the server, interleaved; with\n"
	"FI_DIRECTED_RECV they all use the same tags and the server's receives\n"
	"are directed at each endpoint's fi_addr, so only the source tells them\n"
	"apart. Phase 2: the server sends ITERS messages to each client endpoint.\n"
	"Every message's data (which endpoint, which message), tag, length and,\n"
	"with FI_SOURCE, fi_cq_readfrom's source (the endpoint's fi_addr at the\n"
	"server, the server's on the client) are checked; the endpoints' names\n"
	"must differ. -S: message size (default 1000; a list runs each).";

/* Everything one run needs besides the common context. */
struct me {
	struct ft_ctx ctx;
	struct ft_opts opts;
	long neps;                   /* -n: client data endpoints */
	bool directed;               /* FI_DIRECTED_RECV granted */
	struct fid_ep *ep[ME_MAX_EPS]; /* client: the data endpoints */
	struct ft_cq shared;         /* client: their one CQ */
	fi_addr_t addr[ME_MAX_EPS];  /* server: each client endpoint in its AV */
	struct ft_op *ops;           /* [0, n): receives; [n, 2n): sends; n = neps * iters */
	size_t nops;
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
	unsigned long checked;
};

static int me_parse(void *arg, int c, const char *optarg)
{
	struct me *me = arg;
	char *end;

	me->neps = strtol(optarg, &end, 0);
	if (c != 'n' || *end || me->neps < 1 || me->neps > ME_MAX_EPS) {
		fprintf(stderr, "braid_multi_ep: error: -n %s: endpoints must be 1..%d\n", optarg,
			ME_MAX_EPS);
		return -FI_EINVAL;
	}
	return 0;
}

static size_t me_n(const struct me *me)
{
	return (size_t)me->neps * (size_t)me->opts.iters;
}

/* Message k of endpoint i, in phase (1: client to server, 2: back). */
static uint64_t me_tag(const struct me *me, long i, long k, int phase)
{
	/* Directed receives: the same tags from every endpoint; only the source differs. */
	if (me->directed)
		i = 0;
	return ((uint64_t)ME_KIND << 48) | ((uint64_t)phase << 40) | ((uint64_t)i << 20) |
	       (uint64_t)k;
}

static uint64_t me_seed(int si, long i, long k, int phase)
{
	return ft_seed(0x6d65, (uint64_t)si, ((uint64_t)i << 32) | (uint64_t)k, (uint64_t)phase);
}

/* The op of a completion, or NULL if it is none of ours. */
static struct ft_op *me_op(const struct me *me, void *context)
{
	uintptr_t at = (uintptr_t)context, lo = (uintptr_t)me->ops;
	uintptr_t hi = (uintptr_t)(me->ops + me->nops);

	if (at < lo || at >= hi || (at - lo) % sizeof(struct ft_op))
		return NULL;
	return (struct ft_op *)context;
}

/*
 * Take n completions from cq for ops of [first, first + n), each once,
 * calling check on each; the deadline moves with every completion.
 */
static int me_collect(struct me *me, struct ft_cq *cq, size_t first, size_t n, int si,
		      int phase, bool recv, const char *what)
{
	struct ft_ctx *ctx = &me->ctx;
	size_t got = 0, idx;
	struct ft_comp c;
	struct ft_op *op;
	char text[128];
	long i, k;
	int ret;

	while (got < n) {
		ret = ft_cq_wait_comp(ctx, cq, &c, ft_deadline(ctx), what);
		if (ret)
			return ret;
		op = me_op(me, c.e.op_context);
		idx = op ? (size_t)(op - me->ops) : 0;
		if (!op || idx < first || idx >= first + n || !op->posted) {
			if (c.err)
				return ft_comp_fail(ctx, cq, &c, what);
			ft_fail(ctx, "%s: completion (flags %s) for op_context %p, which is %s", what,
				fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS), c.e.op_context,
				op && !op->posted ? "an operation that already completed" :
				"none of this phase's operations");
			return -FI_EOTHER;
		}
		op->posted = false;
		got++;
		/* Receives and sends are laid out endpoint-major: i * iters + k. */
		i = (long)((idx - first) / (size_t)me->opts.iters);
		k = (long)((idx - first) % (size_t)me->opts.iters);
		snprintf(text, sizeof(text), "phase %d: %s %ld of client endpoint %ld", phase,
			 recv ? "message" : "send", k, i);
		if (c.err)
			return ft_comp_fail(ctx, cq, &c, text);
		if (!recv) {
			if ((c.e.flags & (FI_TAGGED | FI_SEND)) != (FI_TAGGED | FI_SEND) ||
			    (c.e.flags & FI_RECV)) {
				ft_fail(ctx, "%s: send completion flags %s", text,
					fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS));
				return -FI_EOTHER;
			}
			continue;
		}
		if ((c.e.flags & (FI_TAGGED | FI_RECV)) != (FI_TAGGED | FI_RECV) ||
		    (c.e.flags & FI_SEND)) {
			ft_fail(ctx, "%s: receive completion flags %s", text,
				fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		if (c.e.tag != me_tag(me, i, k, phase) || c.e.len != me->sizes[si]) {
			ft_fail(ctx, "%s: tag 0x%016llx, len %zu; expected 0x%016llx, %zu", text,
				(unsigned long long)c.e.tag, c.e.len,
				(unsigned long long)me_tag(me, i, k, phase), me->sizes[si]);
			return -FI_EOTHER;
		}
		if (ctx->source) {
			fi_addr_t want = phase == 1 ? me->addr[i] : ctx->peer;

			if (c.src != want) {
				ft_fail(ctx, "%s: FI_SOURCE: fi_cq_readfrom gave fi_addr 0x%llx, "
					"expected 0x%llx (%s)", text, (unsigned long long)c.src,
					(unsigned long long)want, phase == 1 ?
					"the address the server inserted for that endpoint" :
					"the server");
				return -FI_EOTHER;
			}
		}
		if (ft_check(op->base, me->sizes[si], me_seed(si, i, k, phase)) >= 0) {
			/* Whose data is it? Say so: a misdelivery between endpoints. */
			long j, m;

			for (j = 0; j < me->neps; j++)
				for (m = 0; m < me->opts.iters; m++)
					if (ft_check(op->base, me->sizes[si],
						     me_seed(si, j, m, phase)) < 0) {
						ft_fail(ctx, "%s: holds message %ld of endpoint %ld",
							text, m, j);
						return -FI_EOTHER;
					}
			ft_fail(ctx, "%s: data mismatch", text);
			return -FI_EOTHER;
		}
		me->checked++;
	}
	return 0;
}

/* Post a tagged operation, retrying on -FI_EAGAIN while stashing completions. */
static int me_post(struct me *me, struct fid_ep *ep, struct ft_op *op, size_t len,
		   fi_addr_t addr, uint64_t tag, bool recv)
{
	struct ft_ctx *ctx = &me->ctx;
	ssize_t ret;

	if (recv)
		FT_POST(ret, ctx, "fi_trecv",
			fi_trecv(ep, op->base, len, op->desc[0], addr, tag, 0, &op->fctx));
	else
		FT_POST(ret, ctx, "fi_tsend",
			fi_tsend(ep, op->base, len, op->desc[0], addr, tag, &op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

static int me_ctrl_recv(struct me *me, struct ft_ctrl *m, uint32_t type, uint32_t arg0,
			const char *what)
{
	struct ft_ctx *ctx = &me->ctx;
	int ret;

	ret = ft_ctrl_post(ctx);
	if (!ret)
		ret = ft_ctrl_wait(ctx, m, 0, what);
	if (!ret && (m->type != type || m->arg0 != arg0)) {
		ft_fail(ctx, "%s: expected %s %u, received %s %u", what, ft_ctrl_str(type), arg0,
			ft_ctrl_str(m->type), m->arg0);
		ret = -FI_EOTHER;
	}
	return ret;
}

/* ---- server ---- */

/* Insert every client endpoint the client announces (START i, n, its name). */
static int me_server_addrs(struct me *me)
{
	struct ft_ctx *ctx = &me->ctx;
	struct ft_ctrl m;
	long i;
	int ret;

	for (i = 0; i < me->neps; i++) {
		ret = me_ctrl_recv(me, &m, FT_CTRL_START, (uint32_t)i,
				   "the address of a client endpoint");
		if (ret)
			return ret;
		if (m.arg1 != (uint32_t)me->neps || !m.addrlen) {
			ft_fail(ctx, "client endpoint %ld: announced with %u endpoints, %u address "
				"bytes", i, m.arg1, m.addrlen);
			return -FI_EOTHER;
		}
		ret = fi_av_insert(ctx->av, m.addr, 1, &me->addr[i], 0, NULL);
		if (ret != 1) {
			ft_fail(ctx, "fi_av_insert(client endpoint %ld) returned %d", i, ret);
			return ret < 0 ? ret : -FI_EINVAL;
		}
		ft_debug(ctx, "client endpoint %ld inserted as fi_addr 0x%llx", i,
			 (unsigned long long)me->addr[i]);
	}
	return 0;
}

static int me_server_size(struct me *me, int si)
{
	struct ft_ctx *ctx = &me->ctx;
	size_t n = me_n(me), size = me->sizes[si], x;
	long i, k;
	struct ft_ctrl m;
	int ret, status;

	/* Phase 1: a receive for every message, directed at its endpoint if granted. */
	for (i = 0; i < me->neps; i++) {
		for (k = 0; k < me->opts.iters; k++) {
			x = (size_t)(i * me->opts.iters + k);
			memset(me->ops[x].base, 0, size);
			ret = me_post(me, ctx->ep, &me->ops[x], size,
				      me->directed ? me->addr[i] : FI_ADDR_UNSPEC,
				      me_tag(me, i, k, 1), true);
			if (ret)
				return ret;
		}
	}
	ret = ft_ctrl_send(ctx, FT_CTRL_READY, 1, (uint32_t)si);
	if (ret)
		return ret;
	status = me_collect(me, &ctx->rxcq, 0, n, si, 1, true,
			    "the client endpoints' messages");
	printf("%-8zu phase 1: %ld endpoints -> server, %ld messages each  %s\n", size,
	       me->neps, me->opts.iters, status ? "FAIL" : "PASS");
	/* Receives may still be posted: the protocol cannot go on (the client times out). */
	if (status)
		return status;

	/* Phase 2: to each client endpoint, interleaved. */
	ret = me_ctrl_recv(me, &m, FT_CTRL_READY, 2, "the client's receives of phase 2");
	if (ret)
		return ret;
	for (k = 0; k < me->opts.iters; k++) {
		for (i = 0; i < me->neps; i++) {
			x = n + (size_t)(i * me->opts.iters + k);
			ft_fill(me->ops[x].base, size, me_seed(si, i, k, 2));
			ret = me_post(me, ctx->ep, &me->ops[x], size, me->addr[i],
				      me_tag(me, i, k, 2), false);
			if (ret)
				return ret;
		}
	}
	ret = me_collect(me, &ctx->txcq, n, n, si, 2, false, "the sends of phase 2");
	if (!ret)
		ret = ft_ctrl_send(ctx, FT_CTRL_DONE, 1, 0);
	if (!ret)
		ret = me_ctrl_recv(me, &m, FT_CTRL_DONE, 2, "the client's verdict on phase 2");
	if (ret)
		return ret;
	printf("%-8zu phase 2: server -> %ld endpoints, %ld messages each  %s\n", size,
	       me->neps, me->opts.iters, m.arg1 ? "FAIL (client)" : "PASS");
	return m.arg1 ? -FI_EOTHER : 0;
}

/* ---- client ---- */

/* Open the data endpoints: the domain's, bound to the one AV and one shared CQ. */
static int me_client_eps(struct me *me)
{
	struct ft_ctx *ctx = &me->ctx;
	char name[ME_MAX_EPS + 1][FT_MAX_ADDRLEN];
	size_t len[ME_MAX_EPS + 1];
	long i, j;
	int ret;

	ret = ft_cq_open(ctx, &me->shared, "shared");
	if (ret)
		return ret;
	ctx->extra_cq = &me->shared;
	memcpy(name[0], ctx->local_name, ctx->local_namelen);
	len[0] = ctx->local_namelen;
	for (i = 0; i < me->neps; i++) {
		ret = fi_endpoint(ctx->domain, ctx->info, &me->ep[i], NULL);
		if (ret) {
			me->ep[i] = NULL;
			ft_error(ctx, "fi_endpoint(data endpoint)", ret);
			return ret;
		}
		ret = fi_ep_bind(me->ep[i], &ctx->av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(me->ep[i], &me->shared.cq->fid, FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(me->ep[i]);
		if (ret) {
			ft_error(ctx, "binding and enabling a data endpoint (shared AV, shared CQ)",
				 ret);
			return ret;
		}
		len[i + 1] = sizeof(name[i + 1]);
		ret = fi_getname(&me->ep[i]->fid, name[i + 1], &len[i + 1]);
		if (ret) {
			ft_error(ctx, "fi_getname(data endpoint)", ret);
			return ret;
		}
		for (j = 0; j <= i; j++) {
			if (len[j] == len[i + 1] && !memcmp(name[j], name[i + 1], len[j])) {
				ft_fail(ctx, "data endpoint %ld has the same fi_getname address as %s",
					i, j ? "another data endpoint" : "the control endpoint");
				return -FI_EOTHER;
			}
		}
		ret = ft_ctrl_send_addr(ctx, FT_CTRL_START, (uint32_t)i, (uint32_t)me->neps,
					name[i + 1], len[i + 1]);
		if (ret)
			return ret;
	}
	return 0;
}

static int me_client_size(struct me *me, int si)
{
	struct ft_ctx *ctx = &me->ctx;
	size_t n = me_n(me), size = me->sizes[si], x;
	struct ft_ctrl m;
	long i, k;
	int ret, status;

	ret = me_ctrl_recv(me, &m, FT_CTRL_READY, 1, "the server's receives of phase 1");
	if (ret)
		return ret;
	if (m.arg1 != (uint32_t)si) {
		ft_fail(ctx, "phase 1 READY for size %u, expected %d", m.arg1, si);
		return -FI_EOTHER;
	}
	/* Phase 1: every endpoint's sends, interleaved, then all their completions. */
	for (k = 0; k < me->opts.iters; k++) {
		for (i = 0; i < me->neps; i++) {
			x = n + (size_t)(i * me->opts.iters + k);
			ft_fill(me->ops[x].base, size, me_seed(si, i, k, 1));
			ret = me_post(me, me->ep[i], &me->ops[x], size, ctx->peer,
				      me_tag(me, i, k, 1), false);
			if (ret)
				return ret;
		}
	}
	ret = me_collect(me, &me->shared, n, n, si, 1, false, "the sends of phase 1");
	if (ret)
		return ret;

	/* Phase 2: each endpoint's receives, then READY. */
	for (i = 0; i < me->neps; i++) {
		for (k = 0; k < me->opts.iters; k++) {
			x = (size_t)(i * me->opts.iters + k);
			memset(me->ops[x].base, 0, size);
			ret = me_post(me, me->ep[i], &me->ops[x], size, FI_ADDR_UNSPEC,
				      me_tag(me, i, k, 2), true);
			if (ret)
				return ret;
		}
	}
	ret = ft_ctrl_send(ctx, FT_CTRL_READY, 2, (uint32_t)si);
	if (ret)
		return ret;
	status = me_collect(me, &me->shared, 0, n, si, 2, true,
			    "the server's messages to the endpoints");
	if (status) {
		printf("%-8zu phase 2: server -> %ld endpoints, %ld messages each  FAIL\n", size,
		       me->neps, me->opts.iters);
		return status;
	}
	ret = me_ctrl_recv(me, &m, FT_CTRL_DONE, 1, "the server's verdict on phase 1");
	if (!ret)
		ret = ft_ctrl_send(ctx, FT_CTRL_DONE, 2, 0);
	if (ret)
		return ret;
	printf("%-8zu phase 1: %ld endpoints -> server, %ld messages each  %s\n", size,
	       me->neps, me->opts.iters, m.arg1 ? "FAIL (server)" : "PASS");
	printf("%-8zu phase 2: server -> %ld endpoints, %ld messages each  PASS\n", size,
	       me->neps, me->opts.iters);
	return m.arg1 ? -FI_EOTHER : 0;
}

/* ---- driver ---- */

static int me_run(struct me *me)
{
	static const struct ft_want want[] = {
		{ .caps = FI_TAGGED | FI_MSG | FI_SOURCE | FI_DIRECTED_RECV },
		{ .caps = FI_TAGGED | FI_MSG | FI_SOURCE },
		{ .caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV },
		{ .caps = FI_TAGGED | FI_MSG },
	};
	struct ft_ctx *ctx = &me->ctx;
	bool server = ft_is_server(&me->opts);
	size_t max = 0, region, n, i;
	int si, ret;

	ret = ft_setup(ctx, &me->opts, want, sizeof(want) / sizeof(want[0]));
	if (ret)
		return ret == -FI_ENODATA ? FT_EXIT_USAGE : FT_EXIT_FAIL;
	if (ctx->prefix || (ctx->info->domain_attr->mr_mode & FI_MR_ENDPOINT)) {
		ft_fail(ctx, "the provider requires %s, which this test does not support",
			ctx->prefix ? "FI_MSG_PREFIX" : "FI_MR_ENDPOINT");
		return FT_EXIT_FAIL;
	}
	me->directed = (ctx->info->caps & FI_DIRECTED_RECV) != 0;
	me->nsizes = ft_parse_sizes(&me->opts, ctx->max_payload, ME_DEFAULT_SIZE, me->sizes,
				    FT_MAX_SIZES);
	if (me->nsizes < 0)
		return FT_EXIT_USAGE;
	n = me_n(me);
	if (n > ctx->info->rx_attr->size || n > ctx->info->tx_attr->size) {
		ft_fail(ctx, "-n %ld x -I %ld = %zu messages in flight: more than the endpoint's "
			"queues (tx %zu, rx %zu)", me->neps, me->opts.iters, n,
			ctx->info->tx_attr->size, ctx->info->rx_attr->size);
		return FT_EXIT_USAGE;
	}
	for (si = 0; si < me->nsizes; si++)
		if (me->sizes[si] > max)
			max = me->sizes[si];
	region = (max + 63) & ~(size_t)63;
	me->nops = 2 * n;
	me->ops = calloc(me->nops, sizeof(*me->ops));
	if (!me->ops || ft_alloc_buf(ctx, me->nops * region))
		return FT_EXIT_FAIL;
	for (i = 0; i < me->nops; i++)
		ft_op_init(ctx, &me->ops[i], i < n ? "receive" : "send", ctx->buf + i * region,
			   max, 1, NULL, 0);
	ft_print_info(ctx);
	ft_msg(ctx, "%ld client endpoints, one AV, one CQ; FI_DIRECTED_RECV %s; FI_SOURCE %s",
	       me->neps, me->directed ? "granted: the same tags from every endpoint, "
	       "directed receives" : "not granted: a tag per endpoint",
	       ctx->source ? "granted: every source checked" : me->opts.no_source ?
	       "not asked for (-u): not checked" : "not granted: not checked");

	ctx->config = ft_seed(ft_config_hash(0x6d65, me->sizes, me->nsizes, me->opts.iters),
			      (uint64_t)me->neps, 0, 0);
	if (server) {
		ret = ft_hello_server_wait(ctx);
		if (!ret)
			ret = ft_hello_server_ack(ctx);
		if (!ret)
			ret = me_server_addrs(me);
	} else {
		ret = ft_hello_client(ctx);
		if (!ret)
			ret = me_client_eps(me);
	}
	if (ret)
		return FT_EXIT_FAIL;

	printf("%-8s %s\n", "bytes", "phase");
	for (si = 0; si < me->nsizes; si++) {
		ret = server ? me_server_size(me, si) : me_client_size(me, si);
		fflush(stdout);
		if (ret)
			return FT_EXIT_FAIL;
	}
	ft_msg(ctx, "%lu received messages checked", me->checked);
	return FT_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static struct me me = { .neps = ME_DEFAULT_EPS };
	static const struct ft_extra_opts extra = {
		.ep_type = FI_EP_RDM,
		.optstring = "n:",
		.usage = "  -n NEPS    client endpoints sharing the AV and CQ (default 4, at most 16)\n"
			 "  (-I: messages per endpoint and direction, default 64, at most 256;\n"
			 "   -S: message size, default 1000)\n",
		.parse = me_parse,
		.arg = &me,
	};
	long i;
	int ret;

	ft_parse_opts_extra(&me.opts, argc, argv, me_about, &extra);
	if (!me.opts.iters)
		me.opts.iters = ME_DEFAULT_ITERS;
	if (me.opts.iters > ME_MAX_ITERS) {
		fprintf(stderr, "%s: error: -I %ld: at most %d messages per endpoint\n",
			me.opts.prog, me.opts.iters, ME_MAX_ITERS);
		return FT_EXIT_USAGE;
	}
	ret = me_run(&me);
	for (i = 0; i < me.neps; i++)
		if (me.ep[i])
			fi_close(&me.ep[i]->fid);
	if (me.shared.cq)
		fi_close(&me.shared.cq->fid);
	ft_teardown(&me.ctx);
	free(me.ops);
	printf("%s: %s %s over %s: %s\n", me.opts.prog,
	       ft_is_server(&me.opts) ? "server" : "client",
	       ft_ep_type_str(me.opts.ep_type),
	       me.opts.prov_name ? me.opts.prov_name : "(any provider)",
	       ret == FT_EXIT_PASS ? "PASS" : "FAIL");
	return ret;
}
