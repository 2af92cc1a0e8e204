/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hello_dgram.c: the smallest complete braid program, to copy and start from.
 *
 * It opens the braid provider, creates two FI_EP_DGRAM endpoints on the
 * loopback interface (on two hosts, each host would create one), exchanges
 * their addresses through the address vector, sends "hello" from one to
 * the other and waits for both completions.
 *
 *   build:  cc -o hello_dgram hello_dgram.c -lfabric
 *   run:    FI_PROVIDER_PATH=<dir of libbraid-fi.so> ./hello_dgram
 *           (no FI_PROVIDER_PATH needed once braid is installed)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define CHECK(call)							\
	do {								\
		int _ret = (int)(call);					\
		if (_ret < 0) {						\
			fprintf(stderr, "%s: %s\n", #call, fi_strerror(-_ret)); \
			exit(1);					\
		}							\
	} while (0)

/* One side of the conversation: endpoint + its completion queue + AV. */
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
	/* an endpoint must be bound to its CQ and AV before fi_enable */
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
}

/* Poll a CQ until one completion arrives (braid progresses inside fi_cq_read). */
static void wait_one(struct fid_cq *cq, const char *what)
{
	struct fi_cq_msg_entry entry;
	ssize_t ret;

	for (long spins = 0; spins < 100000000L; spins++) {
		ret = fi_cq_read(cq, &entry, 1);
		if (ret == 1) {
			printf("%s completed: %zu bytes\n", what, entry.len);
			return;
		}
		if (ret != -FI_EAGAIN) {
			fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int)-ret));
			exit(1);
		}
	}
	fprintf(stderr, "%s: no completion\n", what);
	exit(1);
}

/* The whole program: steps 1 to 6. */
static int hello(void)
{
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct side a, b;
	char addr[64], msg[] = "hello", buf[64] = "";
	size_t addrlen = sizeof(addr);
	fi_addr_t b_addr;

	/* 1. Ask for braid's unreliable datagram endpoint on loopback. */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("braid");
	CHECK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "127.0.0.1", "0", FI_SOURCE, hints, &info));
	printf("provider %s, fabric %s, domain %s, max message %zu bytes\n",
	       info->fabric_attr->prov_name, info->fabric_attr->name,
	       info->domain_attr->name, info->ep_attr->max_msg_size);

	/* 2. Fabric and domain: one per process and network interface. */
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));

	/* 3. Two endpoints (normally one per process or host). */
	side_open(domain, info, &a);
	side_open(domain, info, &b);

	/* 4. Exchange addresses: B's name goes into A's address vector. On two
	 *    hosts, send it out of band (or as fabtests do, in a first message). */
	CHECK(fi_getname(&b.ep->fid, addr, &addrlen));
	CHECK(fi_av_insert(a.av, addr, 1, &b_addr, 0, NULL) == 1 ? 0 : -FI_EINVAL);

	/* 5. Post the receive first: DGRAM drops messages nobody is waiting for. */
	CHECK(fi_recv(b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL));
	CHECK(fi_send(a.ep, msg, sizeof(msg), NULL, b_addr, NULL));
	wait_one(a.cq, "send");
	wait_one(b.cq, "recv");
	printf("received \"%s\"\n", buf);

	/* 6. Close in reverse order: endpoints before what they are bound to. */
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
	return strcmp(buf, msg) ? 1 : 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: hello_dgram\n"
		"Sends \"hello\" between two braid FI_EP_DGRAM endpoints on loopback and waits\n"
		"for both completions. Takes no arguments; FI_PROVIDER_PATH names the directory\n"
		"of libbraid-fi.so when braid is not installed.\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int opt;

	/* the options: only --help; anything else is a usage error (exit 2) */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		usage(opt == 'h' ? stdout : stderr);
		return opt == 'h' ? 0 : 2;
	}
	if (optind < argc) {
		fprintf(stderr, "hello_dgram: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return hello();
}
