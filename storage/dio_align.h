/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What O_DIRECT needs on this file, from statx(STATX_DIOALIGN): buffer and
 * offset alignment in bytes, both 0 when the file cannot do direct I/O.
 * -EOPNOTSUPP when the kernel or file system does not say.
 */
#ifndef TORUS_STORAGE_DIO_ALIGN_H
#define TORUS_STORAGE_DIO_ALIGN_H

#include <stdint.h>

int dio_align(int fd, uint32_t *mem_align, uint32_t *off_align);

#endif /* TORUS_STORAGE_DIO_ALIGN_H */
