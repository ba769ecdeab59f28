// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file store: pread/pwrite on a regular file or a block device.
 * FLUSH is fdatasync; TRIM punches a hole; WRITE_ZEROES uses ZERO_RANGE,
 * then PUNCH_HOLE, then plain writes, whichever the file system takes.
 *
 * With STORE_FILE_RO the file is opened read-only and the store says so
 * (store.read_only): it is neither created nor extended.
 *
 * With STORE_FILE_DIRECT the file is opened O_DIRECT. I/O whose buffer,
 * offset or length misses the file system's alignment is bounced: reads
 * through an aligned span, writes of partial blocks as read-modify-write
 * under a lock that aligned writes share, so that no write lands between
 * the read and the write back.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dio_align.h"
#include "store.h"
#include "torus_util.h"

struct file_store {
	struct store st;
	int fd;
	bool direct;
	uint32_t align;		/* O_DIRECT: buffers, offsets, lengths */
	pthread_rwlock_t rmw;	/* held alone by read-modify-write */
};

static struct file_store *to_file(struct store *st)
{
	return container_of(st, struct file_store, st);
}

/* O_DIRECT reads only come back short at the end of the file. */
static int raw_pread(int fd, void *buf, size_t len, uint64_t off,
		     bool direct)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || (direct && (size_t)n < len)) {
			/* past the end of a short file */
			memset((uint8_t *)buf + n, 0, len - n);
			return 0;
		}
		buf = (uint8_t *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int raw_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
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

static bool is_aligned(const struct file_store *f, uint64_t v)
{
	return !(v & (f->align - 1));
}

/* The aligned span around [off, off + len), in a buffer of its own. */
static void *span_get(const struct file_store *f, size_t len, uint64_t off,
		      uint64_t *start, size_t *span)
{
	void *buf;

	*start = off & ~(uint64_t)(f->align - 1);
	*span = ((off + len + f->align - 1) & ~(uint64_t)(f->align - 1)) -
		*start;
	if (posix_memalign(&buf, f->align, *span))
		return NULL;
	return buf;
}

static int file_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct file_store *f = to_file(st);
	uint64_t start;
	size_t span;
	uint8_t *tmp;
	int ret;

	if (!f->direct || (is_aligned(f, (uintptr_t)buf) &&
			   is_aligned(f, len) && is_aligned(f, off)))
		return raw_pread(f->fd, buf, len, off, f->direct);
	tmp = span_get(f, len, off, &start, &span);
	if (!tmp)
		return -ENOMEM;
	ret = raw_pread(f->fd, tmp, span, start, true);
	if (!ret)
		memcpy(buf, tmp + (off - start), len);
	free(tmp);
	return ret;
}

/* O_DIRECT writes that miss the alignment. */
static int direct_pwrite_bounced(struct file_store *f, const void *buf,
				 size_t len, uint64_t off)
{
	uint64_t start;
	size_t span;
	uint8_t *tmp;
	int ret;

	tmp = span_get(f, len, off, &start, &span);
	if (!tmp)
		return -ENOMEM;
	if (start == off && span == len) {
		/* Only the buffer is off: a copy will do. */
		memcpy(tmp, buf, len);
		pthread_rwlock_rdlock(&f->rmw);
		ret = raw_pwrite(f->fd, tmp, len, off);
	} else {
		pthread_rwlock_wrlock(&f->rmw);
		ret = raw_pread(f->fd, tmp, span, start, true);
		if (!ret) {
			memcpy(tmp + (off - start), buf, len);
			ret = raw_pwrite(f->fd, tmp, span, start);
		}
	}
	pthread_rwlock_unlock(&f->rmw);
	free(tmp);
	return ret;
}

static int file_pwrite(struct store *st, const void *buf, size_t len,
		       uint64_t off)
{
	struct file_store *f = to_file(st);
	int ret;

	if (!f->direct)
		return raw_pwrite(f->fd, buf, len, off);
	if (!is_aligned(f, (uintptr_t)buf) || !is_aligned(f, len) ||
	    !is_aligned(f, off))
		return direct_pwrite_bounced(f, buf, len, off);
	pthread_rwlock_rdlock(&f->rmw);
	ret = raw_pwrite(f->fd, buf, len, off);
	pthread_rwlock_unlock(&f->rmw);
	return ret;
}

static int file_write_zeroes(struct store *st, size_t len, uint64_t off)
{
	static const uint8_t zeroes[65536];
	size_t n;
	int ret;

	while (len) {
		n = min_u64(len, sizeof(zeroes));
		ret = file_pwrite(st, zeroes, n, off);
		if (ret)
			return ret;
		len -= n;
		off += n;
	}
	return 0;
}

static int file_zero(struct store *st, size_t len, uint64_t off)
{
	int fd = to_file(st)->fd;

	if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	return file_write_zeroes(st, len, off);
}

static int file_trim(struct store *st, size_t len, uint64_t off)
{
	int fd = to_file(st)->fd;

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      off, len) == 0)
		return 0;
	/* TRIM is advisory: a file system without holes keeps the data. */
	if (errno == EOPNOTSUPP || errno == ENOSYS)
		return 0;
	return -errno;
}

static int file_flush(struct store *st)
{
	return fdatasync(to_file(st)->fd) ? -errno : 0;
}

static void file_close(struct store *st)
{
	struct file_store *f = to_file(st);

	close(f->fd);
	if (f->direct)
		pthread_rwlock_destroy(&f->rmw);
	free(f);
}

static const struct store_ops file_ops = {
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
 * O_DIRECT's alignment: what statx says, else the device's logical block
 * for a block device, else a page (4096 is right wherever 512 is).
 */
static int direct_setup(struct file_store *f, const char *path, bool blkdev,
			char *err, size_t errlen)
{
	uint32_t mem = 0, off = 0;
	int ssz;

	if (!dio_align(f->fd, &mem, &off)) {
		if (!off) {
			snprintf(err, errlen,
				 "file store: %s cannot do direct I/O (its file system says so); drop \",direct\"",
				 path);
			return -1;
		}
	} else if (blkdev && !ioctl(f->fd, BLKSSZGET, &ssz) && ssz > 0) {
		off = ssz;
	} else {
		off = 4096;
	}
	f->align = mem > off ? mem : off;
	f->direct = true;
	pthread_rwlock_init(&f->rmw, NULL);
	return 0;
}

/*
 * size 0: the file's own size (which must not be 0), and the file must
 * exist. Otherwise a smaller regular file is extended (sparsely) to size,
 * and a missing one made, and removed again if the open then fails.
 */
struct store *store_file_open_flags(const char *path, uint64_t size,
				    unsigned int flags, char *err,
				    size_t errlen)
{
	bool direct = flags & STORE_FILE_DIRECT, created = false;
	bool ro = flags & STORE_FILE_RO;
	int oflags = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		     (direct ? O_DIRECT : 0);
	struct file_store *f;
	struct stat st;
	uint64_t cur;
	int fd, ret;

	fd = open(path, oflags);
	if (fd < 0 && errno == ENOENT && ro) {
		snprintf(err, errlen,
			 "file store: %s does not exist, and \",ro\" does not make it; name an existing file",
			 path);
		return NULL;
	}
	if (fd < 0 && errno == ENOENT && !size) {
		snprintf(err, errlen,
			 "file store: %s does not exist; name an existing file, or give --size to make it (sparse)",
			 path);
		return NULL;
	}
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, oflags | O_CREAT | O_EXCL, 0644);
		created = fd >= 0;
	}
	if (fd < 0) {
		snprintf(err, errlen, "file store: cannot open %s%s: %s%s",
			 path, direct ? " with O_DIRECT" : "", strerror(errno),
			 direct && errno == EINVAL ?
			 " (the file system has no direct I/O; drop \",direct\")" : "");
		return NULL;
	}
	ret = file_size(fd, &cur);
	if (ret) {
		snprintf(err, errlen, "file store: cannot stat %s: %s",
			 path, strerror(-ret));
		goto fail;
	}
	if (size == 0) {
		if (cur == 0) {
			snprintf(err, errlen, ro ?
				 "file store: %s is empty, and \",ro\" serves it as it is; fill it first or drop \",ro\"" :
				 "file store: %s is empty; give --size", path);
			goto fail;
		}
		size = cur;
	} else if (cur < size && ro) {
		snprintf(err, errlen,
			 "file store: %s holds %llu bytes, less than --size %llu, and \",ro\" does not extend it; lower --size or drop it",
			 path, (unsigned long long)cur,
			 (unsigned long long)size);
		goto fail;
	} else if (cur < size && ftruncate(fd, size)) {
		snprintf(err, errlen, "file store: cannot extend %s to %llu bytes: %s",
			 path, (unsigned long long)size, strerror(errno));
		goto fail;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "file store: out of memory");
		goto fail;
	}
	f->fd = fd;
	f->st.ops = &file_ops;
	f->st.size = size;
	f->st.read_only = ro;
	if (direct && fstat(fd, &st)) {
		snprintf(err, errlen, "file store: cannot stat %s: %s",
			 path, strerror(errno));
		free(f);
		goto fail;
	}
	if (direct && direct_setup(f, path, S_ISBLK(st.st_mode), err,
				   errlen)) {
		free(f);
		goto fail;
	}
	return &f->st;
fail:
	close(fd);
	if (created)
		unlink(path);
	return NULL;
}

struct store *store_file_open(const char *path, uint64_t size,
			      char *err, size_t errlen)
{
	return store_file_open_flags(path, size, 0, err, errlen);
}

/*
 * The registry's entry (store.c): "file:PATH[,direct][,ro]", O_DIRECT
 * with ",direct", read-only with ",ro" (either order). Copies (nbd-shim's
 * --replicas) are PATH.0 .. PATH.R-1.
 */
struct file_spec {
	char path[4096];
	bool direct;
	bool ro;
};

static int file_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	struct file_spec *fs = priv;
	size_t n = arg ? strlen(arg) : 0;

	/* ",direct" and ",ro" at the end are options, not the file's name */
	for (;;) {
		if (n >= 7 && !strncmp(arg + n - 7, ",direct", 7)) {
			fs->direct = true;
			n -= 7;
		} else if (n >= 3 && !strncmp(arg + n - 3, ",ro", 3)) {
			fs->ro = true;
			n -= 3;
		} else {
			break;
		}
	}
	if (!n) {
		snprintf(err, errlen, "no path: use file:PATH[,direct][,ro]");
		return -1;
	}
	if (n >= sizeof(fs->path)) {
		snprintf(err, errlen, "the path is longer than %zu bytes",
			 sizeof(fs->path) - 1);
		return -1;
	}
	memcpy(fs->path, arg, n);
	fs->path[n] = '\0';
	return 0;
}

static struct store *file_store_open(const void *priv,
				     const struct store_params *p,
				     char *err, size_t errlen)
{
	const struct file_spec *fs = priv;
	char path[sizeof(fs->path) + 16];

	if (p->copy >= 0)
		snprintf(path, sizeof(path), "%s.%d", fs->path, p->copy);
	else
		snprintf(path, sizeof(path), "%s", fs->path);
	return store_file_open_flags(path, p->size,
				     (fs->direct ? STORE_FILE_DIRECT : 0) |
				     (fs->ro ? STORE_FILE_RO : 0),
				     err, errlen);
}

const struct store_type store_file = {
	.name = "file",
	.usage = "file:PATH[,direct][,ro]",
	.help = "a file or block device, with O_DIRECT when\n"
		"\",direct\" follows, read-only with \",ro\"; its\n"
		"size unless --size",
	.flags = STORE_COPIES,
	.priv_size = sizeof(struct file_spec),
	.parse = file_parse,
	.open = file_store_open,
};
