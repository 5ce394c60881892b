/* exitwith CODE MESSAGE: writes MESSAGE to the termination log and to stdout, then exits with
 * CODE. The cluster tier ships it in a ConfigMap to prove a program reaches a node without a pull. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3)
		return 64;
	size_t n = strlen(argv[2]);
	int fd = open("/dev/termination-log", O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		if (write(fd, argv[2], n) < 0)
			return 65;
		close(fd);
	}
	if (write(1, argv[2], n) < 0 || write(1, "\n", 1) < 0)
		return 66;
	return atoi(argv[1]);
}
