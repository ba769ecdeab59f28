// SPDX-License-Identifier: GPL-2.0-only
/*
 * Replays inputs through a fuzz target without libFuzzer, so that every
 * ordinary build (gcc, no sanitizer runtime needed) runs the committed
 * corpus and the regressions as a test. Arguments are files or
 * directories (each regular file in them, in name order).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path, int *count)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long size;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: %s: cannot size it\n", path);
		fclose(f);
		return -1;
	}
	/* An exact-size heap copy: a read past the input is a real bug. */
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != (size_t)size) {
		fprintf(stderr, "replay: %s: cannot read it\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, size);
	free(buf);
	(*count)++;
	return 0;
}

static int replay_dir(const char *dir, int *count)
{
	struct dirent **names;
	char path[4096];
	struct stat st;
	int n, i, ret = 0;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (!ret && !stat(path, &st) && S_ISREG(st.st_mode))
			ret = replay_file(path, count);
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, count = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
				strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) :
					  replay_file(argv[i], &count))
			return 1;
	}
	printf("replayed %d inputs\n", count);
	return 0;
}
