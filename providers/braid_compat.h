/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_compat.h: what differs between the libfabric APIs braid builds against (1.17.0 to 2.6.0), in one place. */
#ifndef BRAID_COMPAT_H
#define BRAID_COMPAT_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

/*
 * The API of the headers braid is built against. braid registers with it
 * (fi_provider.fi_version): libfabric offers a provider only to
 * applications that ask for an API no newer than the provider's, so a
 * braid built against 2.6's headers serves applications of every API up
 * to 2.6, and one built against 1.17's those up to 1.17.
 */
#define BRAID_FI_HDR_VERSION	FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* the headers' API is at least @maj.@min (for #if) */
#define BRAID_FI_HDR_GE(maj, min) \
	((FI_MAJOR_VERSION > (maj)) || (FI_MAJOR_VERSION == (maj) && FI_MINOR_VERSION >= (min)))

/* the API an application asked for (fi_getinfo's version, fi_fabric_attr.api_version) is at least @maj.@min */
static inline bool braid_api_ge(uint32_t api, unsigned int maj, unsigned int min)
{
	return FI_VERSION_GE(api, FI_VERSION(maj, min));
}

/*
 * Values 2.0 deprecated: their macros in 2.x headers emit a warning where
 * they are used, but the values stay part of the ABI and of older APIs,
 * which braid still serves (fi_domain(3) "MR Modes", fi_endpoint(3)).
 */
#define BRAID_MR_UNSPEC		0		/* FI_MR_UNSPEC */
#define BRAID_MR_BASIC		(1 << 0)	/* FI_MR_BASIC */
#define BRAID_MR_SCALABLE	(1 << 1)	/* FI_MR_SCALABLE */
#define BRAID_ORDER_NONE	0ULL		/* FI_ORDER_NONE */
#define BRAID_REG_MR		(1ULL << 59)	/* FI_REG_MR: fi_domain_bind of an EQ for MR events */

/*
 * Capability bits 2.0 added (fi_getinfo(3)); 0 in a build against older
 * headers, where no application can ask for them.
 */
#ifdef FI_TAGGED_DIRECTED_RECV
#define BRAID_TAGGED_DIRECTED_RECV	FI_TAGGED_DIRECTED_RECV
#else
#define BRAID_TAGGED_DIRECTED_RECV	0ULL
#endif
#ifdef FI_EXACT_DIRECTED_RECV
#define BRAID_EXACT_DIRECTED_RECV	FI_EXACT_DIRECTED_RECV
#else
#define BRAID_EXACT_DIRECTED_RECV	0ULL
#endif
#ifdef FI_TAGGED_MULTI_RECV
#define BRAID_TAGGED_MULTI_RECV		FI_TAGGED_MULTI_RECV
#else
#define BRAID_TAGGED_MULTI_RECV		0ULL
#endif

/* fi_domain(3): control progress driven by the data progress calls (1.21 on) */
#define BRAID_PROGRESS_CONTROL_UNIFIED	3
#if BRAID_FI_HDR_GE(1, 21)
_Static_assert(FI_PROGRESS_CONTROL_UNIFIED == BRAID_PROGRESS_CONTROL_UNIFIED,
	       "enum fi_progress keeps its values");
#endif

/*
 * fi_endpoint(3) FI_OPT_CUDA_API_PERMITTED (bool; not in 1.17's headers;
 * in later ones right after FI_OPT_XPU_TRIGGER): an application built
 * against newer headers may set it on a 1.17 build's endpoint, so braid knows the
 * value whatever headers it was built with.
 */
#define BRAID_OPT_CUDA_API_PERMITTED	(FI_OPT_XPU_TRIGGER + 1)
#if BRAID_FI_HDR_GE(2, 0)
_Static_assert(FI_OPT_CUDA_API_PERMITTED == BRAID_OPT_CUDA_API_PERMITTED,
	       "FI_OPT_CUDA_API_PERMITTED follows FI_OPT_XPU_TRIGGER");
#endif

/*
 * fi_endpoint(3) "mem_tag_format", 2.0 on: values below FI_TAG_MAX_FORMAT
 * name a format (FI_TAG_BITS 0, FI_TAG_MPI 1, FI_TAG_CCL 2) rather than a
 * mask of tag bits; before 2.0 every value is a mask.
 */
#define BRAID_TAG_MPI		1ULL
#define BRAID_TAG_CCL		2ULL
#define BRAID_TAG_MAX_FORMAT	(1ULL << 16)

/* fi_getinfo(3) addr_format FI_SOCKADDR_IP (2.3 on): IPv4 or IPv6, told by sa_family */
#if BRAID_FI_HDR_GE(2, 3)
#define BRAID_SOCKADDR_IP	((uint32_t)FI_SOCKADDR_IP)
#else
#define BRAID_SOCKADDR_IP	UINT32_MAX	/* no application can name it */
#endif

/*
 * The bytes of struct fi_cq_err_entry an application of API @api owns:
 * src_addr came with 1.20, and fi_cq_readerr writes into the
 * application's struct, laid out as its API has it (fi_cq(3)).
 */
#include <stddef.h>
#include <rdma/fi_eq.h>
static inline size_t braid_cq_err_entry_size(uint32_t api)
{
#if BRAID_FI_HDR_GE(1, 20)
	if (!braid_api_ge(api, 1, 20))
		return offsetof(struct fi_cq_err_entry, src_addr);
#endif
	(void)api;
	return sizeof(struct fi_cq_err_entry);
}

/* fi_cq_err_entry.src_addr (1.20 on): the error's source, where the headers have the field */
static inline void braid_cq_err_set_src(struct fi_cq_err_entry *e, fi_addr_t src)
{
#if BRAID_FI_HDR_GE(1, 20)
	e->src_addr = src;
#endif
	(void)e;
	(void)src;
}

/*
 * fi_domain_attr fields newer than 1.17 (max_ep_auth_key 1.20,
 * max_group_id 2.0, max_cntr_value and max_err_cntr_value 2.5): what braid
 * offers, and whether hints ask for more.
 */
static inline void braid_domain_attr_new_fields(struct fi_domain_attr *attr)
{
#if BRAID_FI_HDR_GE(1, 20)
	attr->max_ep_auth_key = 1;		/* one key an endpoint (protocol.md §2.4) */
#endif
#if BRAID_FI_HDR_GE(2, 0)
	attr->max_group_id = 0;			/* no peer groups */
#endif
#if BRAID_FI_HDR_GE(2, 5)
	attr->max_cntr_value = UINT64_MAX;	/* counters are 64-bit */
	attr->max_err_cntr_value = UINT64_MAX;
#endif
	(void)attr;
}

static inline bool braid_domain_attr_new_fields_ok(const struct fi_domain_attr *hint)
{
#if BRAID_FI_HDR_GE(1, 20)
	if (hint->max_ep_auth_key > 1)
		return false;
#endif
#if BRAID_FI_HDR_GE(2, 0)
	if (hint->max_group_id > 0)
		return false;
#endif
	(void)hint;
	return true;	/* max_cntr_value: any 64-bit range fits */
}

#endif /* BRAID_COMPAT_H */
