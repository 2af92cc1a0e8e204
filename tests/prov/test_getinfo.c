/* SPDX-License-Identifier: BSD-2-Clause */
/* test_getinfo.c: fi_getinfo(3) against braid: what it offers, which hints it refuses, node/service handling. */
#include "prov_test.h"

static int getinfo(const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	return fi_getinfo(PT_VERSION, node, service, flags, hints, info);
}

/* Expect -FI_ENODATA (and no list) for @hints. */
static void expect_nodata(struct fi_info *hints, const char *what)
{
	struct fi_info *info = NULL;
	int ret = getinfo(NULL, NULL, 0, hints, &info);

	cr_expect_eq(ret, -FI_ENODATA, "%s: fi_getinfo = %d, expected -FI_ENODATA", what, ret);
	cr_expect_null(info, "%s: info returned", what);
	if (!ret)
		fi_freeinfo(info);
	fi_freeinfo(hints);
}

static const struct sockaddr_in *sin_of(const void *addr)
{
	return (const struct sockaddr_in *)addr;
}

/* hints that allow no mode: every endpoint type, MSG too (it asks no FI_RX_CQ_DATA of them) */
Test(fi_getinfo, lists_rdm_dgram_and_msg)
{
	struct fi_info *hints = pt_hints(FI_EP_UNSPEC), *info, *cur;
	int ret, n = 0, ndgram = 0, nrdm = 0, nmsg = 0;

	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		if (!pt_is_plain_braid(cur))
			continue;
		n++;
		cr_expect(cur->ep_attr->type == FI_EP_DGRAM || cur->ep_attr->type == FI_EP_RDM ||
			  cur->ep_attr->type == FI_EP_MSG);
		ndgram += cur->ep_attr->type == FI_EP_DGRAM;
		nrdm += cur->ep_attr->type == FI_EP_RDM;
		nmsg += cur->ep_attr->type == FI_EP_MSG;
		/* domain capabilities stay the domain's; a context's are in the entry's */
		cr_expect_eq((cur->tx_attr->caps | cur->rx_attr->caps) &
			     (FI_LOCAL_COMM | FI_REMOTE_COMM), 0);
		cr_expect_eq(cur->tx_attr->caps & ~cur->caps, 0);
		cr_expect_eq(cur->rx_attr->caps & ~cur->caps, 0);
		cr_expect_eq(cur->addr_format, FI_SOCKADDR_IN);
		cr_expect(cur->caps & FI_MSG, "FI_MSG not in caps");
		cr_expect_not_null(cur->src_addr);
		cr_expect_eq(cur->src_addrlen, sizeof(struct sockaddr_in));
		cr_expect_gt(cur->ep_attr->max_msg_size, 0);
		cr_expect_not_null(cur->domain_attr->name);
		cr_expect_not_null(cur->fabric_attr->name);
		cr_expect_eq(cur->mode, 0, "mode 0x%llx although the hints allow no mode",
			     (unsigned long long)cur->mode);
	}
	cr_expect_gt(n, 0, "no plain braid entry");
	cr_expect_gt(ndgram, 0, "no FI_EP_DGRAM entry");
	cr_expect_gt(nrdm, 0, "no FI_EP_RDM entry");
	cr_expect_gt(nmsg, 0, "no FI_EP_MSG entry");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, dgram_type_gives_only_braid_dgram)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info, *cur;
	int ret;

	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		cr_expect(pt_is_plain_braid(cur), "entry from %s", cur->fabric_attr->prov_name);
		cr_expect_eq(cur->ep_attr->type, FI_EP_DGRAM);
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, no_hints_include_braid)
{
	struct fi_info *info, *cur;
	int ret, n = 0;

	ret = getinfo(NULL, NULL, 0, NULL, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next)
		n += pt_is_plain_braid(cur);
	cr_expect_gt(n, 0, "braid missing from the unfiltered list");
	fi_freeinfo(info);
}

Test(fi_getinfo, caps_rma)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->caps = FI_MSG | FI_RMA;
	expect_nodata(hints, "FI_RMA");
}

Test(fi_getinfo, caps_tagged)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->caps = FI_TAGGED;
	expect_nodata(hints, "FI_TAGGED");
}

Test(fi_getinfo, caps_atomic)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->caps = FI_MSG | FI_ATOMIC;
	expect_nodata(hints, "FI_ATOMIC");
}

Test(fi_getinfo, caps_source_echoed)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	int ret;

	hints->caps = FI_MSG | FI_SOURCE;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	cr_expect_eq(info->caps & (FI_MSG | FI_SOURCE), FI_MSG | FI_SOURCE);
	cr_expect_eq(info->caps & (FI_RMA | FI_TAGGED | FI_ATOMIC), 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* FI_EP_MSG (RoCEv2 RC) asks for FI_RX_CQ_DATA only of applications that allow it */
Test(fi_getinfo, ep_msg_rx_cq_data_mode_only_when_allowed)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *info, *cur;
	int ret, n = 0;

	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo(FI_EP_MSG, mode 0) = %d", ret);
	for (cur = info; cur; cur = cur->next)
		cr_expect_eq(cur->mode, 0);
	fi_freeinfo(info);
	hints->mode = FI_RX_CQ_DATA;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo(FI_EP_MSG, FI_RX_CQ_DATA) = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		cr_expect_eq(cur->ep_attr->type, FI_EP_MSG);
		cr_expect_eq(cur->mode, FI_RX_CQ_DATA);
		cr_expect_eq(cur->rx_attr->mode, FI_RX_CQ_DATA, "an rx mode: in rx_attr too");
		cr_expect(cur->caps & FI_RMA);
		cr_expect_eq(cur->domain_attr->mr_mode,
			     FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
		n += pt_is_plain_braid(cur);
	}
	cr_expect_gt(n, 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* braid's own FI_EP_RDM (the RD engine), with honest attributes; "braid;ofi_rxd" is listed too. */
Test(fi_getinfo, ep_rdm_native)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info, *cur;
	int ret, native = 0;

	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		cr_expect_eq(cur->ep_attr->type, FI_EP_RDM);
		if (!pt_is_plain_braid(cur))
			continue;
		native++;
		cr_expect(cur->caps & FI_MSG);
		cr_expect(cur->caps & FI_TAGGED);
		cr_expect(cur->caps & FI_DIRECTED_RECV);
		cr_expect(cur->caps & FI_MULTI_RECV);
		cr_expect(!(cur->caps & (FI_RMA | FI_ATOMIC)),
			  "nothing advertised that is not implemented");
		cr_expect(cur->tx_attr->msg_order & FI_ORDER_SAS);
		cr_expect_eq(cur->ep_attr->max_msg_size, 0xffffffffULL);
		cr_expect_gt(cur->tx_attr->inject_size, 1000);
		cr_expect_eq(cur->domain_attr->cq_data_size, 8);
		cr_expect_eq(cur->mode, 0);
	}
	cr_expect_gt(native, 0, "no native braid FI_EP_RDM entry");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, addr_format_str)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->addr_format = FI_ADDR_STR;
	expect_nodata(hints, "FI_ADDR_STR");
}

Test(fi_getinfo, addr_format_in6)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->addr_format = FI_SOCKADDR_IN6;
	expect_nodata(hints, "FI_SOCKADDR_IN6");
}

Test(fi_getinfo, addr_format_foreign)
{
	static const uint32_t formats[] = {
		FI_SOCKADDR_IB, FI_ADDR_PSMX, FI_ADDR_GNI, FI_ADDR_BGQ, FI_ADDR_MLX,
		FI_ADDR_PSMX2, FI_ADDR_IB_UD, FI_ADDR_EFA, FI_ADDR_PSMX3, FI_ADDR_OPX,
		FI_ADDR_CXI,
	};
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct fi_info *hints = pt_hints(FI_EP_DGRAM);
		char what[32];

		hints->addr_format = formats[i];
		snprintf(what, sizeof(what), "addr_format %u", formats[i]);
		expect_nodata(hints, what);
	}
}

Test(fi_getinfo, addr_format_sockaddr_in_accepted)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	int ret;

	hints->addr_format = FI_SOCKADDR_IN;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	cr_expect_eq(info->addr_format, FI_SOCKADDR_IN);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * Any API an application asks for is answered (fi_getinfo(3): MPICH's first
 * call asks for 0.0), with that API's semantics: before 1.5 an RMA entry's
 * MR mode is FI_MR_BASIC, which an mr_mode of 0 (FI_MR_UNSPEC) accepts.
 */
Test(fi_getinfo, api_versions_before_1_5_get_basic_mr_mode)
{
	static const uint32_t old[] = { FI_VERSION(0, 0), FI_VERSION(1, 4) };
	size_t i;

	for (i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		struct fi_info *hints = pt_hints(FI_EP_RDM), *info = NULL;
		int ret;

		hints->caps = FI_MSG | FI_RMA;
		hints->domain_attr->mr_mode = 0;
		ret = fi_getinfo(old[i], NULL, NULL, 0, hints, &info);
		cr_assert_eq(ret, 0, "fi_getinfo(%u.%u) = %d", FI_MAJOR(old[i]), FI_MINOR(old[i]),
			     ret);
		cr_expect(!strncmp(info->fabric_attr->prov_name, "braid", 5));
		cr_expect_eq(info->fabric_attr->api_version, old[i]);
		cr_expect(info->caps & FI_RMA);
		cr_expect_eq(info->domain_attr->mr_mode, BRAID_MR_BASIC);
		fi_freeinfo(info);
		fi_freeinfo(hints);
	}
}

/* from 1.5 on, mr_mode 0 says the application supports no mode: no RMA entry for braid's RDM */
Test(fi_getinfo, api_1_5_and_later_mr_mode_0_has_no_rma)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM);

	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = 0;
	expect_nodata(hints, "FI_RMA with mr_mode 0 at API >= 1.5");
}

/* automatic data progress: the progress thread's, echoed; without the thread none */
Test(fi_getinfo, data_progress_auto_with_the_progress_thread)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info = NULL;
	int ret;

	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo(data_progress AUTO) = %d", ret);
	cr_expect_eq(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, data_progress_auto_without_the_progress_thread)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	setenv("FI_BRAID_PROGRESS_US", "0", 1);	/* read when the provider loads, in this process */
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	expect_nodata(hints, "data_progress FI_PROGRESS_AUTO without the thread");
}

Test(fi_getinfo, progress_manual_accepted)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	int ret;

	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	cr_expect_eq(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	cr_expect_eq(info->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, cq_data_size_16)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->domain_attr->cq_data_size = 16;
	expect_nodata(hints, "cq_data_size 16");
}

Test(fi_getinfo, cq_data_size_8_accepted)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	int ret;

	hints->domain_attr->cq_data_size = 8;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	cr_expect_geq(info->domain_attr->cq_data_size, 8);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, tx_iov_limit_1000)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->tx_attr->iov_limit = 1000;
	expect_nodata(hints, "tx_attr->iov_limit 1000");
}

Test(fi_getinfo, rx_iov_limit_1000)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->rx_attr->iov_limit = 1000;
	expect_nodata(hints, "rx_attr->iov_limit 1000");
}

Test(fi_getinfo, max_msg_size_too_large)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->ep_attr->max_msg_size = (size_t)1 << 30;
	expect_nodata(hints, "max_msg_size 1 GiB");
}

Test(fi_getinfo, tx_ctx_cnt_2)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->ep_attr->tx_ctx_cnt = 2;
	expect_nodata(hints, "tx_ctx_cnt 2");
}

/*
 * Scalable endpoints (fi_braid(7) SCALABLE ENDPOINTS): hints asking for
 * named receive contexts or several contexts per endpoint match nothing,
 * the log says why, and fi_scalable_ep is not implemented.
 */
Test(fi_getinfo, scalable_endpoints_refused_with_reason)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM);
	char path[] = "/tmp/braid-getinfo-log-XXXXXX";
	size_t cap = 1 << 22;
	char *log = calloc(1, cap);
	struct fid_ep *sep = NULL;
	struct pt_dom d;
	int fd, saved, ret;
	ssize_t n;

	/* libfabric reads its log settings when it first initialises, here */
	setenv("FI_LOG_LEVEL", "info", 1);
	setenv("FI_LOG_PROV", "braid", 1);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
	hints->caps |= FI_NAMED_RX_CTX;
	expect_nodata(hints, "FI_NAMED_RX_CTX");
	hints = pt_hints(FI_EP_RDM);
	hints->ep_attr->rx_ctx_cnt = 2;
	expect_nodata(hints, "rx_ctx_cnt 2");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	cr_assert_not_null(log);
	n = pread(fd, log, cap - 1, 0);
	close(fd);
	cr_assert_gt(n, 0, "fi_getinfo logged nothing at FI_LOG_LEVEL=info");
	cr_expect_not_null(strstr(log, "no scalable endpoints"),
			   "no reason in the %zd bytes logged", n);
	free(log);

	pt_dom_open(&d);
	ret = fi_scalable_ep(d.domain, d.info, &sep, NULL);
	cr_expect_eq(ret, -FI_ENOSYS, "fi_scalable_ep = %d", ret);
	cr_expect_null(sep);
	cr_expect_eq(d.info->domain_attr->max_ep_tx_ctx, 1);
	cr_expect_eq(d.info->domain_attr->max_ep_rx_ctx, 1);
	cr_expect_eq(d.info->caps & FI_NAMED_RX_CTX, 0);
	pt_dom_close(&d);
}

Test(fi_getinfo, node_service_sets_dest)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info, *cur;
	int ret;

	ret = getinfo("127.0.0.1", "9999", 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		const struct sockaddr_in *dest = sin_of(cur->dest_addr);
		const struct sockaddr_in *src = sin_of(cur->src_addr);

		cr_assert_not_null(dest, "dest_addr not set");
		cr_expect_eq(cur->dest_addrlen, sizeof(struct sockaddr_in));
		cr_expect_eq(dest->sin_family, AF_INET);
		cr_expect_eq(ntohs(dest->sin_port), 9999);
		cr_expect_eq(dest->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
		/* the source is the interface that reaches 127.0.0.1: lo */
		cr_assert_not_null(src, "src_addr not set");
		cr_expect_eq(src->sin_family, AF_INET);
		cr_expect_eq(src->sin_addr.s_addr, htonl(INADDR_LOOPBACK),
			     "src_addr is %s, not on lo", inet_ntoa(src->sin_addr));
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, node_service_fi_source_sets_src)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info, *cur;
	int ret;

	ret = getinfo("127.0.0.1", "9999", FI_SOURCE, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		const struct sockaddr_in *src = sin_of(cur->src_addr);

		cr_assert_not_null(src, "src_addr not set");
		cr_expect_eq(cur->src_addrlen, sizeof(struct sockaddr_in));
		cr_expect_eq(src->sin_family, AF_INET);
		cr_expect_eq(ntohs(src->sin_port), 9999);
		cr_expect_eq(src->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
		cr_expect_null(cur->dest_addr, "dest_addr set with FI_SOURCE and no dest hint");
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, addr_str_node)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	const struct sockaddr_in *dest;
	int ret;

	ret = getinfo("fi_sockaddr_in://127.0.0.1:4567", NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	dest = sin_of(info->dest_addr);
	cr_assert_not_null(dest);
	cr_expect_eq(dest->sin_family, AF_INET);
	cr_expect_eq(ntohs(dest->sin_port), 4567);
	cr_expect_eq(dest->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, addr_str_node_fi_source)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info;
	const struct sockaddr_in *src;
	int ret;

	ret = getinfo("fi_sockaddr_in://127.0.0.1:4568", NULL, FI_SOURCE, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	src = sin_of(info->src_addr);
	cr_assert_not_null(src);
	cr_expect_eq(ntohs(src->sin_port), 4568);
	cr_expect_eq(src->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, threading_domain_echoed)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info, *cur;
	int ret;

	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next)
		cr_expect_eq(cur->domain_attr->threading, FI_THREAD_DOMAIN);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, fabric_name_selects_lo)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM), *info, *cur;
	int ret;

	hints->fabric_attr->name = strdup("127.0.0.0/8");
	ret = getinfo(NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, 0, "fi_getinfo = %d", ret);
	for (cur = info; cur; cur = cur->next) {
		cr_expect_str_eq(cur->fabric_attr->name, "127.0.0.0/8");
		cr_expect_eq(sin_of(cur->src_addr)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

Test(fi_getinfo, unknown_fabric_name)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->fabric_attr->name = strdup("no-such-fabric");
	expect_nodata(hints, "fabric name no-such-fabric");
}

Test(fi_getinfo, unknown_domain_name)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->domain_attr->name = strdup("no-such-domain0");
	expect_nodata(hints, "domain name no-such-domain0");
}

/* fi_getinfo for FI_EP_RDM from provider @prov_name (NULL: any): how many entries are braid;ofi_*, and the first entry's provider. */
static int count_layered(const char *prov_name, const char **first)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *cur;
	static char first_name[64];
	int ret, n = 0;

	cr_assert_not_null(hints);
	if (prov_name)
		hints->fabric_attr->prov_name = strdup(prov_name);
	hints->ep_attr->type = FI_EP_RDM;
	ret = getinfo(NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(%s) = %d", prov_name ? prov_name : "(any)", ret);
	snprintf(first_name, sizeof(first_name), "%s", info->fabric_attr->prov_name);
	*first = first_name;
	for (cur = info; cur; cur = cur->next)
		n += !strncmp(cur->fabric_attr->prov_name, "braid;", 6);
	fi_freeinfo(info);
	return n;
}

/*
 * "braid" names braid's own endpoints: fabtests' -p braid and Open MPI's
 * include list (both match by prefix, first entry wins) reach its native
 * RDM, not ofi_rxm or ofi_rxd layered over it (libfabric lists those first).
 */
Test(fi_getinfo, braid_gives_braid_own_rdm_first)
{
	const char *first;

	cr_expect_eq(count_layered("braid", &first), 0, "a layered entry for \"braid\"");
	cr_expect_str_eq(first, "braid");
	cr_expect_eq(count_layered(NULL, &first), 0, "a layered braid entry for a request naming none");
}

/* the layered providers stay reachable by their full names */
Test(fi_getinfo, layered_providers_by_full_name)
{
	const char *first;

	cr_expect_gt(count_layered("braid;ofi_rxm", &first), 0);
	cr_expect_str_eq(first, "braid;ofi_rxm");
	cr_expect_gt(count_layered("braid;ofi_rxd", &first), 0);
	cr_expect_str_eq(first, "braid;ofi_rxd");
}

/* FI_BRAID_LAYERING=1: libfabric's default layering (each test runs in its own process) */
Test(fi_getinfo, layering_setting_offers_layered_first)
{
	const char *first;

	setenv("FI_BRAID_LAYERING", "1", 1);
	cr_expect_gt(count_layered("braid", &first), 0);
	cr_expect(!strncmp(first, "braid;ofi_", 10), "first entry %s", first);
}

/*
 * FI_LOCAL_COMM and FI_REMOTE_COMM are secondary capabilities braid has: an
 * entry reports both, in caps and domain caps, however the hints name them
 * (fabtests' fi_getinfo_test asks for them in domain_attr->caps only, as
 * ofi_rxd passes them on).
 */
Test(fi_getinfo, comm_caps_reported_when_asked_in_domain_caps_only)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG };
	const uint64_t comm = FI_LOCAL_COMM | FI_REMOTE_COMM;
	size_t t;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		struct fi_info *hints = pt_hints(types[t]), *info;
		int ret;

		hints->caps = FI_MSG;
		hints->domain_attr->caps = FI_LOCAL_COMM;
		ret = getinfo(NULL, NULL, 0, hints, &info);
		cr_assert_eq(ret, 0, "fi_getinfo(type %d) = %d", types[t], ret);
		cr_expect_eq(info->caps & comm, comm);
		cr_expect_eq(info->domain_attr->caps & comm, comm);
		fi_freeinfo(info);
		fi_freeinfo(hints);
	}
}
