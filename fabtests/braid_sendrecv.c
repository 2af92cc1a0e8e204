/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_sendrecv.c: functional test of every untagged send and receive call, checking each completion and its data. */
#include "ft_common.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SR_NMSG          4      /* messages in flight per round */
#define SR_GAP           16     /* guard bytes after every iov piece */
#define SR_CANARY        0xC3   /* receive regions are filled with this */
#define SR_DEFAULT_ITERS 2
#define SR_DEFAULT_DGRAM 4096   /* default largest message, DGRAM */
#define SR_DEFAULT_RDM   65536  /* default largest message, RDM */

static const char sr_about[] =
	"Functional test of fi_send, fi_sendv, fi_sendmsg, fi_inject and\n"
	"fi_senddata against fi_recv, fi_recvv and fi_recvmsg, in both\n"
	"directions, over FI_EP_DGRAM or FI_EP_RDM. Each round the receiver\n"
	"posts up to 4 receives and tells the sender (READY); the sender sends\n"
	"up to 4 messages of distinct sizes (largest = -S); the receiver\n"
	"checks every completion (op_context, flags, len, buf, remote CQ\n"
	"data, FI_SOURCE address through fi_cq_readfrom when granted), the\n"
	"data, and the guard bytes around each iov, then reports (DONE).\n"
	"The sender checks its completions (none for fi_inject). -I repeats\n"
	"the whole set; a list for -S runs it for each largest size.";

enum sr_send_kind { SR_SEND, SR_SENDV, SR_SENDMSG, SR_INJECT, SR_SENDDATA };
enum sr_recv_kind { SR_RECV, SR_RECVV, SR_RECVMSG };

struct sr_round {
	const char *name;
	enum sr_send_kind send;
	enum sr_recv_kind recv;
};

static const struct sr_round sr_rounds[] = {
	{ "fi_send -> fi_recv", SR_SEND, SR_RECV },
	{ "fi_sendv -> fi_recvv", SR_SENDV, SR_RECVV },
	{ "fi_sendmsg -> fi_recvmsg", SR_SENDMSG, SR_RECVMSG },
	{ "fi_inject -> fi_recv", SR_INJECT, SR_RECV },
	{ "fi_senddata -> fi_recvmsg", SR_SENDDATA, SR_RECVMSG },
};

/* The messages of one round, identical on both sides. */
struct sr_plan {
	const struct sr_round *round;
	uint32_t number;             /* rounds executed so far: seeds, READY check */
	bool client_sends;
	size_t n;
	size_t size[SR_NMSG];        /* distinct, so a message is known by its length */
	uint64_t seed[SR_NMSG];
	uint64_t data[SR_NMSG];      /* remote CQ data (fi_senddata) */
};

struct sr {
	struct ft_ctx ctx;
	struct ft_opts opts;
	struct ft_op rx[SR_NMSG];
	struct ft_op tx[SR_NMSG];
	struct fi_msg rx_msg[SR_NMSG]; /* kept until completion, like the iovs */
	struct fi_msg tx_msg[SR_NMSG];
	size_t region;               /* bytes per op region */
	size_t max;                  /* largest message of this pass */
	char *scratch;               /* gathered payload */
	bool sas;                    /* FI_ORDER_SAS granted: message i lands in receive i */
	uint32_t executed;           /* rounds run */
	unsigned long checked;       /* messages verified as receiver */
	bool noted_no_msg;           /* the FI_MSG note was printed */
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
};

static bool sr_i_send(const struct sr *sr, const struct sr_plan *plan)
{
	return plan->client_sends != ft_is_server(&sr->opts);
}

static const char *sr_dir(const struct sr_plan *plan)
{
	return plan->client_sends ? "client -> server" : "server -> client";
}

/* Distinct message sizes for a round whose largest message may be cap bytes. */
static size_t sr_pick_sizes(size_t cap, size_t *out)
{
	size_t cand[SR_NMSG] = { cap, cap / 2 + 3, 17, 1 };
	size_t i, j, n = 0;

	for (i = 0; i < SR_NMSG; i++) {
		if (cand[i] < 1 || cand[i] > cap)
			continue;
		for (j = 0; j < n && out[j] != cand[i]; j++)
			;
		if (j == n)
			out[n++] = cand[i];
	}
	return n;
}

/* Why a round cannot run on this provider, or NULL. */
static const char *sr_skip_reason(const struct sr *sr, const struct sr_round *r)
{
	const struct fi_info *info = sr->ctx.info;

	if (r->send == SR_INJECT && info->tx_attr->inject_size == 0)
		return "inject_size is 0";
	if (r->send == SR_SENDDATA && info->domain_attr->cq_data_size == 0)
		return "domain_attr->cq_data_size is 0 (no remote CQ data)";
	return NULL;
}

static void sr_plan_round(struct sr *sr, struct sr_plan *plan, const struct sr_round *r,
			  bool client_sends)
{
	const struct fi_info *info = sr->ctx.info;
	size_t cap = sr->max, i, cqd = info->domain_attr->cq_data_size;
	uint64_t mask = cqd >= 8 ? ~0ull : (1ull << (8 * cqd)) - 1;

	memset(plan, 0, sizeof(*plan));
	plan->round = r;
	plan->number = sr->executed;
	plan->client_sends = client_sends;
	if (r->send == SR_INJECT && info->tx_attr->inject_size < cap)
		cap = info->tx_attr->inject_size;
	plan->n = sr_pick_sizes(cap, plan->size);
	for (i = 0; i < plan->n; i++) {
		plan->seed[i] = ft_seed(0x5352, plan->number, i, client_sends);
		plan->data[i] = ft_seed(0xDA7A, plan->number, i, client_sends) & mask;
		if (!plan->data[i])
			plan->data[i] = 1;
	}
}

/* iov split points: niov pieces over len bytes, fewer if len is tiny. */
static size_t sr_cuts(size_t len, size_t niov, size_t limit, size_t *cuts)
{
	size_t k;

	if (niov > limit)
		niov = limit;
	if (niov > len)
		niov = len;
	if (niov < 1)
		niov = 1;
	for (k = 1; k < niov; k++)
		cuts[k - 1] = len * k / niov;
	return niov;
}

/*
 * fi_cq(3) sets FI_MSG with FI_SEND/FI_RECV for message operations, but
 * some providers (udp) report only FI_SEND/FI_RECV: say so once, do not fail.
 */
static void sr_note_no_msg_flag(struct sr *sr, uint64_t flags, const char *kind)
{
	if (flags & FI_MSG || sr->noted_no_msg)
		return;
	sr->noted_no_msg = true;
	ft_msg(&sr->ctx, "note: %s completion flags %s lack FI_MSG (tolerated)", kind,
	       fi_tostr(&flags, FI_TYPE_CQ_EVENT_FLAGS));
}

/* ---- receiver ---- */

static int sr_post_recv(struct sr *sr, const struct sr_plan *plan, size_t i)
{
	struct ft_ctx *ctx = &sr->ctx;
	struct ft_op *op = &sr->rx[i];
	struct fi_msg *msg = &sr->rx_msg[i];
	size_t cuts[FT_MAX_IOV], niov = 1;
	size_t limit = ctx->info->rx_attr->iov_limit;
	ssize_t ret;

	if (plan->round->recv != SR_RECV)
		niov = sr_cuts(sr->max, 2, limit, cuts);
	if (plan->round->recv == SR_RECVV && niov > 1)
		cuts[0] = sr->max / 3 ? sr->max / 3 : 1;  /* uneven on purpose */
	assert(!op->posted);
	memset(sr->ctx.buf + i * sr->region, SR_CANARY, sr->region);
	ft_op_init(ctx, op, "data receive", ctx->buf + i * sr->region, sr->max, niov, cuts,
		   SR_GAP);

	switch (plan->round->recv) {
	case SR_RECV:
		FT_POST(ret, ctx, "fi_recv",
			fi_recv(ctx->ep, op->iov[0].iov_base, op->iov[0].iov_len,
				op->desc[0], FI_ADDR_UNSPEC, &op->fctx));
		break;
	case SR_RECVV:
		FT_POST(ret, ctx, "fi_recvv",
			fi_recvv(ctx->ep, op->iov, op->desc, op->iov_count,
				FI_ADDR_UNSPEC, &op->fctx));
		break;
	default:
		msg->msg_iov = op->iov;
		msg->desc = op->desc;
		msg->iov_count = op->iov_count;
		msg->addr = FI_ADDR_UNSPEC;
		msg->context = &op->fctx;
		msg->data = 0;
		FT_POST(ret, ctx, "fi_recvmsg", fi_recvmsg(ctx->ep, msg, FI_COMPLETION));
		break;
	}
	if (!ret)
		op->posted = true;
	return (int)ret;
}

/* The guard bytes after each piece must still hold the canary. */
static int sr_check_guards(struct sr *sr, const struct ft_op *op, size_t i)
{
	size_t p, g;

	for (p = 0; p < op->npieces; p++) {
		const unsigned char *guard = (const unsigned char *)op->piece[p] + op->piece_cap[p];

		for (g = 0; g < op->gap; g++) {
			if (guard[g] != SR_CANARY) {
				ft_fail(&sr->ctx, "receive %zu: byte %zu after iov piece %zu "
					"was overwritten (0x%02x): write beyond the posted buffer",
					i, g, p, guard[g]);
				return -FI_EOTHER;
			}
		}
	}
	return 0;
}

/* Check one receive completion; marks which message it carried. */
static int sr_check_recv(struct sr *sr, const struct sr_plan *plan,
			 const struct fi_cq_data_entry *comp, fi_addr_t src,
			 bool *rx_done, bool *msg_seen)
{
	struct ft_ctx *ctx = &sr->ctx;
	bool want_data = plan->round->send == SR_SENDDATA;
	const char *rname = plan->round->name;
	struct ft_op *op = NULL;
	size_t i, m, len;
	ssize_t bad;
	int ret;

	for (i = 0; i < plan->n; i++) {
		if (comp->op_context == &sr->rx[i].fctx) {
			op = &sr->rx[i];
			break;
		}
	}
	if (!op) {
		ft_fail(ctx, "%s: receive completion with op_context %p, which is none of the "
			"posted data receives%s", rname, comp->op_context,
			comp->op_context == &ctx->ctrl_rx.fctx ?
			" but the control receive posted after them (receives not used in "
			"posting order, or an extra message arrived)" : "");
		return -FI_EOTHER;
	}
	if (rx_done[i]) {
		ft_fail(ctx, "%s: receive %zu completed twice", rname, i);
		return -FI_EOTHER;
	}
	rx_done[i] = true;
	op->posted = false;

	if (!(comp->flags & FI_RECV)) {
		ft_fail(ctx, "%s: receive %zu: completion flags %s lack FI_RECV", rname, i,
			fi_tostr(&comp->flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	sr_note_no_msg_flag(sr, comp->flags, "receive");
	if (comp->flags & (FI_SEND | FI_TAGGED | FI_RMA | FI_ATOMIC)) {
		ft_fail(ctx, "%s: receive %zu: completion flags %s name another operation",
			rname, i, fi_tostr(&comp->flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	if (!!(comp->flags & FI_REMOTE_CQ_DATA) != want_data) {
		ft_fail(ctx, "%s: receive %zu: FI_REMOTE_CQ_DATA %s in flags %s", rname, i,
			want_data ? "missing" : "set", fi_tostr(&comp->flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	if (comp->len <= ctx->prefix) {
		ft_fail(ctx, "%s: receive %zu: length %zu holds no data beyond the %zu-byte "
			"prefix (provider packets in FI_MSG_PREFIX mode are not supported here)",
			rname, i, comp->len, ctx->prefix);
		return -FI_EOTHER;
	}
	len = comp->len - ctx->prefix;
	for (m = 0; m < plan->n && plan->size[m] != len; m++)
		;
	if (m == plan->n) {
		ft_fail(ctx, "%s: receive %zu: len %zu (prefix included) matches no message sent "
			"(the sizes are %zu, %zu, ...)", rname, i, comp->len, plan->size[0],
			plan->n > 1 ? plan->size[1] : 0);
		return -FI_EOTHER;
	}
	if (msg_seen[m]) {
		ft_fail(ctx, "%s: message %zu (%zu bytes) received twice", rname, m, len);
		return -FI_EOTHER;
	}
	msg_seen[m] = true;
	if (sr->sas && m != i) {
		ft_fail(ctx, "%s: FI_ORDER_SAS granted but message %zu landed in receive %zu",
			rname, m, i);
		return -FI_EOTHER;
	}
	if (comp->buf && comp->buf != op->base && comp->buf != op->base + ctx->prefix) {
		ft_fail(ctx, "%s: receive %zu: completion buf %p is not the posted buffer %p",
			rname, i, comp->buf, (void *)op->base);
		return -FI_EOTHER;
	}
	if (want_data && comp->data != plan->data[m]) {
		ft_fail(ctx, "%s: message %zu: remote CQ data 0x%llx, expected 0x%llx", rname, m,
			(unsigned long long)comp->data, (unsigned long long)plan->data[m]);
		return -FI_EOTHER;
	}
	if (ctx->source && src != ctx->peer) {
		ft_fail(ctx, "%s: message %zu: FI_SOURCE: fi_cq_readfrom gave source fi_addr "
			"0x%llx, but the peer was inserted as 0x%llx", rname, m,
			(unsigned long long)src, (unsigned long long)ctx->peer);
		return -FI_EOTHER;
	}
	ft_op_gather(op, sr->scratch, len);
	bad = ft_check(sr->scratch, len, plan->seed[m]);
	if (bad >= 0) {
		ft_fail(ctx, "%s: message %zu (%zu bytes, in receive %zu with %zu iovs): data "
			"mismatch at offset %zd: 0x%02x, expected 0x%02x", rname, m, len, i,
			op->iov_count, bad, (unsigned char)sr->scratch[bad],
			ft_pattern_byte(plan->seed[m], (size_t)bad));
		return -FI_EOTHER;
	}
	ret = sr_check_guards(sr, op, i);
	if (ret)
		return ret;
	sr->checked++;
	return 0;
}

static int sr_receive_round(struct sr *sr, const struct sr_plan *plan)
{
	struct ft_ctx *ctx = &sr->ctx;
	bool rx_done[SR_NMSG] = { false }, msg_seen[SR_NMSG] = { false };
	struct fi_cq_data_entry comp;
	fi_addr_t src;
	char what[96];
	size_t i;
	int ret, status = 0;

	for (i = 0; i < plan->n; i++) {
		ret = sr_post_recv(sr, plan, i);
		if (ret)
			return ret;
	}
	/* Behind the data receives: the next round's READY lands here. */
	ret = ft_ctrl_post(ctx);
	if (!ret)
		ret = ft_ctrl_send(ctx, FT_CTRL_READY, plan->number, (uint32_t)plan->n);
	if (ret)
		return ret;
	for (i = 0; i < plan->n; i++) {
		snprintf(what, sizeof(what), "message %zu of %zu (%s)", i + 1, plan->n,
			 plan->round->name);
		ret = ft_cq_wait(ctx, &ctx->rxcq, &comp, &src, ft_deadline(ctx), what);
		if (ret)
			return ret;
		ret = sr_check_recv(sr, plan, &comp, src, rx_done, msg_seen);
		if (ret) {
			status = 1;
			break;
		}
	}
	/* Tell the sender, so that both sides fail together. */
	ret = ft_ctrl_send(ctx, FT_CTRL_DONE, plan->number, (uint32_t)status);
	return status ? -FI_EOTHER : ret;
}

/* ---- sender ---- */

static int sr_post_send(struct sr *sr, const struct sr_plan *plan, size_t m)
{
	struct ft_ctx *ctx = &sr->ctx;
	struct ft_op *op = &sr->tx[m];
	struct fi_msg *msg = &sr->tx_msg[m];
	size_t len = plan->size[m], cuts[FT_MAX_IOV], niov = 1;
	size_t limit = ctx->info->tx_attr->iov_limit;
	char *base = ctx->buf + (SR_NMSG + m) * sr->region;
	ssize_t ret;

	if (plan->round->send == SR_SENDV)
		niov = sr_cuts(len, 3, limit, cuts);
	else if (plan->round->send == SR_SENDMSG)
		niov = sr_cuts(len, 2, limit, cuts);
	assert(!op->posted);
	ft_op_init(ctx, op, "data send", base, len, niov, cuts, SR_GAP);
	ft_fill(sr->scratch, len, plan->seed[m]);
	ft_op_scatter(op, sr->scratch, len);

	switch (plan->round->send) {
	case SR_SEND:
		FT_POST(ret, ctx, "fi_send",
			fi_send(ctx->ep, op->iov[0].iov_base, op->iov[0].iov_len,
				op->desc[0], ctx->peer, &op->fctx));
		break;
	case SR_SENDV:
		FT_POST(ret, ctx, "fi_sendv",
			fi_sendv(ctx->ep, op->iov, op->desc, op->iov_count, ctx->peer,
				&op->fctx));
		break;
	case SR_SENDMSG:
		msg->msg_iov = op->iov;
		msg->desc = op->desc;
		msg->iov_count = op->iov_count;
		msg->addr = ctx->peer;
		msg->context = &op->fctx;
		msg->data = 0;
		FT_POST(ret, ctx, "fi_sendmsg", fi_sendmsg(ctx->ep, msg, FI_COMPLETION));
		break;
	case SR_INJECT:
		FT_POST(ret, ctx, "fi_inject",
			fi_inject(ctx->ep, op->iov[0].iov_base, op->iov[0].iov_len,
				ctx->peer));
		/* The buffer is ours again: scribble on it to prove it was copied. */
		if (!ret)
			memset(op->piece[0], 0xEE, len);
		return (int)ret;
	default:
		FT_POST(ret, ctx, "fi_senddata",
			fi_senddata(ctx->ep, op->iov[0].iov_base, op->iov[0].iov_len,
				op->desc[0], plan->data[m], ctx->peer, &op->fctx));
		break;
	}
	if (!ret)
		op->posted = true;
	return (int)ret;
}

static int sr_check_send(struct sr *sr, const struct sr_plan *plan,
			 const struct fi_cq_data_entry *comp, bool *done)
{
	const char *rname = plan->round->name;
	size_t m;

	for (m = 0; m < plan->n && comp->op_context != &sr->tx[m].fctx; m++)
		;
	if (m == plan->n) {
		ft_fail(&sr->ctx, "%s: send completion with op_context %p, which is none of the "
			"posted sends", rname, comp->op_context);
		return -FI_EOTHER;
	}
	if (done[m]) {
		ft_fail(&sr->ctx, "%s: send %zu completed twice", rname, m);
		return -FI_EOTHER;
	}
	done[m] = true;
	sr->tx[m].posted = false;
	if (!(comp->flags & FI_SEND) ||
	    (comp->flags & (FI_RECV | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_REMOTE_CQ_DATA))) {
		ft_fail(&sr->ctx, "%s: send %zu: completion flags %s, expected FI_SEND "
			"(and FI_MSG)", rname, m, fi_tostr(&comp->flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	sr_note_no_msg_flag(sr, comp->flags, "send");
	return 0;
}

static int sr_send_round(struct sr *sr, const struct sr_plan *plan)
{
	struct ft_ctx *ctx = &sr->ctx;
	bool done[SR_NMSG] = { false };
	struct fi_cq_data_entry comp;
	struct ft_ctrl m;
	char what[96];
	size_t i;
	int ret;

	snprintf(what, sizeof(what), "READY of round %u (%s)", plan->number, plan->round->name);
	for (;;) {
		ret = ft_ctrl_wait(ctx, &m, 0, what);
		if (ret)
			return ret;
		if (m.type != FT_CTRL_ACK || ft_is_server(&sr->opts))
			break;
		/* The client's first READY may follow a duplicate ACK (DGRAM). */
		ft_msg(ctx, "note: duplicate ACK (answer to a DGRAM retransmission): ignored");
		ret = ft_ctrl_post(ctx);
		if (ret)
			return ret;
	}
	if (m.type != FT_CTRL_READY || m.arg0 != plan->number || m.arg1 != plan->n) {
		ft_fail(ctx, "%s: expected READY %u %zu, received %s %u %u: the two sides "
			"disagree (same options and provider on both?)", plan->round->name,
			plan->number, plan->n, ft_ctrl_str(m.type), m.arg0, m.arg1);
		return -FI_EOTHER;
	}
	/* DONE will land here. */
	ret = ft_ctrl_post(ctx);
	if (ret)
		return ret;
	for (i = 0; i < plan->n; i++) {
		ret = sr_post_send(sr, plan, i);
		if (ret)
			return ret;
	}
	if (plan->round->send != SR_INJECT) {
		for (i = 0; i < plan->n; i++) {
			snprintf(what, sizeof(what), "send %zu of %zu (%s)", i + 1, plan->n,
				 plan->round->name);
			ret = ft_cq_wait(ctx, &ctx->txcq, &comp, NULL, ft_deadline(ctx), what);
			if (ret)
				return ret;
			ret = sr_check_send(sr, plan, &comp, done);
			if (ret)
				return ret;
		}
	}
	snprintf(what, sizeof(what), "DONE of round %u (%s)", plan->number, plan->round->name);
	ret = ft_ctrl_wait(ctx, &m, 0, what);
	if (ret)
		return ret;
	if (m.type != FT_CTRL_DONE || m.arg0 != plan->number) {
		ft_fail(ctx, "%s: expected DONE %u, received %s %u", plan->round->name,
			plan->number, ft_ctrl_str(m.type), m.arg0);
		return -FI_EOTHER;
	}
	if (m.arg1) {
		ft_fail(ctx, "%s: the receiver reported a failure (see its output)",
			plan->round->name);
		return -FI_EOTHER;
	}
	if (plan->round->send == SR_INJECT) {
		ret = ft_cq_poll(ctx, &ctx->txcq, &comp, NULL);
		if (ret < 0)
			return ret;
		if (ret) {
			ft_fail(ctx, "%s: fi_inject generated a send completion (op_context %p)",
				plan->round->name, comp.op_context);
			return -FI_EOTHER;
		}
	}
	return 0;
}

/* ---- driver ---- */

/*
 * The handshake, then START: the client posts the receive for READY of
 * round 0 before sending START, so the server can begin as receiver.
 */
static int sr_start(struct sr *sr)
{
	struct ft_ctx *ctx = &sr->ctx;
	struct ft_ctrl m;
	int ret;

	if (!ft_is_server(&sr->opts)) {
		ret = ft_hello_client(ctx);
		if (!ret)
			ret = ft_ctrl_post(ctx);
		if (!ret)
			ret = ft_ctrl_send(ctx, FT_CTRL_START, 0, 0);
		return ret;
	}
	ret = ft_hello_server_wait(ctx);
	if (!ret)
		ret = ft_ctrl_post(ctx);
	if (!ret)
		ret = ft_hello_server_ack(ctx);
	while (!ret) {
		ret = ft_ctrl_wait(ctx, &m, 0, "the client's START");
		if (ret)
			return ret;
		if (m.type == FT_CTRL_START)
			return 0;
		if (m.type != FT_CTRL_HELLO ||
		    ft_handshake_dup(ctx, ft_op_payload(&ctx->ctrl_rx, ctx->prefix),
				     FT_CTRL_HDR_LEN + m.addrlen) != FT_DUP_HELLO) {
			ft_fail(ctx, "expected START, received %s", ft_ctrl_str(m.type));
			return -FI_EOTHER;
		}
		/* A DGRAM retransmission of HELLO: repost, acknowledge again, wait on. */
		ret = ft_ctrl_post(ctx);
		if (!ret)
			ret = ft_hello_server_ack(ctx);
	}
	return ret;
}

static int sr_run_round(struct sr *sr, const struct sr_round *r, bool client_sends)
{
	struct sr_plan plan;
	int ret;

	sr_plan_round(sr, &plan, r, client_sends);
	sr->executed++;
	ret = sr_i_send(sr, &plan) ? sr_send_round(sr, &plan) : sr_receive_round(sr, &plan);
	printf("  %-28s %s  %zu msgs, %zu..%zu bytes  %s\n", r->name, sr_dir(&plan), plan.n,
	       plan.size[plan.n - 1], plan.size[0], ret ? "FAIL" : "PASS");
	fflush(stdout);
	return ret;
}

static int sr_run(struct sr *sr)
{
	static const struct ft_want want[] = {
		{ .caps = FI_MSG | FI_SOURCE, .msg_order = FI_ORDER_SAS },
		{ .caps = FI_MSG | FI_SOURCE },
		{ .caps = FI_MSG, .msg_order = FI_ORDER_SAS },
		{ .caps = FI_MSG },
	};
	struct ft_ctx *ctx = &sr->ctx;
	const struct sr_round *r;
	const char *why;
	size_t max = 0, def, ri;
	long it;
	int si, ret;

	ret = ft_setup(ctx, &sr->opts, want, sizeof(want) / sizeof(want[0]));
	if (ret)
		return ret == -FI_ENODATA ? FT_EXIT_USAGE : FT_EXIT_FAIL;
	def = ctx->info->ep_attr->type == FI_EP_DGRAM ? SR_DEFAULT_DGRAM : SR_DEFAULT_RDM;
	sr->nsizes = ft_parse_sizes(&sr->opts, ctx->max_payload, def, sr->sizes, FT_MAX_SIZES);
	if (sr->nsizes < 0)
		return FT_EXIT_USAGE;
	for (si = 0; si < sr->nsizes; si++)
		if (sr->sizes[si] > max)
			max = sr->sizes[si];
	sr->region = (ft_op_region(ctx, max, FT_MAX_IOV, SR_GAP) + 63) & ~(size_t)63;
	ret = ft_alloc_buf(ctx, 2 * SR_NMSG * sr->region);
	if (ret)
		return FT_EXIT_FAIL;
	sr->scratch = malloc(max);
	if (!sr->scratch)
		return FT_EXIT_FAIL;
	sr->sas = (ctx->info->tx_attr->msg_order & FI_ORDER_SAS) &&
		  (ctx->info->rx_attr->msg_order & FI_ORDER_SAS);
	ft_print_info(ctx);
	ft_msg(ctx, "FI_ORDER_SAS %s; FI_SOURCE %s", sr->sas ? "granted: order checked" :
	       "not granted: any arrival order accepted", ctx->source ?
	       "granted: every receive's source checked" : "not granted: not checked");

	ctx->config = ft_config_hash(0x5352, sr->sizes, sr->nsizes, sr->opts.iters);
	ret = sr_start(sr);
	if (ret)
		return FT_EXIT_FAIL;

	for (si = 0; si < sr->nsizes; si++) {
		sr->max = sr->sizes[si];
		for (it = 0; it < sr->opts.iters; it++) {
			printf("largest message %zu bytes, pass %ld of %ld\n", sr->max, it + 1,
			       sr->opts.iters);
			for (ri = 0; ri < sizeof(sr_rounds) / sizeof(sr_rounds[0]); ri++) {
				r = &sr_rounds[ri];
				why = sr_skip_reason(sr, r);
				if (why) {
					printf("  %-28s skipped: %s\n", r->name, why);
					continue;
				}
				if (sr_run_round(sr, r, true) || sr_run_round(sr, r, false))
					return FT_EXIT_FAIL;
			}
		}
	}
	ft_msg(ctx, "%u rounds, %lu received messages checked", sr->executed, sr->checked);
	return FT_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static struct sr sr;
	int ret;

	ft_parse_opts(&sr.opts, argc, argv, sr_about);
	if (!sr.opts.iters)
		sr.opts.iters = SR_DEFAULT_ITERS;
	ret = sr_run(&sr);
	ft_teardown(&sr.ctx);
	free(sr.scratch);
	printf("%s: %s %s over %s: %s\n", sr.opts.prog,
	       ft_is_server(&sr.opts) ? "server" : "client",
	       ft_ep_type_str(sr.opts.ep_type),
	       sr.opts.prov_name ? sr.opts.prov_name : "(any provider)",
	       ret == FT_EXIT_PASS ? "PASS" : "FAIL");
	return ret;
}
