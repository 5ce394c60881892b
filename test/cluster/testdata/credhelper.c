/* docker-credential-evil: the credential helper a hostile tenant's image carries (issue 32). If
 * anything runs it, it says so over TCP to the test's listener in the hub (the probe pod's root
 * and host mount are read-only, so the network is the only way out), then answers "get" with a
 * credential whose username names it. The address is built in: a helper run with a clean
 * environment must still be seen. Static, so it runs from an image holding nothing else. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MARKER_IP "10.78.0.1" /* hubIP in cluster_test.go */
#define MARKER_PORT 7781      /* markerPort in tenant_test.go */

static const char cred[] = "{\"ServerURL\":\"registry.cluster.test\",\"Username\":\"evil-helper-ran\",\"Secret\":\"x\"}\n";

int main(int argc, char **argv) {
	struct sockaddr_in addr;
	char msg[160] = "ran";
	int s;

	if (argc > 1) {
		strcat(msg, " ");
		strncat(msg, argv[1], 64);
	}
	strcat(msg, "\n");
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons(MARKER_PORT);
	if (inet_pton(AF_INET, MARKER_IP, &addr.sin_addr) != 1)
		return 64;
	alarm(5); /* a dropped SYN must not hang the caller */
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&addr, sizeof addr) == 0) {
		if (write(s, msg, strlen(msg)) < 0)
			return 65;
		close(s);
	}
	alarm(0);
	if (write(1, cred, sizeof cred - 1) < 0)
		return 66;
	return 0;
}
