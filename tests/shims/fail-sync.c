// SPDX-License-Identifier: GPL-2.0-only
/*
 * LD_PRELOAD into nbd-shim: every fsync and fdatasync fails with EIO, so
 * that wire-probe.py can check that the coreos profile still answers FLUSH
 * and TRIM with 0, as torus did (the failure only goes to the log).
 */
#include <errno.h>
#include <unistd.h>

int fsync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

int fdatasync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}
