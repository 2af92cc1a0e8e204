/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_common.h: what braid's libfabric benchmarks share: one RDM endpoint with its CQ and AV, tagged send/receive, completion waits. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

/* exit codes of the benchmark programs */
#define BENCH_EXIT_FAIL		1	/* a check failed, an error completion, a timeout */
#define BENCH_EXIT_USAGE	2
#define BENCH_EXIT_SETUP	3	/* no such provider, or setting up failed */

#define TRY(call)							\
	do {								\
		int _r = (int)(call);					\
		if (_r < 0) {						\
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-_r));		\
			exit(BENCH_EXIT_SETUP);				\
		}							\
	} while (0)

/** struct conn - one RDM endpoint and what it needs. */
struct conn {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	/** @peer: the first peer inserted (conn_insert). */
	fi_addr_t peer;
	/** @buf: @buf_size bytes, page aligned. */
	uint8_t *buf;
	size_t buf_size;
	size_t max_inject;
	/** @timeout_s: wait_comps gives up after this long without completions. */
	double timeout_s;
	/**
	 * @mr, @desc, @key: with FI_RMA (conn_open_caps), or in device memory
	 * (bench_mem): @buf registered, for RMA both ways.
	 */
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
	/** @shared: the fabric and domain are another conn's (conn_open_in). */
	bool shared;
};

/**
 * struct bench_mem - memory other than the host's for conn_open()'s buffer
 * (bench_mem NULL: host memory): what to ask of the provider, how to take
 * and give back a buffer, and how to copy into and out of one.
 */
struct bench_mem {
	/** @caps, @mr_mode: added to the hints (FI_HMEM, FI_MR_HMEM); @iface: the regions'. */
	uint64_t caps;
	int mr_mode;
	enum fi_hmem_iface iface;
	void *(*alloc)(size_t len);
	void (*release)(void *buf);
	/** @put: @len host bytes at @src into the buffer at @dst; @get: the other way. */
	void (*put)(void *dst, const void *src, size_t len);
	void (*get)(void *dst, const void *src, size_t len);
};

/* bench_mem: set before conn_open() for buffers in device memory (bench_hmem.c); NULL: host */
extern const struct bench_mem *bench_mem;

/*
 * bench_fill() - @len bytes of pattern @seed at @buf (a conn's buffer, host
 * or device); bench_check() - whether they are there (every byte).
 */
void bench_fill(void *buf, size_t len, unsigned int seed);
bool bench_check(const void *buf, size_t len, unsigned int seed);

/* bench_av_count: fi_av_attr.count of the AVs conn_open() opens (0: none given) */
extern size_t bench_av_count;
/* bench_cq_wait: the wait object of the CQs conn_open() opens (FI_WAIT_NONE unless set) */
extern enum fi_wait_obj bench_cq_wait;

/*
 * bench_block() - from now on conn_open()'s CQs have a wait object and
 * bench_cq_next() (so wait_comps()) waits in fi_cq_sread(), a millisecond
 * at a time, when nothing is there, instead of spinning on fi_cq_read():
 * for many processes on few cores (a fabric of many hosts on one machine).
 */
void bench_block(void);

/* bench_cq_next() - up to @n completions of @c's CQ (see bench_block()) */
ssize_t bench_cq_next(struct conn *c, struct fi_cq_tagged_entry *e, size_t n);

double now_s(void);

/* proc_status_kb() - a field of /proc/self/status in KiB ("VmRSS:", "VmSize:", "VmHWM:"), or -1. */
long proc_status_kb(const char *field);

/*
 * conn_open() - an RDM endpoint of provider @prov (the fi_info whose
 * prov_name is exactly @prov; "tcp" means "tcp;ofi_rxm") bound to @node
 * (an IPv4 address, NULL: 127.0.0.1), a tagged CQ and a table AV, and a
 * buffer of @buf_size bytes. Exits with BENCH_EXIT_SETUP on failure.
 * BENCH_THREAD_DOMAIN=1 asks for FI_THREAD_DOMAIN (with FI_BRAID_PROGRESS_US=0,
 * braid then takes no lock).
 */
void conn_open(struct conn *c, const char *prov, const char *node, size_t buf_size);
/*
 * bench_auth_hints() - with BENCH_AUTH_KEY set, its bytes become @hints'
 * domain authorization key (fi_domain(3)): braid's keyed datagrams
 * (fi_braid(7)). conn_open() applies it.
 */
void bench_auth_hints(struct fi_info *hints);
/* conn_open() asking for @caps (FI_TAGGED and, say, FI_RMA: then @buf is registered) */
void conn_open_caps(struct conn *c, const char *prov, const char *node, size_t buf_size,
		    uint64_t caps);
/*
 * conn_open_in() - another endpoint (with its own CQ, AV and buffer) in the
 * domain of @base, which must stay open until this one is closed.
 */
void conn_open_in(struct conn *c, const struct conn *base, size_t buf_size);
void conn_close(struct conn *c);

/* conn_name() - the endpoint's name into @name (@len in: room, out: size). */
void conn_name(struct conn *c, void *name, size_t *len);
/* conn_insert() - insert a peer's name; the first one becomes c->peer. */
fi_addr_t conn_insert(struct conn *c, const void *name);
/* conn_insert_file() - conn_insert() the name another process wrote to @namefile (waits up to 10 s). */
fi_addr_t conn_insert_file(struct conn *c, const char *namefile);

/*
 * wait_comps() - wait for @n completions, any kind; an error completion or
 * c->timeout_s without progress ends the process (BENCH_EXIT_FAIL). With
 * @out, the entries are copied there (room for @n).
 */
void wait_comps(struct conn *c, int n, struct fi_cq_tagged_entry *out);

/* tsend()/trecv() - post, driving progress while the provider says -FI_EAGAIN. */
void tsend(struct conn *c, fi_addr_t to, const void *buf, size_t len, uint64_t tag, void *ctx);
void trecv(struct conn *c, fi_addr_t from, void *buf, size_t len, uint64_t tag, void *ctx);

#endif /* BENCH_COMMON_H */
