// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tcmu-runner store: a struct store over one of tcmu-runner's
 * handler plugins, loaded unmodified (plugin.c), on a device this host
 * fakes (runner_dev.h, plugin_api.c). Here: opening the device, and the
 * synchronous operations, one command at a time under a lock, its struct
 * tcmur_cmd preallocated; when the handler completes asynchronously
 * (tcmur_cmd_complete()) the caller waits for the done callback. A ring
 * drives the plugin at depth through runner_aio.c instead; what both use
 * of the handler (the call gate, the CDBs, the report) is runner_call.c's.
 *
 * Handlers with read/write callouts (qcow, rbd) are called directly;
 * handlers that only take SCSI commands (fbo, zbc) get READ/WRITE(10)
 * (16 when 10 cannot carry the request) and SYNCHRONIZE CACHE(10) CDBs,
 * and READ CAPACITY at open. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <scsi/scsi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol_stores.h"
#include "plugin.h"
#include "runner_aio.h"
#include "runner_dev.h"
#include "runner_store.h"
#include "storage_log.h"

#define RUNNER_ZERO_BUF		(256u << 10)
/* What the kernel would pass by default: hw_max_sectors, 128 blocks. */
#define RUNNER_MAX_XFER_BLOCKS	128u


static struct runner_store *dev_to_runner(struct tcmu_device *dev)
{
	return (struct runner_store *)((char *)dev -
				       offsetof(struct runner_store, dev));
}

static void cmd_done(struct tcmu_device *dev, struct tcmur_cmd *cmd, int rc)
{
	struct runner_store *r = dev_to_runner(dev);

	pthread_mutex_lock(&r->done_lock);
	r->status = rc;
	r->done = true;
	pthread_cond_signal(&r->done_cond);
	pthread_mutex_unlock(&r->done_lock);
}

/* Fresh command state over buf (may be NULL), io_lock held. */
static struct tcmur_cmd *prep(struct runner_store *r, void *buf, size_t len)
{
	memset(&r->cmd, 0, sizeof(r->cmd));
	memset(&r->lib, 0, sizeof(r->lib));
	r->iov.iov_base = buf;
	r->iov.iov_len = len;
	r->lib.cdb = r->cdb;
	r->lib.iovec = &r->iov;
	r->lib.iov_cnt = buf ? 1 : 0;
	r->lib.hm_private = &r->cmd;
	r->cmd.lib_cmd = &r->lib;
	r->cmd.requested = len;
	r->cmd.done = cmd_done;
	r->done = false;
	return &r->cmd;
}

/*
 * The final status of a command whose callout returned rc, waiting for
 * tcmur_cmd_complete() where the daemon would: a read/write/flush/unmap
 * callout of a handler without threads that returned OK has queued it;
 * handle_cmd says ASYNC_HANDLED.
 */
static int finish(struct runner_store *r, int rc, bool callout)
{
	bool queued = callout ? !r->h->nr_threads && rc == TCMU_STS_OK :
				rc == TCMU_STS_ASYNC_HANDLED;

	if (!queued)
		return rc;
	pthread_mutex_lock(&r->done_lock);
	while (!r->done)
		pthread_cond_wait(&r->done_cond, &r->done_lock);
	rc = r->status;
	pthread_mutex_unlock(&r->done_lock);
	return rc;
}

static int report(struct runner_store *r, const char *what, size_t len,
		  uint64_t off, int sts)
{
	return runner_report(r, what, len, off, sts, r->lib.sense_buf);
}

/* A SCSI command through handle_cmd, io_lock held. */
static int scsi_cmd(struct runner_store *r, void *buf, size_t len)
{
	struct tcmur_cmd *c = prep(r, buf, len);

	int sts;

	runner_call_begin(r);
	sts = r->h->handle_cmd(&r->dev, c);
	runner_call_end(r);
	return finish(r, sts, false);
}

/* READ(10)/WRITE(10) in pieces a 10-byte CDB can carry, io_lock held. */
static int scsi_rw(struct runner_store *r, bool write, void *buf, size_t len,
		   uint64_t off)
{
	uint32_t bs = r->dev.block_size;
	uint64_t lba = off / bs;
	size_t n;
	int sts;

	while (len) {
		n = len / bs > CDB10_MAX_BLOCKS ? (size_t)CDB10_MAX_BLOCKS * bs :
						  len;
		runner_cdb_rw(r->cdb, write, lba, n / bs);
		sts = scsi_cmd(r, buf, n);
		if (sts != TCMU_STS_OK)
			return sts;
		buf = (uint8_t *)buf + n;
		len -= n;
		lba += n / bs;
	}
	return TCMU_STS_OK;
}

static int rw(struct runner_store *r, bool write, void *buf, size_t len,
	      uint64_t off)
{
	struct tcmur_cmd *c;
	int sts;

	if (off % r->dev.block_size || len % r->dev.block_size)
		return -EINVAL;
	if (off > r->st.size || len > r->st.size - off)
		return -ERANGE;
	pthread_mutex_lock(&r->io_lock);
	if (r->h->read && r->h->write) {
		c = prep(r, buf, len);
		runner_call_begin(r);
		sts = write ? r->h->write(&r->dev, c, &r->iov, 1, len, off) :
			      r->h->read(&r->dev, c, &r->iov, 1, len, off);
		runner_call_end(r);
		sts = finish(r, sts, true);
	} else {
		sts = scsi_rw(r, write, buf, len, off);
	}
	sts = report(r, write ? "write" : "read", len, off, sts);
	pthread_mutex_unlock(&r->io_lock);
	return sts;
}

static int runner_pread(struct store *st, void *buf, size_t len,
			uint64_t off)
{
	return rw(to_runner(st), false, buf, len, off);
}

static int runner_pwrite(struct store *st, const void *buf, size_t len,
			 uint64_t off)
{
	/* Handlers take a mutable iovec; they only read a write's data. */
	return rw(to_runner(st), true, (void *)buf, len, off);
}

/* No handler here has WRITE SAME for zeroes alone: write them. */
static int runner_zero(struct store *st, size_t len, uint64_t off)
{
	struct runner_store *r = to_runner(st);
	size_t n;
	int ret;

	while (len) {
		n = len < RUNNER_ZERO_BUF ? len : RUNNER_ZERO_BUF;
		ret = rw(r, true, r->zeroes, n, off);
		if (ret)
			return ret;
		len -= n;
		off += n;
	}
	return 0;
}

static int runner_trim(struct store *st, size_t len, uint64_t off)
{
	struct runner_store *r = to_runner(st);
	struct tcmur_cmd *c;
	int sts;

	if (!r->h->unmap)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->io_lock);
	c = prep(r, NULL, 0);
	runner_call_begin(r);
	sts = r->h->unmap(&r->dev, c, off, len);
	runner_call_end(r);
	sts = finish(r, sts, true);
	sts = report(r, "unmap", len, off, sts);
	pthread_mutex_unlock(&r->io_lock);
	return sts;
}

static int runner_flush(struct store *st)
{
	struct runner_store *r = to_runner(st);
	struct tcmur_cmd *c;
	int sts = TCMU_STS_OK;

	pthread_mutex_lock(&r->io_lock);
	if (r->h->flush) {
		c = prep(r, NULL, 0);
		runner_call_begin(r);
		sts = r->h->flush(&r->dev, c);
		runner_call_end(r);
		sts = finish(r, sts, true);
	} else if (runner_scsi_only(r)) {
		runner_cdb_sync(r->cdb);
		sts = scsi_cmd(r, NULL, 0);
	} else {
		/* tcmu-runner answers INVALID COMMAND OPERATION CODE. */
		pthread_mutex_unlock(&r->io_lock);
		return -EOPNOTSUPP;
	}
	sts = report(r, "flush", 0, 0, sts);
	pthread_mutex_unlock(&r->io_lock);
	return sts;
}

static const struct store_ops runner_sess_ops;

/* A session forwards to the device; only its asynchronous state is its own. */
static int sess_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	return runner_pread(&runner_port(st, NULL)->st, buf, len, off);
}

static int sess_pwrite(struct store *st, const void *buf, size_t len,
		       uint64_t off)
{
	return runner_pwrite(&runner_port(st, NULL)->st, buf, len, off);
}

static int sess_zero(struct store *st, size_t len, uint64_t off)
{
	return runner_zero(&runner_port(st, NULL)->st, len, off);
}

static int sess_trim(struct store *st, size_t len, uint64_t off)
{
	return runner_trim(&runner_port(st, NULL)->st, len, off);
}

static int sess_flush(struct store *st)
{
	return runner_flush(&runner_port(st, NULL)->st);
}

static void sess_close(struct store *st)
{
	struct runner_aio **aio;

	runner_port(st, &aio);
	runner_aio_free(*aio);
	free((char *)st - offsetof(struct runner_sess, st));
}

static const struct store_ops runner_sess_ops = {
	.name = "tcmu-runner",
	.pread = sess_pread,
	.pwrite = sess_pwrite,
	.zero = sess_zero,
	.trim = sess_trim,
	.flush = sess_flush,
	.close = sess_close,
	.aio = &runner_aio_ops,
};

/* Each ring its own handle, so that each has its own commands in flight. */
static struct store *runner_session(struct store *st, char *err, size_t errlen)
{
	struct runner_sess *sess = calloc(1, sizeof(*sess));

	if (!sess) {
		snprintf(err, errlen, "tcmu-runner %s: out of memory",
			 to_runner(st)->label);
		return NULL;
	}
	sess->st.ops = &runner_sess_ops;
	sess->st.size = st->size;
	sess->r = to_runner(st);
	return &sess->st;
}

bool runner_store_write_cache(const struct store *st)
{
	struct runner_store *r = runner_port((struct store *)st, NULL);

	return r->dev.write_cache;
}

static void runner_close(struct store *st)
{
	struct runner_store *r = to_runner(st);

	runner_aio_free(r->aio);
	runner_wq_stop(r);
	r->h->close(&r->dev);
	pthread_mutex_destroy(&r->call_lock);
	sem_destroy(&r->calls);
	pthread_mutex_destroy(&r->io_lock);
	pthread_mutex_destroy(&r->done_lock);
	pthread_cond_destroy(&r->done_cond);
	free(r->dev.cfgstring);
	free(r->zeroes);
	free(r);
}

static const struct store_ops runner_ops = {
	.name = "tcmu-runner",
	.pread = runner_pread,
	.pwrite = runner_pwrite,
	.zero = runner_zero,
	.trim = runner_trim,
	.flush = runner_flush,
	.session = runner_session,
	.close = runner_close,
	.aio = &runner_aio_ops,
};

/*
 * The image in a cfg: after the last '@' (zbc's "options@/path"), else
 * the first absolute path ("/path", fbo's "ro//path").
 */
static const char *cfg_image_path(const char *cfg)
{
	const char *p = strrchr(cfg, '@');

	if (p)
		return p + 1;
	if (cfg[0] == '/')
		return cfg;
	p = strstr(cfg, "//");
	return p ? p + 1 : cfg;
}

/*
 * The size a handler should be configured with when none is given: a
 * qcow image's virtual size (its header's size field, big-endian at
 * byte 24 in versions 1 to 3), else the file's size (qcow's raw mode
 * wants exactly that). A negative errno when the file cannot be read.
 */
static int64_t image_size(const char *path)
{
	uint8_t hdr[32];
	struct stat st;
	int64_t size;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		size = -errno;
		if (fd >= 0)
			close(fd);
		return size;
	}
	size = st.st_size;
	if (pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr) &&
	    !memcmp(hdr, "QFI\xfb", 4))
		for (size = 0, i = 24; i < 32; i++)
			size = (uint64_t)size << 8 | hdr[i];
	close(fd);
	return size;
}

/* READ CAPACITY(16), then (10), for a handler that takes SCSI commands. */
static int read_capacity(struct runner_store *r, uint64_t *lbas, uint32_t *bs)
{
	uint8_t buf[32] = { 0 };
	int sts;

	memset(r->cdb, 0, sizeof(r->cdb));
	r->cdb[0] = SERVICE_ACTION_IN_16;
	r->cdb[1] = READ_CAPACITY_16;
	r->cdb[13] = sizeof(buf);
	sts = scsi_cmd(r, buf, sizeof(buf));
	if (sts == TCMU_STS_OK) {
		*lbas = 0;
		for (int i = 0; i < 8; i++)
			*lbas = *lbas << 8 | buf[i];
		*lbas += 1;
		*bs = (uint32_t)buf[8] << 24 | buf[9] << 16 | buf[10] << 8 |
		      buf[11];
		return 0;
	}
	memset(r->cdb, 0, sizeof(r->cdb));
	r->cdb[0] = READ_CAPACITY;
	sts = scsi_cmd(r, buf, 8);
	if (sts != TCMU_STS_OK)
		return -1;
	*lbas = ((uint64_t)buf[0] << 24 | buf[1] << 16 | buf[2] << 8 |
		 buf[3]) + 1;
	*bs = (uint32_t)buf[4] << 24 | buf[5] << 16 | buf[6] << 8 | buf[7];
	return 0;
}

static int open_device(struct runner_store *r, const char *path,
		       const char *cfg, char *err, size_t errlen)
{
	struct tcmu_device *dev = &r->dev;
	uint64_t lbas;
	uint32_t bs;
	char *reason = NULL;
	int ret;

	if (r->h->check_config && !r->h->check_config(dev->cfgstring, &reason)) {
		snprintf(err, errlen, "tcmu-runner %s (%s): the handler rejects the configuration: %s",
			 r->label, path, reason ? reason : "no reason given");
		free(reason);
		return -1;
	}
	dev->last_err[0] = '\0';
	runner_log_capture(dev);
	ret = r->h->open(dev, false);
	runner_log_capture(NULL);
	if (ret) {
		snprintf(err, errlen, "tcmu-runner %s (%s): the handler could not open '%s': %s",
			 r->label, path, cfg,
			 dev->last_err[0] ? dev->last_err : strerror(ret < 0 && ret != -1 ? -ret : EIO));
		return -1;
	}
	/* A SCSI handler states its capacity; ask it as an initiator would. */
	if (runner_scsi_only(r)) {
		if (read_capacity(r, &lbas, &bs)) {
			snprintf(err, errlen, "tcmu-runner %s (%s): READ CAPACITY failed after open (sense key 0x%x)",
				 r->label, path, r->lib.sense_buf[2] & 0xf);
			r->h->close(dev);
			return -1;
		}
		dev->num_lbas = lbas;
		dev->block_size = bs;
	}
	r->st.size = dev->num_lbas * dev->block_size;
	if (!r->st.size || !dev->block_size) {
		snprintf(err, errlen, "tcmu-runner %s (%s): the device is empty after open",
			 r->label, path);
		r->h->close(dev);
		return -1;
	}
	return 0;
}

struct store *runner_store_open(const char *handler, const char *dir,
				const char *cfg, uint64_t size,
				uint32_t block_size, char *err,
				size_t errlen)
{
	const struct runner_plugin *p;
	struct runner_store *r;
	struct tcmu_device *dev;

	p = runner_plugin_load(handler, dir, err, errlen);
	if (!p)
		return NULL;
	if (!block_size)
		block_size = 512;
	if (!size) {
		int64_t got = image_size(cfg_image_path(cfg));

		if (got <= 0) {
			snprintf(err, errlen, "tcmu-runner %s/%s: no size given, and %s%s%s",
				 p->handler->subtype, cfg, cfg_image_path(cfg),
				 got ? " cannot be opened to take one: " :
				       " is empty",
				 got ? strerror(-got) : "");
			return NULL;
		}
		size = got;
	}
	if (size % block_size) {
		snprintf(err, errlen, "tcmu-runner %s/%s: size %llu is not a multiple of the block size %u",
			 p->handler->subtype, cfg, (unsigned long long)size,
			 block_size);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->zeroes = calloc(1, RUNNER_ZERO_BUF)) ||
	    asprintf(&r->dev.cfgstring, "%s/%s", p->handler->subtype, cfg) < 0) {
		snprintf(err, errlen, "tcmu-runner %s: out of memory", cfg);
		if (r)
			free(r->zeroes);
		free(r);
		return NULL;
	}
	r->h = p->handler;
	snprintf(r->label, sizeof(r->label), "%s", r->dev.cfgstring);
	pthread_mutex_init(&r->io_lock, NULL);
	pthread_mutex_init(&r->done_lock, NULL);
	pthread_cond_init(&r->done_cond, NULL);
	pthread_mutex_init(&r->call_lock, NULL);
	sem_init(&r->calls, 0, r->h->nr_threads > 0 ? r->h->nr_threads : 1);
	dev = &r->dev;
	dev->rdev.dev = dev;
	dev->handler = r->h;
	dev->dev_size = size;
	dev->block_size = block_size;
	dev->num_lbas = size / block_size;
	dev->max_xfer_len = RUNNER_MAX_XFER_BLOCKS;
	r->st.ops = &runner_ops;
	if (open_device(r, p->path, cfg, err, errlen)) {
		pthread_mutex_destroy(&r->io_lock);
		pthread_mutex_destroy(&r->done_lock);
		pthread_cond_destroy(&r->done_cond);
		pthread_mutex_destroy(&r->call_lock);
		sem_destroy(&r->calls);
		free(r->dev.cfgstring);
		free(r->zeroes);
		free(r);
		return NULL;
	}
	return &r->st;
}
