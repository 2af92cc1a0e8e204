/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_atomic.c: the arithmetic of libfabric atomics, element by element (braid_atomic.h). */
#include <complex.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "braid_atomic.h"

#define OP_BIT(op)		(1u << (op))
/* the ops @lo..@hi of enum braid_aop, both included */
#define OP_RANGE(lo, hi)	((OP_BIT(hi) << 1) - OP_BIT(lo))

/* the ops of each datatype class (fi_atomic(3); braid_atomic_valid()) */
#define OPS_COMPLEX	(OP_BIT(BRAID_AOP_SUM) | OP_BIT(BRAID_AOP_PROD) | OP_BIT(BRAID_AOP_ATOMIC_READ) |	\
			 OP_BIT(BRAID_AOP_ATOMIC_WRITE) | OP_BIT(BRAID_AOP_CSWAP) | OP_BIT(BRAID_AOP_CSWAP_NE))
#define OPS_REAL	(OPS_COMPLEX | OP_BIT(BRAID_AOP_MIN) | OP_BIT(BRAID_AOP_MAX) |		\
			 OP_RANGE(BRAID_AOP_CSWAP_LE, BRAID_AOP_CSWAP_GT))
#define OPS_INT		(OP_RANGE(BRAID_AOP_MIN, BRAID_AOP_MSWAP))

/* the ops of each kind of call */
static const uint32_t kind_ops[] = {
	[BRAID_ATOMIC_WRITE_KIND] = OP_RANGE(BRAID_AOP_MIN, BRAID_AOP_BXOR) | OP_BIT(BRAID_AOP_ATOMIC_WRITE),
	[BRAID_ATOMIC_FETCH_KIND] = OP_RANGE(BRAID_AOP_MIN, BRAID_AOP_ATOMIC_WRITE),
	[BRAID_ATOMIC_COMPARE_KIND] = OP_RANGE(BRAID_AOP_CSWAP, BRAID_AOP_MSWAP),
};

/*
 * The element functions, <type>_elem(op, old, o, c, new): on the target
 * element @old with operand @o and compare value @c, set *@new and return
 * whether @op stores it. One body per datatype class, the C type filled in
 * by the macros below; the class's ops mask keeps other ops away, and
 * BRAID_AOP_ATOMIC_READ stores nothing.
 */

/* the cases of every class: assignment and the (in)equality compares */
#define CASES_ANY							\
	case BRAID_AOP_ATOMIC_WRITE:	return true;				\
	case BRAID_AOP_CSWAP:		return c == old;			\
	case BRAID_AOP_CSWAP_NE:	return c != old;

/* the cases of ordered classes: min, max and the ordered compares */
#define CASES_ORDER							\
	case BRAID_AOP_MIN:		return o < old;				\
	case BRAID_AOP_MAX:		return o > old;				\
	case BRAID_AOP_CSWAP_LE:	return c <= old;			\
	case BRAID_AOP_CSWAP_LT:	return c < old;				\
	case BRAID_AOP_CSWAP_GE:	return c >= old;			\
	case BRAID_AOP_CSWAP_GT:	return c > old;

/* integers: arithmetic and bits in the unsigned @U, at least as wide, so signed ones wrap */
#define DEFINE_INT_ELEM(name, T, U)					\
static bool name##_elem(enum braid_aop op, T old, T o, T c, T *new)	\
{									\
	*new = o;							\
	switch (op) {							\
	CASES_ANY							\
	CASES_ORDER							\
	case BRAID_AOP_SUM:	*new = (T)((U)old + (U)o); return true;		\
	case BRAID_AOP_PROD:	*new = (T)((U)old * (U)o); return true;		\
	case BRAID_AOP_LOR:	*new = (T)(old || o); return true;		\
	case BRAID_AOP_LAND:	*new = (T)(old && o); return true;		\
	case BRAID_AOP_LXOR:	*new = (T)(!old != !o); return true;		\
	case BRAID_AOP_BOR:	*new = (T)((U)old | (U)o); return true;		\
	case BRAID_AOP_BAND:	*new = (T)((U)old & (U)o); return true;		\
	case BRAID_AOP_BXOR:	*new = (T)((U)old ^ (U)o); return true;		\
	case BRAID_AOP_MSWAP:	*new = (T)(((U)o & (U)c) | ((U)old & ~(U)c));	\
			return true;					\
	default:	return false;					\
	}								\
}

#define DEFINE_REAL_ELEM(name, T)					\
static bool name##_elem(enum braid_aop op, T old, T o, T c, T *new)	\
{									\
	*new = o;							\
	switch (op) {							\
	CASES_ANY							\
	CASES_ORDER							\
	case BRAID_AOP_SUM:	*new = old + o; return true;			\
	case BRAID_AOP_PROD:	*new = old * o; return true;			\
	default:	return false;					\
	}								\
}

#define DEFINE_COMPLEX_ELEM(name, T)					\
static bool name##_elem(enum braid_aop op, T old, T o, T c, T *new)	\
{									\
	*new = o;							\
	switch (op) {							\
	CASES_ANY							\
	case BRAID_AOP_SUM:	*new = old + o; return true;			\
	case BRAID_AOP_PROD:	*new = old * o; return true;			\
	default:	return false;					\
	}								\
}

/*
 * <type>_apply(op, target, operand, compare, result, count): run
 * <type>_elem over @count elements, each loaded and stored with memcpy
 * (any alignment); @operand and @compare NULL read as 0.
 */
#define DEFINE_APPLY(name, T)						\
static void name##_apply(enum braid_aop op, uint8_t *target, const uint8_t *operand,	\
			 const uint8_t *compare, uint8_t *result, size_t count)	\
{									\
	T old, o = 0, c = 0, new;					\
	size_t i, off;							\
									\
	for (i = 0; i < count; i++) {					\
		off = i * sizeof(T);					\
		memcpy(&old, target + off, sizeof(T));			\
		if (operand)						\
			memcpy(&o, operand + off, sizeof(T));		\
		if (compare)						\
			memcpy(&c, compare + off, sizeof(T));		\
		if (result)						\
			memcpy(result + off, target + off, sizeof(T));	\
		if (name##_elem(op, old, o, c, &new))			\
			memcpy(target + off, &new, sizeof(T));		\
	}								\
}

#define DEFINE_INT(name, T, U)		DEFINE_INT_ELEM(name, T, U) DEFINE_APPLY(name, T)
#define DEFINE_REAL(name, T)		DEFINE_REAL_ELEM(name, T) DEFINE_APPLY(name, T)
#define DEFINE_COMPLEX(name, T)		DEFINE_COMPLEX_ELEM(name, T) DEFINE_APPLY(name, T)

DEFINE_INT(int8, int8_t, uint64_t)
DEFINE_INT(uint8, uint8_t, uint64_t)
DEFINE_INT(int16, int16_t, uint64_t)
DEFINE_INT(uint16, uint16_t, uint64_t)
DEFINE_INT(int32, int32_t, uint64_t)
DEFINE_INT(uint32, uint32_t, uint64_t)
DEFINE_INT(int64, int64_t, uint64_t)
DEFINE_INT(uint64, uint64_t, uint64_t)
#ifdef __SIZEOF_INT128__
DEFINE_INT(int128, __int128, unsigned __int128)
DEFINE_INT(uint128, unsigned __int128, unsigned __int128)
#endif
DEFINE_REAL(float, float)
DEFINE_REAL(double, double)
DEFINE_REAL(ldouble, long double)
DEFINE_COMPLEX(fcomplex, float complex)
DEFINE_COMPLEX(dcomplex, double complex)
DEFINE_COMPLEX(ldcomplex, long double complex)

/**
 * struct atomic_type - what braid knows of one enum braid_adt.
 * @size: the bytes of one element; 0: not supported.
 * @ops: OP_BIT() of every op the datatype takes, whatever the kind.
 * @apply: <type>_apply().
 */
struct atomic_type {
	size_t size;
	uint32_t ops;
	void (*apply)(enum braid_aop op, uint8_t *target, const uint8_t *operand,
		      const uint8_t *compare, uint8_t *result, size_t count);
};

#define ATOMIC_TYPE(name, T, ops)	{ sizeof(T), (ops), name##_apply }

static const struct atomic_type atomic_types[] = {
	[BRAID_ADT_INT8] = ATOMIC_TYPE(int8, int8_t, OPS_INT),
	[BRAID_ADT_UINT8] = ATOMIC_TYPE(uint8, uint8_t, OPS_INT),
	[BRAID_ADT_INT16] = ATOMIC_TYPE(int16, int16_t, OPS_INT),
	[BRAID_ADT_UINT16] = ATOMIC_TYPE(uint16, uint16_t, OPS_INT),
	[BRAID_ADT_INT32] = ATOMIC_TYPE(int32, int32_t, OPS_INT),
	[BRAID_ADT_UINT32] = ATOMIC_TYPE(uint32, uint32_t, OPS_INT),
	[BRAID_ADT_INT64] = ATOMIC_TYPE(int64, int64_t, OPS_INT),
	[BRAID_ADT_UINT64] = ATOMIC_TYPE(uint64, uint64_t, OPS_INT),
	[BRAID_ADT_FLOAT] = ATOMIC_TYPE(float, float, OPS_REAL),
	[BRAID_ADT_DOUBLE] = ATOMIC_TYPE(double, double, OPS_REAL),
	[BRAID_ADT_FLOAT_COMPLEX] = ATOMIC_TYPE(fcomplex, float complex, OPS_COMPLEX),
	[BRAID_ADT_DOUBLE_COMPLEX] = ATOMIC_TYPE(dcomplex, double complex, OPS_COMPLEX),
	[BRAID_ADT_LONG_DOUBLE] = ATOMIC_TYPE(ldouble, long double, OPS_REAL),
	[BRAID_ADT_LONG_DOUBLE_COMPLEX] = ATOMIC_TYPE(ldcomplex, long double complex, OPS_COMPLEX),
#ifdef __SIZEOF_INT128__
	[BRAID_ADT_INT128] = ATOMIC_TYPE(int128, __int128, OPS_INT),
	[BRAID_ADT_UINT128] = ATOMIC_TYPE(uint128, unsigned __int128, OPS_INT),
#endif
};

_Static_assert(BRAID_AOP_LAST <= 32, "an ops mask holds every enum braid_aop");

/* the entry of @dt, NULL when braid does not support it */
static const struct atomic_type *atomic_type(enum braid_adt dt)
{
	if ((unsigned int)dt >= sizeof(atomic_types) / sizeof(atomic_types[0]) ||
	    !atomic_types[dt].size)
		return NULL;
	return &atomic_types[dt];
}

/* @ops as a mask of OP_BIT()s holds @op (any value) */
static bool ops_have(uint32_t ops, enum braid_aop op)
{
	return (unsigned int)op < BRAID_AOP_LAST && (ops & OP_BIT(op));
}

size_t braid_atomic_dt_size(enum braid_adt dt)
{
	const struct atomic_type *t = atomic_type(dt);

	return t ? t->size : 0;
}

bool braid_atomic_valid(enum braid_aop op, enum braid_adt dt, enum braid_atomic_kind kind)
{
	const struct atomic_type *t = atomic_type(dt);

	if (!t || (unsigned int)kind >= sizeof(kind_ops) / sizeof(kind_ops[0]))
		return false;
	return ops_have(t->ops & kind_ops[kind], op);
}

int braid_atomic_apply(enum braid_aop op, enum braid_adt dt, void *target, const void *operand,
		       const void *compare, void *result, size_t count)
{
	const struct atomic_type *t = atomic_type(dt);

	if (!t || !ops_have(t->ops, op))
		return -FI_EOPNOTSUPP;
	if (!count)
		return 0;
	if (op == BRAID_AOP_ATOMIC_READ)
		operand = NULL;
	else if (!operand)
		return -FI_EINVAL;
	if (!ops_have(kind_ops[BRAID_ATOMIC_COMPARE_KIND], op))
		compare = NULL;
	else if (!compare)
		return -FI_EINVAL;
	t->apply(op, target, operand, compare, result, count);
	return 0;
}
