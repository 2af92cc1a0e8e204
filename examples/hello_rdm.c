/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hello_rdm.c: two processes exchange a tagged message each way over braid's
 * reliable datagram endpoint (FI_EP_RDM), a program to copy and start from.
 *
 * The server listens on a TCP port and the client connects to it; over that
 * socket (out of band, as a job launcher would) each sends the other its
 * fabric address (fi_getname), which goes into its address vector
 * (fi_av_insert). Each side binds braid to the local IP address of that TCP
 * connection, the interface that reaches the peer. Then the client sends
 * "hello from the client" with tag 1, the server answers "hello from the
 * server" with tag 2, and each checks what it received. Every wait is bounded
 * (10 s): a lost peer makes the program fail with a message, never hang.
 *
 *   build:  cc -o hello_rdm hello_rdm.c -lfabric
 *   run:    ./hello_rdm -s [-p PORT]            the server; prints "port N"
 *           ./hello_rdm -p PORT SERVER_HOST     the client
 *           (-p 0, the server's default, takes a free port.) Until braid is
 *           installed, set FI_PROVIDER_PATH=<dir of libbraid-fi.so> for both.
 *   exit:   0 when both messages arrived intact, 1 otherwise.
 */
#include <arpa/inet.h>
#include <getopt.h>
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
#include <rdma/fi_tagged.h>

#define TIMEOUT_MS 10000
#define CLIENT_TAG 1
#define SERVER_TAG 2

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
static void wait_one(struct fid_cq *cq, struct fi_cq_tagged_entry *entry)
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

static void usage(FILE *out, const char *prog)
{
	fprintf(out, "usage: %s -s [-p PORT]   (server)\n"
		"       %s -p PORT HOST   (client)\n"
		"Sends a tagged message each way between two braid FI_EP_RDM endpoints in two\n"
		"processes, their addresses exchanged over a TCP connection (port PORT; -p 0:\n"
		"the server takes a free one and prints \"port N\").\n"
		"  -h, --help  this text\n", prog, prog);
}

int main(int argc, char **argv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fi_cq_tagged_entry entry;
	struct timeval tv = { .tv_sec = TIMEOUT_MS / 1000 };
	struct sockaddr_in local;
	socklen_t local_len = sizeof(local);
	char ip[INET_ADDRSTRLEN], addr[64], peer_addr[64], buf[64] = "", done;
	const char *port = "0", *host = NULL, *msg;
	size_t addrlen = sizeof(addr);
	uint64_t send_tag, recv_tag;
	fi_addr_t peer;
	int opt, server = 0, sock, ok;

	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};

	while ((opt = getopt_long(argc, argv, "hsp:", longopts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout, argv[0]);
			return 0;
		} else if (opt == 's')
			server = 1;
		else if (opt == 'p')
			port = optarg;
		else
			goto usage;
	}
	if (optind < argc)
		host = argv[optind++];
	if (optind < argc || server == (host != NULL))
		goto usage;

	/* 1. The out-of-band connection; every read on it gives up after TIMEOUT_MS. */
	sock = server ? oob_accept(port) : oob_connect(host, port);
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (getsockname(sock, (struct sockaddr *)&local, &local_len))
		die("getsockname");
	inet_ntop(AF_INET, &local.sin_addr, ip, sizeof(ip));

	/* 2. Ask braid for a reliable datagram endpoint on that local address
	 *    (service "0": any free UDP port). FI_TAGGED gives fi_tsend and
	 *    fi_trecv; FI_MSG, fi_send and fi_recv as well. */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_MSG;
	hints->fabric_attr->prov_name = strdup("braid");
	CHECK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), ip, "0", FI_SOURCE, hints, &info));
	printf("provider %s, endpoint %s, address %s\n", info->fabric_attr->prov_name,
	       fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE), ip);

	/* 3. Fabric, domain, completion queue, address vector, endpoint. The CQ
	 *    has a wait object, so fi_cq_sread can block on it. */
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	/* 4. Swap fabric addresses over the socket; the peer's goes into the AV. */
	CHECK(fi_getname(&ep->fid, addr, &addrlen));
	oob_exchange(sock, addr, addrlen, peer_addr, sizeof(peer_addr));
	CHECK(fi_av_insert(av, peer_addr, 1, &peer, 0, NULL) == 1 ? 0 : -FI_EINVAL);

	/* 5. Post the receive for the peer's tag, then send ours (an RDM message
	 *    that arrives before its receive waits for it in the provider). */
	msg = server ? "hello from the server" : "hello from the client";
	send_tag = server ? SERVER_TAG : CLIENT_TAG;
	recv_tag = server ? CLIENT_TAG : SERVER_TAG;
	CHECK(fi_trecv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, recv_tag, 0, NULL));
	CHECK(fi_tsend(ep, msg, strlen(msg) + 1, NULL, peer, send_tag, NULL));

	/* 6. Two completions: our send (the peer acknowledged it) and our receive. */
	for (int i = 0; i < 2; i++) {
		wait_one(cq, &entry);
		if (entry.flags & FI_RECV)
			printf("received tag %llu: \"%s\"\n", (unsigned long long)entry.tag, buf);
		else
			printf("send completed\n");
	}
	ok = strcmp(buf, server ? "hello from the client" : "hello from the server") == 0;
	printf("%s\n", ok ? "data checked" : "wrong data");

	/* 7. Agree over the socket that both are done before closing: neither
	 *    closes its endpoint while the other may still need it. */
	oob_write(sock, "x", 1);
	oob_read(sock, &done, 1);
	close(sock);

	/* 8. Close in reverse order: the endpoint before what it is bound to. */
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return ok ? 0 : 1;

usage:
	usage(stderr, argv[0]);
	return 2;
}
