// SPDX-License-Identifier: GPL-2.0-only
/*
 * The alignment O_DIRECT wants on an open file (see dio_align.h). Apart
 * from store_file.c because the kernel's struct statx, which has the
 * direct I/O fields glibc 2.36 lacks, clashes with <sys/stat.h>.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dio_align.h"

int dio_align(int fd, uint32_t *mem_align, uint32_t *off_align)
{
	struct statx stx = { 0 };

	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_DIOALIGN))
		return -EOPNOTSUPP;
	*mem_align = stx.stx_dio_mem_align;
	*off_align = stx.stx_dio_offset_align;
	return 0;
}
