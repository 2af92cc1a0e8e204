/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dpdk_pair.c: braid over the DPDK wire, two processes joined by a net_memif
 * port pair, through the public libfabric API.
 *
 *   dpdk_pair SCENARIO DIR
 *
 * SCENARIO: pingpong (RDM, 8 B and 4 KiB round trips, every byte checked),
 * tagged_bw (RDM, 20,000 tagged 4 KiB sends in windows of 64, every byte
 * checked), large (RDM, 16 MiB each way, every byte checked), msg_rc
 * (FI_EP_MSG, braid's RoCEv2 RC: connect, 200 checked messages of 1 to
 * 16 KiB echoed, one 1 MiB message, shutdown).
 * DIR: a directory of the caller's for the memif socket.
 *
 * The parent forks both sides before any libfabric call (the EAL starts
 * once per process); each side names its own port (FI_BRAID_DPDK_ARGS: memif
 * server or client, no hugepages, no PCI) and address (FI_BRAID_DPDK_IP),
 * and checks that what ran is braid's own endpoint over that port: the
 * provider named "braid" and the domain "net_memif0", never "braid;ofi_rxm"
 * or a kernel interface. Exit: 0 passed, 77 skipped (the EAL cannot start
 * here: said why), 1 failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>

#include "bench_common.h"

#define IP_A	"10.77.0.1"
#define IP_B	"10.77.0.2"
#define RC_SVC	"7471"

static const char *dir;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s: ", side_name);		\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__); \
			_exit(1);					\
		}							\
	} while (0)

static const char *side_name = "parent";

/* This process's port: side 0 is the memif server at IP_A, side 1 the client at IP_B. */
static void side_env(int side, const char *sockname)
{
	char args[512];

	snprintf(args, sizeof(args),
		 "--no-huge --no-shconf -m 256 --no-pci --no-telemetry --log-level=4 "
		 "--file-prefix=braid_pair%d_%d --vdev=net_memif0,role=%s,id=0,socket=%s/%s",
		 side, (int)getppid(), side ? "client" : "server", dir, sockname);
	setenv("FI_BRAID_WIRE", "dpdk", 1);
	setenv("FI_BRAID_DPDK_ARGS", args, 1);
	setenv("FI_BRAID_DPDK_IP", side ? IP_B "/24" : IP_A "/24", 1);
	setenv("BENCH_NODE", side ? IP_B : IP_A, 1);
	side_name = side ? "client" : "server";
}

/* Both sides ran braid's own endpoint over the DPDK port, not a stand-in. */
static void check_provider(const struct fi_info *info)
{
	CHECK(!strcmp(info->fabric_attr->prov_name, "braid"), "provider is %s, not braid",
	      info->fabric_attr->prov_name);
	CHECK(info->domain_attr->name && !strcmp(info->domain_attr->name, "net_memif0"),
	      "domain is %s, not the DPDK port net_memif0", info->domain_attr->name);
}

static void exchange_names(struct conn *c, int sock)
{
	char mine[128], theirs[128];
	size_t len = sizeof(mine);

	conn_name(c, mine, &len);
	CHECK(write(sock, &len, sizeof(len)) == sizeof(len) && write(sock, mine, len) == (ssize_t)len,
	      "name exchange");
	CHECK(read(sock, &len, sizeof(len)) == sizeof(len) && len <= sizeof(theirs) &&
	      read(sock, theirs, len) == (ssize_t)len, "name exchange");
	conn_insert(c, theirs);
}

static void sync_sides(int sock)
{
	char b = 'x';

	CHECK(write(sock, &b, 1) == 1 && read(sock, &b, 1) == 1, "sync");
}

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seq, i);
}

static bool same(const uint8_t *p, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seq, i))
			return false;
	return true;
}

/* ---- RDM ---- */

static void rdm_pingpong(struct conn *c, bool server)
{
	static const size_t sizes[] = { 8, 4096 };
	uint8_t *tx = c->buf, *rx = c->buf + (1 << 20);

	for (size_t s = 0; s < 2; s++) {
		size_t len = sizes[s];

		for (int i = 0; i < 1000; i++) {
			uint64_t seq = (uint64_t)s * 100000 + (uint64_t)i;

			if (server) {
				trecv(c, c->peer, rx, len, 1, NULL);
				wait_comps(c, 1, NULL);
				CHECK(same(rx, len, seq), "ping %d of %zu B corrupted", i, len);
				fill(tx, len, seq + 1);
				tsend(c, c->peer, tx, len, 2, NULL);
				wait_comps(c, 1, NULL);
			} else {
				trecv(c, c->peer, rx, len, 2, NULL);
				fill(tx, len, seq);
				tsend(c, c->peer, tx, len, 1, NULL);
				wait_comps(c, 2, NULL);
				CHECK(same(rx, len, seq + 1), "pong %d of %zu B corrupted", i, len);
			}
		}
	}
}

static void rdm_tagged_bw(struct conn *c, bool server)
{
	const size_t len = 4096;
	const int total = 20000, window = 64;

	for (int done = 0; done < total; done += window) {
		for (int w = 0; w < window; w++) {
			uint8_t *p = c->buf + (size_t)w * len;
			uint64_t seq = (uint64_t)(done + w);

			if (server) {
				trecv(c, c->peer, p, len, seq, NULL);
			} else {
				fill(p, len, seq);
				tsend(c, c->peer, p, len, seq, NULL);
			}
		}
		wait_comps(c, window, NULL);
		if (server)
			for (int w = 0; w < window; w++)
				CHECK(same(c->buf + (size_t)w * len, len, (uint64_t)(done + w)),
				      "message %d corrupted", done + w);
	}
}

static void rdm_large(struct conn *c, bool server)
{
	const size_t len = 16u << 20;
	uint8_t *tx = c->buf, *rx = c->buf + len;

	for (int dir_ = 0; dir_ < 2; dir_++) {
		bool sending = server == (dir_ == 1);

		if (sending) {
			fill(tx, len, 77 + (uint64_t)dir_);
			tsend(c, c->peer, tx, len, 9, NULL);
		} else {
			memset(rx, 0, len);
			trecv(c, c->peer, rx, len, 9, NULL);
		}
		wait_comps(c, 1, NULL);
		if (!sending)
			CHECK(same(rx, len, 77 + (uint64_t)dir_), "16 MiB message corrupted");
	}
}

/* ---- MSG over RoCEv2 RC ---- */

static struct fi_info *msg_info(const char *node, uint64_t flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("braid");
	ret = fi_getinfo(FI_VERSION(1, 17), node, RC_SVC, flags, hints, &info);
	fi_freeinfo(hints);
	CHECK(!ret && info, "fi_getinfo FI_EP_MSG: %s", fi_strerror(-ret));
	check_provider(info);
	return info;
}

static void eq_expect(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *entry)
{
	uint32_t event;
	ssize_t r = fi_eq_sread(eq, &event, entry, sizeof(*entry), 20000, 0);

	if (r == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		CHECK(0, "EQ error: %s", fi_strerror(err.err));
	}
	CHECK(r >= (ssize_t)sizeof(struct fi_eq_cm_entry), "fi_eq_sread: %s", fi_strerror(r < 0 ? (int)-r : FI_EOTHER));
	CHECK(event == want, "EQ event %u, wanted %u", event, want);
}

static void cq_wait1(struct fid_cq *cq, struct fi_cq_msg_entry *out)
{
	struct fi_cq_msg_entry e;
	double deadline = now_s() + 20;
	ssize_t r;

	while ((r = fi_cq_read(cq, out ? out : &e, 1)) == -FI_EAGAIN)
		CHECK(now_s() < deadline, "no completion in 20 s");
	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(cq, &err, 0);
		CHECK(0, "completion error: %s", fi_strerror(err.err));
	}
	CHECK(r == 1, "fi_cq_read: %s", fi_strerror((int)-r));
}

static void msg_rc(bool server, int sock)
{
	struct fi_info *info = msg_info(IP_A, server ? FI_SOURCE : 0), *ep_info = info;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 1024 };
	struct fi_eq_cm_entry entry;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep = NULL;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	const size_t big = 1u << 20;
	uint8_t *buf = aligned_alloc(4096, 4 * big);
	void *desc;
	char b = 'x';

	CHECK(buf, "no memory");
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	if (server) {
		TRY(fi_passive_ep(fabric, info, &pep, NULL));
		TRY(fi_pep_bind(pep, &eq->fid, 0));
		TRY(fi_listen(pep));
		CHECK(write(sock, &b, 1) == 1, "sync");	/* listening */
		eq_expect(eq, FI_CONNREQ, &entry);
		ep_info = entry.info;
		check_provider(ep_info);
	} else {
		CHECK(read(sock, &b, 1) == 1, "sync");
	}
	TRY(fi_domain(fabric, ep_info, &domain, NULL));
	TRY(fi_cq_open(domain, &cq_attr, &cq, NULL));
	TRY(fi_endpoint(domain, ep_info, &ep, NULL));
	TRY(fi_ep_bind(ep, &eq->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_mr_reg(domain, buf, 4 * big, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
	desc = fi_mr_desc(mr);
	TRY(fi_enable(ep));
	/* the first receive is posted before the connection exists */
	TRY(fi_recv(ep, buf + big, 16384, desc, 0, NULL));
	if (server)
		TRY(fi_accept(ep, NULL, 0));
	else
		TRY(fi_connect(ep, ep_info->dest_addr, NULL, 0));
	eq_expect(eq, FI_CONNECTED, &entry);

	for (int i = 0; i < 200; i++) {
		size_t len = 1 + (size_t)(i * 977) % 16384;
		struct fi_cq_msg_entry e;

		if (server) {
			cq_wait1(cq, &e);
			CHECK(e.flags & FI_RECV, "a receive completion");
			CHECK(e.len == len && same(buf + big, len, (uint64_t)i),
			      "message %d (%zu B) came as %zu B or corrupted", i, len, e.len);
			memcpy(buf, buf + big, len);
			if (i < 199)
				TRY(fi_recv(ep, buf + big, 16384, desc, 0, NULL));
			TRY(fi_send(ep, buf, len, desc, 0, NULL));
			cq_wait1(cq, &e);
		} else {
			fill(buf, len, (uint64_t)i);
			TRY(fi_send(ep, buf, len, desc, 0, NULL));
			cq_wait1(cq, NULL);
			cq_wait1(cq, &e);
			CHECK(e.len == len && same(buf + big, len, (uint64_t)i),
			      "echo %d corrupted", i);
			if (i < 199)
				TRY(fi_recv(ep, buf + big, 16384, desc, 0, NULL));
		}
	}
	/* one 1 MiB message (segmented by RC), client to server */
	if (ep_info->ep_attr->max_msg_size >= big) {
		if (server) {
			struct fi_cq_msg_entry e;

			TRY(fi_recv(ep, buf + 2 * big, big, desc, 0, NULL));
			CHECK(write(sock, &b, 1) == 1, "sync");
			cq_wait1(cq, &e);
			CHECK(e.len == big && same(buf + 2 * big, big, 4242),
			      "1 MiB message came as %zu B or corrupted", e.len);
		} else {
			CHECK(read(sock, &b, 1) == 1, "sync");
			fill(buf, big, 4242);
			TRY(fi_send(ep, buf, big, desc, 0, NULL));
			cq_wait1(cq, NULL);
		}
	}
	sync_sides(sock);
	fi_shutdown(ep, 0);
	fi_close(&ep->fid);
	fi_close(&mr->fid);
	fi_close(&cq->fid);
	if (pep)
		fi_close(&pep->fid);
	fi_close(&domain->fid);
	fi_close(&eq->fid);
	fi_close(&fabric->fid);
	if (ep_info != info)
		fi_freeinfo(ep_info);
	fi_freeinfo(info);
	free(buf);
}

static int run_side(int side, const char *scenario, int sock)
{
	bool server = side == 0;
	struct conn c;

	side_env(side, "memif.sock");
	alarm(120);
	/*
	 * The memif server's port first: a DPDK memif client connects once, when
	 * its port starts, and stays down if no server is listening yet.
	 */
	if (server) {
		struct fi_info *hints = fi_allocinfo(), *info = NULL;
		char b = 'x';

		hints->fabric_attr->prov_name = strdup("braid");
		CHECK(!fi_getinfo(FI_VERSION(1, 17), IP_A, "0", FI_SOURCE, hints, &info),
		      "the server's DPDK port did not start");
		fi_freeinfo(info);
		fi_freeinfo(hints);
		CHECK(write(sock, &b, 1) == 1, "sync");
	} else {
		char b;

		CHECK(read(sock, &b, 1) == 1, "sync");
	}
	if (!strcmp(scenario, "msg_rc")) {
		msg_rc(server, sock);
		return 0;
	}
	conn_open(&c, "braid", NULL, 40u << 20);
	check_provider(c.info);
	exchange_names(&c, sock);
	if (!strcmp(scenario, "pingpong"))
		rdm_pingpong(&c, server);
	else if (!strcmp(scenario, "tagged_bw"))
		rdm_tagged_bw(&c, server);
	else if (!strcmp(scenario, "large"))
		rdm_large(&c, server);
	else
		CHECK(0, "no scenario %s", scenario);
	/* the client's last sends need the server's ACKs: close after both are done */
	sync_sides(sock);
	conn_close(&c);
	return 0;
}

/* Can the EAL start a memif port here at all? Said on stdout when not. */
static bool eal_starts(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct fi_info *hints = fi_allocinfo(), *info = NULL;

		side_env(0, "probe.sock");
		setenv("FI_LOG_LEVEL", "warn", 0);
		hints->fabric_attr->prov_name = strdup("braid");
		_exit(fi_getinfo(FI_VERSION(1, 17), IP_A, "0", FI_SOURCE, hints, &info) ? 77 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return false;
	return WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	int sv[2], status[2], fail = 0;
	pid_t pid[2];

	if (argc != 3) {
		fprintf(stderr, "usage: %s pingpong|tagged_bw|large|msg_rc DIR\n", argv[0]);
		return 2;
	}
	dir = argv[2];
	if (!eal_starts()) {
		printf("SKIP: braid's DPDK wire cannot start a net_memif port here (the EAL or the "
		       "port failed; its warning is above)\n");
		return 77;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	for (int side = 0; side < 2; side++) {
		fflush(stdout);
		pid[side] = fork();
		if (pid[side] == 0)
			_exit(run_side(side, argv[1], sv[side]));
	}
	for (int side = 0; side < 2; side++) {
		if (waitpid(pid[side], &status[side], 0) < 0 || !WIFEXITED(status[side]) ||
		    WEXITSTATUS(status[side])) {
			fprintf(stderr, "%s side failed (status %#x)\n", side ? "client" : "server",
				status[side]);
			fail = 1;
			kill(pid[!side], SIGKILL);
		}
	}
	printf("%s: %s\n", argv[1], fail ? "FAILED" : "passed");
	return fail;
}
