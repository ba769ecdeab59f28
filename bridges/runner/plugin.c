// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loads a handler plugin the way tcmu-runner's daemon does (dlopen, then
 * its handler_init(), which calls tcmur_register_handler()), and checks
 * what it registered: every pointer in its struct tcmur_handler must
 * point into the plugin itself and the numbers must be sane, or the
 * plugin was built against another layout than the headers this host was
 * compiled with (tcmu-runner TORUS_TCMU_RUNNER_VERSION).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"
#include "runner_dev.h"

#ifndef TORUS_TCMU_RUNNER_DIR
#define TORUS_TCMU_RUNNER_DIR	"/usr/lib/x86_64-linux-gnu/tcmu-runner"
#endif
#ifndef TORUS_TCMU_RUNNER_VERSION
#define TORUS_TCMU_RUNNER_VERSION	"unknown"
#endif

#define MAX_PLUGINS	8

/* Subtypes whose file is named otherwise (tcmu-runner's CMakeLists). */
static const struct {
	const char *subtype, *stem;
} aliases[] = {
	{ "fbo", "file_optical" },
	{ "zbc", "file_zbc" },
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static struct runner_plugin plugins[MAX_PLUGINS];
static int nplugins;

/* "file_optical, qcow, ..." (sorted) from the handler_*.so files in dir. */
static void list_available(const char *dir, char *out, size_t len)
{
	struct dirent **names;
	size_t used = 0, n;
	int i, count;

	out[0] = '\0';
	count = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < count; i++) {
		const char *f = names[i]->d_name;

		n = strlen(f);
		if (!strncmp(f, "handler_", 8) && n >= 12 &&
		    !strcmp(f + n - 3, ".so"))
			used += snprintf(out + used, used < len ? len - used : 0,
					 "%s%.*s", used ? ", " : "",
					 (int)(n - 11), f + 8);
		free(names[i]);
	}
	if (count >= 0)
		free(names);
}

static int find_plugin(const char *handler, const char *dir, char *path,
		       size_t len, char *err, size_t errlen)
{
	char avail[512];
	size_t i;

	if (strchr(handler, '/')) {
		snprintf(path, len, "%s", handler);
		if (!access(path, F_OK))
			return 0;
		snprintf(err, errlen, "no tcmu-runner handler plugin at %s", path);
		return -1;
	}
	snprintf(path, len, "%s/handler_%s.so", dir, handler);
	if (!access(path, F_OK))
		return 0;
	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strcmp(handler, aliases[i].subtype))
			continue;
		snprintf(path, len, "%s/handler_%s.so", dir, aliases[i].stem);
		if (!access(path, F_OK))
			return 0;
	}
	list_available(dir, avail, sizeof(avail));
	snprintf(path, len, "%s/handler_%s.so", dir, handler);
	if (avail[0])
		snprintf(err, errlen, "no tcmu-runner handler '%s': %s does not exist (%s has: %s)",
			 handler, path, dir, avail);
	else
		snprintf(err, errlen, "no tcmu-runner handler '%s': %s does not exist (install the Debian package tcmu-runner, or give --plugin-dir)",
			 handler, path);
	return -1;
}

/* True when p is NULL or inside the object whose base is base. */
static bool in_plugin(const void *p, const void *base)
{
	Dl_info info;

	if (!p)
		return true;
	return dladdr(p, &info) && info.dli_fbase == base;
}

static bool sane_string(const char *s, const void *base, size_t max)
{
	size_t i;

	if (!s || !in_plugin(s, base))
		return false;
	for (i = 0; i < max && s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return i < max;
}

/* NULL, or the first thing about h that does not fit the layout. */
static const char *check_abi(const struct tcmur_handler *h, const void *base)
{
	const void *fns[] = {
		(const void *)h->check_config, (const void *)h->reconfig,
		(const void *)h->open, (const void *)h->close,
		(const void *)h->handle_cmd, (const void *)h->read,
		(const void *)h->write, (const void *)h->flush,
		(const void *)h->unmap, (const void *)h->writesame,
		(const void *)h->caw, (const void *)h->report_event,
		(const void *)h->lock, (const void *)h->unlock,
		(const void *)h->get_lock_tag, (const void *)h->get_lock_state,
		(const void *)h->update_logdir, (const void *)h->init,
		(const void *)h->destroy,
	};
	size_t i;

	if (!in_plugin(h, base))
		return "the registered struct tcmur_handler is not the plugin's own";
	if (!sane_string(h->subtype, base, 64))
		return "subtype is not a string of the plugin's";
	if (!sane_string(h->name, base, 256))
		return "name is not a string of the plugin's";
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!in_plugin(fns[i], base))
			return "a callout points outside the plugin";
	if (h->nr_threads < 0 || h->nr_threads > 1024)
		return "nr_threads is out of range";
	if (h->_is_dbus_handler)
		return "_is_dbus_handler is set";
	if (!h->open)
		return "it has no open callout";
	if (!h->handle_cmd && !(h->read && h->write))
		return "it has neither handle_cmd nor read and write";
	return NULL;
}

static int load(struct runner_plugin *p, char *err, size_t errlen)
{
	struct tcmur_handler *h;
	int (*init)(void);
	const char *why;
	Dl_info info;
	void *dl;
	int ret, count;

	dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *e = dlerror();

		/* dlerror() names the file. */
		snprintf(err, errlen, "cannot load a tcmu-runner plugin: %s%s", e,
			 strstr(e, "undefined symbol") ?
			 " (the plugin needs a function this host does not provide: not a tcmu-runner " TORUS_TCMU_RUNNER_VERSION " handler?)" : "");
		return -1;
	}
	*(void **)&init = dlsym(dl, "handler_init");
	if (!init) {
		snprintf(err, errlen, "%s is not a tcmu-runner handler plugin (no handler_init)",
			 p->path);
		goto fail;
	}
	runner_registration_begin();
	ret = init();
	h = runner_registration_end(&count);
	if (ret) {
		snprintf(err, errlen, "%s: handler_init failed (returned %d)",
			 p->path, ret);
		goto fail;
	}
	if (!count) {
		snprintf(err, errlen, "%s: handler_init registered no handler",
			 p->path);
		goto fail;
	}
	if (count != 1 || !h) {
		snprintf(err, errlen, "%s: handler_init registered %d handlers, one expected",
			 p->path, count);
		goto fail;
	}
	if (!dladdr((void *)init, &info)) {
		snprintf(err, errlen, "%s: dladdr(handler_init) failed", p->path);
		goto fail;
	}
	why = check_abi(h, info.dli_fbase);
	if (why) {
		snprintf(err, errlen, "%s: plugin ABI mismatch: %s (this host was built with tcmu-runner " TORUS_TCMU_RUNNER_VERSION "'s headers: rebuild after scripts/tcmu-runner-source.sh)",
			 p->path, why);
		goto fail;
	}
	p->handler = h;
	return 0;
fail:
	/* A plugin whose init ran may have started threads: keep it mapped. */
	return -1;
}

const struct runner_plugin *runner_plugin_load(const char *handler,
					       const char *dir, char *err,
					       size_t errlen)
{
	struct runner_plugin *p = NULL;
	char path[4096], real[4096];
	int i;

	if (find_plugin(handler, dir ? dir : TORUS_TCMU_RUNNER_DIR, path,
			sizeof(path), err, errlen))
		return NULL;
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);

	pthread_mutex_lock(&load_lock);
	for (i = 0; i < nplugins; i++)
		if (!strcmp(plugins[i].path, real)) {
			p = &plugins[i];
			goto out;
		}
	if (nplugins == MAX_PLUGINS) {
		snprintf(err, errlen, "%s: more than %d tcmu-runner plugins loaded",
			 real, MAX_PLUGINS);
		goto out;
	}
	snprintf(plugins[nplugins].path, sizeof(plugins[nplugins].path), "%s",
		 real);
	if (!load(&plugins[nplugins], err, errlen))
		p = &plugins[nplugins++];
out:
	pthread_mutex_unlock(&load_lock);
	return p;
}
