/* SPDX-License-Identifier: BSD-2-Clause */
/* test_api.c: braid answers each libfabric API version as that version defines it (1.17 to 2.6; fi_braid(7) "SUPPORTED VERSIONS"). */
#include <dlfcn.h>

#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "prov_test.h"

#define API_1_17	FI_VERSION(1, 17)

static struct fi_info *getinfo_v(uint32_t version, struct fi_info *hints)
{
	struct fi_info *info = NULL;
	int ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);

	cr_assert_eq(ret, 0, "fi_getinfo(%u.%u) = %d", FI_MAJOR(version), FI_MINOR(version), ret);
	cr_assert(pt_is_plain_braid(info), "first entry from %s", info->fabric_attr->prov_name);
	return info;
}

static void nodata_v(uint32_t version, struct fi_info *hints, const char *what)
{
	struct fi_info *info = NULL;
	int ret = fi_getinfo(version, NULL, NULL, 0, hints, &info);

	cr_expect_eq(ret, -FI_ENODATA, "%s (API %u.%u): fi_getinfo = %d, expected -FI_ENODATA",
		     what, FI_MAJOR(version), FI_MINOR(version), ret);
	if (!ret)
		fi_freeinfo(info);
}

/*
 * braid registers with the API of the headers it was built against:
 * libfabric offers it to applications of that API and older ones (and
 * hides it from newer ones).
 */
Test(fi_provider, registers_with_the_api_of_its_headers)
{
	const char *dir = getenv("FI_PROVIDER_PATH");
	struct fi_provider *(*ini)(void);
	struct fi_provider *prov;
	char path[4096];
	void *h;

	cr_assert_not_null(dir, "FI_PROVIDER_PATH names the build's providers/");
	snprintf(path, sizeof(path), "%s/libbraid-fi.so", dir);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen(%s): %s", path, dlerror());
	ini = (struct fi_provider *(*)(void))dlsym(h, "fi_prov_ini");
	cr_assert_not_null(ini);
	prov = ini();
	cr_assert_not_null(prov);
	cr_assert_str_eq(prov->name, "braid");
	cr_assert_eq(prov->fi_version, BRAID_FI_HDR_VERSION, "fi_version %u.%u, headers %u.%u",
		     FI_MAJOR(prov->fi_version), FI_MINOR(prov->fi_version),
		     FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

Test(fi_getinfo, every_api_up_to_the_headers_finds_braid)
{
	static const uint32_t v[] = { FI_VERSION(1, 0), FI_VERSION(1, 5), API_1_17,
				      BRAID_FI_HDR_VERSION };
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct fi_info *hints = pt_hints(FI_EP_RDM), *info = getinfo_v(v[i], hints);

		cr_expect_eq(info->fabric_attr->api_version, v[i]);
		cr_expect_eq(info->ep_attr->type, FI_EP_RDM);
		fi_freeinfo(info);
		fi_freeinfo(hints);
	}
}

/* Before 2.0 control and data progress are two models, and braid's control progress is manual. */
Test(fi_getinfo, api_1_17_control_progress_auto_refused)
{
	struct fi_info *hints = pt_hints(FI_EP_DGRAM);

	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	nodata_v(API_1_17, hints, "control_progress FI_PROGRESS_AUTO");
	hints->domain_attr->control_progress = BRAID_PROGRESS_CONTROL_UNIFIED;
	nodata_v(API_1_17, hints, "control_progress FI_PROGRESS_CONTROL_UNIFIED before 1.21");
	fi_freeinfo(hints);
}

/* A 1.17 application's hints name no 2.0 capability: those bits meant other things then */
Test(fi_getinfo, api_1_17_has_none_of_2_0s_receive_capabilities)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	info = getinfo_v(API_1_17, hints);
	cr_expect_eq(info->caps & ((1ULL << 45) | (1ULL << 46) | (1ULL << 48)), 0);
	cr_expect_eq(info->rx_attr->caps & ((1ULL << 45) | (1ULL << 46) | (1ULL << 48)), 0);
	fi_freeinfo(info);
	hints->caps = FI_TAGGED | (1ULL << 48);	/* FI_VARIABLE_MSG in 1.17 */
	nodata_v(API_1_17, hints, "bit 48 (1.17's FI_VARIABLE_MSG)");
	hints->caps = FI_TAGGED | (1ULL << 45);
	nodata_v(API_1_17, hints, "bit 45 (an MR flag in 1.17)");
	fi_freeinfo(hints);
}

/* Before 2.0 every mem_tag_format is a mask of tag bits, echoed */
Test(fi_getinfo, api_1_17_mem_tag_format_is_a_mask)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->caps = FI_TAGGED;
	hints->ep_attr->mem_tag_format = 3;
	info = getinfo_v(API_1_17, hints);
	cr_expect_eq(info->ep_attr->mem_tag_format, 3);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * An application that asks for FI_RMA and FI_RMA_EVENT without directions
 * gets all of them, and may count remote writes and reads on a counter
 * bound with FI_REMOTE_WRITE | FI_REMOTE_READ (fi_endpoint(3)).
 */
Test(fi_getinfo, rma_without_directions_gets_them_all)
{
	const uint64_t dirs = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->caps & dirs, dirs);
	cr_expect(info->caps & FI_RMA_EVENT);
	cr_expect_eq(info->caps & (FI_SEND | FI_RECV), FI_SEND | FI_RECV);
	fi_freeinfo(info);
	hints->caps = FI_MSG | FI_RMA | FI_WRITE;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->caps & dirs, FI_WRITE, "a direction asked is all that is given");
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* FI_AV_AUTH_KEY (1.20: keys in the AV): braid keeps one key an endpoint */
Test(fi_getinfo, av_auth_key_not_offered)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM);

	hints->domain_attr->auth_key_size = SIZE_MAX;
	nodata_v(PT_VERSION, hints, "domain auth_key_size FI_AV_AUTH_KEY");
	fi_freeinfo(hints);
}

/*
 * fi_cq_readerr writes into the application's struct fi_cq_err_entry as
 * its API has it: a 1.17 application's ends before src_addr (1.20).
 */
static void cancelled_recv_err(uint32_t version, uint8_t *buf, size_t size)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL;
	struct pt_dom d = { 0 };
	struct pt_ep e;
	char rbuf[8];
	long deadline;
	ssize_t ret;

	cr_assert_eq(fi_getinfo(version, "127.0.0.1", "0", FI_SOURCE, hints, &list), 0);
	fi_freeinfo(hints);
	d.info = pt_take_plain_braid(list);
	cr_assert_eq(fi_fabric(d.info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(d.fabric->api_version, version);
	cr_assert_eq(fi_domain(d.fabric, d.info, &d.domain, NULL), 0);
	pt_ep_create(&d, &e, NULL);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	cr_assert_eq(fi_recv(e.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, (void *)7), 0);
	cr_assert_eq(fi_cancel(&e.ep->fid, (void *)7), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	do {
		struct fi_cq_tagged_entry ent;

		ret = fi_cq_read(e.rx_cq, &ent, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, -FI_EAVAIL);
	memset(buf, 0xa5, size);
	/* the provider's call itself: 1.20's inline fi_cq_readerr sets src_addr first */
	cr_assert_eq(e.rx_cq->ops->readerr(e.rx_cq, (struct fi_cq_err_entry *)buf, 0), 1);
	cr_assert_eq(((struct fi_cq_err_entry *)buf)->err, FI_ECANCELED);
	cr_assert_eq(((struct fi_cq_err_entry *)buf)->op_context, (void *)7);
	pt_ep_close(&e);
	pt_dom_close(&d);
}

Test(fi_cq_readerr, writes_only_the_entry_of_the_applications_api)
{
	/* a 1.17 application's struct ends where 1.20's src_addr begins */
	const size_t end_1_17 = offsetof(struct fi_cq_err_entry, err_data_size) + sizeof(size_t);
	uint8_t buf[sizeof(struct fi_cq_err_entry) + 16];
	size_t i;

	cancelled_recv_err(API_1_17, buf, sizeof(buf));
	for (i = end_1_17; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xa5, "byte %zu past a 1.17 application's entry was written", i);
#if BRAID_FI_HDR_GE(1, 20)
	cancelled_recv_err(PT_VERSION, buf, sizeof(buf));
	cr_assert_eq(((struct fi_cq_err_entry *)buf)->src_addr, FI_ADDR_NOTAVAIL,
		     "src_addr is the entry's from 1.20 on");
	for (i = sizeof(struct fi_cq_err_entry); i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xa5);
#endif
}

#if BRAID_FI_HDR_GE(1, 21)
/* FI_PROGRESS_CONTROL_UNIFIED (1.21): control progress made by the data calls, which is braid's */
Test(fi_getinfo, control_unified_from_1_21)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->domain_attr->control_progress = FI_PROGRESS_CONTROL_UNIFIED;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	info = getinfo_v(FI_VERSION(1, 21), hints);
	cr_expect_eq(info->domain_attr->control_progress, FI_PROGRESS_CONTROL_UNIFIED);
	cr_expect_eq(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->data_progress = FI_PROGRESS_CONTROL_UNIFIED;
	nodata_v(FI_VERSION(1, 21), hints, "data_progress CONTROL_UNIFIED before 2.0");
	fi_freeinfo(hints);
}
#endif

#if BRAID_FI_HDR_GE(2, 0)
/* 2.0: one progress model for both, in the field "progress"; control_progress is not read */
Test(fi_getinfo, api_2_progress_is_one_model)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->domain_attr->progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	hints->domain_attr->progress = FI_PROGRESS_CONTROL_UNIFIED;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->domain_attr->progress, FI_PROGRESS_CONTROL_UNIFIED);
	cr_expect_eq(info->domain_attr->control_progress, FI_PROGRESS_CONTROL_UNIFIED);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* 2.0's receive capabilities: the secondary one offered, the primary one and the modifier when asked */
Test(fi_getinfo, api_2_receive_capabilities)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	info = getinfo_v(PT_VERSION, hints);
	cr_expect(info->caps & FI_TAGGED_MULTI_RECV);
	cr_expect(info->rx_attr->caps & FI_TAGGED_MULTI_RECV);
	cr_expect_eq(info->caps & (FI_TAGGED_DIRECTED_RECV | FI_EXACT_DIRECTED_RECV), 0);
	fi_freeinfo(info);
	hints->caps = FI_TAGGED | FI_TAGGED_DIRECTED_RECV | FI_EXACT_DIRECTED_RECV;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->caps & (FI_TAGGED_DIRECTED_RECV | FI_EXACT_DIRECTED_RECV),
		     FI_TAGGED_DIRECTED_RECV | FI_EXACT_DIRECTED_RECV);
	cr_expect(info->rx_attr->caps & FI_TAGGED_DIRECTED_RECV);
	fi_freeinfo(info);
	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG | FI_TAGGED_MULTI_RECV;
	nodata_v(PT_VERSION, hints, "FI_TAGGED_MULTI_RECV on DGRAM");
	fi_freeinfo(hints);
}

/* 2.0's tag formats: FI_TAG_MPI and FI_TAG_CCL are uses of braid's 64 bits; 3..65535 name nothing */
Test(fi_getinfo, api_2_tag_formats)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->caps = FI_TAGGED;
	hints->ep_attr->mem_tag_format = FI_TAG_MPI;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->ep_attr->mem_tag_format, FI_TAG_MPI);
	fi_freeinfo(info);
	hints->ep_attr->mem_tag_format = FI_TAG_CCL;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->ep_attr->mem_tag_format, FI_TAG_CCL);
	fi_freeinfo(info);
	hints->ep_attr->mem_tag_format = 3;
	nodata_v(PT_VERSION, hints, "mem_tag_format 3");
	hints->ep_attr->mem_tag_format = 0xffff0000ffffULL;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->ep_attr->mem_tag_format, 0xffff0000ffffULL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* fields of fi_domain_attr newer than 1.17 */
Test(fi_getinfo, api_2_domain_attr_fields)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->domain_attr->max_ep_auth_key, 1);
	cr_expect_eq(info->domain_attr->max_group_id, 0);
#if BRAID_FI_HDR_GE(2, 5)
	cr_expect_eq(info->domain_attr->max_cntr_value, UINT64_MAX);
	cr_expect_eq(info->domain_attr->max_err_cntr_value, UINT64_MAX);
#endif
	fi_freeinfo(info);
	hints->domain_attr->max_ep_auth_key = 2;
	nodata_v(PT_VERSION, hints, "two keys an endpoint");
	hints->domain_attr->max_ep_auth_key = 0;
	hints->domain_attr->max_group_id = 1;
	nodata_v(PT_VERSION, hints, "peer groups");
	fi_freeinfo(hints);
}
#endif

#if BRAID_FI_HDR_GE(2, 3)
/* FI_SOCKADDR_IP (2.3): braid's IPv4 addresses are FI_SOCKADDR_IN */
Test(fi_getinfo, sockaddr_ip_answered_with_sockaddr_in)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *info;

	hints->addr_format = FI_SOCKADDR_IP;
	info = getinfo_v(PT_VERSION, hints);
	cr_expect_eq(info->addr_format, FI_SOCKADDR_IN);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
#endif
