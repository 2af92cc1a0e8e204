/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_tagged.c: tagged ping-pong and windowed bandwidth, every message's tag and data checked. */
#include "ft_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TG_DEFAULT_SIZE     64
#define TG_DEFAULT_ITERS    1000     /* ping-pong: round trips per size */
#define TG_DEFAULT_BW_SIZE  65536
#define TG_DEFAULT_BW_ITERS 20       /* bandwidth: windows per size */
#define TG_DEFAULT_WINDOW   64
#define TG_MAX_WINDOW       1024
#define TG_HDR              8        /* bandwidth: sequence number before the pattern */
#define TG_NIGNORE          4        /* messages of the ignore-mask sub-test */
#define TG_IGNORE_CAP       256      /* their receive buffers */

static const char tg_about[] =
	"Tagged messaging over FI_EP_RDM (default) with fi_tsend/fi_trecv.\n"
	"First the ignore-mask sub-test, in both directions: the receiver posts\n"
	"four receives from FI_ADDR_UNSPEC (a tag with an ignore mask, an exact\n"
	"tag, a second masked tag, and a match-everything receive), the sender\n"
	"sends four messages each of which only one of them may take; the tag\n"
	"in every completion must be the one sent. Then, -m pingpong (default):\n"
	"ITERS round trips per size with a new pair of tags every iteration; the\n"
	"server keeps two receives of different tags posted (the first two in\n"
	"reverse order), the client's odd iterations use a directed receive when\n"
	"FI_DIRECTED_RECV is granted; one line per size with the half round trip.\n"
	"-m bw: the client sends windows of -W fi_tsend (default 64) that the\n"
	"server has pre-posted, ITERS windows per size, and the server answers\n"
	"each window once it has checked it; one line per size with MB/s and\n"
	"messages/s. Every received message's tag, length, source (FI_SOURCE)\n"
	"and data are checked.";

enum tg_mode { TG_PINGPONG, TG_BW };

/* Everything one run needs besides the common context. */
struct tg {
	struct ft_ctx ctx;
	struct ft_opts opts;
	enum tg_mode mode;           /* -m */
	long window;                 /* -W: bandwidth window */
	bool directed;               /* FI_DIRECTED_RECV granted */
	struct ft_op ig_rx[TG_NIGNORE]; /* ignore-mask sub-test */
	struct ft_op ig_tx[TG_NIGNORE];
	struct ft_op *rx;            /* ping-pong: 2 slots; bandwidth: window */
	struct ft_op *tx;            /* ping-pong: 1; bandwidth: 2 * window */
	size_t nrx, ntx;
	size_t max;                  /* largest message */
	unsigned long checked;       /* received messages verified */
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
};

static int tg_parse(void *arg, int c, const char *optarg)
{
	struct tg *tg = arg;
	char *end;

	switch (c) {
	case 'm':
		if (!strcasecmp(optarg, "pingpong") || !strcasecmp(optarg, "pp")) {
			tg->mode = TG_PINGPONG;
		} else if (!strcasecmp(optarg, "bw")) {
			tg->mode = TG_BW;
		} else {
			fprintf(stderr, "braid_tagged: error: -m %s: mode must be pingpong or bw\n",
				optarg);
			return -FI_EINVAL;
		}
		return 0;
	case 'W':
		tg->window = strtol(optarg, &end, 0);
		if (*end || tg->window < 1 || tg->window > TG_MAX_WINDOW) {
			fprintf(stderr, "braid_tagged: error: -W %s: window must be 1..%d\n",
				optarg, TG_MAX_WINDOW);
			return -FI_EINVAL;
		}
		return 0;
	default:
		return -FI_EINVAL;
	}
}

/* ---- checks ---- */

/*
 * Check a tagged receive completion: no error, the expected op, FI_RECV,
 * the tag sent, the length, and the source when FI_SOURCE is granted.
 */
static int tg_check_recv(struct tg *tg, const struct ft_comp *c, const struct ft_op *op,
			 uint64_t tag, size_t len, const char *what)
{
	struct ft_ctx *ctx = &tg->ctx;

	if (c->err)
		return ft_comp_fail(ctx, &ctx->rxcq, c, what);
	if (c->e.op_context != &op->fctx) {
		ft_fail(ctx, "%s: completion for op_context %p, expected %p (%s)", what,
			c->e.op_context, (void *)&op->fctx, op->name);
		return -FI_EOTHER;
	}
	if ((c->e.flags & (FI_TAGGED | FI_RECV)) != (FI_TAGGED | FI_RECV) ||
	    (c->e.flags & (FI_SEND | FI_MSG | FI_RMA | FI_ATOMIC | FI_REMOTE_CQ_DATA))) {
		ft_fail(ctx, "%s: receive completion flags %s, expected FI_TAGGED | FI_RECV",
			what, fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	if (c->e.tag != tag) {
		ft_fail(ctx, "%s: completion tag 0x%016llx, but the message was sent with tag "
			"0x%016llx", what, (unsigned long long)c->e.tag, (unsigned long long)tag);
		return -FI_EOTHER;
	}
	if (c->e.len != len) {
		ft_fail(ctx, "%s: received %zu bytes, expected %zu", what, c->e.len, len);
		return -FI_EOTHER;
	}
	if (ctx->source && c->src != ctx->peer) {
		ft_fail(ctx, "%s: FI_SOURCE: fi_cq_readfrom gave source fi_addr 0x%llx, but the "
			"peer was inserted as 0x%llx", what, (unsigned long long)c->src,
			(unsigned long long)ctx->peer);
		return -FI_EOTHER;
	}
	tg->checked++;
	return 0;
}

static int tg_check_data(struct tg *tg, const void *buf, size_t len, uint64_t seed,
			 const char *what)
{
	ssize_t bad = ft_check(buf, len, seed);

	if (bad < 0)
		return 0;
	ft_fail(&tg->ctx, "%s: %zu bytes: data mismatch at offset %zd: 0x%02x, expected 0x%02x",
		what, len, bad, ((const unsigned char *)buf)[bad],
		ft_pattern_byte(seed, (size_t)bad));
	return -FI_EOTHER;
}

/* Wait for the send completion of op. */
static int tg_wait_send(struct tg *tg, struct ft_op *op, const char *what)
{
	struct ft_ctx *ctx = &tg->ctx;
	struct fi_cq_data_entry comp;
	int ret;

	ret = ft_wait_op(ctx, &ctx->txcq, op, &comp, NULL, what);
	if (ret)
		return ret;
	if ((comp.flags & (FI_TAGGED | FI_SEND)) != (FI_TAGGED | FI_SEND) ||
	    (comp.flags & (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA))) {
		ft_fail(ctx, "%s: send completion flags %s, expected FI_TAGGED | FI_SEND", what,
			fi_tostr(&comp.flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	return 0;
}

/* Post a receive, then wait for a control message. */
static int tg_ctrl_recv(struct tg *tg, struct ft_ctrl *m, uint32_t type, uint32_t arg0,
			const char *what)
{
	struct ft_ctx *ctx = &tg->ctx;
	int ret;

	ret = ft_ctrl_post(ctx);
	if (!ret)
		ret = ft_ctrl_wait(ctx, m, 0, what);
	if (ret)
		return ret;
	if (m->type != type || m->arg0 != arg0) {
		ft_fail(ctx, "%s: expected %s %u, received %s %u: the two sides disagree", what,
			ft_ctrl_str(type), arg0, ft_ctrl_str(m->type), m->arg0);
		return -FI_EOTHER;
	}
	return 0;
}

/* ---- ignore-mask sub-test ---- */

/*
 * Receive i (posted in this order) and the one message that may land in
 * it. The match-everything receive is posted last, so each message has
 * exactly one receive it can take whatever the arrival order.
 */
static const struct {
	uint64_t tag, ignore;        /* the receive */
	uint64_t sent;               /* the tag of the message it must get */
} tg_ignore_plan[TG_NIGNORE] = {
	{ 0x1234567800000000ull, 0x00000000FFFFFFFFull, 0x12345678DEADBEEFull },
	{ 0x0BADC0DE0000B00Bull, 0, 0x0BADC0DE0000B00Bull },
	{ 0xA5A5000000000000ull, 0x00FF0000000000FFull, 0xA5C3000000000017ull },
	{ 0, ~0ull, 0x7777777777777777ull },
};

static size_t tg_ignore_size(size_t i)
{
	return 8 + 37 * i;
}

static uint64_t tg_ignore_seed(bool client_sends, size_t i)
{
	return ft_seed(0x1960, client_sends, i, 0);
}

static int tg_ignore_receive(struct tg *tg, bool client_sends)
{
	struct ft_ctx *ctx = &tg->ctx;
	bool done[TG_NIGNORE] = { false };
	struct ft_comp c;
	char what[96];
	size_t i, k;
	int ret, status = 0;

	for (i = 0; i < TG_NIGNORE; i++) {
		memset(tg->ig_rx[i].base, 0, TG_IGNORE_CAP);
		ret = ft_post_trecv(ctx, &tg->ig_rx[i], tg_ignore_plan[i].tag,
				    tg_ignore_plan[i].ignore);
		if (ret)
			return ret;
	}
	ret = ft_ctrl_send(ctx, FT_CTRL_READY, 1, client_sends);
	if (ret)
		return ret;
	for (k = 0; k < TG_NIGNORE && !status; k++) {
		ret = ft_cq_wait_comp(ctx, &ctx->rxcq, &c, ft_deadline(ctx),
				      "a message of the ignore-mask sub-test");
		if (ret)
			return ret;
		for (i = 0; i < TG_NIGNORE && c.e.op_context != &tg->ig_rx[i].fctx; i++)
			;
		if (i == TG_NIGNORE || done[i]) {
			ft_fail(ctx, "ignore mask: completion for op_context %p, which is %s",
				c.e.op_context, i == TG_NIGNORE ? "none of the posted receives" :
				"a receive that already completed");
			status = -FI_EOTHER;
			break;
		}
		done[i] = true;
		tg->ig_rx[i].posted = false;
		snprintf(what, sizeof(what), "ignore mask: receive %zu (tag 0x%016llx, ignore "
			 "0x%016llx)", i, (unsigned long long)tg_ignore_plan[i].tag,
			 (unsigned long long)tg_ignore_plan[i].ignore);
		status = tg_check_recv(tg, &c, &tg->ig_rx[i], tg_ignore_plan[i].sent,
				       tg_ignore_size(i), what);
		if (!status)
			status = tg_check_data(tg, tg->ig_rx[i].base, tg_ignore_size(i),
					       tg_ignore_seed(client_sends, i), what);
	}
	/* Tell the sender, so that both sides fail together. */
	ret = ft_ctrl_send(ctx, FT_CTRL_DONE, 1, status != 0);
	return status ? status : ret;
}

static int tg_ignore_send(struct tg *tg, bool client_sends)
{
	struct ft_ctx *ctx = &tg->ctx;
	struct ft_ctrl m;
	size_t i;
	int ret;

	ret = tg_ctrl_recv(tg, &m, FT_CTRL_READY, 1, "READY of the ignore-mask sub-test");
	if (ret)
		return ret;
	/* Sent in the reverse of the posting order: matching must not care. */
	for (i = TG_NIGNORE; i-- > 0;) {
		ft_fill(tg->ig_tx[i].base, tg_ignore_size(i), tg_ignore_seed(client_sends, i));
		ret = ft_post_tsend(ctx, &tg->ig_tx[i], tg_ignore_size(i),
				    tg_ignore_plan[i].sent);
		if (ret)
			return ret;
	}
	for (i = TG_NIGNORE; i-- > 0;) {
		ret = tg_wait_send(tg, &tg->ig_tx[i], "a send of the ignore-mask sub-test");
		if (ret)
			return ret;
	}
	ret = tg_ctrl_recv(tg, &m, FT_CTRL_DONE, 1, "DONE of the ignore-mask sub-test");
	if (ret)
		return ret;
	if (m.arg1) {
		ft_fail(ctx, "ignore mask: the receiver reported a failure (see its output)");
		return -FI_EOTHER;
	}
	return 0;
}

static int tg_ignore(struct tg *tg)
{
	bool server = ft_is_server(&tg->opts);
	int dir, ret;

	for (dir = 1; dir >= 0; dir--) {
		bool client_sends = dir;

		ret = client_sends != server ? tg_ignore_send(tg, client_sends) :
		      tg_ignore_receive(tg, client_sends);
		printf("sub-test ignore-mask  %s  4 receives from FI_ADDR_UNSPEC, "
		       "masked/exact/wildcard  %s\n",
		       client_sends ? "client -> server" : "server -> client",
		       ret ? "FAIL" : "PASS");
		fflush(stdout);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- ping-pong ---- */

/* Ping-pong message k (over all sizes): its size index and iteration. */
static void tg_pp_index(const struct tg *tg, long k, int *si, long *it)
{
	*si = (int)(k / tg->opts.iters);
	*it = k % tg->opts.iters;
}

static uint64_t tg_pp_tag(long k, int dir)
{
	return ft_seed(0x7467, (uint64_t)k, (uint64_t)dir, 0);
}

static uint64_t tg_pp_seed(int si, size_t size, long it, int dir)
{
	return ft_seed(0x7470, ((uint64_t)si << 32) | size, (uint64_t)it, (uint64_t)dir);
}

/* Post the receive for message k in op, from src (FI_ADDR_UNSPEC: anyone). */
static int tg_pp_post(struct tg *tg, struct ft_op *op, long k, int dir, fi_addr_t src)
{
	struct ft_ctx *ctx = &tg->ctx;
	ssize_t ret;

	FT_POST(ret, ctx, "fi_trecv",
		fi_trecv(ctx->ep, op->base, op->cap, op->desc[0], src, tg_pp_tag(k, dir), 0,
			 &op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

/* Wait for message k of the given direction in op and check it. */
static int tg_pp_wait(struct tg *tg, struct ft_op *op, long k, int dir)
{
	struct ft_ctx *ctx = &tg->ctx;
	const char *what = dir ? "a pong" : "a ping";
	size_t size;
	struct ft_comp c;
	char text[96];
	long it;
	int si, ret;

	tg_pp_index(tg, k, &si, &it);
	size = tg->sizes[si];
	ret = ft_cq_wait_comp(ctx, &ctx->rxcq, &c, ft_deadline(ctx), what);
	if (ret)
		return ret;
	snprintf(text, sizeof(text), "%s, %zu bytes, iteration %ld", what, size, it);
	ret = tg_check_recv(tg, &c, op, tg_pp_tag(k, dir), size, text);
	if (ret)
		return ret;
	op->posted = false;
	return tg_check_data(tg, op->base, size, tg_pp_seed(si, size, it, dir), text);
}

static int tg_pp_send(struct tg *tg, long k, int dir)
{
	struct ft_op *op = &tg->tx[0];
	size_t size;
	long it;
	int si, ret;

	tg_pp_index(tg, k, &si, &it);
	size = tg->sizes[si];
	ft_fill(op->base, size, tg_pp_seed(si, size, it, dir));
	ret = ft_post_tsend(&tg->ctx, op, size, tg_pp_tag(k, dir));
	if (ret)
		return ret;
	return tg_wait_send(tg, op, dir ? "the send of a pong" : "the send of a ping");
}

static int tg_pingpong(struct tg *tg)
{
	struct ft_ctx *ctx = &tg->ctx;
	bool server = ft_is_server(&tg->opts);
	long k, total = tg->opts.iters * tg->nsizes, it;
	uint64_t t0 = 0;
	fi_addr_t src;
	struct ft_ctrl m;
	double usec;
	int si, ret;

	/* The server posts its first two receives, reversed, then says READY. */
	if (server) {
		if (total > 1) {
			ret = tg_pp_post(tg, &tg->rx[1], 1, 0, FI_ADDR_UNSPEC);
			if (ret)
				return ret;
		}
		ret = tg_pp_post(tg, &tg->rx[0], 0, 0, FI_ADDR_UNSPEC);
		if (!ret)
			ret = ft_ctrl_send(ctx, FT_CTRL_READY, 2, 0);
	} else {
		ret = tg_ctrl_recv(tg, &m, FT_CTRL_READY, 2, "READY of the ping-pong");
	}
	if (ret)
		return ret;

	printf("%-10s %-10s %-16s %s\n", "bytes", "iters", "half-RTT(us)", "result");
	for (k = 0; k < total; k++) {
		tg_pp_index(tg, k, &si, &it);
		if (it == 0)
			t0 = ft_now_ns();
		if (server) {
			ret = tg_pp_wait(tg, &tg->rx[k % 2], k, 0);
			/* Keep two receives posted: the one for k + 1, and now k + 2. */
			if (!ret && k + 2 < total)
				ret = tg_pp_post(tg, &tg->rx[k % 2], k + 2, 0, FI_ADDR_UNSPEC);
			if (!ret)
				ret = tg_pp_send(tg, k, 1);
		} else {
			/* Odd iterations: a receive directed at the server, if granted. */
			src = tg->directed && (it & 1) ? ctx->peer : FI_ADDR_UNSPEC;
			ret = tg_pp_post(tg, &tg->rx[0], k, 1, src);
			if (!ret)
				ret = tg_pp_send(tg, k, 0);
			if (!ret)
				ret = tg_pp_wait(tg, &tg->rx[0], k, 1);
		}
		if (ret) {
			printf("%-10zu %-10ld %-16s %s\n", tg->sizes[si], tg->opts.iters, "-", "FAIL");
			return ret;
		}
		if (it + 1 == tg->opts.iters) {
			usec = (double)(ft_now_ns() - t0) / 1000.0 / (double)tg->opts.iters / 2.0;
			printf("%-10zu %-10ld %-16.2f %s\n", tg->sizes[si], tg->opts.iters, usec,
			       "PASS");
			fflush(stdout);
		}
	}
	return 0;
}

/* ---- bandwidth ---- */

static uint64_t tg_bw_tag(int si, long w, long slot)
{
	return ft_seed(0x6277, (uint64_t)si, (uint64_t)w, (uint64_t)slot);
}

/*
 * The data of message (w, slot): at least TG_HDR + 8 bytes carry the
 * sequence number, then a pattern of (size, slot, parity of w) the sender
 * laid down once per size in two sets of buffers, so a receive buffer
 * gets different data every window; smaller ones a pattern of it all.
 */
static bool tg_bw_hdr(size_t size)
{
	return size >= TG_HDR + 8;
}

static uint64_t tg_bw_seed(int si, size_t size, long w, long slot)
{
	if (tg_bw_hdr(size))
		return ft_seed(0x6264, ((uint64_t)si << 32) | size, (uint64_t)slot,
			       (uint64_t)(w & 1));
	return ft_seed(0x6265, ((uint64_t)si << 32) | size, (uint64_t)w, (uint64_t)slot);
}

static void tg_bw_prepare(struct tg *tg, int si, size_t size)
{
	long slot, p;

	if (!tg_bw_hdr(size))
		return;
	for (p = 0; p < 2; p++)
		for (slot = 0; slot < tg->window; slot++)
			ft_fill(tg->tx[p * tg->window + slot].base + TG_HDR, size - TG_HDR,
				tg_bw_seed(si, size, p, slot));
}

static int tg_bw_check(struct tg *tg, int si, size_t size, long w, long slot)
{
	const char *buf = tg->rx[slot].base;
	uint64_t seq, want = (uint64_t)(w * tg->window + slot);
	char what[96];

	snprintf(what, sizeof(what), "bandwidth, %zu bytes, window %ld, message %ld", size, w,
		 slot);
	if (!tg_bw_hdr(size))
		return tg_check_data(tg, buf, size, tg_bw_seed(si, size, w, slot), what);
	memcpy(&seq, buf, sizeof(seq));
	if (seq != want) {
		ft_fail(&tg->ctx, "%s: sequence number %llu, expected %llu (stale or misplaced "
			"data)", what, (unsigned long long)seq, (unsigned long long)want);
		return -FI_EOTHER;
	}
	return tg_check_data(tg, buf + TG_HDR, size - TG_HDR, tg_bw_seed(si, size, w, slot),
			     what);
}

/* Receiver: one window: post, say READY, take and check every message. */
static int tg_bw_recv_window(struct tg *tg, int si, size_t size, long w)
{
	struct ft_ctx *ctx = &tg->ctx;
	struct ft_comp c;
	char what[96];
	long slot, n;
	int ret;

	for (slot = 0; slot < tg->window; slot++) {
		/* Stale data must not pass: spoil the header of the last window. */
		memset(tg->rx[slot].base, 0xFF, size < TG_HDR ? size : TG_HDR);
		ret = ft_post_trecv(ctx, &tg->rx[slot], tg_bw_tag(si, w, slot), 0);
		if (ret)
			return ret;
	}
	ret = ft_ctrl_send(ctx, FT_CTRL_READY, (uint32_t)si, (uint32_t)w);
	if (ret)
		return ret;
	for (n = 0; n < tg->window; n++) {
		ret = ft_cq_wait_comp(ctx, &ctx->rxcq, &c, ft_deadline(ctx),
				      "a message of the bandwidth window");
		if (ret)
			return ret;
		for (slot = 0; slot < tg->window && c.e.op_context != &tg->rx[slot].fctx; slot++)
			;
		if (slot == tg->window || !tg->rx[slot].posted) {
			if (c.err)
				return ft_comp_fail(ctx, &ctx->rxcq, &c, "bandwidth");
			ft_fail(ctx, "bandwidth, window %ld: completion for op_context %p, which is "
				"%s", w, c.e.op_context, slot == tg->window ?
				"none of the posted receives" : "a receive that already completed");
			return -FI_EOTHER;
		}
		snprintf(what, sizeof(what), "bandwidth, %zu bytes, window %ld, message %ld",
			 size, w, slot);
		ret = tg_check_recv(tg, &c, &tg->rx[slot], tg_bw_tag(si, w, slot), size, what);
		if (ret)
			return ret;
		tg->rx[slot].posted = false;
		ret = tg_bw_check(tg, si, size, w, slot);
		if (ret)
			return ret;
	}
	return 0;
}

/* Sender: one window of fi_tsend, retried on -FI_EAGAIN while taking completions. */
static int tg_bw_send_window(struct tg *tg, int si, size_t size, long w)
{
	struct ft_ctx *ctx = &tg->ctx;
	uint64_t seq, deadline = ft_deadline(ctx);
	struct ft_op *op;
	struct ft_comp c;
	long posted = 0, done = 0, slot;
	ssize_t ret;

	while (done < tg->window) {
		if (posted < tg->window) {
			op = &tg->tx[(w & 1) * tg->window + posted];
			if (tg_bw_hdr(size)) {
				seq = (uint64_t)(w * tg->window + posted);
				memcpy(op->base, &seq, sizeof(seq));
			} else {
				ft_fill(op->base, size, tg_bw_seed(si, size, w, posted));
			}
			ret = fi_tsend(ctx->ep, op->base, size, op->desc[0], ctx->peer,
				       tg_bw_tag(si, w, posted), &op->fctx);
			if (!ret) {
				op->posted = true;
				posted++;
				deadline = ft_deadline(ctx);
				continue;
			}
			if (ret != -FI_EAGAIN) {
				ft_error(ctx, "fi_tsend", (int)ret);
				return (int)ret;
			}
		}
		ret = ft_cq_poll_comp(ctx, &ctx->txcq, &c);
		if (ret < 0)
			return (int)ret;
		if (ret == 0) {
			if (ft_now_ns() > deadline) {
				ft_fail(ctx, "timeout: bandwidth window %ld: %ld of %ld sends posted, "
					"%ld completed after %d s", w, posted, tg->window, done,
					ctx->opts->timeout_sec);
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		for (slot = 0; slot < 2 * tg->window && c.e.op_context != &tg->tx[slot].fctx; slot++)
			;
		if (c.err)
			return ft_comp_fail(ctx, &ctx->txcq, &c, "bandwidth send");
		if (slot == 2 * tg->window || !tg->tx[slot].posted) {
			ft_fail(ctx, "bandwidth, window %ld: send completion for op_context %p, which "
				"is %s", w, c.e.op_context, slot == 2 * tg->window ?
				"none of the posted sends" : "a send that already completed");
			return -FI_EOTHER;
		}
		if ((c.e.flags & (FI_TAGGED | FI_SEND)) != (FI_TAGGED | FI_SEND) ||
		    (c.e.flags & (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA))) {
			ft_fail(ctx, "bandwidth: send completion flags %s, expected FI_TAGGED | "
				"FI_SEND",
				fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		tg->tx[slot].posted = false;
		done++;
		deadline = ft_deadline(ctx);
	}
	return 0;
}

static int tg_bw(struct tg *tg)
{
	bool server = ft_is_server(&tg->opts);
	uint64_t t0;
	struct ft_ctrl m;
	double sec, msgs;
	long w;
	int si, ret = 0;

	printf("%-10s %-8s %-8s %-12s %-12s %s\n", "bytes", "window", "windows", "MB/s",
	       "msgs/s", "result");
	for (si = 0; si < tg->nsizes; si++) {
		size_t size = tg->sizes[si];

		if (!server)
			tg_bw_prepare(tg, si, size);
		t0 = ft_now_ns();
		for (w = 0; w < tg->opts.iters && !ret; w++) {
			if (server) {
				ret = tg_bw_recv_window(tg, si, size, w);
			} else {
				ret = tg_ctrl_recv(tg, &m, FT_CTRL_READY, (uint32_t)si,
						   "READY of a bandwidth window");
				if (!ret && m.arg1 != (uint32_t)w) {
					ft_fail(&tg->ctx, "bandwidth: READY for window %u, expected %ld",
						m.arg1, w);
					ret = -FI_EOTHER;
				}
				if (!ret)
					ret = tg_bw_send_window(tg, si, size, w);
			}
		}
		/* The receiver's verdict ends the size (and the sender's clock). */
		if (server) {
			int sret = ft_ctrl_send(&tg->ctx, FT_CTRL_DONE, (uint32_t)si, ret != 0);

			ret = ret ? ret : sret;
		} else if (!ret) {
			ret = tg_ctrl_recv(tg, &m, FT_CTRL_DONE, (uint32_t)si,
					   "the receiver's verdict on a bandwidth size");
		}
		if (!server && !ret && m.arg1) {
			ft_fail(&tg->ctx, "bandwidth: the receiver reported a failure (see its output)");
			ret = -FI_EOTHER;
		}
		sec = (double)(ft_now_ns() - t0) / 1e9;
		msgs = (double)tg->window * (double)tg->opts.iters;
		if (ret) {
			printf("%-10zu %-8ld %-8ld %-12s %-12s %s\n", size, tg->window,
			       tg->opts.iters, "-", "-", "FAIL");
			return ret;
		}
		printf("%-10zu %-8ld %-8ld %-12.1f %-12.0f %s\n", size, tg->window, tg->opts.iters,
		       msgs * (double)size / sec / 1e6, msgs / sec, "PASS");
		fflush(stdout);
	}
	return 0;
}

/*
 * The end: the client says goodbye once it has the server's last message, and
 * the server keeps its endpoint (and so its retransmissions) alive until then,
 * at most TG_LINGER_NS. A send may complete before the peer has it (an inject,
 * a provider's buffered send: FI_INJECT_COMPLETE); a server that closed at once
 * could take its last message's retransmissions with it, and the client would
 * wait for it in vain. A goodbye that does not come fails nothing.
 */
#define TG_LINGER_NS	(5ULL * 1000000000ULL)

static void tg_goodbye(struct tg *tg)
{
	struct ft_ctx *ctx = &tg->ctx;
	struct fi_cq_data_entry comp;
	uint64_t until = ft_now_ns() + TG_LINGER_NS;

	if (!ft_is_server(&tg->opts)) {
		(void)ft_ctrl_send(ctx, FT_CTRL_DONE, UINT32_MAX, 0);
		return;
	}
	if (ft_ctrl_post(ctx))
		return;
	while (ft_now_ns() < until) {
		int ret = ft_cq_poll(ctx, &ctx->rxcq, &comp, NULL);

		if (ret != 0)
			break;	/* the goodbye (or an error: nothing more to wait for) */
	}
}

/* ---- driver ---- */

static int tg_start(struct tg *tg)
{
	struct ft_ctx *ctx = &tg->ctx;

	if (!ft_is_server(&tg->opts))
		return ft_hello_client(ctx);
	if (ft_hello_server_wait(ctx))
		return -FI_EOTHER;
	return ft_hello_server_ack(ctx);
}

/* Carve the buffer: ignore-mask ops, then the mode's receive and send slots. */
static int tg_alloc(struct tg *tg)
{
	struct ft_ctx *ctx = &tg->ctx;
	bool server = ft_is_server(&tg->opts);
	size_t region = (tg->max + 63) & ~(size_t)63, i, small = 2 * TG_NIGNORE * TG_IGNORE_CAP;
	char *at;

	if (tg->mode == TG_PINGPONG) {
		tg->nrx = 2;
		tg->ntx = 1;
	} else {
		tg->nrx = server ? (size_t)tg->window : 0;
		tg->ntx = server ? 0 : 2 * (size_t)tg->window;
	}
	tg->rx = calloc(tg->nrx + tg->ntx + 1, sizeof(*tg->rx));
	if (!tg->rx || ft_alloc_buf(ctx, small + (tg->nrx + tg->ntx) * region))
		return -FI_ENOMEM;
	tg->tx = tg->rx + tg->nrx;
	at = ctx->buf;
	for (i = 0; i < TG_NIGNORE; i++, at += 2 * TG_IGNORE_CAP) {
		ft_op_init(ctx, &tg->ig_rx[i], "ignore-mask receive", at, TG_IGNORE_CAP, 1, NULL, 0);
		ft_op_init(ctx, &tg->ig_tx[i], "ignore-mask send", at + TG_IGNORE_CAP,
			   TG_IGNORE_CAP, 1, NULL, 0);
	}
	for (i = 0; i < tg->nrx; i++, at += region)
		ft_op_init(ctx, &tg->rx[i], "tagged receive", at, tg->max, 1, NULL, 0);
	for (i = 0; i < tg->ntx; i++, at += region)
		ft_op_init(ctx, &tg->tx[i], "tagged send", at, tg->max, 1, NULL, 0);
	return 0;
}

static int tg_run(struct tg *tg)
{
	static const struct ft_want want[] = {
		{ .caps = FI_TAGGED | FI_MSG | FI_SOURCE | FI_DIRECTED_RECV },
		{ .caps = FI_TAGGED | FI_MSG | FI_SOURCE },
		{ .caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV },
		{ .caps = FI_TAGGED | FI_MSG },
	};
	struct ft_ctx *ctx = &tg->ctx;
	const struct fi_info *info;
	int si, ret;

	ret = ft_setup(ctx, &tg->opts, want, sizeof(want) / sizeof(want[0]));
	if (ret)
		return ret == -FI_ENODATA ? FT_EXIT_USAGE : FT_EXIT_FAIL;
	info = ctx->info;
	if (ctx->prefix) {
		ft_fail(ctx, "the provider requires FI_MSG_PREFIX, which this test does not support");
		return FT_EXIT_FAIL;
	}
	tg->directed = (info->caps & FI_DIRECTED_RECV) != 0;
	tg->nsizes = ft_parse_sizes(&tg->opts, ctx->max_payload,
				    tg->mode == TG_BW ? TG_DEFAULT_BW_SIZE : TG_DEFAULT_SIZE,
				    tg->sizes, FT_MAX_SIZES);
	if (tg->nsizes < 0)
		return FT_EXIT_USAGE;
	if (tg->mode == TG_BW && ((size_t)tg->window > info->tx_attr->size ||
				  (size_t)tg->window > info->rx_attr->size)) {
		ft_fail(ctx, "-W %ld: larger than the endpoint's queues (tx %zu, rx %zu)",
			tg->window, info->tx_attr->size, info->rx_attr->size);
		return FT_EXIT_USAGE;
	}
	tg->max = FT_CTRL_SIZE;
	for (si = 0; si < tg->nsizes; si++)
		if (tg->sizes[si] > tg->max)
			tg->max = tg->sizes[si];
	if (tg_alloc(tg))
		return FT_EXIT_FAIL;
	ft_print_info(ctx);
	if (tg->mode == TG_BW)
		ft_msg(ctx, "mode bw: window %ld, %ld windows per size", tg->window,
		       tg->opts.iters);
	else
		ft_msg(ctx, "mode pingpong: %ld round trips per size", tg->opts.iters);
	ft_msg(ctx, "FI_DIRECTED_RECV %s; FI_SOURCE %s",
	       tg->directed ? "granted: the client's odd ping-pong receives are directed" :
	       "not granted", ctx->source ? "granted: every receive's source checked" :
	       tg->opts.no_source ? "not asked for (-u): not checked" : "not granted: not checked");

	ctx->config = ft_seed(ft_config_hash(0x7467, tg->sizes, tg->nsizes, tg->opts.iters),
			      tg->mode, (uint64_t)tg->window, 0);
	if (tg_start(tg))
		return FT_EXIT_FAIL;
	ft_debug(ctx, "address exchange done");

	ret = tg_ignore(tg);
	if (!ret)
		ret = tg->mode == TG_BW ? tg_bw(tg) : tg_pingpong(tg);
	if (ret)
		return FT_EXIT_FAIL;
	tg_goodbye(tg);
	ft_msg(ctx, "%lu received messages checked", tg->checked);
	return FT_EXIT_PASS;
}

int main(int argc, char **argv)
{
	static struct tg tg = { .window = TG_DEFAULT_WINDOW };
	static const struct ft_extra_opts extra = {
		.ep_type = FI_EP_RDM,
		.optstring = "m:W:",
		.usage = "  -m MODE    pingpong (default) or bw\n"
			 "  -W N       bw: messages in flight per window (default 64)\n"
			 "  (-I is round trips per size for pingpong, default 1000;\n"
			 "   windows per size for bw, default 20. -S defaults to 64\n"
			 "   for pingpong, 65536 for bw)\n",
		.parse = tg_parse,
		.arg = &tg,
	};
	int ret;

	ft_parse_opts_extra(&tg.opts, argc, argv, tg_about, &extra);
	if (!tg.opts.iters)
		tg.opts.iters = tg.mode == TG_BW ? TG_DEFAULT_BW_ITERS : TG_DEFAULT_ITERS;
	ret = tg_run(&tg);
	ft_teardown(&tg.ctx);
	free(tg.rx);
	printf("%s: %s %s over %s: %s\n", tg.opts.prog,
	       ft_is_server(&tg.opts) ? "server" : "client",
	       ft_ep_type_str(tg.opts.ep_type),
	       tg.opts.prov_name ? tg.opts.prov_name : "(any provider)",
	       ret == FT_EXIT_PASS ? "PASS" : "FAIL");
	return ret;
}
