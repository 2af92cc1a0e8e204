/* SPDX-License-Identifier: BSD-2-Clause */
/* ft_common.h: shared setup, address exchange, completion and pattern helpers for braid's fabtests. */
#ifndef FT_COMMON_H
#define FT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

/*
 * Only the public libfabric API is used here: these programs must run
 * unchanged against any provider (udp, tcp;ofi_rxm, udp;ofi_rxd, braid).
 */

#define FT_DEFAULT_PORT    "9228"
#define FT_DEFAULT_TIMEOUT 10       /* seconds, per operation */
#define FT_MAX_SIZES       64       /* entries of a -S list or sweep */
#define FT_SWEEP_CAP       (1u << 20) /* -S all never goes above 1 MiB */
#define FT_MAX_ADDRLEN     256      /* largest endpoint name we exchange */
#define FT_MAX_IOV         4        /* iovs per operation, prefix included */
#define FT_CTRL_SIZE       (FT_MAX_ADDRLEN + 64) /* payload room of control messages */

/* Exit codes of every program. */
#define FT_EXIT_PASS  0
#define FT_EXIT_FAIL  1   /* a check failed, a timeout, an error completion */
#define FT_EXIT_USAGE 2   /* bad arguments or no matching provider */
#define FT_EXIT_SKIP  77  /* every selected test needs something the provider
                           * lacks (meson and automake count 77 as skipped) */

/* Command line options shared by every program. */
struct ft_opts {
	const char *prog;          /* program name for messages */
	const char *prov_name;     /* -p: provider (hints->fabric_attr->prov_name) */
	const char *fabric_name;   /* -f: fabric name */
	const char *domain_name;   /* -d: domain name */
	enum fi_ep_type ep_type;   /* -e: FI_EP_DGRAM (default) or FI_EP_RDM */
	const char *sizes_arg;     /* -S: "N", "N,M,...", or "all"; NULL = default */
	long iters;                /* -I: iterations; 0 = program default */
	const char *src_addr;      /* -s: local address to bind */
	const char *src_port;      /* -B: local port (server default 9228) */
	const char *dst_port;      /* -P: server port for the client (default 9228) */
	const char *dst_addr;      /* positional: server address; NULL = we are the server */
	int timeout_sec;           /* -T: per-operation timeout in seconds */
	int verbose;               /* -v: print the chosen fi_info and progress */
	bool exact_prov;           /* -x: only an fi_info whose prov_name is -p itself,
	                            * not a utility provider layered over it */
	bool no_source;            /* -u: never ask for FI_SOURCE (source checks off) */
};

/*
 * One posted operation. Every operation owns its fi_context2 (honouring
 * FI_CONTEXT and FI_CONTEXT2) and keeps its iov array alive until it
 * completes (honouring FI_ASYNC_IOV).
 */
struct ft_op {
	struct fi_context2 fctx;   /* op context handed to the provider */
	const char *name;          /* for messages */
	char *base;                /* start of the region: prefix, then payload */
	size_t cap;                /* payload capacity, prefix excluded */
	struct iovec iov[FT_MAX_IOV]; /* iov[0] starts with the prefix */
	void *desc[FT_MAX_IOV];
	size_t iov_count;          /* iovs in use */
	char *piece[FT_MAX_IOV];   /* where each payload piece starts */
	size_t piece_cap[FT_MAX_IOV]; /* payload capacity of each piece */
	size_t npieces;            /* pieces laid out by ft_op_init */
	size_t gap;                /* guard bytes after each piece */
	bool posted;               /* submitted and not yet completed: the provider
	                            * owns fctx and the buffers */
};

/*
 * One completion as the programs see it: a success, or (on a CQ with
 * keep_errors) an error entry, which then has err set. A CQ of the
 * FI_CQ_FORMAT_DATA format leaves e.tag 0.
 */
struct ft_comp {
	struct fi_cq_tagged_entry e; /* op_context, flags, len, buf, data, tag */
	fi_addr_t src;             /* fi_cq_readfrom's source; FI_ADDR_NOTAVAIL for
	                            * errors and CQs read without FI_SOURCE */
	int err;                   /* 0, or the positive FI_E* of an error entry */
	int prov_errno;            /* error entries: the provider's error number */
	size_t olen;               /* error entries: bytes that did not fit (FI_ETRUNC) */
};

/* A completion queue with a small stash, so -FI_EAGAIN retries lose nothing. */
#define FT_STASH 64
struct ft_cq {
	struct fid_cq *cq;
	const char *name;          /* "tx" or "rx" */
	bool readfrom;             /* use fi_cq_readfrom (FI_SOURCE) */
	bool tagged;               /* FI_CQ_FORMAT_TAGGED (FI_TAGGED was asked for) */
	bool keep_errors;          /* stash error entries as completions with err set,
	                            * for programs that expect some (FI_ECANCELED,
	                            * FI_ETRUNC, FI_ENOMSG); false: an error entry is
	                            * printed and fails the read, as before */
	struct ft_comp stash[FT_STASH];
	size_t head;
	size_t count;
};

/* Everything one side of a test owns. */
struct ft_ctx {
	struct ft_opts *opts;
	struct fi_info *hints;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;         /* whole-buffer registration, if FI_MR_LOCAL */
	struct ft_cq txcq;
	struct ft_cq rxcq;
	struct ft_cq *extra_cq;    /* a program's own CQ (ft_cq_open), also drained
	                            * by ft_progress and every wait; set after ft_setup */
	char *buf;                 /* one allocation, carved by the program */
	size_t buf_size;
	size_t prefix;             /* msg_prefix_size if FI_MSG_PREFIX, else 0 */
	size_t max_payload;        /* largest payload: max_msg_size - prefix */
	bool source;               /* FI_SOURCE granted: check fi_cq_readfrom */
	char local_name[FT_MAX_ADDRLEN];
	size_t local_namelen;
	char peer_name[FT_MAX_ADDRLEN]; /* client's name, as received by the server */
	size_t peer_namelen;
	fi_addr_t peer;            /* the other side, in our AV */
	uint32_t nonce;            /* identifies this run's handshake messages */
	uint64_t config;           /* hash of the options both sides must share */
	struct ft_op ctrl_tx;      /* handshake and control messages */
	struct ft_op ctrl_rx;
};

/* ---- options ---- */

/*
 * ft_parse_opts() - parse the common options into opts. about is the
 * program's one-paragraph description for -h. Exits the process: with
 * FT_EXIT_PASS after printing usage for -h, with FT_EXIT_USAGE after
 * printing usage for a bad option.
 */
void ft_parse_opts(struct ft_opts *opts, int argc, char **argv,
		   const char *about);
/*
 * A program's own options, parsed alongside the common ones: optstring
 * holds getopt letters the common set does not use (e.g. "t:L"), usage
 * the lines listed under the common options (each "  -X ARG  text\n").
 * parse() gets each such letter and its argument (NULL for a flag) and
 * returns 0, or -FI_EINVAL after printing why (the program then exits
 * with FT_EXIT_USAGE).
 */
struct ft_extra_opts {
	enum fi_ep_type ep_type;   /* default of -e; FI_EP_UNSPEC (0) = dgram */
	const char *optstring;
	const char *usage;
	int (*parse)(void *arg, int c, const char *optarg);
	void *arg;
};
void ft_parse_opts_extra(struct ft_opts *opts, int argc, char **argv,
			 const char *about, const struct ft_extra_opts *extra);
bool ft_is_server(const struct ft_opts *opts);
const char *ft_ep_type_str(enum fi_ep_type type);

/*
 * ft_parse_sizes() - turn opts->sizes_arg into a list of payload sizes,
 * each checked against max (the endpoint's largest payload). "all" gives
 * 1, 2, 4, ... up to min(max, FT_SWEEP_CAP), and that limit itself.
 * Returns the count, or -FI_EINVAL after printing why.
 */
int ft_parse_sizes(const struct ft_opts *opts, size_t max, size_t def,
		   size_t *sizes, size_t nmax);

/* ---- setup and teardown ---- */

/* One fi_getinfo attempt: the capabilities and message order asked for. */
struct ft_want {
	uint64_t caps;
	uint64_t msg_order;  /* tx_attr/rx_attr msg_order required, 0 = none */
};

/*
 * ft_setup() - fi_getinfo with the hints built from opts and want (tried
 * in order: the first attempt some provider grants wins; only
 * -FI_ENODATA moves on to the next), then open fabric, domain, two CQs
 * (FI_CQ_FORMAT_DATA, or FI_CQ_FORMAT_TAGGED when the winning attempt
 * asks for FI_TAGGED; tx bound FI_TRANSMIT, rx bound FI_RECV), AV,
 * endpoint; enable it; read our name; the client inserts the server's
 * address (info->dest_addr) into the AV. Returns 0, or a negative FI_E*
 * after printing what failed; ft_teardown() cleans up either way.
 */
int ft_setup(struct ft_ctx *ctx, struct ft_opts *opts, const struct ft_want *want,
	     size_t nwant);
/*
 * ft_alloc_buf() - allocate size bytes for the program (ctx->buf) plus the
 * control ops, and register it all if the provider wants FI_MR_LOCAL.
 */
int ft_alloc_buf(struct ft_ctx *ctx, size_t size);
void ft_teardown(struct ft_ctx *ctx);
/*
 * ft_cq_open() - open one more CQ like the two of ft_setup (same format,
 * read with fi_cq_readfrom when FI_SOURCE is granted), for a program's
 * own endpoints; the caller closes cq->cq before ft_teardown().
 */
int ft_cq_open(struct ft_ctx *ctx, struct ft_cq *cq, const char *name);
/*
 * ft_reg() - register len bytes at buf for access (FI_SEND, FI_RECV) if
 * the provider wants FI_MR_LOCAL (bound to ctx->ep with FI_MR_ENDPOINT);
 * *mr stays NULL otherwise. *desc gets fi_mr_desc() or NULL. The caller
 * closes *mr before ft_teardown().
 */
int ft_reg(struct ft_ctx *ctx, void *buf, size_t len, uint64_t access,
	   struct fid_mr **mr, void **desc);

/* Print one line describing the chosen provider and endpoint. */
void ft_print_info(const struct ft_ctx *ctx);

/* ---- operations ---- */

/*
 * ft_op_init() - describe an operation whose region starts at base: the
 * prefix, then cap payload bytes split into niov pieces at the payload
 * offsets cuts[0] < cuts[1] < ... (niov - 1 of them), each piece followed
 * by gap guard bytes; iov[0] begins with the prefix. The region is
 * ft_op_region() bytes long.
 */
void ft_op_init(struct ft_ctx *ctx, struct ft_op *op, const char *name,
		char *base, size_t cap, size_t niov, const size_t *cuts, size_t gap);
/* Region size ft_op_init needs. */
size_t ft_op_region(const struct ft_ctx *ctx, size_t cap, size_t niov, size_t gap);
/* Copy len payload bytes out of / into the op's pieces, in order (prefix skipped). */
void ft_op_gather(const struct ft_op *op, void *dst, size_t len);
void ft_op_scatter(struct ft_op *op, const void *src, size_t len);
/* Set iov lengths so the op carries exactly len payload bytes (sends). */
void ft_op_set_len(struct ft_op *op, size_t prefix, size_t len);
/* Payload pointer of a single-iov op. */
static inline char *ft_op_payload(const struct ft_op *op, size_t prefix)
{
	return op->base + prefix;
}

/*
 * fi_recv / fi_send of a single-iov op (len = payload bytes). The op must
 * not be outstanding (asserted: its fi_context2 belongs to the provider
 * until it completes).
 */
int ft_post_recv(struct ft_ctx *ctx, struct ft_op *op);
int ft_post_send(struct ft_ctx *ctx, struct ft_op *op, size_t len);
/* fi_trecv (source FI_ADDR_UNSPEC) / fi_tsend to the peer, like the two above. */
int ft_post_trecv(struct ft_ctx *ctx, struct ft_op *op, uint64_t tag, uint64_t ignore);
int ft_post_tsend(struct ft_ctx *ctx, struct ft_op *op, size_t len, uint64_t tag);

/*
 * Run a posting call, retrying on -FI_EAGAIN while driving progress
 * (completions are stashed, not lost) until the timeout; ret (an lvalue
 * of type ssize_t) receives 0 or a negative FI_E*, already printed.
 */
#define FT_POST(ret, ctx, what, call)                                   \
	do {                                                            \
		uint64_t ft_dl_ = ft_deadline(ctx);                     \
		do {                                                    \
			(ret) = (call);                                 \
		} while ((ret) == -FI_EAGAIN &&                         \
			 !((ret) = ft_post_again(ctx, what, ft_dl_)));    \
		if ((ret) && (ret) != -FI_ETIMEDOUT)                    \
			ft_error(ctx, what, (int)(ret));                \
	} while (0)
/*
 * The posting call said -FI_EAGAIN: drive progress. Returns 0 to retry,
 * -FI_ETIMEDOUT (printed) once deadline has passed, or a progress error.
 */
int ft_post_again(struct ft_ctx *ctx, const char *what, uint64_t deadline);

/* ---- completions ---- */

uint64_t ft_now_ns(void);
/* now + the per-operation timeout */
uint64_t ft_deadline(const struct ft_ctx *ctx);
/* Read both CQs into their stashes. 0 or a negative FI_E*. */
int ft_progress(struct ft_ctx *ctx);
/*
 * ft_cq_poll() - one completion from cq (stash first), src filled when
 * readfrom. Returns 1, 0 (none), or a negative FI_E* after printing an
 * error completion.
 */
int ft_cq_poll(struct ft_ctx *ctx, struct ft_cq *cq,
	       struct fi_cq_data_entry *comp, fi_addr_t *src);
/*
 * ft_cq_wait() - wait for one completion until deadline; what names the
 * wait in the timeout message (NULL: time out silently). Returns 0 or a
 * negative FI_E* (-FI_ETIMEDOUT after printing "timeout ...").
 */
int ft_cq_wait(struct ft_ctx *ctx, struct ft_cq *cq,
	       struct fi_cq_data_entry *comp, fi_addr_t *src,
	       uint64_t deadline, const char *what);
/*
 * ft_cq_poll_comp() / ft_cq_wait_comp() - the same for struct ft_comp:
 * the tag, and on a keep_errors CQ error entries too (comp->err set,
 * nothing printed). An error entry on a CQ without keep_errors is printed
 * and returned as its negative FI_E*, as above.
 */
int ft_cq_poll_comp(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp);
int ft_cq_wait_comp(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_comp *comp,
		    uint64_t deadline, const char *what);
/* Print an error completion as a failure of what; returns its negative FI_E*. */
int ft_comp_fail(const struct ft_ctx *ctx, const struct ft_cq *cq,
		 const struct ft_comp *comp, const char *what);
/*
 * Wait for the completion of op on cq, checking that op_context is op's
 * and that op was outstanding; clears op->posted.
 */
int ft_wait_op(struct ft_ctx *ctx, struct ft_cq *cq, struct ft_op *op,
	       struct fi_cq_data_entry *comp, fi_addr_t *src, const char *what);

/* ---- address exchange ---- */

/*
 * The handshake: the client, whose AV already holds the server, sends
 * HELLO carrying its own fi_getname address (retried on DGRAM) until the
 * server's ACK arrives. The server inserts the client address into its AV
 * and answers with ACK. On DGRAM a retransmitted HELLO may still reach the
 * server after the ACK, and so a late duplicate ACK the client: the
 * single-receive waits of the programs classify what they receive with
 * ft_handshake_dup(), repost their receive, and (server, duplicate HELLO)
 * acknowledge again with ft_hello_server_ack().
 */
enum ft_dup {
	FT_DUP_NONE = 0,   /* not a handshake message */
	FT_DUP_HELLO,      /* duplicate HELLO: the server must ACK again */
	FT_DUP_ACK,        /* duplicate ACK: the client ignores it */
};

/* Control messages: the handshake and the test programs' own signals. */
#define FT_MAGIC 0x42524654u    /* "BRFT" */
enum ft_ctrl_type {
	FT_CTRL_HELLO = 1,  /* client -> server: its name, in addr[] */
	FT_CTRL_ACK,        /* server -> client: HELLO received, peer inserted */
	FT_CTRL_START,      /* program-defined from here on */
	FT_CTRL_READY,
	FT_CTRL_DONE,
};
/* On the wire in network byte order; only the first addrlen of addr[] travel. */
struct ft_ctrl {
	uint32_t magic;
	uint32_t type;
	uint32_t nonce;     /* chosen by the client, echoed by the server */
	uint32_t arg0;
	uint32_t arg1;
	uint32_t addrlen;
	uint8_t addr[FT_MAX_ADDRLEN];
};
#define FT_CTRL_HDR_LEN offsetof(struct ft_ctrl, addr)

/* Send a control message on ctrl_tx and wait for its completion. */
int ft_ctrl_send(struct ft_ctx *ctx, uint32_t type, uint32_t arg0, uint32_t arg1);
/* The same, carrying addrlen (at most FT_MAX_ADDRLEN) bytes of an address in addr[]. */
int ft_ctrl_send_addr(struct ft_ctx *ctx, uint32_t type, uint32_t arg0, uint32_t arg1,
		      const void *addr, size_t addrlen);
/* Post ctrl_rx. */
int ft_ctrl_post(struct ft_ctx *ctx);
/*
 * Wait for ctrl_rx to complete (deadline 0 = the per-operation timeout,
 * what NULL = no timeout message) and decode it into out (host order);
 * checks magic, length, nonce, and (once a peer is known, FI_SOURCE
 * granted) the source address. Returns 0 or a negative FI_E*.
 */
int ft_ctrl_wait(struct ft_ctx *ctx, struct ft_ctrl *out, uint64_t deadline,
		 const char *what);
/* Decode a payload as a control message of this run; false if it is not one. */
bool ft_ctrl_decode(const struct ft_ctx *ctx, const void *payload, size_t len,
		    struct ft_ctrl *out);
const char *ft_ctrl_str(uint32_t type);

/*
 * ft_config_hash() - hash of the options both sides must agree on (the
 * program, its sizes and iterations); set ctx->config to it before the
 * handshake. HELLO carries it; a server that finds it different answers
 * with a refusing ACK, and both sides fail with a clear message instead
 * of timing out later.
 */
uint64_t ft_config_hash(uint64_t prog, const size_t *sizes, int nsizes, long iters);
/* Client: HELLO until ACK. On return nothing is posted on the rx side. */
int ft_hello_client(struct ft_ctx *ctx);
/* Server: wait for HELLO and insert the client; sets ctx->peer. */
int ft_hello_server_wait(struct ft_ctx *ctx);
/* Server: send the ACK (call after posting the receive for what comes next). */
int ft_hello_server_ack(struct ft_ctx *ctx);
/*
 * Classify a received payload (prefix skipped) as a handshake duplicate;
 * no side effect, so the caller may repost the receive first.
 */
enum ft_dup ft_handshake_dup(const struct ft_ctx *ctx, const void *payload, size_t len);

/* ---- data pattern ---- */

/* splitmix64 of a tuple: seed for a pattern. */
uint64_t ft_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* Fill len bytes with the pattern of seed. */
void ft_fill(void *buf, size_t len, uint64_t seed);
/* Offset of the first byte differing from the pattern, or -1 if none. */
ssize_t ft_check(const void *buf, size_t len, uint64_t seed);
/* Expected byte at offset off of the pattern of seed (for messages). */
uint8_t ft_pattern_byte(uint64_t seed, size_t off);

/* ---- messages ---- */

void ft_error(const struct ft_ctx *ctx, const char *what, int ret);
void ft_msg(const struct ft_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ft_fail(const struct ft_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ft_debug(const struct ft_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* FT_COMMON_H */
