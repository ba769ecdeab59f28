// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU client's completion checks against a handler that answers
 * wrongly: this test is the handler (proto/tcmu's handler side on the
 * client's own region), so each bad answer is written into the ring by
 * hand, then the client reaps it as it would any other. Also when the
 * handler sees a command: at queue() (cmd_head) and woken once per submit,
 * or, with hold, not before submit. A reply after the host's hello (the
 * client was slow to send) attaches as one without it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "tcmu_attach.h"
#include "tcmu_client.h"
#include "tcmu_ring_hdl.h"

#define RING_SIZE	(64u << 10)
#define DATA_SIZE	(1u << 20)
#define IO_LEN		4096u

struct fixture {
	char path[108];
	int lsock, hsock;
	int fds[TCMU_ATTACH_NFDS];
	uint64_t region_size;
	uint8_t *region;
	struct tcmu_hdl hdl;
	struct tcmu_client *c;
	struct tcmu_completion done;
	unsigned int ndone;
	uint8_t buf[IO_LEN];
	char log[1024];
	bool hello;		/* the host's hello before the reply */
};

/* The handler host's half of the attach, in a thread: attach() waits for it. */
static void *accept_ring(void *arg)
{
	struct fixture *f = arg;
	uint8_t req[TCMU_ATTACH_REQ_LEN], rep[TCMU_ATTACH_REPLY_LEN];
	uint8_t hello[TCMU_ATTACH_HELLO_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(f->fds))];
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

	f->hsock = accept(f->lsock, NULL, NULL);
	if (f->hsock < 0 || recvmsg(f->hsock, &msg, 0) != sizeof(req) ||
	    tcmu_attach_req_decode(req, sizeof(req), &q, &why))
		return NULL;
	memcpy(f->fds, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(f->fds));
	f->region_size = q.region_size;
	tcmu_attach_hello_encode(hello, TCMU_ATTACH_VERSION);
	if (f->hello && send(f->hsock, hello, sizeof(hello), MSG_NOSIGNAL) !=
			sizeof(hello))
		return NULL;
	tcmu_attach_reply_encode(rep, &r);
	if (send(f->hsock, rep, sizeof(rep), MSG_NOSIGNAL) != sizeof(rep))
		return NULL;
	return f;
}

static void on_complete(void *arg, const struct tcmu_completion *d)
{
	struct fixture *f = arg;

	f->done = *d;
	f->ndone++;
}

static int setup_with(void **state, bool hold, bool hello)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tcmu_client_cfg cfg = {
		.ring_size = RING_SIZE, .data_size = DATA_SIZE,
		.max_cmds = 4, .max_data = 64 << 10, .timeout_s = 5,
		.complete = on_complete, .hold = hold,
	};
	char err[256];
	pthread_t t;
	void *ok;

	assert_non_null(f);
	f->hello = hello;
	cfg.complete_arg = f;
	snprintf(f->path, sizeof(f->path), "/tmp/torus-tcmu-completion.%d",
		 (int)getpid());
	unlink(f->path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	f->lsock = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(f->lsock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lsock, 1), 0);
	assert_int_equal(pthread_create(&t, NULL, accept_ring, f), 0);
	f->c = tcmu_client_attach(f->path, &cfg, "t", err, sizeof(err));
	pthread_join(t, &ok);
	if (!f->c)
		fail_msg("%s", err);
	assert_non_null(ok);
	f->region = mmap(NULL, f->region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, f->fds[TCMU_FD_REGION], 0);
	assert_true(f->region != MAP_FAILED);
	assert_int_equal(tcmu_hdl_init(&f->hdl, f->region, f->region_size), 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, false, false);
}

static int setup_hold(void **state)
{
	return setup_with(state, true, false);
}

static int setup_hello(void **state)
{
	return setup_with(state, false, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int i;

	tcmu_client_free(f->c);
	munmap(f->region, f->region_size);
	for (i = 0; i < TCMU_ATTACH_NFDS; i++)
		close(f->fds[i]);
	close(f->hsock);
	close(f->lsock);
	unlink(f->path);
	free(f);
	return 0;
}

/* Queues a 4 KiB READ(10) into f->buf (filled with 0xaa) and submits it. */
static void send_read(struct fixture *f, struct tcmu_hdl_cmd *cmd,
		      struct iovec *iov)
{
	uint8_t cdb[10] = { SCSI_READ_10, 0, 0, 0, 0, 0, 0, 0, 1, 0 };

	memset(f->buf, 0xaa, sizeof(f->buf));
	assert_int_equal(tcmu_client_queue(f->c, cdb, sizeof(cdb), IO_LEN,
					   NULL, f->buf, f), 0);
	assert_int_equal(tcmu_client_submit(f->c), 0);
	memset(cmd, 0, sizeof(*cmd));
	cmd->iov = iov;
	cmd->iov_max = 16;
	assert_int_equal(tcmu_hdl_next(&f->hdl, cmd), 1);
	/* The handler's data: what a read may hand back. */
	memset(iov[0].iov_base, 0x55, iov[0].iov_len);
}

/* The oldest entry, as the handler sees it before completing it. */
static struct tcmu_cmd_entry *oldest(struct fixture *f)
{
	return (void *)(f->region + f->hdl.cmdr_off + f->hdl.tail);
}

static void answer(struct fixture *f, const struct tcmu_hdl_cmd *cmd,
		   uint8_t status, uint8_t key, int64_t read_len)
{
	struct tcmu_sense s;
	uint8_t sense[TCMU_SENSE_FIXED_LEN];

	tcmu_sense_set(&s, key, 0, 0);
	tcmu_sense_fixed(sense, sizeof(sense), &s);
	assert_int_equal(tcmu_hdl_complete(&f->hdl, cmd->cmd_id, status,
					   key ? sense : NULL,
					   key ? sizeof(sense) : 0,
					   read_len), 0);
}

/* stderr goes to a file from catch_start() to catch_end(), then to f->log. */
static FILE *catch_start(int *saved)
{
	FILE *tmp = tmpfile();

	assert_non_null(tmp);
	fflush(stderr);
	*saved = dup(2);
	dup2(fileno(tmp), 2);
	return tmp;
}

static void catch_end(struct fixture *f, FILE *tmp, int saved)
{
	size_t len;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	len = fread(f->log, 1, sizeof(f->log) - 1, tmp);
	f->log[len] = 0;
	fclose(tmp);
}

static int reap(struct fixture *f)
{
	struct timespec ts = { .tv_sec = 2 };
	int saved, n;
	FILE *tmp = catch_start(&saved);

	n = tcmu_client_reap(f->c, 1, &ts);
	catch_end(f, tmp, saved);
	return n;
}

static void assert_data(const struct fixture *f, uint8_t byte)
{
	uint32_t i;

	for (i = 0; i < IO_LEN; i++)
		if (f->buf[i] != byte)
			fail_msg("byte %u is %#x, not %#x", i, f->buf[i], byte);
}

static void good_read(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
	assert_int_equal(f->done.data_len, IO_LEN);
	assert_data(f, 0x55);
}

/* The ring attached after a hello works as any other. */
static void read_after_hello(void **state)
{
	good_read(state);
}

/*
 * A short GOOD read with READ_LEN is a residual, as the kernel's
 * target_complete_cmd_with_length(): the bytes that came, no error.
 */
static void short_read_len(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];
	uint32_t i;

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, 2048);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
	assert_int_equal(f->done.status, SCSI_STATUS_GOOD);
	assert_false(f->done.has_sense);
	assert_int_equal(f->done.data_len, 2048);
	assert_string_equal(f->done.why, "");
	for (i = 0; i < IO_LEN; i++)
		if (f->buf[i] != (i < 2048 ? 0x55 : 0xaa))
			fail_msg("byte %u is %#x", i, f->buf[i]);
}

/* As in the kernel, a read_len of 0 is no length: the whole read came. */
static void zero_read_len(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, 0);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
	assert_data(f, 0x55);
}

/* read_len counts only with TCMU_UFLAG_READ_LEN. */
static void read_len_without_flag(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	oldest(f)->rsp.read_len = 512;
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
	assert_data(f, 0x55);
}

static void unknown_op(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	oldest(f)->hdr.uflags |= TCMU_UFLAG_UNKNOWN_OP;
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, -1);
	assert_int_equal(reap(f), 1);
	/* The kernel's LOGICAL UNIT COMMUNICATION FAILURE: EIO. */
	assert_int_equal(f->done.error, EIO);
	assert_int_equal(f->done.status, SCSI_STATUS_CHECK_CONDITION);
	assert_true(f->done.has_sense);
	assert_int_equal(f->done.sense.key, SCSI_SK_NOT_READY);
	assert_int_equal(f->done.sense.asc, SCSI_ASC_LU_COMM_FAILURE);
	assert_int_equal(f->done.sense.ascq, 0);
	assert_string_equal(f->done.why,
			    "the handler flagged opcode 0x28 UNKNOWN_OP (logical unit communication failure)");
	assert_data(f, 0xaa);
}

/* "No error" sense on a read with no data is no success. */
static void recovered_no_data(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_RECOVERED_ERROR, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, EIO);
	assert_string_equal(f->done.why,
			    "CHECK CONDITION with RECOVERED ERROR sense and no data (read_len not set)");
	assert_data(f, 0xaa);
}

static void completed_no_data(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_COMPLETED, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, EIO);
	assert_string_equal(f->done.why,
			    "CHECK CONDITION with COMPLETED sense and no data (read_len not set)");
}

/* With read_len, CHECK CONDITION returns the data (SCF_TREAT_READ_AS_NORMAL). */
static void recovered_with_data(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_RECOVERED_ERROR,
	       IO_LEN);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
	assert_int_equal(f->done.data_len, IO_LEN);
	assert_data(f, 0x55);
}

static void recovered_short(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_RECOVERED_ERROR,
	       1024);
	assert_int_equal(reap(f), 1);
	/* A normal read (SCF_TREAT_READ_AS_NORMAL), with its residual. */
	assert_int_equal(f->done.error, 0);
	assert_int_equal(f->done.data_len, 1024);
	assert_string_equal(f->done.why, "");
}

static void medium_error(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_MEDIUM_ERROR, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, EIO);
	assert_true(f->done.has_sense);
	assert_int_equal(f->done.sense.key, SCSI_SK_MEDIUM_ERROR);
	assert_string_equal(f->done.why, "");
}

/* The handler sets cmd_tail to @tail instead of completing. */
static void bad_tail(struct fixture *f, uint32_t tail, const char *msg)
{
	struct tcmu_mailbox *mb = (void *)f->region;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	__atomic_store_n(&mb->cmd_tail, tail, __ATOMIC_RELEASE);
	/* The ring is taken down: the read comes back failed. */
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done.error, EIO);
	if (!strstr(f->log, msg))
		fail_msg("no \"%s\" in: %s", msg, f->log);
}

static void tail_misaligned(void **state)
{
	bad_tail(*state, 4,
		 "torus: t: the handler broke the TCMU ring: cmd_tail 4 is not on an entry's 8-byte boundary");
}

static void tail_outside(void **state)
{
	struct fixture *f = *state;
	char msg[128];

	snprintf(msg, sizeof(msg),
		 "cmd_tail %u is outside the command ring", f->hdl.cmdr_size);
	bad_tail(f, f->hdl.cmdr_size, msg);
}

static void tail_past_head(void **state)
{
	bad_tail(*state, 4096, "cmd_tail 4096 went backwards or past cmd_head");
}

static void tail_backwards(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];

	send_read(f, &cmd, iov);
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, -1);
	assert_int_equal(reap(f), 1);
	f->ndone = 0;
	bad_tail(f, 0, "cmd_tail 0 went backwards or past cmd_head");
}

/* A handler that never answers, when the caller gives up. */
static void stalled_cancel(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd;
	struct iovec iov[16];
	FILE *tmp;
	int saved;

	send_read(f, &cmd, iov);
	tmp = catch_start(&saved);
	tcmu_client_cancel(f->c, ECANCELED);
	catch_end(f, tmp, saved);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done.error, ECANCELED);
	assert_string_equal(f->log,
			    "torus: t: 1 command had no completion from the handler when cancelled (Operation canceled); failing them\n");
}

/* Wake-ups the handler got since the last look (the kick eventfd's count). */
static uint64_t kicks(struct fixture *f)
{
	struct pollfd p = { .fd = f->fds[TCMU_FD_KICK], .events = POLLIN };
	uint64_t n = 0;

	if (poll(&p, 1, 0) == 1)
		assert_int_equal(read(p.fd, &n, sizeof(n)), sizeof(n));
	return n;
}

static void queue_read(struct fixture *f)
{
	uint8_t cdb[10] = { SCSI_READ_10, 0, 0, 0, 0, 0, 0, 0, 1, 0 };

	assert_int_equal(tcmu_client_queue(f->c, cdb, sizeof(cdb), IO_LEN,
					   NULL, f->buf, f), 0);
}

/*
 * As the kernel: cmd_head moves as each command is queued, the handler is
 * woken once per submit, for all queued since.
 */
static void head_at_queue(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd[2] = { 0 };
	struct iovec iov[2][16];
	int i, n = 0;

	for (i = 0; i < 2; i++) {
		queue_read(f);
		cmd[i].iov = iov[i];
		cmd[i].iov_max = 16;
		assert_int_equal(tcmu_hdl_next(&f->hdl, &cmd[i]), 1);
		assert_int_equal(kicks(f), 0);
	}
	assert_int_equal(tcmu_client_submit(f->c), 0);
	assert_int_equal(kicks(f), 1);
	assert_int_equal(tcmu_client_submit(f->c), 0);
	assert_int_equal(kicks(f), 0);
	for (i = 0; i < 2; i++)
		answer(f, &cmd[i], SCSI_STATUS_GOOD, 0, -1);
	while (n < 2)
		n += reap(f);
	assert_int_equal(n, 2);
	assert_int_equal(f->done.error, 0);
}

/* hold: the handler sees nothing until submit. */
static void head_held(void **state)
{
	struct fixture *f = *state;
	struct tcmu_hdl_cmd cmd = { 0 };
	struct iovec iov[16];

	cmd.iov = iov;
	cmd.iov_max = 16;
	queue_read(f);
	assert_int_equal(tcmu_hdl_next(&f->hdl, &cmd), 0);
	assert_int_equal(tcmu_client_held(f->c), 1);
	assert_int_equal(kicks(f), 0);
	assert_int_equal(tcmu_client_submit(f->c), 0);
	assert_int_equal(tcmu_client_held(f->c), 0);
	assert_int_equal(kicks(f), 1);
	assert_int_equal(tcmu_hdl_next(&f->hdl, &cmd), 1);
	answer(f, &cmd, SCSI_STATUS_GOOD, 0, -1);
	assert_int_equal(reap(f), 1);
	assert_int_equal(f->done.error, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(good_read, setup, teardown),
		cmocka_unit_test_setup_teardown(read_after_hello, setup_hello,
						teardown),
		cmocka_unit_test_setup_teardown(short_read_len, setup, teardown),
		cmocka_unit_test_setup_teardown(zero_read_len, setup, teardown),
		cmocka_unit_test_setup_teardown(read_len_without_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_op, setup, teardown),
		cmocka_unit_test_setup_teardown(recovered_no_data, setup, teardown),
		cmocka_unit_test_setup_teardown(completed_no_data, setup, teardown),
		cmocka_unit_test_setup_teardown(recovered_with_data, setup, teardown),
		cmocka_unit_test_setup_teardown(recovered_short, setup, teardown),
		cmocka_unit_test_setup_teardown(medium_error, setup, teardown),
		cmocka_unit_test_setup_teardown(tail_misaligned, setup, teardown),
		cmocka_unit_test_setup_teardown(tail_outside, setup, teardown),
		cmocka_unit_test_setup_teardown(tail_past_head, setup, teardown),
		cmocka_unit_test_setup_teardown(tail_backwards, setup, teardown),
		cmocka_unit_test_setup_teardown(stalled_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(head_at_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(head_held, setup_hold, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
