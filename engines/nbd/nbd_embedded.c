// SPDX-License-Identifier: GPL-2.0-only
/*
 * The embedded default NBD server (see nbd_embedded.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nbd_embedded.h"

#define NBDKIT		"nbdkit"
#define START_TIMEOUT_MS 10000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t server_pid;	/* 0: none */
static pid_t owner_pid;		/* process that started it */
static uint64_t server_size;
static char dir[64], sock[96], pidfile[96];

static int find_in_path(const char *prog)
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
			return 0;
		if (!end)
			break;
		path = end + 1;
	}
	return -1;
}

static void stop_server(void)
{
	int status;

	if (!server_pid || owner_pid != getpid())
		return;
	kill(server_pid, SIGTERM);
	waitpid(server_pid, &status, 0);
	server_pid = 0;
	unlink(sock);
	unlink(pidfile);
	rmdir(dir);
}

static int start_server(uint64_t size, char *err, size_t errlen)
{
	char sizearg[64];
	struct stat st;
	int i, status;
	pid_t pid;

	if (find_in_path(NBDKIT)) {
		snprintf(err, errlen,
			 "no uri given, and nbdkit (which serves the embedded default target) is not installed: install the Debian package nbdkit (apt-get install nbdkit), or point the engine at a server with uri=nbd://host:port/export");
		return -1;
	}
	snprintf(dir, sizeof(dir), "/tmp/torus-embedded-XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "mkdtemp %s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(sock, sizeof(sock), "%s/nbd.sock", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/nbdkit.pid", dir);
	snprintf(sizearg, sizeof(sizearg), "size=%" PRIu64, size);

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		rmdir(dir);
		return -1;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		/* Keep fio's output clean; nbdkit errors still reach stderr. */
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		execlp(NBDKIT, NBDKIT, "--foreground", "--exit-with-parent",
		       "-U", sock, "--pidfile", pidfile, "memory", sizearg,
		       (char *)NULL);
		_exit(127);
	}

	/*
	 * nbdkit writes its pid file once it accepts connections; the socket
	 * exists a moment before that, when a connection is still refused.
	 */
	for (i = 0; i < START_TIMEOUT_MS / 10; i++) {
		if (!stat(pidfile, &st) && st.st_size > 0)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			snprintf(err, errlen,
				 "the embedded nbdkit server exited at start (status %d); run 'nbdkit -U /tmp/x.sock memory %s' by hand to see why",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1,
				 sizearg);
			rmdir(dir);
			return -1;
		}
		usleep(10000);
	}
	if (i == START_TIMEOUT_MS / 10) {
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		snprintf(err, errlen,
			 "the embedded nbdkit server was not ready on %s within %d s",
			 sock, START_TIMEOUT_MS / 1000);
		unlink(sock);
		unlink(pidfile);
		rmdir(dir);
		return -1;
	}
	server_pid = pid;
	owner_pid = getpid();
	server_size = size;
	atexit(stop_server);
	fprintf(stderr,
		"torus: no uri given: started the embedded default server 'nbdkit memory %s' on %s (pid %d)\n",
		sizearg, sock, (int)pid);
	return 0;
}

int nbd_embedded_get(uint64_t size, char *uri, size_t urilen, char *err,
			size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!server_pid)
		ret = start_server(size, err, errlen);
	else if (size > server_size) {
		snprintf(err, errlen,
			 "this job needs %" PRIu64 " bytes but the embedded default server was started with %" PRIu64 "; give every job the same size=, or start a server yourself and pass uri=",
			 size, server_size);
		ret = -1;
	}
	if (!ret)
		snprintf(uri, urilen, "nbd+unix:///?socket=%s", sock);
	pthread_mutex_unlock(&lock);
	return ret;
}
