/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_common.c: what braid's libfabric benchmarks share (bench_common.h). */
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "bench_common.h"

const struct bench_mem *bench_mem;
size_t bench_av_count;
enum fi_wait_obj bench_cq_wait = FI_WAIT_NONE;
static bool cq_block;

void bench_block(void)
{
	cq_block = true;
	bench_cq_wait = FI_WAIT_UNSPEC;
}

ssize_t bench_cq_next(struct conn *c, struct fi_cq_tagged_entry *e, size_t n)
{
	ssize_t r = fi_cq_read(c->cq, e, n);

	if (r == -FI_EAGAIN && cq_block)
		r = fi_cq_sread(c->cq, e, n, NULL, 1);
	return r;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void bench_auth_hints(struct fi_info *hints)
{
	const char *key = getenv("BENCH_AUTH_KEY");

	if (!key || !*key)
		return;
	hints->domain_attr->auth_key = (uint8_t *)strdup(key);
	hints->domain_attr->auth_key_size = strlen(key);
}

void conn_open(struct conn *c, const char *prov, const char *node, size_t buf_size)
{
	conn_open_caps(c, prov, node, buf_size, FI_TAGGED);
}

static void conn_open_ep(struct conn *c, size_t buf_size, uint64_t caps);

void conn_open_caps(struct conn *c, const char *prov, const char *node, size_t buf_size,
		    uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo(), *list, *cur;

	memset(c, 0, sizeof(*c));
	if (!strcmp(prov, "tcp"))
		prov = "tcp;ofi_rxm";
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	if (bench_mem) {
		hints->caps |= bench_mem->caps;
		hints->domain_attr->mr_mode |= bench_mem->mr_mode;
	}
	hints->fabric_attr->prov_name = strdup(prov);
	bench_auth_hints(hints);
	/* BENCH_THREAD_DOMAIN=1: the application's promise that lets braid take no lock */
	if (getenv("BENCH_THREAD_DOMAIN") && !strcmp(getenv("BENCH_THREAD_DOMAIN"), "1"))
		hints->domain_attr->threading = FI_THREAD_DOMAIN;
	/* BENCH_NODE: the local address when it is not loopback (a DPDK port's) */
	if (!node)
		node = getenv("BENCH_NODE") ? getenv("BENCH_NODE") : "127.0.0.1";
	/* BENCH_SERVICE: a fixed local port (a restarted process comes back at the same address) */
	TRY(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, getenv("BENCH_SERVICE") ? getenv("BENCH_SERVICE") : "0",
		       FI_SOURCE, hints, &list));
	for (cur = list; cur && !c->info; cur = cur->next)
		if (!strcmp(cur->fabric_attr->prov_name, prov))
			c->info = fi_dupinfo(cur);
	fi_freeinfo(list);
	fi_freeinfo(hints);
	if (!c->info) {
		fprintf(stderr, "no %s RDM endpoint on %s\n", prov, node);
		exit(BENCH_EXIT_SETUP);
	}
	TRY(fi_fabric(c->info->fabric_attr, &c->fabric, NULL));
	TRY(fi_domain(c->fabric, c->info, &c->domain, NULL));
	conn_open_ep(c, buf_size, caps);
}

/* The endpoint, its CQ, AV and buffer, in @c's domain. */
static void conn_open_ep(struct conn *c, size_t buf_size, uint64_t caps)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096,
				      .wait_obj = bench_cq_wait };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = bench_av_count };

	TRY(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL));
	TRY(fi_av_open(c->domain, &av_attr, &c->av, NULL));
	TRY(fi_endpoint(c->domain, c->info, &c->ep, NULL));
	TRY(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(c->ep, &c->av->fid, 0));
	TRY(fi_enable(c->ep));
	c->buf_size = buf_size;
	if (bench_mem) {
		/* device memory: registered whatever the capabilities (its descriptor says where) */
		struct iovec iov;
		struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1,
					   .access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
						     FI_REMOTE_READ | FI_REMOTE_WRITE,
					   .iface = bench_mem->iface };

		c->buf = bench_mem->alloc(buf_size);
		iov = (struct iovec){ c->buf, buf_size };
		TRY(fi_mr_regattr(c->domain, &attr, 0, &c->mr));
		c->desc = fi_mr_desc(c->mr);
		c->key = fi_mr_key(c->mr);
	} else {
		c->buf = aligned_alloc(4096, (buf_size + 4095) & ~(size_t)4095);
		if (!c->buf)
			exit(BENCH_EXIT_SETUP);
		memset(c->buf, 0xa5, buf_size);
	}
	if ((caps & FI_RMA) && !c->mr) {
		TRY(fi_mr_reg(c->domain, c->buf, buf_size, FI_READ | FI_WRITE | FI_REMOTE_READ |
			      FI_REMOTE_WRITE, 0, 0, 0, &c->mr, NULL));
		c->desc = fi_mr_desc(c->mr);
		c->key = fi_mr_key(c->mr);
	}
	c->max_inject = c->info->tx_attr->inject_size;
	c->peer = FI_ADDR_UNSPEC;
	c->timeout_s = 20;
}

void conn_open_in(struct conn *c, const struct conn *base, size_t buf_size)
{
	memset(c, 0, sizeof(*c));
	c->info = fi_dupinfo(base->info);
	c->fabric = base->fabric;
	c->domain = base->domain;
	c->shared = true;
	conn_open_ep(c, buf_size, base->mr ? FI_RMA : 0);
}

void conn_close(struct conn *c)
{
	fi_close(&c->ep->fid);
	if (c->mr)
		fi_close(&c->mr->fid);
	fi_close(&c->av->fid);
	fi_close(&c->cq->fid);
	if (!c->shared) {
		fi_close(&c->domain->fid);
		fi_close(&c->fabric->fid);
	}
	fi_freeinfo(c->info);
	if (bench_mem)
		bench_mem->release(c->buf);
	else
		free(c->buf);
}

/* the pattern's byte @i of seed @seed */
static uint8_t pattern(size_t i, unsigned int seed)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 11));
}

void bench_fill(void *buf, size_t len, unsigned int seed)
{
	uint8_t *p = bench_mem ? malloc(len ? len : 1) : buf;
	size_t i;

	if (!p)
		exit(BENCH_EXIT_SETUP);
	for (i = 0; i < len; i++)
		p[i] = pattern(i, seed);
	if (bench_mem) {
		bench_mem->put(buf, p, len);
		free(p);
	}
}

bool bench_check(const void *buf, size_t len, unsigned int seed)
{
	const uint8_t *p = buf;
	uint8_t *copy = NULL;
	size_t i;

	if (bench_mem) {
		copy = malloc(len ? len : 1);
		if (!copy)
			exit(BENCH_EXIT_SETUP);
		bench_mem->get(copy, buf, len);
		p = copy;
	}
	for (i = 0; i < len && p[i] == pattern(i, seed); i++)
		;
	if (i < len)
		fprintf(stderr, "byte %zu of %zu differs: 0x%02x, not 0x%02x\n", i, len, p[i],
			pattern(i, seed));
	free(copy);
	return i == len;
}

void conn_name(struct conn *c, void *name, size_t *len)
{
	TRY(fi_getname(&c->ep->fid, name, len));
}

fi_addr_t conn_insert(struct conn *c, const void *name)
{
	fi_addr_t a;

	if (fi_av_insert(c->av, name, 1, &a, 0, NULL) != 1) {
		fprintf(stderr, "fi_av_insert failed\n");
		exit(BENCH_EXIT_SETUP);
	}
	if (c->peer == FI_ADDR_UNSPEC)
		c->peer = a;
	return a;
}

void wait_comps(struct conn *c, int n, struct fi_cq_tagged_entry *out)
{
	struct fi_cq_tagged_entry e[64];
	double deadline = now_s() + c->timeout_s;
	ssize_t r;

	while (n > 0) {
		r = bench_cq_next(c, out ? out : e, n < 64 ? n : 64);
		if (r > 0) {
			n -= (int)r;
			if (out)
				out += r;
			deadline = now_s() + c->timeout_s;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "completion error: %s (%s)\n", fi_strerror(err.err),
				fi_cq_strerror(c->cq, err.prov_errno, err.err_data, NULL, 0));
			exit(BENCH_EXIT_FAIL);
		} else if (now_s() > deadline) {
			fprintf(stderr, "timeout: %d completions missing after %.0f s\n", n,
				c->timeout_s);
			exit(BENCH_EXIT_FAIL);
		}
	}
}

void tsend(struct conn *c, fi_addr_t to, const void *buf, size_t len, uint64_t tag, void *ctx)
{
	ssize_t r;

	while ((r = fi_tsend(c->ep, buf, len, bench_mem ? c->desc : NULL, to, tag, ctx)) ==
	       -FI_EAGAIN)
		(void)fi_cq_read(c->cq, NULL, 0);
	TRY(r);
}

void trecv(struct conn *c, fi_addr_t from, void *buf, size_t len, uint64_t tag, void *ctx)
{
	ssize_t r;

	while ((r = fi_trecv(c->ep, buf, len, bench_mem ? c->desc : NULL, from, tag, 0, ctx)) ==
	       -FI_EAGAIN)
		(void)fi_cq_read(c->cq, NULL, 0);
	TRY(r);
}

fi_addr_t conn_insert_file(struct conn *c, const char *namefile)
{
	uint8_t name[128];
	size_t len = 0;
	FILE *f;

	for (int i = 0; i < 100 && !len; i++) {
		f = fopen(namefile, "r");
		if (f) {
			len = fread(name, 1, sizeof(name), f);
			fclose(f);
		}
		if (!len)
			usleep(100000);
	}
	if (!len) {
		fprintf(stderr, "no peer name in %s after 10 s\n", namefile);
		exit(BENCH_EXIT_SETUP);
	}
	return conn_insert(c, name);
}

long proc_status_kb(const char *field)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			kb = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return kb;
}
