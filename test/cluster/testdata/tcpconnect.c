/* tcpconnect IP PORT: one TCP connect, its outcome written to the termination log and to stdout;
 * exits 0 when connected, 1 when not. The cluster tier runs it from a pod's and from the node's
 * network namespace to show which of them has a route. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void report(const char *msg) {
	int fd = open("/dev/termination-log", O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		if (write(fd, msg, strlen(msg)) < 0)
			_exit(65);
		close(fd);
	}
	puts(msg);
}

int main(int argc, char **argv) {
	struct sockaddr_in addr;
	char msg[256];
	int s;

	if (argc != 3)
		return 64;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1)
		return 64;
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return 66;
	alarm(10); /* a dropped SYN must not hang the pod */
	if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) {
		snprintf(msg, sizeof msg, "connect %s:%s: %s", argv[1], argv[2], strerror(errno));
		report(msg);
		return 1;
	}
	snprintf(msg, sizeof msg, "connected to %s:%s", argv[1], argv[2]);
	report(msg);
	close(s);
	return 0;
}
