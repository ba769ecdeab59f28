// SPDX-License-Identifier: GPL-2.0-only
/*
 * The 0-Disk deduped volume in Redis (layout in lba.h): block contents on N
 * storage servers by hash[0] % N, the block map lba:<vdisk> spread over the
 * metadata servers by sector % M (by default the storage servers
 * themselves, as in 0-Disk since it dropped its separate metadata
 * cluster). The block map is cached by sector and changed sectors are
 * written back on FLUSH (also on FUA and DISC), after which the cache is
 * emptied, as 0-Disk's LBA does.
 *
 * Each connection gets a store of its own (redis_session), with its own
 * servers' connections and its own copy of the block map, as each 0-Disk
 * connection builds its own store: a connection does not see the map
 * entries another has not flushed, nor, while it holds a sector, those
 * flushed since it loaded it; and flushing a sector writes its whole copy
 * over what others flushed. Closing does not flush (0-Disk's store does
 * not), so a client that goes away without FLUSH or DISC loses its map
 * changes; the server flushes every connection on SIGTERM as 0-Disk does.
 *
 * Unaligned I/O is read-merge-write of whole blocks. One mutex per
 * store: hiredis contexts are not thread-safe.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "blockio.h"
#include "hostport.h"
#include "lba.h"
#include "storage_log.h"
#include "store.h"
#include "torus_util.h"

struct redis_store {
	struct store st;
	pthread_mutex_t lock;
	int nstore;
	redisContext *store[REDIS_MAX_SERVERS];
	struct redis_addr store_addr[REDIS_MAX_SERVERS];
	int nmeta;
	redisContext *meta[REDIS_MAX_SERVERS];
	struct redis_addr meta_addr[REDIS_MAX_SERVERS];
	char key[512];			/* lba:<vdisk> */
	struct blk_store blocks;	/* bs-byte blocks, deduped */
	uint64_t nsectors;
	uint8_t **sector;		/* cached sectors, NULL = not loaded */
	uint8_t *dirty;			/* per sector */
	uint64_t *loaded;		/* the cached sectors' indices */
	uint64_t nloaded;
	uint8_t zero_hash[LBA_HASH_LEN];
	/* what a session needs to open the same volume again */
	struct redis_spec spec;
	char *vdisk;
};

static struct redis_store *to_redis(struct store *st)
{
	return container_of(st, struct redis_store, st);
}

static redisContext *redis_connect(const struct redis_addr *a, char *err,
				   size_t errlen)
{
	struct timeval tv = { .tv_sec = 5 };
	redisContext *c;

	c = redisConnectWithTimeout(a->host, a->port, tv);
	if (!c || c->err) {
		snprintf(err, errlen, "redis store: cannot connect to %s:%d: %s",
			 a->host, a->port, c ? c->errstr : "out of memory");
		if (c)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

/* A context that failed is dropped and reconnected on next use. */
static redisContext *redis_ctx(redisContext **slot,
			       const struct redis_addr *a)
{
	char err[256];

	if (*slot && (*slot)->err) {
		storage_err("redis %s:%d: %s; reconnecting", a->host, a->port,
			 (*slot)->errstr);
		redisFree(*slot);
		*slot = NULL;
	}
	if (!*slot) {
		*slot = redis_connect(a, err, sizeof(err));
		if (!*slot)
			storage_err("%s", err);
	}
	return *slot;
}

static redisReply *redis_do(redisContext **slot, const struct redis_addr *a,
			    const char *fmt, ...)
{
	redisContext *c = redis_ctx(slot, a);
	redisReply *r;
	va_list ap;

	if (!c)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r)
		storage_err("redis %s:%d: %s", a->host, a->port, c->errstr);
	else if (r->type == REDIS_REPLY_ERROR)
		storage_err("redis %s:%d: %s", a->host, a->port, r->str);
	return r;
}

/* The cached sector, loaded with HGET on first use. */
static uint8_t *sector_get(struct redis_store *r, uint64_t idx, int *ret)
{
	unsigned int m = idx % r->nmeta;
	char field[32];
	redisReply *rep;
	uint8_t *s;

	if (r->sector[idx])
		return r->sector[idx];
	s = calloc(1, LBA_SECTOR_LEN);
	if (!s) {
		*ret = -ENOMEM;
		return NULL;
	}
	lba_field(field, sizeof(field), idx);
	rep = redis_do(&r->meta[m], &r->meta_addr[m], "HGET %s %s", r->key,
		       field);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		*ret = -EIO;
		goto fail;
	}
	if (rep->type == REDIS_REPLY_STRING) {
		if (rep->len != LBA_SECTOR_LEN) {
			storage_err("redis: %s field %s has %zu bytes, expected %d",
				 r->key, field, (size_t)rep->len, LBA_SECTOR_LEN);
			*ret = -EIO;
			goto fail;
		}
		memcpy(s, rep->str, LBA_SECTOR_LEN);
	}
	freeReplyObject(rep);
	r->sector[idx] = s;
	r->loaded[r->nloaded++] = idx;
	return s;
fail:
	if (rep)
		freeReplyObject(rep);
	free(s);
	return NULL;
}

static int lba_set(struct redis_store *r, uint64_t block, const uint8_t *hash)
{
	uint64_t idx = lba_sector_of(block);
	uint8_t *s;
	int ret = 0;

	s = sector_get(r, idx, &ret);
	if (!s)
		return ret;
	lba_sector_set(s, lba_slot_of(block), hash);
	r->dirty[idx] = 1;
	return 0;
}

static int block_get(struct redis_store *r, uint64_t block, uint8_t *out)
{
	uint8_t hash[LBA_HASH_LEN];
	redisReply *rep;
	uint8_t *s;
	unsigned int n;
	int ret = 0;

	s = sector_get(r, lba_sector_of(block), &ret);
	if (!s)
		return ret;
	if (!lba_sector_get(s, lba_slot_of(block), hash)) {
		memset(out, 0, r->blocks.bs);
		return 0;
	}
	n = dedup_server(hash, r->nstore);
	rep = redis_do(&r->store[n], &r->store_addr[n], "GET %b",
		       hash, (size_t)LBA_HASH_LEN);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		ret = -EIO;
	} else if (rep->type == REDIS_REPLY_NIL) {
		/* 0-Disk reads missing content as zeroes */
		memset(out, 0, r->blocks.bs);
	} else if (rep->type != REDIS_REPLY_STRING || rep->len != r->blocks.bs) {
		storage_err("redis: block %llu content has %zu bytes, expected %u",
			 (unsigned long long)block, (size_t)rep->len, r->blocks.bs);
		ret = -EIO;
	} else {
		memcpy(out, rep->str, r->blocks.bs);
	}
	if (rep)
		freeReplyObject(rep);
	return ret;
}

static int block_put(struct redis_store *r, uint64_t block, const uint8_t *data)
{
	uint8_t hash[LBA_HASH_LEN];
	redisReply *rep;
	unsigned int n;
	int ret = 0;

	dedup_hash(data, r->blocks.bs, hash);
	if (!memcmp(hash, r->zero_hash, LBA_HASH_LEN))
		return lba_set(r, block, NULL);
	n = dedup_server(hash, r->nstore);
	rep = redis_do(&r->store[n], &r->store_addr[n], "SET %b %b",
		       hash, (size_t)LBA_HASH_LEN, data, (size_t)r->blocks.bs);
	if (!rep || rep->type == REDIS_REPLY_ERROR)
		ret = -EIO;
	if (rep)
		freeReplyObject(rep);
	return ret ? ret : lba_set(r, block, hash);
}

static int redis_block_get(void *ctx, uint64_t block, uint8_t *buf)
{
	return block_get(ctx, block, buf);
}

/* A block of zeroes is no content: its map entry goes. */
static int redis_block_put(void *ctx, uint64_t block, const uint8_t *buf)
{
	return buf ? block_put(ctx, block, buf) : lba_set(ctx, block, NULL);
}

static const struct blk_store_ops redis_store_ops = {
	.get = redis_block_get,
	.put = redis_block_put,
};

static int redis_pread(struct store *st, void *buf, size_t len,
		       uint64_t off)
{
	struct redis_store *r = to_redis(st);
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = blk_store_read(&r->blocks, buf, len, off);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* data NULL writes zeroes. */
static int redis_write(struct redis_store *r, const uint8_t *data, size_t len,
		       uint64_t off)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = blk_store_write(&r->blocks, data, len, off);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

static int redis_pwrite(struct store *st, const void *buf, size_t len,
			uint64_t off)
{
	return redis_write(to_redis(st), buf, len, off);
}

static int redis_zero(struct store *st, size_t len, uint64_t off)
{
	return redis_write(to_redis(st), NULL, len, off);
}

/*
 * Dirty sectors go out pipelined, each to its metadata server: HSET, or
 * HDEL when all nil. Then the cache is emptied whatever happened, as
 * 0-Disk's LBA flush empties its buckets: the next access loads the
 * sectors again, with what other connections flushed meanwhile.
 */
static int redis_flush_locked(struct redis_store *r)
{
	redisContext *c;
	char field[32];
	redisReply *rep;
	uint64_t i, idx;
	int m, ret = 0;

	for (i = 0; i < r->nloaded; i++) {
		idx = r->loaded[i];
		if (!r->dirty[idx])
			continue;
		m = idx % r->nmeta;
		c = redis_ctx(&r->meta[m], &r->meta_addr[m]);
		if (!c) {
			ret = -EIO;
			continue;
		}
		lba_field(field, sizeof(field), idx);
		if (lba_sector_is_nil(r->sector[idx]))
			redisAppendCommand(c, "HDEL %s %s", r->key, field);
		else
			redisAppendCommand(c, "HSET %s %s %b", r->key, field,
					   r->sector[idx],
					   (size_t)LBA_SECTOR_LEN);
	}
	/* replies come back in order on each server's connection */
	for (i = 0; i < r->nloaded; i++) {
		idx = r->loaded[i];
		m = idx % r->nmeta;
		c = r->meta[m];
		if (!r->dirty[idx] || !c || c->err)
			continue;
		if (redisGetReply(c, (void **)&rep) != REDIS_OK) {
			storage_err("redis %s:%d: %s", r->meta_addr[m].host,
				 r->meta_addr[m].port, c->errstr);
			ret = -EIO;
			continue;
		}
		if (rep->type == REDIS_REPLY_ERROR) {
			storage_err("redis %s:%d: %s", r->meta_addr[m].host,
				 r->meta_addr[m].port, rep->str);
			ret = -EIO;
		}
		freeReplyObject(rep);
	}
	for (i = 0; i < r->nloaded; i++) {
		idx = r->loaded[i];
		free(r->sector[idx]);
		r->sector[idx] = NULL;
		r->dirty[idx] = 0;
	}
	r->nloaded = 0;
	return ret;
}

static int redis_flush(struct store *st)
{
	struct redis_store *r = to_redis(st);
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = redis_flush_locked(r);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* No write-back: 0-Disk's store does not flush when it is closed. */
static void redis_close(struct store *st)
{
	struct redis_store *r = to_redis(st);
	uint64_t i;
	int n;

	for (n = 0; n < r->nstore; n++)
		if (r->store[n])
			redisFree(r->store[n]);
	for (n = 0; n < r->nmeta; n++)
		if (r->meta[n])
			redisFree(r->meta[n]);
	for (i = 0; i < r->nloaded; i++)
		free(r->sector[r->loaded[i]]);
	free(r->sector);
	free(r->dirty);
	free(r->loaded);
	free(r->blocks.scratch);
	free(r->vdisk);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static struct store *redis_open(const struct redis_params *p,
				bool connect_now, char *err, size_t errlen);

/*
 * A connection's own store: same volume, own connections and map. They
 * connect on first use, as 0-Disk's pools dial when asked: a vdisk whose
 * servers are down can still be chosen, its I/O fails.
 */
static struct store *redis_session(struct store *st, char *err,
				   size_t errlen)
{
	struct redis_store *r = to_redis(st);
	struct redis_params p = {
		.spec = &r->spec,
		.vdisk = r->vdisk,
		.block_size = r->blocks.bs,
		.size = r->st.size,
	};

	return redis_open(&p, false, err, errlen);
}

static const struct store_ops redis_ops = {
	.name = "redis",
	.pread = redis_pread,
	.pwrite = redis_pwrite,
	.zero = redis_zero,
	.trim = redis_zero,
	.flush = redis_flush,
	.session = redis_session,
	.close = redis_close,
};

static struct store *redis_open(const struct redis_params *p,
				bool connect_now, char *err, size_t errlen)
{
	const struct redis_spec *spec = p->spec;
	struct redis_store *r;
	uint8_t *zero;
	int i;

	if (!p->block_size || p->size % p->block_size) {
		snprintf(err, errlen,
			 "redis store: the size (%llu) must be a multiple of the block size (%u): change --size or --block-size",
			 (unsigned long long)p->size, p->block_size);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "redis store: out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->blocks.ops = &redis_store_ops;
	r->blocks.ctx = r;
	r->blocks.bs = p->block_size;
	r->nsectors = lba_sector_of(p->size / p->block_size - 1) + 1;
	r->sector = calloc(r->nsectors, sizeof(*r->sector));
	r->dirty = calloc(r->nsectors, 1);
	r->loaded = calloc(r->nsectors, sizeof(*r->loaded));
	r->blocks.scratch = malloc(r->blocks.bs);
	r->vdisk = strdup(p->vdisk);
	r->spec = *spec;
	zero = calloc(1, r->blocks.bs);
	if (!r->sector || !r->dirty || !r->loaded || !r->blocks.scratch ||
	    !r->vdisk || !zero) {
		snprintf(err, errlen, "redis store: out of memory");
		free(zero);
		goto fail;
	}
	dedup_hash(zero, r->blocks.bs, r->zero_hash);
	free(zero);
	lba_key(r->key, sizeof(r->key), p->vdisk);

	r->nstore = spec->nservers;
	for (i = 0; i < r->nstore; i++) {
		r->store_addr[i] = spec->servers[i];
		if (!connect_now)
			continue;
		r->store[i] = redis_connect(&spec->servers[i], err, errlen);
		if (!r->store[i])
			goto fail;
	}
	/* no metadata servers given: the map shares the storage servers */
	r->nmeta = spec->nmeta ? spec->nmeta : spec->nservers;
	for (i = 0; i < r->nmeta; i++) {
		r->meta_addr[i] = spec->nmeta ? spec->meta[i] :
				  spec->servers[i];
		if (!connect_now)
			continue;
		r->meta[i] = redis_connect(&r->meta_addr[i], err, errlen);
		if (!r->meta[i])
			goto fail;
	}

	r->st.ops = &redis_ops;
	r->st.size = p->size;
	return &r->st;
fail:
	redis_close(&r->st);
	return NULL;
}

/* The export's store: its servers must answer now (exit 1 if not). */
struct store *store_redis_open(const struct redis_params *p,
			       char *err, size_t errlen)
{
	return redis_open(p, true, err, errlen);
}

/*
 * The registry's entry (store.c). Its flags: --redis-meta, the servers
 * holding the block map, and --vdisk, the volume's name in the keys.
 */
struct redis_args {
	struct redis_spec servers;
	const char *vdisk;		/* NULL: the export's name */
};

static int redis_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	struct redis_args *rs = priv;

	if (!arg || parse_hostport_list(arg, rs->servers.servers,
					REDIS_MAX_SERVERS,
					&rs->servers.nservers)) {
		snprintf(err, errlen, "use redis:HOST:PORT[,HOST:PORT...] (at most %d servers)",
			 REDIS_MAX_SERVERS);
		return -1;
	}
	return 0;
}

static int redis_set_flag(void *priv, const char *name, const char *value,
			  char *err, size_t errlen)
{
	struct redis_args *rs = priv;

	if (!strcmp(name, "vdisk")) {
		rs->vdisk = value;
		return 0;
	}
	if (parse_hostport_list(value, rs->servers.meta, REDIS_MAX_SERVERS,
				&rs->servers.nmeta)) {
		snprintf(err, errlen, "use HOST:PORT[,HOST:PORT...]");
		return -1;
	}
	return 0;
}

static struct store *redis_store_open(const void *priv,
				      const struct store_params *p,
				      char *err, size_t errlen)
{
	const struct redis_args *rs = priv;
	struct redis_params rp = {
		.spec = &rs->servers,
		.vdisk = rs->vdisk ? rs->vdisk : p->name ? p->name : "default",
		.block_size = p->block_size,
		.size = p->size,
	};

	return store_redis_open(&rp, err, errlen);
}

static const struct store_flag redis_flags[] = {
	{
		.name = "redis-meta",
		.arg = "HOST:PORT[,HOST:PORT...]",
		.help = "redis: the metadata servers holding lba:<vdisk>, sector S on\n"
			"server S % M of the M listed, as 0-Disk of 2017 kept \"8\n"
			"storage + 1 metadata\"",
		.dflt = "the --store redis: servers",
	},
	{
		.name = "vdisk",
		.arg = "NAME",
		.help = "redis: the vdisk id in the keys; tcmu-shim, which has no\n"
			"export name, uses \"default\"",
		.dflt = "the export name",
	},
	{ NULL },
};

const struct store_type store_redis = {
	.name = "redis",
	.usage = "redis:HOST:PORT[,HOST:PORT...]",
	.help = "0-Disk's deduplicated layout: each block once,\n"
		"as SET <blake2b-256> <block> on server\n"
		"hash[0] % N, the block map in the hash\n"
		"lba:<vdisk> (needs --size, a multiple of the\n"
		"block size)",
	.flags = STORE_NEEDS_SIZE | STORE_SESSIONS,
	.store_flags = redis_flags,
	.priv_size = sizeof(struct redis_args),
	.parse = redis_parse,
	.set_flag = redis_set_flag,
	.open = redis_store_open,
};
