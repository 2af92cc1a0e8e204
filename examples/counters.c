/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * counters.c: reading braid's counters from a program, through
 * fi_open_ops(FI_BRAID_STAT_OPS) and <rdma/fi_braid.h> (fi_braid(7), COUNTERS).
 *
 * It opens two reliable datagram endpoints (FI_EP_RDM) on the loopback
 * interface, sends NMSG messages from the sender to the receiver, then opens
 * braid's counter ops on the domain and prints a few endpoint counters by
 * name, with the unit and meaning the counter table gives, and one gauge of
 * the sender's peer (its smoothed round-trip time) from a snapshot. It checks
 * that the counters saw every message. braid-stat(1) shows the same values
 * from outside the process.
 *
 *   build:  cc -o counters counters.c -lfabric
 *           (rdma/fi_braid.h is installed with braid; from a source tree,
 *           add -I<braid>/include)
 *   run:    FI_PROVIDER_PATH=<dir of libbraid-fi.so> ./counters
 *           (no FI_PROVIDER_PATH needed once braid is installed)
 *   exit:   0 when the counters match the traffic, 1 otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_braid.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define NMSG 10
#define MSG_LEN 16384
#define TIMEOUT_MS 10000

#define CHECK(call)							\
	do {								\
		int _ret = (int)(call);					\
		if (_ret < 0) {						\
			fprintf(stderr, "%s: %s\n", #call, fi_strerror(-_ret)); \
			exit(1);					\
		}							\
	} while (0)

/* One endpoint with its completion queue and address vector. */
struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
};

static void side_open(struct fid_domain *domain, struct fi_info *info, struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	CHECK(fi_cq_open(domain, &cq_attr, &s->cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &s->av, NULL));
	CHECK(fi_endpoint(domain, info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Poll both CQs until @n completions arrive on each (braid progresses
 * inside fi_cq_read); give up after TIMEOUT_MS. */
static void wait_both(struct side *a, struct side *b, int n)
{
	struct fi_cq_msg_entry entry;
	long deadline = now_ms() + TIMEOUT_MS;
	int got_a = 0, got_b = 0;
	ssize_t ret;

	while ((got_a < n || got_b < n) && now_ms() < deadline) {
		ret = fi_cq_read(a->cq, &entry, 1);
		got_a += ret == 1;
		if (ret < 0 && ret != -FI_EAGAIN)
			CHECK(ret);
		ret = fi_cq_read(b->cq, &entry, 1);
		got_b += ret == 1;
		if (ret < 0 && ret != -FI_EAGAIN)
			CHECK(ret);
	}
	if (got_a < n || got_b < n) {
		fprintf(stderr, "%d sends and %d receives of %d completed in %d ms\n",
			got_a, got_b, n, TIMEOUT_MS);
		exit(1);
	}
}

/* A value's place in a snapshot row of @scope: its rank among the table's
 * entries with that scope bit. */
static int row_index(const struct fi_braid_stat_desc *descs, size_t n, const char *name,
		     unsigned scope)
{
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(descs[i].scopes & scope))
			continue;
		if (!strcmp(descs[i].name, name))
			return k;
		k++;
	}
	return -1;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: counters\n"
		"Sends %d messages between two braid FI_EP_RDM endpoints on loopback, then\n"
		"reads braid's counters through fi_open_ops(FI_BRAID_STAT_OPS) and prints a few\n"
		"by name. Takes no arguments. Exit status 0 when the counters match the traffic.\n"
		"  -h, --help  this text\n", NMSG);
}

int main(int argc, char **argv)
{
	static const char *names[] = { "ep.tx_dgrams", "ep.rx_dgrams", "rd.tx_data",
					"rd.retx_pkts", "rd.msgs_sent", "rd.msgs_received",
					"ep.tx_local_msgs" };
	static uint64_t snap[8192];	/* room for the endpoint's row and its peer's */
	const struct fi_braid_stat_desc *descs;
	struct fi_braid_stat_ops *ops;
	struct fi_braid_stat_ep *s;
	struct fi_braid_stat_peer *p;
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct side a, b;
	/* 16 KiB messages: long enough to go by braid's reliable-datagram engine,
	 * whose per-peer state has the RTT shown below (smaller ones to a peer on
	 * this host are handed to it whole: fi_braid(7), LOCAL PEERS) */
	static char msg[MSG_LEN], buf[NMSG][MSG_LEN];
	char addr[64];
	size_t addrlen = sizeof(addr), n;
	uint64_t sent = 0, received = 0;
	fi_addr_t b_addr;
	int srtt, opt;
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		usage(opt == 'h' ? stdout : stderr);
		return opt == 'h' ? 0 : 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	/* 1. braid's native RDM endpoint on loopback: its counters are braid's own. */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("braid");
	CHECK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "127.0.0.1", "0", FI_SOURCE, hints, &info));
	printf("provider %s, endpoint %s\n", info->fabric_attr->prov_name,
	       fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
	if (strcmp(info->fabric_attr->prov_name, "braid")) {
		fprintf(stderr, "braid's native RDM endpoint expected\n");
		return 1;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));

	/* 2. A sender (a) and a receiver (b); b's address goes into a's AV. */
	side_open(domain, info, &a);
	side_open(domain, info, &b);
	CHECK(fi_getname(&b.ep->fid, addr, &addrlen));
	CHECK(fi_av_insert(a.av, addr, 1, &b_addr, 0, NULL) == 1 ? 0 : -FI_EINVAL);

	/* 3. Some traffic to count. */
	memset(msg, 'c', sizeof(msg));
	for (int i = 0; i < NMSG; i++)
		CHECK(fi_recv(b.ep, buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC, NULL));
	for (int i = 0; i < NMSG; i++)
		CHECK(fi_send(a.ep, msg, sizeof(msg), NULL, b_addr, NULL));
	wait_both(&a, &b, NMSG);

	/* 4. braid's counter ops: fi_open_ops takes the domain (or an endpoint);
	 *    the table says what each counter is. */
	CHECK(fi_open_ops(&domain->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL));
	n = ops->table(&descs);
	printf("%zu counters and gauges in braid's table\n", n);

	/* 5. Endpoint values by name, with the table's unit and meaning. */
	printf("%-18s %8s %8s  %-9s %s\n", "counter", "sender", "receiver", "unit", "meaning");
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		uint64_t va, vb;

		for (size_t i = 0; i < n; i++) {
			if (strcmp(descs[i].name, names[k]))
				continue;
			CHECK(ops->value(&a.ep->fid, names[k], &va));
			CHECK(ops->value(&b.ep->fid, names[k], &vb));
			printf("%-18s %8llu %8llu  %-9s %s\n", names[k], (unsigned long long)va,
			       (unsigned long long)vb, descs[i].unit, descs[i].help);
			if (!strcmp(names[k], "rd.msgs_sent"))
				sent = va;
			if (!strcmp(names[k], "rd.msgs_received"))
				received = vb;
		}
	}

	/* 6. Per-peer values come in a snapshot: the endpoint's row, then one
	 *    record per peer (each followed by its path rows). */
	CHECK(ops->snapshot(&a.ep->fid, snap, sizeof(snap)));
	s = (struct fi_braid_stat_ep *)snap;
	srtt = row_index(descs, n, "rd.srtt_ns", FI_BRAID_SCOPE_PEER);
	if (s->peers > 0 && srtt >= 0) {
		p = (struct fi_braid_stat_peer *)&s->v[s->n_ep];
		printf("sender %s, peer %s: rd.srtt_ns %llu\n", s->addr, p->addr,
		       (unsigned long long)p->v[srtt]);
	}

	/* 7. Close in reverse order: endpoints before what they are bound to. */
	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	fi_close(&a.av->fid);
	fi_close(&b.av->fid);
	fi_close(&a.cq->fid);
	fi_close(&b.cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);

	if (sent != NMSG || received != NMSG || s->peers != 1) {
		fprintf(stderr, "counted %llu sent, %llu received, %u peers; expected %d, %d, 1\n",
			(unsigned long long)sent, (unsigned long long)received, s->peers, NMSG, NMSG);
		return 1;
	}
	printf("counters checked\n");
	return 0;
}
