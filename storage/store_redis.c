// SPDX-License-Identifier: GPL-2.0-only
/*
 * The redis store: 0-Disk's deduplicated layout on Redis servers
 * (backend_redis.c). Its flags: --redis-meta, the servers holding the
 * block map, and --vdisk, the volume's name in the keys.
 */
#include <string.h>

#include "hostport.h"
#include "store.h"

struct redis_store {
	struct redis_spec servers;
	const char *vdisk;		/* NULL: the export's name */
};

static int redis_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	struct redis_store *rs = priv;

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
	struct redis_store *rs = priv;

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

static struct backend *redis_store_open(const void *priv,
					const struct store_params *p,
					char *err, size_t errlen)
{
	const struct redis_store *rs = priv;
	struct redis_params rp = {
		.spec = &rs->servers,
		.vdisk = rs->vdisk ? rs->vdisk : p->name ? p->name : "default",
		.block_size = p->block_size,
		.size = p->size,
	};

	return backend_redis_open(&rp, err, errlen);
}

static const struct store_flag redis_flags[] = {
	{
		.name = "redis-meta",
		.arg = "HOST:PORT[,HOST:PORT...]",
		.help = "redis: the metadata servers holding lba:<vdisk>, sector S on\n"
			"server S % M of the M listed, as 0-Disk of 2017 kept \"8\n"
			"storage + 1 metadata\"",
		.dflt = "the --backend redis: servers",
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
	.priv_size = sizeof(struct redis_store),
	.parse = redis_parse,
	.set_flag = redis_set_flag,
	.open = redis_store_open,
};
