// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file store: a file or block device (backend_file.c), with O_DIRECT
 * when ",direct" ends the argument. Copies (nbd-shim's --replicas) are
 * PATH.0 .. PATH.R-1.
 */
#include <stdbool.h>
#include <string.h>

#include "store.h"

struct file_spec {
	char path[4096];
	bool direct;
};

static int file_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	struct file_spec *fs = priv;
	size_t n = arg ? strlen(arg) : 0;

	/* ",direct" at the end is the option, not the file's name */
	if (n >= 7 && !strcmp(arg + n - 7, ",direct")) {
		fs->direct = true;
		n -= 7;
	}
	if (!n) {
		snprintf(err, errlen, "no path: use file:PATH[,direct]");
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

static struct backend *file_store_open(const void *priv,
				       const struct store_params *p,
				       char *err, size_t errlen)
{
	const struct file_spec *fs = priv;
	char path[sizeof(fs->path) + 16];

	if (p->copy >= 0)
		snprintf(path, sizeof(path), "%s.%d", fs->path, p->copy);
	else
		snprintf(path, sizeof(path), "%s", fs->path);
	return backend_file_open_flags(path, p->size,
				       fs->direct ? BACKEND_FILE_DIRECT : 0,
				       err, errlen);
}

const struct store_type store_file = {
	.name = "file",
	.usage = "file:PATH[,direct]",
	.help = "a file or block device, with O_DIRECT when\n"
		"\",direct\" follows; its size unless --size",
	.flags = STORE_COPIES,
	.priv_size = sizeof(struct file_spec),
	.parse = file_parse,
	.open = file_store_open,
};
