// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file backend: pread/pwrite on a regular file or a block device.
 * FLUSH is fdatasync; TRIM punches a hole; WRITE_ZEROES uses ZERO_RANGE,
 * then PUNCH_HOLE, then plain writes, whichever the file system takes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "torus_util.h"

struct file_be {
	struct backend be;
	int fd;
};

static struct file_be *to_file(struct backend *be)
{
	return container_of(be, struct file_be, be);
}

static int file_pread(struct backend *be, void *buf, size_t len, uint64_t off)
{
	int fd = to_file(be)->fd;
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {		/* past the end of a short file */
			memset(buf, 0, len);
			return 0;
		}
		buf = (uint8_t *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int file_pwrite(struct backend *be, const void *buf, size_t len,
		       uint64_t off)
{
	int fd = to_file(be)->fd;
	ssize_t n;

	while (len) {
		n = pwrite(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf = (const uint8_t *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int file_write_zeroes(struct backend *be, size_t len, uint64_t off)
{
	static const uint8_t zeroes[65536];
	size_t n;
	int ret;

	while (len) {
		n = min_u64(len, sizeof(zeroes));
		ret = file_pwrite(be, zeroes, n, off);
		if (ret)
			return ret;
		len -= n;
		off += n;
	}
	return 0;
}

static int file_zero(struct backend *be, size_t len, uint64_t off)
{
	int fd = to_file(be)->fd;

	if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	return file_write_zeroes(be, len, off);
}

static int file_trim(struct backend *be, size_t len, uint64_t off)
{
	int fd = to_file(be)->fd;

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	/* TRIM is advisory: a file system without holes keeps the data. */
	if (errno == EOPNOTSUPP || errno == ENOSYS)
		return 0;
	return -errno;
}

static int file_flush(struct backend *be)
{
	return fdatasync(to_file(be)->fd) ? -errno : 0;
}

static void file_close(struct backend *be)
{
	struct file_be *f = to_file(be);

	close(f->fd);
	free(f);
}

static const struct backend_ops file_ops = {
	.name = "file",
	.pread = file_pread,
	.pwrite = file_pwrite,
	.zero = file_zero,
	.trim = file_trim,
	.flush = file_flush,
	.close = file_close,
};

static int file_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	*size = st.st_size;
	return 0;
}

/*
 * size 0: the file's own size (which must not be 0). Otherwise a smaller
 * regular file is extended (sparsely) to size.
 */
struct backend *backend_file_open(const char *path, uint64_t size,
				  char *err, size_t errlen)
{
	struct file_be *f;
	uint64_t cur;
	int fd, ret;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "file backend: cannot open %s: %s",
			 path, strerror(errno));
		return NULL;
	}
	ret = file_size(fd, &cur);
	if (ret) {
		snprintf(err, errlen, "file backend: cannot stat %s: %s",
			 path, strerror(-ret));
		goto fail;
	}
	if (size == 0) {
		if (cur == 0) {
			snprintf(err, errlen,
				 "file backend: %s is empty; give --size", path);
			goto fail;
		}
		size = cur;
	} else if (cur < size && ftruncate(fd, size)) {
		snprintf(err, errlen, "file backend: cannot extend %s to %llu bytes: %s",
			 path, (unsigned long long)size, strerror(errno));
		goto fail;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "file backend: out of memory");
		goto fail;
	}
	f->fd = fd;
	f->be.ops = &file_ops;
	f->be.size = size;
	return &f->be;
fail:
	close(fd);
	return NULL;
}
