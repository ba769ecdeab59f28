// SPDX-License-Identifier: GPL-2.0-only
/*
 * A kernel's ring: the UIO device of a LIO user backstore (tcm-user).
 *
 * Kernel-only, and not testable without target_core_user and uio: the
 * region is the device's map 0 (size in sysfs, mapped at offset 0, shared),
 * laid out by the kernel (mailbox version 2); a 4-byte read() of the fd
 * waits for new commands (poll() says when one would not block), and a
 * 4-byte write() of any value makes the kernel reap every completion up
 * to cmd_tail. The kernel copies data in and out of the data area itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "log.h"
#include "ring.h"
#include "shim.h"

/* One line of a sysfs attribute, without its newline: 0 or -errno. */
static int sysfs_read(const char *dev, const char *attr, char *buf,
		      size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/uio/%s/%s", dev, attr);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * Whether the kernel has removed the UIO device (its backstore was deleted:
 * uio_unregister_device() fails our poll() with POLLERR, then takes the
 * sysfs entry away). Waits up to a second for the entry to go.
 */
static bool uio_removed(const char *dev)
{
	char path[256];
	int i;

	snprintf(path, sizeof(path), "/sys/class/uio/%s", dev);
	for (i = 0; i < 20; i++) {
		if (access(path, F_OK) && errno == ENOENT)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

int uio_run(const struct shim_config *cfg, const struct scsi_target *t,
	    struct store *st, int sigfd)
{
	char copy[256], *dev, name[256], sizebuf[64], err[256];
	struct signalfd_siginfo si;
	unsigned long long size;
	struct ring ring;
	void *region;
	int fd, ret;

	snprintf(copy, sizeof(copy), "%s", cfg->uio_path);
	dev = basename(copy);
	ret = sysfs_read(dev, "name", name, sizeof(name));
	if (ret) {
		shim_err("--uio %s: no /sys/class/uio/%s/name (%s): is it a UIO device, and are the uio and target_core_user modules loaded?",
			 cfg->uio_path, dev, strerror(-ret));
		return -1;
	}
	if (strncmp(name, "tcm-user/", 9))
		shim_err("--uio %s: its name \"%s\" is not a tcm-user backstore's; serving it anyway",
			 cfg->uio_path, name);
	ret = sysfs_read(dev, "maps/map0/size", sizebuf, sizeof(sizebuf));
	errno = 0;
	size = ret ? 0 : strtoull(sizebuf, NULL, 0);
	if (!size || errno) {
		shim_err("--uio %s: cannot read the size of its map 0 from /sys/class/uio/%s/maps/map0/size",
			 cfg->uio_path, dev);
		return -1;
	}
	fd = open(cfg->uio_path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		shim_err("--uio %s: %s", cfg->uio_path, strerror(errno));
		return -1;
	}
	region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (region == MAP_FAILED) {
		shim_err("--uio %s: cannot map its %llu-byte region: %s",
			 cfg->uio_path, size, strerror(errno));
		close(fd);
		return -1;
	}
	ret = -1;
	if (ring_init(&ring, dev, region, size, t, st, err, sizeof(err))) {
		shim_err("--uio %s: %s", cfg->uio_path, err);
		goto out;
	}
	ring.uio = true;
	ring.wait_fd = ring.notify_fd = fd;
	if (cfg->pidfile && write_pidfile(cfg->pidfile))
		goto out_ring;
	shim_info("serving %s (%s, %llu-byte region; %llu blocks of %u bytes, store %s)",
		  name, cfg->uio_path, size, (unsigned long long)t->nr_blocks,
		  t->block_size, cfg->store.arg);

	ret = ring_run(&ring, sigfd);
	if (ret == 1) {
		if (read(sigfd, &si, sizeof(si)) == sizeof(si))
			shim_info("%s: shutting down", strsignal(si.ssi_signo));
		ret = 0;
	} else if (ret == -EIO && uio_removed(dev)) {
		shim_info("%s: the kernel removed %s (its backstore was deleted); stopping",
			  dev, cfg->uio_path);
		ret = 0;
	} else if (ret == -EPROTO) {
		shim_err("%s: the kernel's ring cannot be walked (a bad entry or cmd_head); stopping",
			 dev);
		ret = -1;
	} else {
		shim_err("%s: waiting on or writing to %s failed: %s", dev,
			 cfg->uio_path, strerror(-ret));
		ret = -1;
	}
	ring_report(&ring);
out_ring:
	ring_free(&ring);
out:
	munmap(region, size);
	close(fd);
	return ret;
}
