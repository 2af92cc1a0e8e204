/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_hmem.h: device buffers for the benchmarks (bench_hmem.c). */
#ifndef BENCH_HMEM_H
#define BENCH_HMEM_H

#include "bench_common.h"

/*
 * bench_hmem_named() - the device memory of --hmem NAME ("cuda"), to set
 * as bench_mem, or NULL for a name not known. The driver is loaded by the
 * first buffer taken (in each process: CUDA does not survive fork()).
 */
const struct bench_mem *bench_hmem_named(const char *name);

#endif /* BENCH_HMEM_H */
