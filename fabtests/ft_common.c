/* SPDX-License-Identifier: BSD-2-Clause */
/* ft_common.c: options, fabric setup, completions, handshake and data pattern shared by braid's fabtests. */
#include "ft_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define FT_FIVERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Modes these programs honour; anything else a provider asks for is refused. */
#define FT_MODES (FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX | FI_ASYNC_IOV)
/* Memory registration modes these programs honour (local buffers only). */
#define FT_MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
		     FI_MR_PROV_KEY | FI_MR_ENDPOINT)

#define FT_GOLDEN 0x9E3779B97F4A7C15ull

/* ---- messages ---- */

static void ft_vprint(FILE *f, const struct ft_ctx *ctx, const char *tag,
		      const char *fmt, va_list ap)
{
	const char *prog = ctx && ctx->opts ? ctx->opts->prog : "fabtest";

	fprintf(f, "%s: %s", prog, tag);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
}

void ft_msg(const struct ft_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ft_vprint(stdout, ctx, "", fmt, ap);
	va_end(ap);
}

void ft_fail(const struct ft_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	ft_vprint(stderr, ctx, "error: ", fmt, ap);
	va_end(ap);
}

void ft_debug(const struct ft_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx || !ctx->opts || !ctx->opts->verbose)
		return;
	va_start(ap, fmt);
	ft_vprint(stdout, ctx, "debug: ", fmt, ap);
	va_end(ap);
}

void ft_error(const struct ft_ctx *ctx, const char *what, int ret)
{
	ft_fail(ctx, "%s: %s (%d)", what, fi_strerror(ret < 0 ? -ret : ret), ret);
}

/* ---- options ---- */

static void ft_usage(const struct ft_opts *opts, const char *about,
		     const struct ft_extra_opts *extra, FILE *f)
{
	fprintf(f,
		"usage: %s [options]              (server)\n"
		"       %s [options] SERVER_ADDR  (client)\n"
		"%s\n"
		"options:\n"
		"  -p PROV    provider, as fi_info -p (e.g. udp, braid, \"braid;ofi_rxd\", tcp)\n"
		"  -f FABRIC  fabric name\n"
		"  -d DOMAIN  domain name\n"
		"  -e TYPE    endpoint type: dgram or rdm (default %s)\n"
		"  -S SIZE    message size: N, a list N,M,... or \"all\" (1, 2, 4, ... up\n"
		"             to the endpoint's largest message, at most 1 MiB)\n"
		"  -I ITERS   iterations\n"
		"  -B PORT    local (source) port; the server listens on it (default %s)\n"
		"  -P PORT    server port the client sends to (default %s)\n"
		"  -s ADDR    local (source) address\n"
		"  -T SEC     per-operation timeout in seconds (default %d)\n"
		"  -x         exact provider: only -p itself, not a utility provider layered\n"
		"             over it (with -p braid -e rdm: braid's own RDM endpoint,\n"
		"             never \"braid;ofi_rxd\")\n"
		"  -u         never ask for FI_SOURCE: no source checks (for a provider whose\n"
		"             FI_SOURCE is broken, like ofi_rxd 1.17, which always reports 0)\n"
		"  -v         verbose: print the fi_info used and each step\n"
		"  -h         this help\n"
		"%s"
		"exit status: 0 pass, 1 test failure or timeout, 2 usage error or no provider%s\n",
		opts->prog, opts->prog, about,
		ft_ep_type_str(extra && extra->ep_type ? extra->ep_type : FI_EP_DGRAM),
		FT_DEFAULT_PORT, FT_DEFAULT_PORT, FT_DEFAULT_TIMEOUT,
		extra && extra->usage ? extra->usage : "",
		extra ? ",\n             77 skipped (the provider lacks what the selected tests need)" :
		"");
}

static int ft_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -FI_EINVAL;
	*out = v;
	return 0;
}

void ft_parse_opts(struct ft_opts *opts, int argc, char **argv, const char *about)
{
	ft_parse_opts_extra(opts, argc, argv, about, NULL);
}

void ft_parse_opts_extra(struct ft_opts *opts, int argc, char **argv,
			 const char *about, const struct ft_extra_opts *extra)
{
	static const char common[] = "p:f:d:e:S:I:B:P:s:T:vxuh";
	const char *slash = strrchr(argv[0], '/');
	char optstring[sizeof(common) + 64];
	long v;
	int c;

	memset(opts, 0, sizeof(*opts));
	opts->prog = slash ? slash + 1 : argv[0];
	opts->ep_type = extra && extra->ep_type ? extra->ep_type : FI_EP_DGRAM;
	opts->timeout_sec = FT_DEFAULT_TIMEOUT;
	snprintf(optstring, sizeof(optstring), "%s%s", common,
		 extra && extra->optstring ? extra->optstring : "");

	while ((c = getopt(argc, argv, optstring)) != -1) {
		if (c != '?' && c != ':' && extra && extra->optstring &&
		    strchr(extra->optstring, c)) {
			if (extra->parse(extra->arg, c, optarg)) {
				ft_usage(opts, about, extra, stderr);
				exit(FT_EXIT_USAGE);
			}
			continue;
		}
		switch (c) {
		case 'p':
			opts->prov_name = optarg;
			break;
		case 'f':
			opts->fabric_name = optarg;
			break;
		case 'd':
			opts->domain_name = optarg;
			break;
		case 'e':
			if (!strcasecmp(optarg, "dgram")) {
				opts->ep_type = FI_EP_DGRAM;
			} else if (!strcasecmp(optarg, "rdm")) {
				opts->ep_type = FI_EP_RDM;
			} else {
				fprintf(stderr, "%s: error: -e %s: endpoint type must be dgram or rdm\n",
					opts->prog, optarg);
				exit(FT_EXIT_USAGE);
			}
			break;
		case 'S':
			opts->sizes_arg = optarg;
			break;
		case 'I':
			if (ft_parse_long(optarg, 1, 100000000, &v)) {
				fprintf(stderr, "%s: error: -I %s: not a count from 1\n",
					opts->prog, optarg);
				exit(FT_EXIT_USAGE);
			}
			opts->iters = v;
			break;
		case 'B':
		case 'P':
			if (ft_parse_long(optarg, 0, 65535, &v)) {
				fprintf(stderr, "%s: error: -%c %s: not a port number\n",
					opts->prog, c, optarg);
				exit(FT_EXIT_USAGE);
			}
			if (c == 'B')
				opts->src_port = optarg;
			else
				opts->dst_port = optarg;
			break;
		case 's':
			opts->src_addr = optarg;
			break;
		case 'T':
			if (ft_parse_long(optarg, 1, 3600, &v)) {
				fprintf(stderr, "%s: error: -T %s: timeout must be 1..3600 seconds\n",
					opts->prog, optarg);
				exit(FT_EXIT_USAGE);
			}
			opts->timeout_sec = (int)v;
			break;
		case 'v':
			opts->verbose++;
			break;
		case 'x':
			opts->exact_prov = true;
			break;
		case 'u':
			opts->no_source = true;
			break;
		case 'h':
			ft_usage(opts, about, extra, stdout);
			exit(FT_EXIT_PASS);
		default:
			ft_usage(opts, about, extra, stderr);
			exit(FT_EXIT_USAGE);
		}
	}
	if (opts->exact_prov && !opts->prov_name) {
		fprintf(stderr, "%s: error: -x needs -p PROV\n", opts->prog);
		exit(FT_EXIT_USAGE);
	}
	if (optind < argc)
		opts->dst_addr = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: error: unexpected argument '%s'\n", opts->prog, argv[optind]);
		ft_usage(opts, about, extra, stderr);
		exit(FT_EXIT_USAGE);
	}
}

bool ft_is_server(const struct ft_opts *opts)
{
	return opts->dst_addr == NULL;
}

const char *ft_ep_type_str(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_DGRAM:
		return "dgram";
	case FI_EP_RDM:
		return "rdm";
	case FI_EP_MSG:
		return "msg";
	default:
		return "unspec";
	}
}

static int ft_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || s[0] == '-')
		return -FI_EINVAL;
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (*end || v == 0 || v > SIZE_MAX / 2)
		return -FI_EINVAL;
	*out = (size_t)v;
	return 0;
}

int ft_parse_sizes(const struct ft_opts *opts, size_t max, size_t def,
		   size_t *sizes, size_t nmax)
{
	const char *arg = opts->sizes_arg;
	size_t n = 0, s, cap;
	char *copy, *tok, *save;

	if (!arg) {
		sizes[0] = def < max ? def : max;
		return 1;
	}
	if (!strcasecmp(arg, "all")) {
		cap = max < FT_SWEEP_CAP ? max : FT_SWEEP_CAP;
		for (s = 1; s <= cap && n < nmax; s <<= 1)
			sizes[n++] = s;
		if (n < nmax && sizes[n - 1] != cap)
			sizes[n++] = cap;
		return (int)n;
	}
	copy = strdup(arg);
	if (!copy)
		return -FI_ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (ft_parse_size(tok, &s)) {
			fprintf(stderr, "%s: error: -S: '%s' is not a size (N, Nk, Nm, a list or \"all\")\n",
				opts->prog, tok);
			free(copy);
			return -FI_EINVAL;
		}
		if (s > max) {
			fprintf(stderr, "%s: error: -S: size %zu is larger than the endpoint's "
				"largest message payload, %zu\n", opts->prog, s, max);
			free(copy);
			return -FI_EINVAL;
		}
		if (n == nmax) {
			fprintf(stderr, "%s: error: -S: more than %zu sizes\n", opts->prog, nmax);
			free(copy);
			return -FI_EINVAL;
		}
		sizes[n++] = s;
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "%s: error: -S: empty size list\n", opts->prog);
		return -FI_EINVAL;
	}
	return (int)n;
}

/* ---- time ---- */

uint64_t ft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ft_deadline(const struct ft_ctx *ctx)
{
	return ft_now_ns() + (uint64_t)ctx->opts->timeout_sec * 1000000000ull;
}

/* ---- setup ---- */

static int ft_hints_alloc(struct ft_ctx *ctx)
{
	struct ft_opts *opts = ctx->opts;
	struct fi_info *hints;

	hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = opts->ep_type;
	hints->mode = FT_MODES;
	hints->domain_attr->mr_mode = FT_MR_MODES;
	if (opts->prov_name && !(hints->fabric_attr->prov_name = strdup(opts->prov_name)))
		goto nomem;
	if (opts->fabric_name && !(hints->fabric_attr->name = strdup(opts->fabric_name)))
		goto nomem;
	if (opts->domain_name && !(hints->domain_attr->name = strdup(opts->domain_name)))
		goto nomem;
	ctx->hints = hints;
	return 0;
nomem:
	fi_freeinfo(hints);
	return -FI_ENOMEM;
}

/* Client with -s/-B: resolve the source address first and put it in the hints. */
static int ft_hints_src(struct ft_ctx *ctx)
{
	struct ft_opts *opts = ctx->opts;
	struct fi_info *src = NULL;
	int ret;

	if (ft_is_server(opts) || (!opts->src_addr && !opts->src_port))
		return 0;
	ctx->hints->caps = FI_MSG;
	ret = fi_getinfo(FT_FIVERSION, opts->src_addr, opts->src_port, FI_SOURCE,
			 ctx->hints, &src);
	if (ret) {
		ft_fail(ctx, "fi_getinfo(source %s:%s): %s (%d)",
			opts->src_addr ? opts->src_addr : "*",
			opts->src_port ? opts->src_port : "*", fi_strerror(-ret), ret);
		return ret;
	}
	if (!src->src_addr) {
		fi_freeinfo(src);
		return 0;
	}
	ctx->hints->src_addr = malloc(src->src_addrlen);
	if (!ctx->hints->src_addr) {
		fi_freeinfo(src);
		return -FI_ENOMEM;
	}
	memcpy(ctx->hints->src_addr, src->src_addr, src->src_addrlen);
	ctx->hints->src_addrlen = src->src_addrlen;
	ctx->hints->addr_format = src->addr_format;
	fi_freeinfo(src);
	return 0;
}

/* How well a server source address suits a run without -s: higher is better. */
static int ft_src_score(const struct fi_info *info)
{
	const struct sockaddr *sa = info->src_addr;
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;

	if (!sa || (info->addr_format != FI_SOCKADDR && info->addr_format != FI_SOCKADDR_IN &&
		    info->addr_format != FI_SOCKADDR_IN6))
		return 0;
	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)sa;
		if (sin->sin_addr.s_addr == htonl(INADDR_ANY))
			return 4;
		if (sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK))
			return 2;
	} else if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
			return 3;
		if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
			return 1;
	}
	return 0;
}

/*
 * A server given no -s gets one fi_info per interface from some providers
 * (tcp): keep the wildcard address if offered, else loopback, else the
 * first, so that "server" plus "client 127.0.0.1" works by default.
 */
static int ft_pick_server_info(struct ft_ctx *ctx)
{
	struct fi_info *cur, *best = ctx->info, *dup;
	int score, best_score = ft_src_score(ctx->info);

	for (cur = ctx->info->next; cur; cur = cur->next) {
		score = ft_src_score(cur);
		if (score > best_score) {
			best = cur;
			best_score = score;
		}
	}
	if (best == ctx->info)
		return 0;
	dup = fi_dupinfo(best);
	if (!dup)
		return -FI_ENOMEM;
	fi_freeinfo(ctx->info);
	ctx->info = dup;
	return 0;
}

/*
 * -x: keep only the entries whose provider is -p itself; a utility
 * provider layered over it ("braid;ofi_rxd" for -p braid) does not count.
 * Returns -FI_ENODATA, with the first layered name in layered, if none is left.
 */
static int ft_keep_exact(struct ft_ctx *ctx, char *layered, size_t len)
{
	const char *want = ctx->opts->prov_name;
	struct fi_info *cur, *prev = NULL, *next;

	for (cur = ctx->info; cur; cur = next) {
		next = cur->next;
		if (want && cur->fabric_attr->prov_name &&
		    !strcmp(cur->fabric_attr->prov_name, want)) {
			prev = cur;
			continue;
		}
		if (!layered[0] && cur->fabric_attr->prov_name)
			snprintf(layered, len, "%s", cur->fabric_attr->prov_name);
		if (prev)
			prev->next = next;
		else
			ctx->info = next;
		cur->next = NULL;
		fi_freeinfo(cur);
	}
	return ctx->info ? 0 : -FI_ENODATA;
}

static int ft_getinfo(struct ft_ctx *ctx, const struct ft_want *want, size_t nwant)
{
	struct ft_opts *opts = ctx->opts;
	char layered[64] = "";
	const char *node, *service;
	uint64_t flags;
	size_t i;
	int ret = -FI_ENODATA;

	if (ft_is_server(opts)) {
		node = opts->src_addr;
		service = opts->src_port ? opts->src_port : FT_DEFAULT_PORT;
		flags = FI_SOURCE;
	} else {
		node = opts->dst_addr;
		service = opts->dst_port ? opts->dst_port : FT_DEFAULT_PORT;
		flags = 0;
	}
	for (i = 0; i < nwant; i++) {
		ctx->hints->caps = want[i].caps & ~(opts->no_source ? FI_SOURCE : 0);
		ctx->hints->tx_attr->msg_order = want[i].msg_order;
		ctx->hints->rx_attr->msg_order = want[i].msg_order;
		ret = fi_getinfo(FT_FIVERSION, node, service, flags, ctx->hints, &ctx->info);
		if (!ret && opts->exact_prov)
			ret = ft_keep_exact(ctx, layered, sizeof(layered));
		if (ret != -FI_ENODATA)
			break;
		ft_debug(ctx, "fi_getinfo with caps %s, msg_order 0x%llx: no match",
			 fi_tostr(&want[i].caps, FI_TYPE_CAPS),
			 (unsigned long long)want[i].msg_order);
	}
	if (!ret && ft_is_server(opts) && !opts->src_addr)
		ret = ft_pick_server_info(ctx);
	if (ret == -FI_ENODATA) {
		ft_fail(ctx, "no provider matches: provider %s, endpoint type %s, caps %s, "
			"%s %s:%s (fi_getinfo: %s); see fi_info -l",
			opts->prov_name ? opts->prov_name : "(any)",
			ft_ep_type_str(opts->ep_type),
			fi_tostr(&want[nwant - 1].caps, FI_TYPE_CAPS),
			ft_is_server(opts) ? "source" : "destination",
			node ? node : "*", service, fi_strerror(FI_ENODATA));
		if (layered[0])
			ft_fail(ctx, "-x: only a utility provider layered over %s was offered (%s), "
				"not %s's own %s endpoint", opts->prov_name, layered,
				opts->prov_name, ft_ep_type_str(opts->ep_type));
	} else if (ret) {
		ft_fail(ctx, "fi_getinfo(%s:%s): %s (%d)", node ? node : "*", service,
			fi_strerror(-ret), ret);
	}
	return ret;
}

/* Lay out the control ops at the end of the buffer. */
static void ft_ctrl_init(struct ft_ctx *ctx, char *at)
{
	size_t region = ft_op_region(ctx, FT_CTRL_SIZE, 1, 0);

	ft_op_init(ctx, &ctx->ctrl_tx, "control send", at, FT_CTRL_SIZE, 1, NULL, 0);
	ft_op_init(ctx, &ctx->ctrl_rx, "control receive", at + region, FT_CTRL_SIZE, 1, NULL, 0);
}

int ft_reg(struct ft_ctx *ctx, void *buf, size_t len, uint64_t access,
	   struct fid_mr **mr, void **desc)
{
	uint64_t mr_mode = ctx->info->domain_attr->mr_mode;
	int ret;

	*mr = NULL;
	*desc = NULL;
	if (!(mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(ctx->domain, buf, len, access, 0, 0, 0, mr, NULL);
	if (ret) {
		*mr = NULL;
		ft_error(ctx, "fi_mr_reg", ret);
		return ret;
	}
	if (mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(*mr, &ctx->ep->fid, 0);
		if (ret) {
			ft_error(ctx, "fi_mr_bind", ret);
			return ret;
		}
		ret = fi_mr_enable(*mr);
		if (ret) {
			ft_error(ctx, "fi_mr_enable", ret);
			return ret;
		}
	}
	*desc = fi_mr_desc(*mr);
	return 0;
}

static int ft_mr_open(struct ft_ctx *ctx)
{
	void *desc;

	return ft_reg(ctx, ctx->buf, ctx->buf_size, FI_SEND | FI_RECV, &ctx->mr, &desc);
}

int ft_cq_open(struct ft_ctx *ctx, struct ft_cq *cq, const char *name)
{
	struct fi_cq_attr cq_attr = { .wait_obj = FI_WAIT_NONE };
	char what[64];
	int ret;

	/* ft_setup chose the format: tagged when FI_TAGGED was asked for. */
	cq->tagged = (ctx->hints->caps & FI_TAGGED) != 0;
	cq_attr.format = cq->tagged ? FI_CQ_FORMAT_TAGGED : FI_CQ_FORMAT_DATA;
	cq->name = name;
	cq->readfrom = ctx->source;
	ret = fi_cq_open(ctx->domain, &cq_attr, &cq->cq, cq);
	if (ret) {
		cq->cq = NULL;
		snprintf(what, sizeof(what), "fi_cq_open(%s)", name);
		ft_error(ctx, what, ret);
	}
	return ret;
}

int ft_setup(struct ft_ctx *ctx, struct ft_opts *opts, const struct ft_want *want,
	     size_t nwant)
{
	struct fi_av_attr av_attr = { .count = 4 };
	struct fi_info *info;
	size_t max_msg;
	int ret;

	memset(ctx, 0, sizeof(*ctx));
	ctx->opts = opts;
	ctx->peer = FI_ADDR_UNSPEC;
	ctx->txcq.name = "tx";
	ctx->rxcq.name = "rx";
	ctx->nonce = (uint32_t)(ft_now_ns() ^ ((uint64_t)getpid() << 16));
	if (!ctx->nonce)
		ctx->nonce = 1;

	ret = ft_hints_alloc(ctx);
	if (ret)
		return ret;
	ret = ft_hints_src(ctx);
	if (ret)
		return ret;
	ret = ft_getinfo(ctx, want, nwant);
	if (ret)
		return ret;
	info = ctx->info;
	if (opts->verbose > 1)
		printf("%s", fi_tostr(info, FI_TYPE_INFO));

	if (info->mode & ~FT_MODES) {
		ft_fail(ctx, "provider requires mode %s, which this test does not support",
			fi_tostr(&info->mode, FI_TYPE_MODE));
		return -FI_ENOSYS;
	}
	if (info->domain_attr->mr_mode & ~FT_MR_MODES) {
		ft_fail(ctx, "provider requires mr_mode bits this test does not support (0x%x)",
			info->domain_attr->mr_mode);
		return -FI_ENOSYS;
	}
	ctx->prefix = (info->mode & FI_MSG_PREFIX) ? info->ep_attr->msg_prefix_size : 0;
	max_msg = info->ep_attr->max_msg_size;
	ctx->max_payload = max_msg > ctx->prefix ? max_msg - ctx->prefix : 0;
	ctx->source = !opts->no_source && (info->caps & FI_SOURCE) != 0;
	if (ctx->max_payload < FT_CTRL_HDR_LEN + FT_MAX_ADDRLEN / 4) {
		ft_fail(ctx, "max_msg_size %zu is too small for the address exchange", max_msg);
		return -FI_EINVAL;
	}

	ret = fi_fabric(info->fabric_attr, &ctx->fabric, NULL);
	if (ret) {
		ft_error(ctx, "fi_fabric", ret);
		return ret;
	}
	ret = fi_domain(ctx->fabric, info, &ctx->domain, NULL);
	if (ret) {
		ft_error(ctx, "fi_domain", ret);
		return ret;
	}
	ret = ft_cq_open(ctx, &ctx->txcq, "tx");
	if (ret)
		return ret;
	ctx->txcq.readfrom = false;
	ret = ft_cq_open(ctx, &ctx->rxcq, "rx");
	if (ret)
		return ret;
	av_attr.type = info->domain_attr->av_type;
	ret = fi_av_open(ctx->domain, &av_attr, &ctx->av, NULL);
	if (ret) {
		ft_error(ctx, "fi_av_open", ret);
		return ret;
	}
	ret = fi_endpoint(ctx->domain, info, &ctx->ep, NULL);
	if (ret) {
		ft_error(ctx, "fi_endpoint", ret);
		return ret;
	}
	ret = fi_ep_bind(ctx->ep, &ctx->av->fid, 0);
	if (ret) {
		ft_error(ctx, "fi_ep_bind(av)", ret);
		return ret;
	}
	ret = fi_ep_bind(ctx->ep, &ctx->txcq.cq->fid, FI_TRANSMIT);
	if (ret) {
		ft_error(ctx, "fi_ep_bind(tx cq)", ret);
		return ret;
	}
	ret = fi_ep_bind(ctx->ep, &ctx->rxcq.cq->fid, FI_RECV);
	if (ret) {
		ft_error(ctx, "fi_ep_bind(rx cq)", ret);
		return ret;
	}
	ret = fi_enable(ctx->ep);
	if (ret) {
		ft_error(ctx, "fi_enable", ret);
		return ret;
	}

	ctx->local_namelen = sizeof(ctx->local_name);
	ret = fi_getname(&ctx->ep->fid, ctx->local_name, &ctx->local_namelen);
	if (ret) {
		ft_error(ctx, "fi_getname", ret);
		return ret;
	}

	if (!ft_is_server(opts)) {
		if (!info->dest_addr) {
			ft_fail(ctx, "fi_getinfo(%s) returned no dest_addr", opts->dst_addr);
			return -FI_EINVAL;
		}
		ret = fi_av_insert(ctx->av, info->dest_addr, 1, &ctx->peer, 0, NULL);
		if (ret != 1) {
			ft_fail(ctx, "fi_av_insert(server address) returned %d", ret);
			return ret < 0 ? ret : -FI_EINVAL;
		}
	}
	return 0;
}

int ft_alloc_buf(struct ft_ctx *ctx, size_t size)
{
	size_t ctrl_region = ft_op_region(ctx, FT_CTRL_SIZE, 1, 0);
	size_t total;
	int ret;

	size = (size + 63) & ~(size_t)63;
	ctx->buf_size = size + 2 * ctrl_region;
	total = (ctx->buf_size + 4095) & ~(size_t)4095;
	ctx->buf = aligned_alloc(4096, total);
	if (!ctx->buf) {
		ft_fail(ctx, "cannot allocate %zu bytes of buffers", total);
		return -FI_ENOMEM;
	}
	memset(ctx->buf, 0, total);
	ret = ft_mr_open(ctx);
	if (ret)
		return ret;
	ft_ctrl_init(ctx, ctx->buf + size);
	return 0;
}

void ft_teardown(struct ft_ctx *ctx)
{
	if (ctx->mr)
		fi_close(&ctx->mr->fid);
	if (ctx->ep)
		fi_close(&ctx->ep->fid);
	if (ctx->av)
		fi_close(&ctx->av->fid);
	if (ctx->rxcq.cq)
		fi_close(&ctx->rxcq.cq->fid);
	if (ctx->txcq.cq)
		fi_close(&ctx->txcq.cq->fid);
	if (ctx->domain)
		fi_close(&ctx->domain->fid);
	if (ctx->fabric)
		fi_close(&ctx->fabric->fid);
	free(ctx->buf);
	if (ctx->info)
		fi_freeinfo(ctx->info);
	if (ctx->hints)
		fi_freeinfo(ctx->hints);
	memset(ctx, 0, sizeof(*ctx));
}

void ft_print_info(const struct ft_ctx *ctx)
{
	const struct fi_info *info = ctx->info;
	char name[128] = "?";
	size_t len = sizeof(name);

	if (ctx->av)
		fi_av_straddr(ctx->av, ctx->local_name, name, &len);
	ft_msg(ctx, "%s: provider %s, fabric %s, domain %s, endpoint %s, address %s",
	       ft_is_server(ctx->opts) ? "server" : "client",
	       info->fabric_attr->prov_name, info->fabric_attr->name,
	       info->domain_attr->name, ft_ep_type_str(info->ep_attr->type), name);
	ft_msg(ctx, "max_msg_size %zu, msg_prefix %zu, inject_size %zu, iov_limit tx %zu rx %zu, "
	       "cq_data_size %zu, FI_SOURCE %s, mode [%s]",
	       info->ep_attr->max_msg_size, ctx->prefix, info->tx_attr->inject_size,
	       info->tx_attr->iov_limit, info->rx_attr->iov_limit,
	       info->domain_attr->cq_data_size, ctx->source ? "yes" : "no",
	       fi_tostr(&info->mode, FI_TYPE_MODE));
}

/* ---- operations ---- */

size_t ft_op_region(const struct ft_ctx *ctx, size_t cap, size_t niov, size_t gap)
{
	return ctx->prefix + cap + gap * niov;
}

void ft_op_init(struct ft_ctx *ctx, struct ft_op *op, const char *name,
		char *base, size_t cap, size_t niov, const size_t *cuts, size_t gap)
{
	size_t i, start, end;
	char *at = base + ctx->prefix;
	void *desc = ctx->mr ? fi_mr_desc(ctx->mr) : NULL;

	memset(op, 0, sizeof(*op));
	op->name = name;
	op->base = base;
	op->cap = cap;
	op->gap = gap;
	if (niov < 1 || !cuts)
		niov = 1;
	if (niov > FT_MAX_IOV)
		niov = FT_MAX_IOV;
	op->npieces = niov;
	for (i = 0; i < niov; i++) {
		start = cuts && i ? cuts[i - 1] : 0;
		end = cuts && i + 1 < niov ? cuts[i] : cap;
		op->piece[i] = at;
		op->piece_cap[i] = end - start;
		op->desc[i] = desc;
		at += op->piece_cap[i] + gap;
	}
	ft_op_set_len(op, ctx->prefix, cap);
}

void ft_op_set_len(struct ft_op *op, size_t prefix, size_t len)
{
	size_t i, take;

	op->iov_count = 0;
	for (i = 0; i < op->npieces; i++) {
		take = len < op->piece_cap[i] ? len : op->piece_cap[i];
		if (i && !take)
			break;
		op->iov[i].iov_base = i ? op->piece[i] : op->base;
		op->iov[i].iov_len = take + (i ? 0 : prefix);
		op->iov_count++;
		len -= take;
	}
}

void ft_op_gather(const struct ft_op *op, void *dst, size_t len)
{
	char *out = dst;
	size_t i, take;

	for (i = 0; i < op->npieces && len; i++) {
		take = len < op->piece_cap[i] ? len : op->piece_cap[i];
		memcpy(out, op->piece[i], take);
		out += take;
		len -= take;
	}
}

void ft_op_scatter(struct ft_op *op, const void *src, size_t len)
{
	const char *in = src;
	size_t i, take;

	for (i = 0; i < op->npieces && len; i++) {
		take = len < op->piece_cap[i] ? len : op->piece_cap[i];
		memcpy(op->piece[i], in, take);
		in += take;
		len -= take;
	}
}

int ft_post_recv(struct ft_ctx *ctx, struct ft_op *op)
{
	ssize_t ret;

	assert(!op->posted);
	FT_POST(ret, ctx, "fi_recv",
		fi_recv(ctx->ep, op->base, ctx->prefix + op->cap, op->desc[0],
			FI_ADDR_UNSPEC, &op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

int ft_post_send(struct ft_ctx *ctx, struct ft_op *op, size_t len)
{
	ssize_t ret;

	assert(!op->posted);
	FT_POST(ret, ctx, "fi_send",
		fi_send(ctx->ep, op->base, ctx->prefix + len, op->desc[0], ctx->peer,
			&op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

int ft_post_trecv(struct ft_ctx *ctx, struct ft_op *op, uint64_t tag, uint64_t ignore)
{
	ssize_t ret;

	assert(!op->posted);
	FT_POST(ret, ctx, "fi_trecv",
		fi_trecv(ctx->ep, op->base, ctx->prefix + op->cap, op->desc[0],
			 FI_ADDR_UNSPEC, tag, ignore, &op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

int ft_post_tsend(struct ft_ctx *ctx, struct ft_op *op, size_t len, uint64_t tag)
{
	ssize_t ret;

	assert(!op->posted);
	FT_POST(ret, ctx, "fi_tsend",
		fi_tsend(ctx->ep, op->base, ctx->prefix + len, op->desc[0], ctx->peer, tag,
			 &op->fctx));
	if (!ret)
		op->posted = true;
	return (int)ret;
}

/* ---- completions ---- */

static const char *ft_ctx_name(const struct ft_ctx *ctx, void *op_context)
{
	if (op_context == &ctx->ctrl_tx.fctx)
		return ctx->ctrl_tx.name;
	if (op_context == &ctx->ctrl_rx.fctx)
		return ctx->ctrl_rx.name;
	return "a test operation";
}

/* Print an error entry read from cq (err_data as the provider gave it, or NULL). */
static int ft_cq_print_err(const struct ft_ctx *ctx, const struct ft_cq *cq,
			   const struct fi_cq_err_entry *err, const char *what)
{
	char buf[256];
	const char *pstr;

	pstr = fi_cq_strerror(cq->cq, err->prov_errno, err->err_data, buf, sizeof(buf));
	ft_fail(ctx, "%s%serror completion on %s cq for %s (op_context %p): %s (err %d), "
		"provider error %d (%s), len %zu, olen %zu, flags %s",
		what ? what : "", what ? ": " : "",
		cq->name, ft_ctx_name(ctx, err->op_context), err->op_context,
		fi_strerror(err->err), err->err, err->prov_errno, pstr ? pstr : "?", err->len,
		err->olen, fi_tostr(&err->flags, FI_TYPE_CQ_EVENT_FLAGS));
	return err->err ? -err->err : -FI_EIO;
}

int ft_comp_fail(const struct ft_ctx *ctx, const struct ft_cq *cq,
		 const struct ft_comp *comp, const char *what)
{
	struct fi_cq_err_entry err = {
		.op_context = comp->e.op_context,
		.flags = comp->e.flags,
		.len = comp->e.len,
		.olen = comp->olen,
		.err = comp->err,
		.prov_errno = comp->prov_errno,
	};

	return ft_cq_print_err(ctx, cq, &err, what);
}

/*
 * An error entry is waiting: read it. On a keep_errors CQ it becomes the
 * completion (1); otherwise it is printed and returned as a negative FI_E*.
 */
static int ft_cq_read_err(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp)
{
	struct fi_cq_err_entry err = { 0 };
	ssize_t ret;

	ret = fi_cq_readerr(cq->cq, &err, 0);
	if (ret == 0 || ret == -FI_EAGAIN)
		return 0;
	if (ret < 0) {
		ft_error(ctx, "fi_cq_readerr", (int)ret);
		return (int)ret;
	}
	if (!cq->keep_errors)
		return ft_cq_print_err(ctx, cq, &err, NULL);
	memset(comp, 0, sizeof(*comp));
	comp->e.op_context = err.op_context;
	comp->e.flags = err.flags;
	comp->e.len = err.len;
	comp->e.buf = err.buf;
	comp->e.data = err.data;
	comp->e.tag = err.tag;
	comp->src = FI_ADDR_NOTAVAIL;
	comp->err = err.err ? err.err : FI_EIO;
	comp->prov_errno = err.prov_errno;
	comp->olen = err.olen;
	return 1;
}

/* Read one completion straight from the provider: 1, 0 or a negative FI_E*. */
static int ft_cq_read_one(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp)
{
	struct fi_cq_data_entry data;
	fi_addr_t from = FI_ADDR_NOTAVAIL;
	void *entry = cq->tagged ? (void *)&comp->e : (void *)&data;
	ssize_t n;

	if (cq->readfrom)
		n = fi_cq_readfrom(cq->cq, entry, 1, &from);
	else
		n = fi_cq_read(cq->cq, entry, 1);
	if (n == 1) {
		if (!cq->tagged) {
			comp->e.op_context = data.op_context;
			comp->e.flags = data.flags;
			comp->e.len = data.len;
			comp->e.buf = data.buf;
			comp->e.data = data.data;
			comp->e.tag = 0;
		}
		comp->src = from;
		comp->err = 0;
		comp->prov_errno = 0;
		comp->olen = 0;
		return 1;
	}
	if (n == 0 || n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return ft_cq_read_err(ctx, cq, comp);
	ft_error(ctx, cq->readfrom ? "fi_cq_readfrom" : "fi_cq_read", (int)n);
	return n < 0 ? (int)n : -FI_EIO;
}

int ft_cq_poll_comp(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp)
{
	if (cq->count) {
		*comp = cq->stash[cq->head];
		cq->head = (cq->head + 1) % FT_STASH;
		cq->count--;
		return 1;
	}
	return ft_cq_read_one(ctx, cq, comp);
}

int ft_cq_poll(struct ft_ctx *ctx, struct ft_cq *cq,
	       struct fi_cq_data_entry *comp, fi_addr_t *src)
{
	struct ft_comp c;
	int ret;

	ret = ft_cq_poll_comp(ctx, cq, &c);
	if (ret <= 0)
		return ret;
	if (c.err)
		return ft_comp_fail(ctx, cq, &c, NULL);
	comp->op_context = c.e.op_context;
	comp->flags = c.e.flags;
	comp->len = c.e.len;
	comp->buf = c.e.buf;
	comp->data = c.e.data;
	if (src)
		*src = c.src;
	return 1;
}

static int ft_cq_fill(struct ft_ctx *ctx, struct ft_cq *cq)
{
	size_t slot;
	int ret;

	while (cq->count < FT_STASH) {
		slot = (cq->head + cq->count) % FT_STASH;
		ret = ft_cq_read_one(ctx, cq, &cq->stash[slot]);
		if (ret <= 0)
			return ret;
		cq->count++;
	}
	return 0;
}

/* Stash what the CQs other than skip hold (skip may be NULL). */
static int ft_cq_fill_others(struct ft_ctx *ctx, const struct ft_cq *skip)
{
	int ret = 0;

	if (skip != &ctx->txcq)
		ret = ft_cq_fill(ctx, &ctx->txcq);
	if (!ret && skip != &ctx->rxcq)
		ret = ft_cq_fill(ctx, &ctx->rxcq);
	if (!ret && ctx->extra_cq && skip != ctx->extra_cq)
		ret = ft_cq_fill(ctx, ctx->extra_cq);
	return ret;
}

int ft_post_again(struct ft_ctx *ctx, const char *what, uint64_t deadline)
{
	int ret;

	ret = ft_progress(ctx);
	if (ret)
		return ret;
	if (ft_now_ns() > deadline) {
		ft_fail(ctx, "timeout: %s still returned -FI_EAGAIN after %d s (queue full, "
			"or the peer unreachable: is the server running?)", what,
			ctx->opts->timeout_sec);
		return -FI_ETIMEDOUT;
	}
	sched_yield();
	return 0;
}

int ft_progress(struct ft_ctx *ctx)
{
	return ft_cq_fill_others(ctx, NULL);
}

int ft_cq_wait_comp(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp,
		    uint64_t deadline, const char *what)
{
	unsigned long spins = 0;
	int ret;

	for (;;) {
		ret = ft_cq_poll_comp(ctx, cq, comp);
		if (ret)
			return ret < 0 ? ret : 0;
		/* Keep the other CQs moving too: completions are stashed. */
		ret = ft_cq_fill_others(ctx, cq);
		if (ret)
			return ret;
		if ((++spins & 63) == 0 && ft_now_ns() > deadline) {
			if (what)
				ft_fail(ctx, "timeout: no completion on the %s cq after %d s "
					"waiting for %s", cq->name, ctx->opts->timeout_sec, what);
			return -FI_ETIMEDOUT;
		}
		/* Busy-poll first, then share the CPU with the peer process. */
		if (spins > 2000)
			sched_yield();
	}
}

int ft_cq_wait(struct ft_ctx *ctx, struct ft_cq *cq,
	       struct fi_cq_data_entry *comp, fi_addr_t *src,
	       uint64_t deadline, const char *what)
{
	struct ft_comp c;
	int ret;

	ret = ft_cq_wait_comp(ctx, cq, &c, deadline, what);
	if (ret)
		return ret;
	if (c.err)
		return ft_comp_fail(ctx, cq, &c, what);
	comp->op_context = c.e.op_context;
	comp->flags = c.e.flags;
	comp->len = c.e.len;
	comp->buf = c.e.buf;
	comp->data = c.e.data;
	if (src)
		*src = c.src;
	return 0;
}

int ft_wait_op(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_op *op,
	       struct fi_cq_data_entry *comp, fi_addr_t *src, const char *what)
{
	struct fi_cq_data_entry local;
	int ret;

	if (!comp)
		comp = &local;
	ret = ft_cq_wait(ctx, cq, comp, src, ft_deadline(ctx), what);
	if (ret)
		return ret;
	if (comp->op_context != &op->fctx) {
		ft_fail(ctx, "%s: completion on the %s cq has op_context %p, expected %p (%s)",
			what, cq->name, comp->op_context, (void *)&op->fctx, op->name);
		return -FI_EOTHER;
	}
	if (!op->posted) {
		ft_fail(ctx, "%s: a second completion for %s", what, op->name);
		return -FI_EOTHER;
	}
	op->posted = false;
	return 0;
}

/* ---- control messages and the handshake ---- */

const char *ft_ctrl_str(uint32_t type)
{
	switch (type) {
	case FT_CTRL_HELLO:
		return "HELLO";
	case FT_CTRL_ACK:
		return "ACK";
	case FT_CTRL_START:
		return "START";
	case FT_CTRL_READY:
		return "READY";
	case FT_CTRL_DONE:
		return "DONE";
	default:
		return "unknown";
	}
}

static size_t ft_ctrl_encode(const struct ft_ctx *ctx, void *payload, uint32_t type,
			     uint32_t arg0, uint32_t arg1, const void *addr, size_t addrlen)
{
	struct ft_ctrl m;

	memset(&m, 0, sizeof(m));
	m.magic = htonl(FT_MAGIC);
	m.type = htonl(type);
	m.nonce = htonl(ctx->nonce);
	m.arg0 = htonl(arg0);
	m.arg1 = htonl(arg1);
	m.addrlen = htonl((uint32_t)addrlen);
	if (addrlen)
		memcpy(m.addr, addr, addrlen);
	memcpy(payload, &m, FT_CTRL_HDR_LEN + addrlen);
	return FT_CTRL_HDR_LEN + addrlen;
}

/* Decode without the nonce check (the server learns the nonce from HELLO). */
static bool ft_ctrl_decode_any(const void *payload, size_t len, struct ft_ctrl *out)
{
	if (len < FT_CTRL_HDR_LEN || len > sizeof(*out))
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out, payload, len);
	out->magic = ntohl(out->magic);
	out->type = ntohl(out->type);
	out->nonce = ntohl(out->nonce);
	out->arg0 = ntohl(out->arg0);
	out->arg1 = ntohl(out->arg1);
	out->addrlen = ntohl(out->addrlen);
	return out->magic == FT_MAGIC && out->addrlen <= FT_MAX_ADDRLEN &&
	       FT_CTRL_HDR_LEN + out->addrlen == len;
}

bool ft_ctrl_decode(const struct ft_ctx *ctx, const void *payload, size_t len,
		    struct ft_ctrl *out)
{
	return ft_ctrl_decode_any(payload, len, out) && out->nonce == ctx->nonce;
}

int ft_ctrl_send_addr(struct ft_ctx *ctx, uint32_t type, uint32_t arg0, uint32_t arg1,
		      const void *addr, size_t addrlen)
{
	struct ft_op *op = &ctx->ctrl_tx;
	size_t len;
	int ret;

	len = ft_ctrl_encode(ctx, ft_op_payload(op, ctx->prefix), type, arg0, arg1,
			     addr, addrlen);
	ret = ft_post_send(ctx, op, len);
	if (ret)
		return ret;
	return ft_wait_op(ctx, &ctx->txcq, op, NULL, NULL, "the send of a control message");
}

int ft_ctrl_send(struct ft_ctx *ctx, uint32_t type, uint32_t arg0, uint32_t arg1)
{
	ft_debug(ctx, "send %s %u %u", ft_ctrl_str(type), arg0, arg1);
	return ft_ctrl_send_addr(ctx, type, arg0, arg1, NULL, 0);
}

int ft_ctrl_post(struct ft_ctx *ctx)
{
	return ft_post_recv(ctx, &ctx->ctrl_rx);
}

/* Check a receive completion's source against the peer when FI_SOURCE is on. */
static int ft_check_source(struct ft_ctx *ctx, fi_addr_t src, const char *what)
{
	if (!ctx->source || ctx->peer == FI_ADDR_UNSPEC)
		return 0;
	if (src != ctx->peer) {
		ft_fail(ctx, "%s: FI_SOURCE: fi_cq_readfrom gave source fi_addr 0x%llx, "
			"but the peer was inserted as 0x%llx", what,
			(unsigned long long)src, (unsigned long long)ctx->peer);
		return -FI_EOTHER;
	}
	return 0;
}

/* Wait for ctrl_rx, return its payload length; the payload stays in the op. */
static int ft_ctrl_wait_raw(struct ft_ctx *ctx, uint64_t deadline, const char *what,
			    size_t *len, fi_addr_t *src)
{
	struct ft_op *op = &ctx->ctrl_rx;
	struct fi_cq_data_entry comp;
	int ret;

	for (;;) {
		ret = ft_cq_wait(ctx, &ctx->rxcq, &comp, src, deadline, what);
		if (ret)
			return ret;
		if (comp.op_context != &op->fctx) {
			ft_fail(ctx, "%s: receive completion has op_context %p, expected %p (%s)",
				what ? what : "control message", comp.op_context,
				(void *)&op->fctx, op->name);
			return -FI_EOTHER;
		}
		if (!op->posted) {
			ft_fail(ctx, "%s: a second completion for the control receive",
				what ? what : "control message");
			return -FI_EOTHER;
		}
		op->posted = false;
		if (!(comp.flags & FI_RECV)) {
			ft_fail(ctx, "%s: receive completion flags %s lack FI_RECV",
				what ? what : "control message",
				fi_tostr(&comp.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		/* FI_MSG_PREFIX: provider packets without data are reposted. */
		if (ctx->prefix && comp.len <= ctx->prefix) {
			ret = ft_ctrl_post(ctx);
			if (ret)
				return ret;
			continue;
		}
		if (comp.len < ctx->prefix) {
			ft_fail(ctx, "%s: receive length %zu shorter than the prefix",
				what ? what : "control message", comp.len);
			return -FI_EOTHER;
		}
		*len = comp.len - ctx->prefix;
		return 0;
	}
}

int ft_ctrl_wait(struct ft_ctx *ctx, struct ft_ctrl *out, uint64_t deadline,
		 const char *what)
{
	fi_addr_t src;
	size_t len;
	int ret;

	ret = ft_ctrl_wait_raw(ctx, deadline ? deadline : ft_deadline(ctx), what, &len, &src);
	if (ret)
		return ret;
	if (!ft_ctrl_decode(ctx, ft_op_payload(&ctx->ctrl_rx, ctx->prefix), len, out)) {
		ft_fail(ctx, "%s: received %zu bytes that are not a control message of this run",
			what ? what : "control message", len);
		return -FI_EOTHER;
	}
	ft_debug(ctx, "received %s %u %u", ft_ctrl_str(out->type), out->arg0, out->arg1);
	return ft_check_source(ctx, src, what ? what : "control message");
}

int ft_hello_client(struct ft_ctx *ctx)
{
	bool dgram = ctx->info->ep_attr->type == FI_EP_DGRAM;
	uint64_t end = ft_deadline(ctx), wait_ns = 100000000ull, dl;
	struct ft_ctrl m;
	int attempts = 0, ret;

	ret = ft_ctrl_post(ctx);
	if (ret)
		return ret;
	do {
		attempts++;
		ft_debug(ctx, "send HELLO (attempt %d)", attempts);
		ret = ft_ctrl_send_addr(ctx, FT_CTRL_HELLO, (uint32_t)(ctx->config >> 32),
					(uint32_t)ctx->config, ctx->local_name,
					ctx->local_namelen);
		if (ret)
			return ret;
		/* DGRAM may lose HELLO or ACK: retry with a growing wait. */
		dl = dgram ? ft_now_ns() + wait_ns : end;
		if (dl > end)
			dl = end;
		ret = ft_ctrl_wait(ctx, &m, dl, NULL);
		if (!ret) {
			if (m.type != FT_CTRL_ACK) {
				ft_fail(ctx, "address exchange: expected ACK, received %s",
					ft_ctrl_str(m.type));
				return -FI_EOTHER;
			}
			if (m.arg0) {
				ft_fail(ctx, "the server refused: it runs with other options "
					"(-S, -I, or another program); give both sides the same");
				return -FI_EINVAL;
			}
			ft_debug(ctx, "ACK after %d HELLO(s)", attempts);
			return 0;
		}
		if (ret != -FI_ETIMEDOUT)
			return ret;
		if (wait_ns < 1000000000ull)
			wait_ns *= 2;
	} while (dgram && ft_now_ns() < end);
	ft_fail(ctx, "timeout: no answer from the server %s port %s after %d HELLO(s) in %d s; "
		"is the server running with the same provider and endpoint type?",
		ctx->opts->dst_addr, ctx->opts->dst_port ? ctx->opts->dst_port : FT_DEFAULT_PORT,
		attempts, ctx->opts->timeout_sec);
	return -FI_ETIMEDOUT;
}

int ft_hello_server_wait(struct ft_ctx *ctx)
{
	struct ft_op *op = &ctx->ctrl_rx;
	struct ft_ctrl m;
	bool config_ok;
	fi_addr_t src;
	size_t len;
	int ret;

	ret = ft_ctrl_post(ctx);
	if (ret)
		return ret;
	ret = ft_ctrl_wait_raw(ctx, ft_deadline(ctx), "the client's HELLO", &len, &src);
	if (ret)
		return ret;
	if (!ft_ctrl_decode_any(ft_op_payload(op, ctx->prefix), len, &m) ||
	    m.type != FT_CTRL_HELLO || m.addrlen == 0) {
		ft_fail(ctx, "address exchange: the first message (%zu bytes) is not a HELLO", len);
		return -FI_EOTHER;
	}
	if (ctx->source)
		ft_debug(ctx, "HELLO source before insertion: fi_addr 0x%llx%s",
			 (unsigned long long)src,
			 src == FI_ADDR_NOTAVAIL ? " (FI_ADDR_NOTAVAIL)" : "");
	ctx->nonce = m.nonce;
	memcpy(ctx->peer_name, m.addr, m.addrlen);
	config_ok = (((uint64_t)m.arg0 << 32) | m.arg1) == ctx->config;
	ctx->peer_namelen = m.addrlen;
	ret = fi_av_insert(ctx->av, ctx->peer_name, 1, &ctx->peer, 0, NULL);
	if (ret != 1) {
		ft_fail(ctx, "fi_av_insert(client address) returned %d (%s)", ret,
			ret < 0 ? fi_strerror(-ret) : "no address inserted");
		return ret < 0 ? ret : -FI_EINVAL;
	}
	if (ctx->opts->verbose) {
		char name[128] = "?";
		size_t nlen = sizeof(name);

		fi_av_straddr(ctx->av, ctx->peer_name, name, &nlen);
		ft_debug(ctx, "client %s inserted as fi_addr 0x%llx", name,
			 (unsigned long long)ctx->peer);
	}
	if (!config_ok) {
		ft_fail(ctx, "the client runs with other options (-S, -I, or another program); "
			"give both sides the same");
		ft_ctrl_send(ctx, FT_CTRL_ACK, 1, 0);
		return -FI_EINVAL;
	}
	return 0;
}

int ft_hello_server_ack(struct ft_ctx *ctx)
{
	return ft_ctrl_send(ctx, FT_CTRL_ACK, 0, 0);
}

enum ft_dup ft_handshake_dup(const struct ft_ctx *ctx, const void *payload, size_t len)
{
	struct ft_ctrl m;

	if (!ft_ctrl_decode(ctx, payload, len, &m))
		return FT_DUP_NONE;
	if (ft_is_server(ctx->opts) && m.type == FT_CTRL_HELLO &&
	    m.addrlen == ctx->peer_namelen && !memcmp(m.addr, ctx->peer_name, m.addrlen)) {
		ft_msg(ctx, "note: duplicate HELLO (a DGRAM retransmission): acknowledged again");
		return FT_DUP_HELLO;
	}
	if (!ft_is_server(ctx->opts) && m.type == FT_CTRL_ACK) {
		ft_msg(ctx, "note: duplicate ACK (answer to a DGRAM retransmission): ignored");
		return FT_DUP_ACK;
	}
	return FT_DUP_NONE;
}

uint64_t ft_config_hash(uint64_t prog, const size_t *sizes, int nsizes, long iters)
{
	uint64_t h = ft_seed(prog, (uint64_t)iters, (uint64_t)nsizes, 0);
	int i;

	for (i = 0; i < nsizes; i++)
		h = ft_seed(h, sizes[i], (uint64_t)i, 1);
	return h;
}

/* ---- data pattern ---- */

static uint64_t ft_mix(uint64_t x)
{
	x += FT_GOLDEN;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

uint64_t ft_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return ft_mix(ft_mix(ft_mix(ft_mix(a) ^ b) ^ c) ^ d);
}

/* Word k of the pattern is seed + (k + 1) * golden, stored in memory order. */
void ft_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t w = seed;

	while (len >= 8) {
		w += FT_GOLDEN;
		memcpy(p, &w, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		w += FT_GOLDEN;
		memcpy(p, &w, len);
	}
}

uint8_t ft_pattern_byte(uint64_t seed, size_t off)
{
	uint64_t w = seed + (uint64_t)(off / 8 + 1) * FT_GOLDEN;
	unsigned char b[8];

	memcpy(b, &w, 8);
	return b[off % 8];
}

ssize_t ft_check(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	uint64_t w = seed, got;
	size_t off = 0, i;

	while (len - off >= 8) {
		w += FT_GOLDEN;
		memcpy(&got, p + off, 8);
		if (got != w)
			break;
		off += 8;
	}
	for (i = off; i < len; i++)
		if (p[i] != ft_pattern_byte(seed, i))
			return (ssize_t)i;
	return -1;
}
