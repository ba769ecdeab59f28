/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Finding and loading one of tcmu-runner's handler plugins: dlopen(),
 * handler_init(), the struct tcmur_handler it registers, checked for
 * signs that it was built against another layout.
 */
#ifndef TORUS_TCMU_RUNNER_PLUGIN_H
#define TORUS_TCMU_RUNNER_PLUGIN_H

#include <stddef.h>

struct tcmur_handler;

struct runner_plugin {
	char path[4096];
	struct tcmur_handler *handler;
};

/*
 * handler: a subtype ("qcow", "fbo", "zbc", "rbd"), a file stem
 * ("file_optical") or a path to a handler_*.so; dir NULL: the Debian
 * package's directory. A plugin is loaded once per process and stays.
 * Returns NULL with one line in err.
 */
const struct runner_plugin *runner_plugin_load(const char *handler,
					       const char *dir, char *err,
					       size_t errlen);

#endif /* TORUS_TCMU_RUNNER_PLUGIN_H */
