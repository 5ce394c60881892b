//go:build ignore

// The line above keeps the Go tool from taking this package for cgo; scripts/loader.sh builds it.

/*
 * pullpath-loader PARTS_DIR OUT_FILE SIZE -- ARGS...
 *
 * Joins PARTS_DIR/part-000, part-001, ... (until the next one does not exist) into OUT_FILE
 * (replaced by a new file, mode 0755), checks that the joined size is SIZE, then execs
 * OUT_FILE ARGS... with the same environment. PARTS_DIR "-" reads the binary from standard input
 * until its end instead: verify streams it through the attach API, so nothing is stored in the API.
 *
 * No libc, on purpose: it ships in a ConfigMap (at most 1 MiB) and must run on whatever image the
 * node already has, so it is static and a few KB. Raw syscalls for x86_64 and aarch64.
 * Every failure removes OUT_FILE (a partial binary must never run), writes one line to stderr and
 * to /dev/termination-log (when it exists, so the reason comes back through the API) and exits
 * with its own status:
 *   120 usage   121 PARTS_DIR   122 a part (or stdin)   123 OUT_FILE   124 size mismatch   125 execve
 */

typedef unsigned long u64;

#if defined(__x86_64__)
#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_execve 59
#define SYS_exit_group 231
#define SYS_openat 257
#define SYS_unlinkat 263
#define O_DIRECTORY 0200000
static long sys(long n, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call loader_main\n"
	"	hlt\n");
#elif defined(__aarch64__)
#define SYS_unlinkat 35
#define SYS_openat 56
#define SYS_close 57
#define SYS_read 63
#define SYS_write 64
#define SYS_exit_group 94
#define SYS_execve 221
#define O_DIRECTORY 040000
static long sys(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, sp\n"
	"	bl loader_main\n"
	"	brk #0\n");
#else
#error "pullpath-loader: x86_64 and aarch64 only"
#endif

#define AT_FDCWD -100
#define O_RDONLY 0
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define O_CLOEXEC 02000000
#define EINTR 4
#define ENOENT 2

enum {
	EXIT_USAGE = 120,
	EXIT_DIR = 121,
	EXIT_PART = 122,
	EXIT_OUT = 123,
	EXIT_SIZE = 124,
	EXIT_EXEC = 125,
};

/* The names a user can look up; the numbers are the same on x86_64 and aarch64. */
static const struct {
	unsigned char num;
	char name[13];
} errnames[] = {
	{1, "EPERM"},	{2, "ENOENT"},	 {4, "EINTR"},	  {5, "EIO"},	     {7, "E2BIG"},
	{8, "ENOEXEC"}, {9, "EBADF"},	 {11, "EAGAIN"},  {12, "ENOMEM"},    {13, "EACCES"},
	{14, "EFAULT"}, {17, "EEXIST"},	 {20, "ENOTDIR"}, {21, "EISDIR"},    {22, "EINVAL"},
	{23, "ENFILE"}, {24, "EMFILE"},	 {26, "ETXTBSY"}, {27, "EFBIG"},     {28, "ENOSPC"},
	{30, "EROFS"},	{36, "ENAMETOOLONG"}, {40, "ELOOP"}, {122, "EDQUOT"},
};

static char buf[65536];
static char line[1024];
static u64 linelen;
static const char *created; /* OUT_FILE once opened for writing: die removes it */

static long xwrite(int fd, const char *p, u64 n)
{
	while (n > 0) {
		long w = sys(SYS_write, fd, (long)p, (long)n, 0);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? w : -5;
		p += w;
		n -= (u64)w;
	}
	return 0;
}

static void put(const char *s)
{
	while (*s && linelen < sizeof line - 1)
		line[linelen++] = *s++;
}

static char *utoa(u64 v, char *end, int mindigits)
{
	*--end = 0;
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
		mindigits--;
	} while (v || mindigits > 0);
	return end;
}

static void putu(u64 v)
{
	char d[24];
	put(utoa(v, d + sizeof d, 1));
}

static void puterr(long err)
{
	u64 e = (u64)-err;
	for (u64 i = 0; i < sizeof errnames / sizeof errnames[0]; i++) {
		if (errnames[i].num == e) {
			put(errnames[i].name);
			return;
		}
	}
	put("errno ");
	putu(e);
}

/* die ends the line, writes it to stderr and to the termination log, and exits. */
static void __attribute__((noreturn)) die(int status)
{
	if (created)
		sys(SYS_unlinkat, AT_FDCWD, (long)created, 0, 0);
	line[linelen++] = '\n';
	xwrite(2, line, linelen);
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/dev/termination-log", O_WRONLY | O_TRUNC | O_CLOEXEC, 0);
	if (fd >= 0) {
		xwrite((int)fd, line, linelen);
		sys(SYS_close, fd, 0, 0, 0);
	}
	for (;;)
		sys(SYS_exit_group, status, 0, 0, 0);
}

static void start(void)
{
	linelen = 0;
	put("pullpath-loader: ");
}

static void __attribute__((noreturn)) fail(const char *what, const char *op, long err, int status)
{
	start();
	put(what);
	put(": ");
	put(op);
	put(": ");
	puterr(err);
	die(status);
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* partname writes "part-%03d" into name, like Go's fmt. */
static const char *partname(char *name, u64 i)
{
	char d[24];
	const char *digits = utoa(i, d + sizeof d, 3);
	char *p = name;
	for (const char *s = "part-"; *s;)
		*p++ = *s++;
	while (*digits)
		*p++ = *digits++;
	*p = 0;
	return name;
}

int __attribute__((noreturn, used)) loader_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	char name[32];

	if (argc < 5 || !streq(argv[4], "--")) {
		start();
		put("usage: pullpath-loader PARTS_DIR OUT_FILE SIZE -- ARGS...");
		die(EXIT_USAGE);
	}
	const char *dir = argv[1], *out = argv[2];

	u64 want = 0;
	const char *s = argv[3];
	int ok = *s != 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || want > (~0UL >> 1) / 10) {
			ok = 0;
			break;
		}
		want = want * 10 + (u64)(*s - '0');
	}
	if (!ok) {
		start();
		put("SIZE \"");
		put(argv[3]);
		put("\": want a decimal byte count");
		die(EXIT_USAGE);
	}

	int stream = streq(dir, "-");
	long dfd = -1;
	if (!stream) {
		dfd = sys(SYS_openat, AT_FDCWD, (long)dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (dfd < 0)
			fail(dir, "open", dfd, EXIT_DIR);
	}
	/* replaced, not rewritten: an old file keeps its mode, and one still running gives ETXTBSY */
	sys(SYS_unlinkat, AT_FDCWD, (long)out, 0, 0);
	long ofd = sys(SYS_openat, AT_FDCWD, (long)out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (ofd < 0)
		fail(out, "open", ofd, EXIT_OUT);
	created = out;

	u64 total = 0, parts = 0;
	for (;; parts++) {
		long fd = 0; /* stdin: one part */
		const char *src = "stdin";
		if (stream && parts > 0)
			break;
		if (!stream) {
			src = partname(name, parts);
			fd = sys(SYS_openat, dfd, (long)src, O_RDONLY | O_CLOEXEC, 0);
			if (fd == -ENOENT && parts > 0)
				break;
			if (fd < 0)
				fail(src, "open", fd, EXIT_PART);
		}
		for (;;) {
			long n = sys(SYS_read, fd, (long)buf, sizeof buf, 0);
			if (n == -EINTR)
				continue;
			if (n < 0)
				fail(src, "read", n, EXIT_PART);
			if (n == 0)
				break;
			long w = xwrite((int)ofd, buf, (u64)n);
			if (w < 0)
				fail(out, "write", w, EXIT_OUT);
			total += (u64)n;
		}
		if (!stream) /* stdin stays open, at its end, for the program exec'd */
			sys(SYS_close, fd, 0, 0, 0);
	}
	if (!stream)
		sys(SYS_close, dfd, 0, 0, 0);
	/* closed before execve, or the kernel refuses to run a file open for writing (ETXTBSY) */
	long c = sys(SYS_close, ofd, 0, 0, 0);
	if (c < 0)
		fail(out, "close", c, EXIT_OUT);

	if (total != want && stream) {
		start();
		put("read ");
		putu(total);
		put(" bytes from stdin, want ");
		putu(want);
		put(total < want ? ": the stream was cut" : ": more bytes than expected");
		die(EXIT_SIZE);
	}
	if (total != want) {
		start();
		put("joined ");
		putu(total);
		put(" bytes from part-000..");
		put(partname(name, parts - 1));
		put(", want ");
		putu(want);
		put(total < want ? ": a part is missing or truncated" : ": more bytes than expected (a stale or extra part)");
		die(EXIT_SIZE);
	}

	/* argv[4] held "--": the new argv is OUT_FILE ARGS... */
	argv[4] = argv[2];
	long e = sys(SYS_execve, (long)out, (long)(argv + 4), (long)envp, 0);
	created = 0; /* complete and checked: kept, so an exec failure can be looked at */
	start();
	put(out);
	put(": execve: ");
	puterr(e);
	if (e == -13)
		put(" (is OUT_FILE on a noexec mount?)");
	die(EXIT_EXEC);
}
