// SPDX-License-Identifier: GPL-2.0-only
/*
 * A test handler plugin in the style of tcmu-runner's asynchronous ones
 * (rbd, glfs): nr_threads 0, read/write/flush callouts that queue the
 * command and return TCMU_STS_OK, and a thread of its own that completes
 * them later through tcmur_cmd_complete(). It keeps the device in memory
 * and counts how many commands it held at once, so a test can tell
 * whether the host drives it at depth or one command at a time.
 *
 * Its configuration, after "depth/": OPTIONS@STATSFILE, OPTIONS a comma
 * list of
 *   delay_us=N  hold each command N microseconds before completing it
 *   wc=0|1      the write cache it reports (tcmu_dev_set_write_cache_enabled)
 *   noflush     no flush callout, as a handler without one
 *   scsi        whole SCSI commands only (handle_cmd), as fbo and zbc
 * At close it writes "max_inflight N\ncommands N\nflushes N\nopcodes
 * OP...\n" to STATSFILE, the opcodes (hex) that handle_cmd was given.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcmu-runner.h"
#include "tcmur_device.h"

#define DEPTH_MAX_QUEUED	1024

struct depth_dev {
	uint8_t *data;
	uint64_t size;
	unsigned int delay_us;
	char stats[4096];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	/* Queued commands, completed in order by the thread. */
	struct tcmur_cmd *queue[DEPTH_MAX_QUEUED];
	int rc[DEPTH_MAX_QUEUED];
	unsigned int head, count;
	unsigned int inflight, max_inflight;
	unsigned long commands, flushes;
	uint8_t seen[32];		/* handle_cmd's opcodes, a bitmap */
};

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *completer(void *arg)
{
	struct tcmu_device *dev = arg;
	struct depth_dev *d = tcmur_dev_get_private(dev);
	struct tcmur_cmd *cmd;
	int rc;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->count && !d->stop)
			pthread_cond_wait(&d->cond, &d->lock);
		if (!d->count)
			break;
		cmd = d->queue[d->head];
		rc = d->rc[d->head];
		d->head = (d->head + 1) % DEPTH_MAX_QUEUED;
		d->count--;
		pthread_mutex_unlock(&d->lock);
		if (d->delay_us) {
			uint64_t until = mono_us() + d->delay_us;

			while (mono_us() < until)
				;
		}
		pthread_mutex_lock(&d->lock);
		d->inflight--;
		pthread_mutex_unlock(&d->lock);
		tcmur_cmd_complete(dev, cmd, rc);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static int enqueue(struct tcmu_device *dev, struct tcmur_cmd *cmd, int rc)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);

	pthread_mutex_lock(&d->lock);
	if (d->count == DEPTH_MAX_QUEUED) {
		pthread_mutex_unlock(&d->lock);
		return TCMU_STS_NO_RESOURCE;
	}
	d->queue[(d->head + d->count) % DEPTH_MAX_QUEUED] = cmd;
	d->rc[(d->head + d->count) % DEPTH_MAX_QUEUED] = rc;
	d->count++;
	d->commands++;
	if (++d->inflight > d->max_inflight)
		d->max_inflight = d->inflight;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return TCMU_STS_OK;
}

static bool in_range(struct depth_dev *d, size_t len, off_t off)
{
	return off >= 0 && (uint64_t)off <= d->size && len <= d->size - off;
}

static int depth_read(struct tcmu_device *dev, struct tcmur_cmd *cmd,
		      struct iovec *iov, size_t cnt, size_t len, off_t off)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);

	if (!in_range(d, len, off))
		return enqueue(dev, cmd, TCMU_STS_RANGE);
	tcmu_memcpy_into_iovec(iov, cnt, d->data + off, len);
	return enqueue(dev, cmd, TCMU_STS_OK);
}

static int depth_write(struct tcmu_device *dev, struct tcmur_cmd *cmd,
		       struct iovec *iov, size_t cnt, size_t len, off_t off)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);

	if (!in_range(d, len, off))
		return enqueue(dev, cmd, TCMU_STS_RANGE);
	tcmu_memcpy_from_iovec(d->data + off, len, iov, cnt);
	return enqueue(dev, cmd, TCMU_STS_OK);
}

static int depth_flush(struct tcmu_device *dev, struct tcmur_cmd *cmd)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);

	pthread_mutex_lock(&d->lock);
	d->flushes++;
	pthread_mutex_unlock(&d->lock);
	return enqueue(dev, cmd, TCMU_STS_OK);
}

static int depth_handle_cmd(struct tcmu_device *dev, struct tcmur_cmd *cmd)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);
	struct tcmulib_cmd *lib = cmd->lib_cmd;
	uint8_t *cdb = lib->cdb, cap[32] = { 0 };
	uint32_t bs = tcmu_dev_get_block_size(dev);
	uint64_t lba, last;
	size_t len;
	int i;

	pthread_mutex_lock(&d->lock);
	d->seen[cdb[0] / 8] |= 1u << (cdb[0] % 8);
	pthread_mutex_unlock(&d->lock);
	switch (cdb[0]) {
	case 0x9e:				/* READ CAPACITY(16) */
		last = d->size / bs - 1;
		for (i = 0; i < 8; i++)
			cap[i] = last >> (56 - 8 * i);
		for (i = 0; i < 4; i++)
			cap[8 + i] = bs >> (24 - 8 * i);
		tcmu_memcpy_into_iovec(lib->iovec, lib->iov_cnt, cap,
				       sizeof(cap));
		return TCMU_STS_OK;
	case 0x28: case 0x88:			/* READ(10), READ(16) */
	case 0x2a: case 0x8a:			/* WRITE(10), WRITE(16) */
		lba = tcmu_cdb_get_lba(cdb);
		len = (size_t)tcmu_cdb_get_xfer_length(cdb) * bs;
		if (!in_range(d, len, lba * bs))
			return TCMU_STS_RANGE;
		if (cdb[0] == 0x28 || cdb[0] == 0x88)
			tcmu_memcpy_into_iovec(lib->iovec, lib->iov_cnt,
					       d->data + lba * bs, len);
		else
			tcmu_memcpy_from_iovec(d->data + lba * bs, len,
					       lib->iovec, lib->iov_cnt);
		break;
	case 0x35: case 0x91:			/* SYNCHRONIZE CACHE */
		pthread_mutex_lock(&d->lock);
		d->flushes++;
		pthread_mutex_unlock(&d->lock);
		break;
	default:
		return TCMU_STS_NOT_HANDLED;
	}
	return enqueue(dev, cmd, TCMU_STS_OK) == TCMU_STS_OK ?
	       TCMU_STS_ASYNC_HANDLED : TCMU_STS_NO_RESOURCE;
}

static struct tcmur_handler depth_handler;

static int parse(struct tcmu_device *dev, struct depth_dev *d)
{
	char *cfg = tcmu_dev_get_cfgstring(dev), *opts, *at, *tok, *save;
	int ret = 0;

	opts = strchr(cfg, '/');
	at = strrchr(cfg, '@');
	if (!opts || !at || at < opts) {
		tcmu_dev_err(dev, "depth: the configuration is OPTIONS@STATSFILE\n");
		return -EINVAL;
	}
	snprintf(d->stats, sizeof(d->stats), "%s", at + 1);
	opts = strndup(opts + 1, at - opts - 1);
	if (!opts)
		return -ENOMEM;
	tcmu_dev_set_write_cache_enabled(dev, true);
	for (tok = strtok_r(opts, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "delay_us=", 9)) {
			d->delay_us = strtoul(tok + 9, NULL, 10);
		} else if (!strcmp(tok, "wc=0")) {
			tcmu_dev_set_write_cache_enabled(dev, false);
		} else if (!strcmp(tok, "wc=1")) {
			tcmu_dev_set_write_cache_enabled(dev, true);
		} else if (!strcmp(tok, "noflush")) {
			depth_handler.flush = NULL;
		} else if (!strcmp(tok, "scsi")) {
			depth_handler.read = NULL;
			depth_handler.write = NULL;
			depth_handler.flush = NULL;
			depth_handler.handle_cmd = depth_handle_cmd;
		} else {
			tcmu_dev_err(dev, "depth: unknown option '%s'\n", tok);
			ret = -EINVAL;
			break;
		}
	}
	free(opts);
	return ret;
}

static int depth_open(struct tcmu_device *dev, bool reopen)
{
	struct depth_dev *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	tcmur_dev_set_private(dev, d);
	ret = parse(dev, d);
	if (ret)
		goto fail;
	d->size = tcmu_dev_get_num_lbas(dev) * tcmu_dev_get_block_size(dev);
	d->data = calloc(1, d->size);
	if (!d->data) {
		ret = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	if (pthread_create(&d->thread, NULL, completer, dev)) {
		ret = -EAGAIN;
		goto fail;
	}
	return 0;
fail:
	free(d->data);
	free(d);
	tcmur_dev_set_private(dev, NULL);
	return ret;
}

static void depth_close(struct tcmu_device *dev)
{
	struct depth_dev *d = tcmur_dev_get_private(dev);
	FILE *f;

	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	f = fopen(d->stats, "w");
	if (f) {
		fprintf(f, "max_inflight %u\ncommands %lu\nflushes %lu\nopcodes",
			d->max_inflight, d->commands, d->flushes);
		for (int i = 0; i < 256; i++)
			if (d->seen[i / 8] & (1u << (i % 8)))
				fprintf(f, " %02x", i);
		fputc('\n', f);
		fclose(f);
	}
	free(d->data);
	free(d);
}

static struct tcmur_handler depth_handler = {
	.name = "depth: an asynchronous test handler that counts its depth",
	.subtype = "depth",
	.cfg_desc = "OPTIONS@STATSFILE",
	.open = depth_open,
	.close = depth_close,
	.nr_threads = 0,
	.read = depth_read,
	.write = depth_write,
	.flush = depth_flush,
};

int handler_init(void)
{
	return tcmur_register_handler(&depth_handler);
}
