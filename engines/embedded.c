// SPDX-License-Identifier: GPL-2.0-only
/*
 * Embedded default servers (see embedded.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embedded.h"

#define START_TIMEOUT_MS	10000

bool embedded_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, prog);
		if (!access(buf, X_OK))
			return true;
		if (!end)
			break;
		path = end + 1;
	}
	return false;
}

int embedded_prepare(struct embedded *e, const char *sock_name, char *err,
		     size_t errlen)
{
	snprintf(e->dir, sizeof(e->dir), "/tmp/torus-embedded-XXXXXX");
	if (!mkdtemp(e->dir)) {
		snprintf(err, errlen, "mkdtemp %s: %s", e->dir, strerror(errno));
		return -1;
	}
	snprintf(e->sock, sizeof(e->sock), "%s/%s", e->dir, sock_name);
	snprintf(e->pidfile, sizeof(e->pidfile), "%s/server.pid", e->dir);
	return 0;
}

static void remove_files(struct embedded *e)
{
	unlink(e->sock);
	unlink(e->pidfile);
	rmdir(e->dir);
}

int embedded_start(struct embedded *e, char *const argv[], const char *hint,
		   char *err, size_t errlen)
{
	struct stat st;
	int i, status;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		remove_files(e);
		return -1;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		/* Keep fio's output clean; the server's errors reach stderr. */
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		/* Do not outlive a fio that was killed. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execvp(argv[0], argv);
		_exit(127);
	}

	/*
	 * The pid file is written once the server accepts connections; the
	 * socket exists a moment before that, when a connection is refused.
	 */
	for (i = 0; i < START_TIMEOUT_MS / 10; i++) {
		if (!stat(e->pidfile, &st) && st.st_size > 0)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			snprintf(err, errlen,
				 "the embedded %s server exited at start (status %d); %s",
				 e->what,
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1,
				 hint);
			remove_files(e);
			return -1;
		}
		usleep(10000);
	}
	if (i == START_TIMEOUT_MS / 10) {
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		snprintf(err, errlen,
			 "the embedded %s server was not ready on %s within %d s",
			 e->what, e->sock, START_TIMEOUT_MS / 1000);
		remove_files(e);
		return -1;
	}
	e->pid = pid;
	e->owner = getpid();
	return 0;
}

int embedded_get(struct embedded *e, uint64_t size, char *uri, size_t urilen,
		 char *err, size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	if (!e->pid)
		ret = e->start(size, err, errlen);
	else if (size > e->size) {
		snprintf(err, errlen,
			 "this job needs %" PRIu64 " bytes but %s was started with %" PRIu64 "; give every job the same size=, or %s and pass uri=",
			 size, e->who, e->size, e->instead);
		ret = -1;
	}
	if (!ret)
		snprintf(uri, urilen, "%s:///?socket=%s", e->scheme, e->sock);
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void embedded_stop(struct embedded *e)
{
	int status;

	if (!e->pid || e->owner != getpid())
		return;
	kill(e->pid, SIGTERM);
	waitpid(e->pid, &status, 0);
	e->pid = 0;
	remove_files(e);
}
