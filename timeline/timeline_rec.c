// SPDX-License-Identifier: GPL-2.0-only
/* Timeline record files: see timeline_rec.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "timeline_rec.h"

_Static_assert(sizeof(struct tl_header) == 512, "tl_header is 512 bytes");
_Static_assert(sizeof(struct tl_rec) == 64, "tl_rec is 64 bytes");

/*
 * Records per write(): 1 MiB. The file's new pages cost the job less per
 * record in fewer, larger writes (docs/performance-history.md).
 */
#define TL_WRITE_BATCH	16384
/* Records per read(), on the reader's stack. */
#define TL_READ_BATCH	512

struct tl_writer {
	int fd;
	int error;
	unsigned int used;
	uint64_t count;
	char path[256];
	struct tl_rec buf[TL_WRITE_BATCH];
};

static void name_copy(char *dst, const char *src)
{
	strncpy(dst, src ? src : "", TL_NAME_LEN - 1);
}

static int write_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p = (const char *)p + n;
		len -= n;
	}
	return 0;
}

struct tl_writer *tl_open(const char *path, const char *source,
			  const char *key, const char *const *stamps,
			  unsigned int nr_stamps, char *err, size_t errlen)
{
	struct tl_header h;
	struct tl_writer *w;
	unsigned int i;
	int ret;

	if (nr_stamps > TL_STAMPS) {
		snprintf(err, errlen, "timeline %s: %u stamps, at most %d",
			 path, nr_stamps, TL_STAMPS);
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "timeline %s: out of memory", path);
		return NULL;
	}
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		snprintf(err, errlen,
			 "timeline: cannot create %s: %s (give a directory that exists and is writable)",
			 path, strerror(errno));
		free(w);
		return NULL;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, TL_MAGIC, sizeof(h.magic));
	h.version = TL_VERSION;
	h.rec_size = sizeof(struct tl_rec);
	h.nr_stamps = nr_stamps;
	h.pid = getpid();
	name_copy(h.source, source);
	name_copy(h.key, key);
	for (i = 0; i < nr_stamps; i++)
		name_copy(h.stamps[i], stamps[i]);
	ret = write_all(w->fd, &h, sizeof(h));
	if (ret) {
		snprintf(err, errlen, "timeline: cannot write %s: %s", path,
			 strerror(-ret));
		close(w->fd);
		free(w);
		return NULL;
	}
	return w;
}

static void flush(struct tl_writer *w)
{
	int ret;

	if (!w->used)
		return;
	if (!w->error) {
		ret = write_all(w->fd, w->buf, w->used * sizeof(w->buf[0]));
		if (ret)
			w->error = ret;
	}
	w->used = 0;
}

struct tl_rec *tl_next(struct tl_writer *w)
{
	struct tl_rec *r;

	if (w->used == TL_WRITE_BATCH)
		flush(w);
	r = &w->buf[w->used++];
	memset(r, 0, sizeof(*r));
	w->count++;
	return r;
}

uint64_t tl_count(const struct tl_writer *w)
{
	return w->count;
}

int tl_error(const struct tl_writer *w)
{
	return w->error;
}

int tl_close(struct tl_writer *w, char *err, size_t errlen)
{
	int ret;

	if (!w)
		return 0;
	flush(w);
	ret = w->error;
	if (close(w->fd) && !ret)
		ret = -errno;
	if (ret)
		snprintf(err, errlen,
			 "timeline: writing %s failed: %s (its records are incomplete)",
			 w->path, strerror(-ret));
	free(w);
	return ret;
}

static int64_t read_fail(char *err, size_t errlen, const char *path,
			 const char *what, int e)
{
	snprintf(err, errlen, "timeline: cannot read %s: %s", path, what);
	return -e;
}

int64_t tl_read(const char *path,
		void (*fn)(void *arg, const struct tl_rec *rec), void *arg,
		char *err, size_t errlen)
{
	struct tl_rec buf[TL_READ_BATCH];
	struct tl_header h;
	int64_t count = 0;
	size_t have = 0;
	ssize_t n;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return read_fail(err, errlen, path, strerror(errno), errno);
	n = read(fd, &h, sizeof(h));
	if (n != sizeof(h) || memcmp(h.magic, TL_MAGIC, sizeof(h.magic)) ||
	    h.version != TL_VERSION || h.rec_size != sizeof(struct tl_rec)) {
		e = n < 0 ? errno : EPROTO;
		close(fd);
		return read_fail(err, errlen, path,
				 n < 0 ? strerror(e) :
				 "not a timeline record file of version 1",
				 e);
	}
	for (;;) {
		size_t i, whole;

		n = read(fd, (char *)buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			return read_fail(err, errlen, path, strerror(e), e);
		}
		if (!n)
			break;
		have += n;
		whole = have / sizeof(buf[0]);
		for (i = 0; i < whole; i++)
			fn(arg, &buf[i]);
		count += whole;
		have -= whole * sizeof(buf[0]);
		memmove(buf, &buf[whole], have);
	}
	close(fd);
	if (have)
		return read_fail(err, errlen, path,
				 "it ends inside a record (was its writer stopped?)",
				 EPROTO);
	return count;
}

int tl_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	int e;

	if (!mkdir(dir, 0755) || errno == EEXIST) {
		if (!stat(dir, &st) && S_ISDIR(st.st_mode))
			return 0;
		snprintf(err, errlen,
			 "timeline: %s is not a directory (give a directory for the timeline's files)",
			 dir);
		return -ENOTDIR;
	}
	e = errno;
	snprintf(err, errlen,
		 "timeline: cannot make the directory %s: %s (give one whose parent exists and is writable)",
		 dir, strerror(e));
	return -e;
}
