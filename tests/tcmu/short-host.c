// SPDX-License-Identifier: GPL-2.0-only
/*
 * A TCMU handler host that answers every read of more than one block with
 * half of it (GOOD, TCMU_UFLAG_READ_LEN): what the engine must hand fio
 * as a short read, as the kernel hands the initiator a residual. Its own
 * ring (ring=private), one client, the shim's SCSI target over a store
 * of --size bytes whose every byte is the low byte of its block's number.
 * One client at a time. Used by tests/tcmu/test-short-read.sh.
 *
 *   short-host SOCKET SIZE
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "scsi_target.h"
#include "store_ops.h"
#include "tcmu_attach.h"
#include "tcmu_ring_hdl.h"

#define BS	512u

static int die(const char *what)
{
	fprintf(stderr, "short-host: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int s_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((off + i) / BS);
	return 0;
}

static int s_fail(struct store *st, size_t len, uint64_t off)
{
	return -EROFS;
}

static int s_write(struct store *st, const void *buf, size_t len,
		   uint64_t off)
{
	return -EROFS;
}

static int s_flush(struct store *st)
{
	return 0;
}

static void s_close(struct store *st)
{
}

static const struct store_ops ops = {
	.name = "short", .pread = s_pread, .pwrite = s_write,
	.zero = s_fail, .trim = s_fail, .flush = s_flush, .close = s_close,
};

/* The client's attach: its region and fds, answered as tcmu-shim does. */
static int attach(int lsock, int *fds, uint64_t *region_size)
{
	uint8_t req[TCMU_ATTACH_REQ_LEN], rep[TCMU_ATTACH_REPLY_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(int) * TCMU_ATTACH_NFDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = req, .iov_len = sizeof(req) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct tcmu_attach_reply r = { .version = TCMU_ATTACH_VERSION };
	struct tcmu_attach_req q;
	const char *why;
	int sock = accept(lsock, NULL, NULL);

	if (sock < 0)
		die("accept");
	if (recvmsg(sock, &msg, 0) != sizeof(req) ||
	    tcmu_attach_req_decode(req, sizeof(req), &q, &why) ||
	    !CMSG_FIRSTHDR(&msg)) {
		fprintf(stderr,
			"short-host: a bad attach (ring=private only)\n");
		exit(1);
	}
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&msg)),
	       sizeof(int) * TCMU_ATTACH_NFDS);
	*region_size = q.region_size;
	tcmu_attach_reply_encode(rep, &r);
	if (send(sock, rep, sizeof(rep), MSG_NOSIGNAL) != sizeof(rep))
		die("send");
	return sock;
}

/* Every command the ring holds: reads of more than a block come short. */
static void serve(struct tcmu_hdl *h, struct scsi_lu *lu)
{
	struct iovec iov[64];
	struct tcmu_hdl_cmd cmd = { .iov = iov, .iov_max = 64 };
	struct scsi_reply r;
	uint64_t len, i;
	int ret;

	while ((ret = tcmu_hdl_next(h, &cmd)) != 0) {
		if (ret < 0) {
			fprintf(stderr, "short-host: a bad entry (%d)\n", ret);
			exit(1);
		}
		scsi_execute(lu, cmd.cdb, cmd.cdb_max, iov, cmd.iov_cnt, &r);
		for (len = 0, i = 0; i < cmd.iov_cnt; i++)
			len += iov[i].iov_len;
		if (cmd.cdb[0] == SCSI_READ_16 && r.status == 0 && len > BS)
			r.read_len = len / BS / 2 * BS;
		if (tcmu_hdl_complete(h, cmd.cmd_id, r.status,
				      r.sense_len ? r.sense : NULL,
				      r.sense_len, r.read_len))
			exit(1);
	}
}

/* One wake-up's worth: false when the client detached. */
static bool ring(struct tcmu_hdl *h, struct scsi_lu *lu, const int *fds,
		 int sock)
{
	struct pollfd pfd[2] = {
		{ .fd = fds[TCMU_FD_KICK], .events = POLLIN },
		{ .fd = sock, .events = POLLIN },
	};
	uint64_t n = 1;

	if (poll(pfd, 2, -1) < 0 && errno != EINTR)
		die("poll");
	if (pfd[1].revents)
		return false;
	if (pfd[0].revents & POLLIN &&
	    read(fds[TCMU_FD_KICK], &n, sizeof(n)) < 0)
		die("read");
	serve(h, lu);
	if (write(fds[TCMU_FD_DONE], &n, sizeof(n)) < 0)
		die("write");
	return true;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct store st = { .ops = &ops };
	int fds[TCMU_ATTACH_NFDS], lsock, sock;
	struct scsi_target t;
	struct scsi_lu lu;
	struct tcmu_hdl h;
	uint64_t region_size, n = 1;
	uint8_t *region;

	if (argc != 3) {
		fprintf(stderr, "usage: short-host SOCKET SIZE\n");
		return 2;
	}
	st.size = strtoull(argv[2], NULL, 0);
	if (scsi_target_init(&t, st.size, BS, 1u << 20, false, 1) ||
	    scsi_lu_init(&lu, &t, &st))
		die("the SCSI target");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	unlink(sa.sun_path);
	lsock = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lsock, 1))
		die(argv[1]);
	printf("short-host: listening on %s\n", argv[1]);
	fflush(stdout);
	/* One client at a time: fio's set-up attaches, then the job. */
	for (;;) {
		sock = attach(lsock, fds, &region_size);
		region = mmap(NULL, region_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, fds[TCMU_FD_REGION], 0);
		if (region == MAP_FAILED ||
		    tcmu_hdl_init(&h, region, region_size))
			die("the region");
		while (ring(&h, &lu, fds, sock))
			;
		munmap(region, region_size);
		for (n = 0; n < TCMU_ATTACH_NFDS; n++)
			close(fds[n]);
		close(sock);
	}
}
