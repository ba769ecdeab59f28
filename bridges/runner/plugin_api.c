// SPDX-License-Identifier: GPL-2.0-only
/*
 * The functions tcmu-runner's daemon gives its handler plugins, as this
 * host gives them: the device's settings (set once at open, then only
 * read), the configfs attributes a handler asks for (answered from the
 * device, there is no configfs here), registration, asynchronous
 * completion and the message loggers. Exported from the executable
 * (runner/meson.build lists them) so that dlopen() binds the plugins to
 * them. Prototypes: tcmu-runner's libtcmu_common.h, tcmu-runner.h,
 * tcmur_device.h, libtcmu_log.h.
 *
 * Only this file and plugin_api_helpers.c define tcmu_* and tcmur_*
 * functions in bridges/: those names are tcmu-runner's, fixed by its ABI.
 * The host's own functions are runner_*; the project's TCMU protocol code
 * (proto/tcmu, client/tcmu) is another tcmu_, and uses none of these
 * names (tests/meta/test_layers.py checks both).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_dev.h"
#include "storage_log.h"

/* --- the device ------------------------------------------------------------ */

void *tcmu_dev_get_private(struct tcmu_device *dev)
{
	return &dev->rdev;
}

void tcmu_dev_set_private(struct tcmu_device *dev, void *priv)
{
	/* The daemon's own slot; a handler never sets it. */
}

void *tcmur_dev_get_private(struct tcmu_device *dev)
{
	return dev->rdev.hm_private;
}

void tcmur_dev_set_private(struct tcmu_device *dev, void *priv)
{
	dev->rdev.hm_private = priv;
}

char *tcmu_dev_get_cfgstring(struct tcmu_device *dev)
{
	return dev->cfgstring;
}

void tcmu_dev_set_num_lbas(struct tcmu_device *dev, uint64_t num_lbas)
{
	dev->num_lbas = num_lbas;
}

uint64_t tcmu_dev_get_num_lbas(struct tcmu_device *dev)
{
	return dev->num_lbas;
}

void tcmu_dev_set_block_size(struct tcmu_device *dev, uint32_t block_size)
{
	dev->block_size = block_size;
}

uint32_t tcmu_dev_get_block_size(struct tcmu_device *dev)
{
	return dev->block_size;
}

uint32_t tcmu_dev_get_max_xfer_len(struct tcmu_device *dev)
{
	return dev->max_xfer_len;
}

void tcmu_dev_set_opt_xcopy_rw_len(struct tcmu_device *dev, uint32_t len)
{
	dev->opt_xcopy_rw_len = len;
}

void tcmu_dev_set_max_unmap_len(struct tcmu_device *dev, uint32_t len)
{
	dev->max_unmap_len = len;
}

uint32_t tcmu_dev_get_max_unmap_len(struct tcmu_device *dev)
{
	return dev->max_unmap_len;
}

void tcmu_dev_set_opt_unmap_gran(struct tcmu_device *dev, uint32_t len,
				 bool split)
{
	dev->opt_unmap_gran = len;
}

uint32_t tcmu_dev_get_opt_unmap_gran(struct tcmu_device *dev)
{
	return dev->opt_unmap_gran;
}

void tcmu_dev_set_unmap_gran_align(struct tcmu_device *dev, uint32_t len)
{
	dev->unmap_gran_align = len;
}

uint32_t tcmu_dev_get_unmap_gran_align(struct tcmu_device *dev)
{
	return dev->unmap_gran_align;
}

void tcmu_dev_set_write_cache_enabled(struct tcmu_device *dev, bool enabled)
{
	dev->write_cache = enabled;
}

bool tcmu_dev_get_write_cache_enabled(struct tcmu_device *dev)
{
	return dev->write_cache;
}

void tcmu_dev_set_solid_state_media(struct tcmu_device *dev, bool solid_state)
{
	dev->solid_state = solid_state;
}

bool tcmu_dev_get_solid_state_media(struct tcmu_device *dev)
{
	return dev->solid_state;
}

bool tcmu_dev_get_unmap_enabled(struct tcmu_device *dev)
{
	return dev->unmap_enabled;
}

void tcmu_set_thread_name(const char *prefix, struct tcmu_device *dev)
{
	char name[TCMU_THREAD_NAME_LEN];

	snprintf(name, sizeof(name), "%s", prefix ? prefix : "tcmur");
	pthread_setname_np(pthread_self(), name);
}

/* --- configfs, answered from the device ------------------------------------ */

uint64_t tcmu_cfgfs_dev_get_info_u64(struct tcmu_device *dev, const char *name,
				     int *fn_ret)
{
	if (!strcmp(name, "Size")) {
		*fn_ret = 0;
		return dev->dev_size;
	}
	*fn_ret = -ENOENT;
	return 0;
}

int tcmu_cfgfs_dev_get_attr_int(struct tcmu_device *dev, const char *name)
{
	if (!strcmp(name, "hw_block_size"))
		return dev->block_size;
	if (!strcmp(name, "hw_max_sectors"))
		return dev->max_xfer_len;
	return -ENOENT;
}

/* The caller frees it (a strdup'ed configfs read in the daemon). */
char *tcmu_cfgfs_dev_get_wwn(struct tcmu_device *dev)
{
	return strdup("torus-tcmu-runner-host");
}

/* --- handlers ---------------------------------------------------------------- */

/* handler_init() runs under plugin.c's load lock. */
static struct tcmur_handler *registered;
static int registrations;

void runner_registration_begin(void)
{
	registered = NULL;
	registrations = 0;
}

struct tcmur_handler *runner_registration_end(int *count)
{
	*count = registrations;
	return registered;
}

int tcmur_register_handler(struct tcmur_handler *handler)
{
	int ret;

	if (registrations++)
		return -1;
	if (handler && handler->init) {
		ret = handler->init();
		if (ret)
			return ret;
	}
	registered = handler;
	return 0;
}

bool tcmur_unregister_handler(struct tcmur_handler *handler)
{
	return false;
}

/* An asynchronous handler's completion: the done callback runner.c set. */
void tcmur_cmd_complete(struct tcmu_device *dev, void *data, int rc)
{
	struct tcmur_cmd *cmd = data;

	cmd->done(dev, cmd, rc);
}

/* --- messages ------------------------------------------------------------------ */

static __thread struct tcmu_device *capturing;

void runner_log_capture(struct tcmu_device *dev)
{
	capturing = dev;
}

/*
 * One line each: errors and warnings go to the storage log (the
 * handler host's), except that an opening device keeps its errors in
 * last_err; debug and info only with TORUS_TCMU_RUNNER_DEBUG set.
 */
static void runner_vlog(const char *level, bool always, bool keep,
			const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	if (!always && !getenv("TORUS_TCMU_RUNNER_DEBUG"))
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	if (capturing && keep) {
		/* The first line is usually the cause; later ones follow. */
		n = strlen(capturing->last_err);
		snprintf(capturing->last_err + n, sizeof(capturing->last_err) - n,
			 "%s%s", n ? "; " : "", line);
		return;
	}
	storage_err("tcmu-runner handler: %s: %s", level, line);
}

#define RUNNER_LOGGER(fn, level, always, keep)				\
void fn(struct tcmu_device *dev, const char *funcname, int linenr,	\
	const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	runner_vlog(level, always, keep, fmt, ap);				\
	va_end(ap);							\
}

RUNNER_LOGGER(tcmu_crit_message, "critical", true, true)
RUNNER_LOGGER(tcmu_err_message, "error", true, true)
RUNNER_LOGGER(tcmu_warn_message, "warning", true, false)
RUNNER_LOGGER(tcmu_info_message, "info", false, false)
RUNNER_LOGGER(tcmu_dbg_message, "debug", false, false)
RUNNER_LOGGER(tcmu_dbg_scsi_cmd_message, "debug", false, false)

/* rbd's notifications: the daemon would recover the device; we say so. */
void tcmu_notify_lock_lost(struct tcmu_device *dev)
{
	storage_err("tcmu-runner handler: %s: lock lost", dev->cfgstring);
}

void tcmu_notify_conn_lost(struct tcmu_device *dev)
{
	storage_err("tcmu-runner handler: %s: connection lost", dev->cfgstring);
}

void tcmu_notify_cmd_timed_out(struct tcmu_device *dev)
{
	storage_err("tcmu-runner handler: %s: command timed out",
		    dev->cfgstring);
}
