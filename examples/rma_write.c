/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rma_write.c: one process writes into another's memory with fi_writedata
 * over braid's reliable datagram endpoint (FI_EP_RDM), and the write's
 * 64-bit remote CQ data tells the target it has landed.
 *
 * The target (-s) registers a buffer for remote writes (fi_mr_reg with
 * FI_REMOTE_WRITE) and listens on a TCP port; the initiator connects. Over
 * that socket (out of band) they swap fabric addresses, and the target sends
 * what a peer needs to name its buffer: the address to write to and the
 * region's key, both as the memory registration mode fi_getinfo returned
 * asks. The initiator writes the buffer's pattern with fi_writedata; the
 * target gets one completion with FI_REMOTE_CQ_DATA and the data, and checks
 * both the data and every byte written. Every wait is bounded (10 s).
 *
 *   build:  cc -o rma_write rma_write.c -lfabric
 *   run:    ./rma_write -s [-p PORT]            the target; prints "port N"
 *           ./rma_write -p PORT TARGET_HOST     the initiator
 *           (-p 0, the target's default, takes a free port.) Until braid is
 *           installed, set FI_PROVIDER_PATH=<dir of libbraid-fi.so> for both.
 *   exit:   0 when the write arrived intact with its data, 1 otherwise.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <endian.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define TIMEOUT_MS 10000
#define LEN 65536			/* bytes written: many packets */
#define CQ_DATA 0x0123456789abcdefULL	/* the remote CQ data the write carries */
#define REQUESTED_KEY 0xb1a1dULL	/* the key asked for, used when the provider does not pick one */

#define CHECK(call)							\
	do {								\
		int _ret = (int)(call);					\
		if (_ret < 0) {						\
			fprintf(stderr, "%s: %s\n", #call, fi_strerror(-_ret)); \
			exit(1);					\
		}							\
	} while (0)

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- the out-of-band channel: one TCP connection ---- */

/* Server: listen on @port (0: any free one), announce it, accept one client. */
static int oob_accept(const char *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				   .sin_port = htons((uint16_t)atoi(port)) };
	socklen_t len = sizeof(sin);
	struct pollfd pfd;
	int one = 1, fd, conn;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len))
		die("listen");
	/* a script starting the client waits for this line */
	printf("port %d\n", ntohs(sin.sin_port));
	fflush(stdout);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
		fprintf(stderr, "no client within %d ms\n", TIMEOUT_MS);
		exit(1);
	}
	conn = accept(fd, NULL, NULL);
	if (conn < 0)
		die("accept");
	close(fd);
	return conn;
}

/* Client: connect to @host:@port. */
static int oob_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int fd, ret = getaddrinfo(host, port, &hints, &ai);

	if (ret) {
		fprintf(stderr, "%s: %s\n", host, gai_strerror(ret));
		exit(1);
	}
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	return fd;
}

/* Read exactly @len bytes; the socket's receive timeout bounds the wait. */
static void oob_read(int fd, void *buf, size_t len)
{
	if (recv(fd, buf, len, MSG_WAITALL) != (ssize_t)len) {
		fprintf(stderr, "out-of-band read: peer closed, timed out or failed\n");
		exit(1);
	}
}

static void oob_write(int fd, const void *buf, size_t len)
{
	if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
		die("out-of-band write");
}

/* Send our @len bytes, receive the peer's (a 4-byte length, then the bytes). */
static void oob_exchange(int fd, const void *mine, size_t len, void *theirs, size_t max)
{
	uint32_t n = htonl((uint32_t)len);

	oob_write(fd, &n, sizeof(n));
	oob_write(fd, mine, len);
	oob_read(fd, &n, sizeof(n));
	if (ntohl(n) > max) {
		fprintf(stderr, "peer sent %u bytes, at most %zu expected\n", ntohl(n), max);
		exit(1);
	}
	oob_read(fd, theirs, ntohl(n));
}

/* ---- the fabric side ---- */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to TIMEOUT_MS for one completion; an error completion or a timeout ends the program. */
static void wait_one(struct fid_cq *cq, struct fi_cq_data_entry *entry)
{
	long deadline = now_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		/* blocks (progressing the endpoint) until a completion or the time left */
		ret = fi_cq_sread(cq, entry, 1, NULL, (int)(deadline - now_ms()));
		if (ret == 1)
			return;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "error completion: %s (%s)\n", fi_strerror(err.err),
				fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
			exit(1);
		}
		if (ret != -FI_EAGAIN)
			CHECK(ret);
	} while (now_ms() < deadline);
	fprintf(stderr, "no completion within %d ms\n", TIMEOUT_MS);
	exit(1);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + 1);
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out, "usage: %s -s [-p PORT]   (target)\n"
		"       %s -p PORT HOST   (initiator)\n"
		"Writes into the target's registered buffer with fi_writedata (remote CQ data)\n"
		"from another process; addresses and the key go over a TCP connection (port\n"
		"PORT; -p 0: the target takes a free one and prints \"port N\").\n"
		"  -h, --help  this text\n", prog, prog);
}

int main(int argc, char **argv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr = NULL;
	struct fi_cq_data_entry entry;
	struct timeval tv = { .tv_sec = TIMEOUT_MS / 1000 };
	struct sockaddr_in local;
	socklen_t local_len = sizeof(local);
	char ip[INET_ADDRSTRLEN], addr[64], peer_addr[64], done;
	const char *port = "0", *host = NULL;
	size_t addrlen = sizeof(addr), bad = 0;
	uint64_t remote[2], data = CQ_DATA, mr_mode;
	uint8_t *buf;
	fi_addr_t peer;
	int opt, target = 0, sock, ok = 1;

	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};

	while ((opt = getopt_long(argc, argv, "hsp:", longopts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout, argv[0]);
			return 0;
		} else if (opt == 's')
			target = 1;
		else if (opt == 'p')
			port = optarg;
		else
			goto usage;
	}
	if (optind < argc)
		host = argv[optind];
	if (target == (host != NULL))
		goto usage;

	/* 1. The out-of-band connection; every read on it gives up after TIMEOUT_MS. */
	sock = target ? oob_accept(port) : oob_connect(host, port);
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (getsockname(sock, (struct sockaddr *)&local, &local_len))
		die("getsockname");
	inet_ntop(AF_INET, &local.sin_addr, ip, sizeof(ip));

	/* 2. Ask for RDM with RMA writes (FI_MSG too, for the receive that
	 *    FI_RX_CQ_DATA may require). The hints say what this program can
	 *    handle: the registration modes braid requires (provider-chosen keys,
	 *    virtual addresses, allocated memory) and the FI_RX_CQ_DATA mode.
	 *    fi_getinfo returns the ones the provider needs; the code below
	 *    honours each of them. */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
	hints->mode = FI_RX_CQ_DATA;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup("braid");
	CHECK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), ip, "0", FI_SOURCE, hints, &info));
	mr_mode = (uint64_t)info->domain_attr->mr_mode;
	printf("provider %s, endpoint %s, address %s\n", info->fabric_attr->prov_name,
	       fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE), ip);
	printf("mr_mode [%s]\n", fi_tostr(&info->domain_attr->mr_mode, FI_TYPE_MR_MODE));
	printf("mode [%s], cq_data_size %zu\n", fi_tostr(&info->mode, FI_TYPE_MODE),
	       info->domain_attr->cq_data_size);
	/* the remote CQ data the provider carries: cq_data_size bytes */
	if (info->domain_attr->cq_data_size < 8)
		data &= (1ULL << (8 * info->domain_attr->cq_data_size)) - 1;

	/* 3. Fabric, domain, CQ (FI_CQ_FORMAT_DATA: entries carry the CQ data),
	 *    address vector, endpoint. */
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	/* 4. The buffer: the target's is zeroed (which also backs it with pages,
	 *    as FI_MR_ALLOCATED asks) and registered for remote writes; the
	 *    initiator's holds the pattern (sources need no registration unless
	 *    the mode has FI_MR_LOCAL, which the hints did not offer). */
	buf = malloc(LEN);
	if (!buf)
		die("malloc");
	for (size_t i = 0; i < LEN; i++)
		buf[i] = target ? 0 : pattern(i);
	if (target) {
		CHECK(fi_mr_reg(domain, buf, LEN, FI_REMOTE_WRITE, 0, REQUESTED_KEY, 0, &mr, NULL));
		/* a write names the region's start as its virtual address, or
		 * as offset 0; and the key braid chose, or the one asked for */
		remote[0] = htobe64((mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0);
		remote[1] = htobe64((mr_mode & FI_MR_PROV_KEY) ? fi_mr_key(mr) : REQUESTED_KEY);
		/* with FI_RX_CQ_DATA, the write's data consumes a posted receive */
		if (info->mode & FI_RX_CQ_DATA)
			CHECK(fi_recv(ep, NULL, 0, NULL, FI_ADDR_UNSPEC, NULL));
	}

	/* 5. Swap fabric addresses; then the target sends its buffer's address and key. */
	CHECK(fi_getname(&ep->fid, addr, &addrlen));
	oob_exchange(sock, addr, addrlen, peer_addr, sizeof(peer_addr));
	CHECK(fi_av_insert(av, peer_addr, 1, &peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);
	if (target)
		oob_write(sock, remote, sizeof(remote));
	else
		oob_read(sock, remote, sizeof(remote));

	if (target) {
		/* 6t. One completion says the write has landed, with its data. */
		wait_one(cq, &entry);
		if (!(entry.flags & FI_REMOTE_CQ_DATA) || entry.data != data) {
			fprintf(stderr, "completion without the CQ data (flags %#llx, data %#llx)\n",
				(unsigned long long)entry.flags, (unsigned long long)entry.data);
			ok = 0;
		}
		for (size_t i = 0; i < LEN; i++)
			bad += buf[i] != pattern(i);
		printf("remote write completed: CQ data %#llx, %zu of %d bytes wrong\n",
		       (unsigned long long)entry.data, bad, LEN);
		ok = ok && bad == 0;
	} else {
		/* 6i. Write the whole buffer with the CQ data; it completes once
		 *     the target has it. */
		CHECK(fi_writedata(ep, buf, LEN, NULL, data, peer, be64toh(remote[0]),
				   be64toh(remote[1]), NULL));
		wait_one(cq, &entry);
		printf("write of %d bytes with CQ data %#llx completed\n", LEN, (unsigned long long)data);
	}
	printf("%s\n", ok ? "data checked" : "wrong data");

	/* 7. Agree over the socket that both are done before closing. */
	oob_write(sock, "x", 1);
	oob_read(sock, &done, 1);
	close(sock);

	/* 8. Close in reverse order: the endpoint before what it is bound to. */
	fi_close(&ep->fid);
	if (mr)
		fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(buf);
	return ok ? 0 : 1;

usage:
	usage(stderr, argv[0]);
	return 2;
}
