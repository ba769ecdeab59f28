/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The runner store's asynchronous side (runner_aio.c), as its synchronous
 * side (runner.c) sees it: the operations it puts in its tables, and what
 * it stops and frees at close.
 */
#ifndef TORUS_TCMU_RUNNER_AIO_H
#define TORUS_TCMU_RUNNER_AIO_H

#include "runner_store.h"

extern const struct store_aio_ops runner_aio_ops;

void runner_aio_free(struct runner_aio *aio);
void runner_wq_stop(struct runner_store *r);

#endif /* TORUS_TCMU_RUNNER_AIO_H */
