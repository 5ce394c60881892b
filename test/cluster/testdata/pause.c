/* The cluster tier's sandbox ("pause") program and the entrypoint of the images it pushes: it
 * sleeps until a signal ends it. Static, so it runs from an image holding nothing else. */
#include <signal.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

int main(void) {
	signal(SIGTERM, stop);
	signal(SIGINT, stop);
	for (;;)
		pause();
}
