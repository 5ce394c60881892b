//go:build ignore

// The line above keeps the Go tool from taking this package for cgo; scripts/loader.sh builds it.

/*
 * pullpath-loader PARTS_DIR OUT_FILE SIZE SHA256 -- ARGS...
 *
 * Joins PARTS_DIR/part-000, part-001, ... (until the next one does not exist), or with PARTS_DIR
 * "-" reads standard input to its end (verify streams the binary through the attach API, so
 * nothing is stored in the API), into a sealed memfd; checks that it holds SIZE bytes whose
 * SHA-256 is SHA256 (64 hex digits), read back after the seal; then execs that very memfd as
 * OUT_FILE ARGS... Anything else is refused: whoever attaches first to the pod's stdin, or replaces
 * a ConfigMap, cannot make it run other bytes. Sealed, the checked bytes are the ones the kernel
 * runs. Where memfd_create is refused (a seccomp profile, a kernel before 3.17) OUT_FILE (replaced
 * by a new file, mode 0755) holds the binary instead, checked the same way.
 *
 * The program gets only the environment variables named PULLPATH_*: what the image the probe
 * borrows sets (PATH, HOME, SSL_CERT_FILE, HTTPS_PROXY, LD_PRELOAD, GODEBUG...) never reaches it.
 *
 * No libc, on purpose: it ships in a ConfigMap (at most 1 MiB) and must run on whatever image the
 * node already has, so it is static and a few KB. Raw syscalls for x86_64 and aarch64.
 * Every failure removes OUT_FILE (a partial binary must never run), writes one line to stderr and
 * to /dev/termination-log (when it exists, so the reason comes back through the API) and exits
 * with its own status:
 *   119 digest mismatch   120 usage   121 PARTS_DIR   122 a part (or stdin)   123 OUT_FILE
 *   124 size mismatch   125 execve
 */

typedef unsigned long u64;

#if defined(__x86_64__)
#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_pread64 17
#define SYS_execve 59
#define SYS_fcntl 72
#define SYS_exit_group 231
#define SYS_openat 257
#define SYS_unlinkat 263
#define SYS_memfd_create 319
#define SYS_execveat 322
#define O_DIRECTORY 0200000
static long sys5(long n, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
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
#define SYS_fcntl 25
#define SYS_unlinkat 35
#define SYS_openat 56
#define SYS_close 57
#define SYS_read 63
#define SYS_write 64
#define SYS_pread64 67
#define SYS_exit_group 94
#define SYS_execve 221
#define SYS_memfd_create 279
#define SYS_execveat 281
#define O_DIRECTORY 040000
static long sys5(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
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

#define sys(n, a, b, c, d) sys5(n, a, b, c, d, 0)

#define AT_FDCWD -100
#define O_RDONLY 0
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define O_CLOEXEC 02000000
#define O_RDWR 02
#define EINTR 4
#define ENOENT 2
#define MFD_CLOEXEC 1
#define MFD_ALLOW_SEALING 2
#define F_ADD_SEALS 1033
#define F_SEAL_ALL 15 /* SEAL | SHRINK | GROW | WRITE */
#define AT_EMPTY_PATH 0x1000

enum {
	EXIT_DIGEST = 119,
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

/* SHA-256 (FIPS 180-4), streaming. */
static const unsigned int K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

struct sha256 {
	unsigned int h[8];
	unsigned char block[64];
	u64 len; /* bytes hashed */
};

static unsigned int ror(unsigned int x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(struct sha256 *c, const unsigned char *p)
{
	unsigned int w[64], a, b, cc, d, e, f, g, h;
	for (int i = 0; i < 16; i++)
		w[i] = (unsigned int)p[4 * i] << 24 | (unsigned int)p[4 * i + 1] << 16 | (unsigned int)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		unsigned int s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		unsigned int s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
	for (int i = 0; i < 64; i++) {
		unsigned int t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
		unsigned int t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
		h = g, g = f, f = e, e = d + t1, d = cc, cc = b, b = a, a = t1 + t2;
	}
	c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d, c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha_init(struct sha256 *c)
{
	static const unsigned int iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	for (int i = 0; i < 8; i++)
		c->h[i] = iv[i];
	c->len = 0;
}

static void sha_update(struct sha256 *c, const unsigned char *p, u64 n)
{
	while (n > 0) {
		u64 used = c->len % 64, take = 64 - used;
		if (take > n)
			take = n;
		for (u64 i = 0; i < take; i++)
			c->block[used + i] = p[i];
		c->len += take, p += take, n -= take;
		if (c->len % 64 == 0)
			sha_block(c, c->block);
	}
}

/* sha_hex ends the hash and writes its 64 lowercase hex digits and a NUL into out. */
static void sha_hex(struct sha256 *c, char *out)
{
	u64 bits = c->len * 8;
	unsigned char pad[72] = {0x80};
	u64 n = (c->len % 64 < 56) ? 56 - c->len % 64 : 120 - c->len % 64;
	for (int i = 0; i < 8; i++)
		pad[n + (u64)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha_update(c, pad, n + 8);
	for (int i = 0; i < 32; i++) {
		unsigned char b = (unsigned char)(c->h[i / 4] >> (24 - 8 * (i % 4)));
		out[2 * i] = "0123456789abcdef"[b >> 4];
		out[2 * i + 1] = "0123456789abcdef"[b & 15];
	}
	out[64] = 0;
}

static int prefixed(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return *prefix == 0;
}

int __attribute__((noreturn, used)) loader_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	char name[32];
	static char got[65];

	if (argc < 6 || !streq(argv[5], "--")) {
		start();
		put("usage: pullpath-loader PARTS_DIR OUT_FILE SIZE SHA256 -- ARGS...");
		die(EXIT_USAGE);
	}
	const char *dir = argv[1], *out = argv[2], *digest = argv[4];

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
	int hexlen = 0;
	while (digest[hexlen] && ((digest[hexlen] >= '0' && digest[hexlen] <= '9') || (digest[hexlen] >= 'a' && digest[hexlen] <= 'f')))
		hexlen++;
	if (hexlen != 64 || digest[64]) {
		start();
		put("SHA256: want 64 lowercase hex digits");
		die(EXIT_USAGE);
	}

	/* only PULLPATH_* variables reach the program, in place */
	char **keep = envp;
	for (char **e = envp; *e; e++)
		if (prefixed(*e, "PULLPATH_"))
			*keep++ = *e;
	*keep = 0;

	int stream = streq(dir, "-");
	long dfd = -1;
	if (!stream) {
		dfd = sys(SYS_openat, AT_FDCWD, (long)dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (dfd < 0)
			fail(dir, "open", dfd, EXIT_DIR);
	}
	long ofd = sys(SYS_memfd_create, (long)"pullpath", MFD_CLOEXEC | MFD_ALLOW_SEALING, 0, 0);
	int memfd = ofd >= 0;
	if (!memfd) {
		/* replaced, not rewritten: an old file keeps its mode, and one still running gives ETXTBSY */
		sys(SYS_unlinkat, AT_FDCWD, (long)out, 0, 0);
		ofd = sys(SYS_openat, AT_FDCWD, (long)out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (ofd < 0)
			fail(out, "open", ofd, EXIT_OUT);
		created = out;
	}
	const char *target = memfd ? "memfd" : out;

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
			if (total + (u64)n > want) {
				total += (u64)n; /* never stored: too long is refused below */
				continue;
			}
			long w = xwrite((int)ofd, buf, (u64)n);
			if (w < 0)
				fail(target, "write", w, EXIT_OUT);
			total += (u64)n;
		}
		if (!stream) /* stdin stays open, at its end, for the program exec'd */
			sys(SYS_close, fd, 0, 0, 0);
	}
	if (!stream)
		sys(SYS_close, dfd, 0, 0, 0);

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

	/* sealed first, then hashed as stored: the bytes checked are the bytes that run */
	if (memfd) {
		long r = sys(SYS_fcntl, ofd, F_ADD_SEALS, F_SEAL_ALL, 0);
		if (r < 0)
			fail("memfd", "seal", r, EXIT_OUT);
	}
	struct sha256 h;
	sha_init(&h);
	for (u64 off = 0; off < total;) {
		long n = sys(SYS_pread64, ofd, (long)buf, sizeof buf, (long)off);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			fail(target, "read back", n < 0 ? n : -5, EXIT_OUT);
		sha_update(&h, (const unsigned char *)buf, (u64)n);
		off += (u64)n;
	}
	sha_hex(&h, got);
	if (!streq(got, digest)) {
		start();
		put("sha256 of the ");
		putu(total);
		put(" bytes is ");
		put(got);
		put(", want ");
		put(digest);
		put(": refused, not run");
		die(EXIT_DIGEST);
	}

	/* argv[5] held "--": the new argv is OUT_FILE ARGS... */
	argv[5] = argv[2];
	long e;
	if (memfd) {
		e = sys5(SYS_execveat, ofd, (long)"", (long)(argv + 5), (long)envp, AT_EMPTY_PATH);
	} else {
		/* closed before execve, or the kernel refuses to run a file open for writing (ETXTBSY) */
		long c = sys(SYS_close, ofd, 0, 0, 0);
		if (c < 0)
			fail(out, "close", c, EXIT_OUT);
		e = sys(SYS_execve, (long)out, (long)(argv + 5), (long)envp, 0);
		created = 0; /* complete and checked: kept, so an exec failure can be looked at */
	}
	start();
	put(target);
	put(": execve: ");
	puterr(e);
	if (e == -13)
		put(" (is OUT_FILE on a noexec mount?)");
	die(EXIT_EXEC);
}
