/* SPDX-License-Identifier: MIT */
/* The driver and helpers of the io_semantics tests (io_semantics.h): one
 * test executable per topic, this file and io_semantics_<topic>.c. */
#include "io_semantics.h"

atomic_int failures;
_Atomic(const char *) last_step = "start";
int dead_fd;
char *bad;
bool rings;
static atomic_int uniq;

void report(const struct ctx *c, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] io_semantics_%s.c:%d: %s\n", c->who, io_topic.name, line, msg);
    atomic_fetch_add(&failures, 1);
}

const char *ename(int e) { return e == SENTINEL ? "errno not set" : strerrorname_np(e) ? strerrorname_np(e) : "?"; }

long same_(const struct ctx *c, int line, const char *lcs, long r1, int e1, const char *ics, long r2,
                  int e2)
{
    if (r1 == -1 && e1 == SENTINEL)
        report(c, line, "the oracle %s failed without setting errno", lcs);
    if (r1 != r2)
        report(c, line, "%s returned %ld (%s); %s returned %ld (%s)", ics, r2, r2 < 0 ? ename(e2) : "-", lcs, r1,
               r1 < 0 ? ename(e1) : "-");
    else if (r1 == -1 && e1 != e2)
        report(c, line, "%s failed with %s; %s failed with %s", ics, ename(e2), lcs, ename(e1));
    return r2;
}

void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(seed * 131u + i * 7u + (i >> 9));
}

char *xmalloc(size_t n)
{
    char *p = malloc(n);
    CHECK(p);
    return p;
}

uint64_t ms_since(uint64_t t0) { return (ito_now_ns() - t0) / 1000000u; }

/* An unlinked temporary file in /tmp. */
int tmp_fd(void)
{
    char p[] = "/tmp/ito_io_XXXXXX";
    int fd = mkstemp(p);
    CHECK(fd >= 0);
    CHECK(unlink(p) == 0);
    return fd;
}

/* A temporary file in /tmp that keeps its name (path: 64 bytes). */
int tmp_named(char *path)
{
    strcpy(path, "/tmp/ito_io_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    return fd;
}

/* A fresh unused name under /tmp (path: 64 bytes). */
void tmp_name(char *path, const char *what)
{
    snprintf(path, 64, "/tmp/ito_io_%s_%d_%d", what, (int)getpid(), atomic_fetch_add(&uniq, 1));
}

void write_all(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t r = write(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

void read_all(int fd, char *b, size_t n)
{
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

void set_nonblock(int fd, bool on)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0);
    CHECK(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
}

/* Twin files must hold the same bytes and stand at the same position. */
void twin_eq_(const struct ctx *c, int line, int fa, int fb)
{
    struct stat sa, sb;
    CHECK(fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0);
    off_t pa = lseek(fa, 0, SEEK_CUR), pb = lseek(fb, 0, SEEK_CUR);
    if (pa != pb)
        report(c, line, "file positions differ: libc %ld, ito %ld", (long)pa, (long)pb);
    if (sa.st_size != sb.st_size) {
        report(c, line, "file sizes differ: libc %ld, ito %ld", (long)sa.st_size, (long)sb.st_size);
        return;
    }
    char *a = xmalloc((size_t)sa.st_size + 1), *b = xmalloc((size_t)sa.st_size + 1);
    CHECK(pread(fa, a, (size_t)sa.st_size, 0) == sa.st_size);
    CHECK(pread(fb, b, (size_t)sa.st_size, 0) == sa.st_size);
    if (memcmp(a, b, (size_t)sa.st_size) != 0)
        report(c, line, "file contents differ");
    free(a);
    free(b);
}

void *later_fn(void *a)
{
    struct later *l = a;
    int chunks = l->chunks > 0 ? l->chunks : 1;
    size_t done = 0;
    for (int i = 0; i < chunks; i++) {
        ito_sleep_ns(l->delay_ns);
        size_t part = i == chunks - 1 ? l->len - done : l->len / (size_t)chunks;
        switch (l->op) {
        case OP_WRITE:
            write_all(l->fd, l->buf + done, part);
            break;
        case OP_SEND:
            for (size_t k = 0; k < part;) {
                ssize_t r = send(l->fd, l->buf + done + k, part - k, MSG_NOSIGNAL);
                CHECK(r > 0);
                k += (size_t)r;
            }
            break;
        case OP_READ:
            read_all(l->fd, l->buf + done, part);
            break;
        case OP_READ_CLOSE:   /* read, wait as long again, close */
            read_all(l->fd, l->buf + done, part);
            ito_sleep_ns(l->delay_ns);
            CHECK(close(l->fd) == 0);
            break;
        case OP_CLOSE:
            CHECK(close(l->fd) == 0);
            break;
        case OP_SHUT_WR:
            CHECK(shutdown(l->fd, SHUT_WR) == 0);
            break;
        case OP_CONNECT:
            l->ret = connect(l->fd, l->sa, l->salen);
            break;
        case OP_OPEN:
            l->ret = open(l->path, l->flags);
            break;
        }
        done += part;
    }
    return NULL;
}

void later_start(struct later *l)
{
    if (l->ito)
        OK(ito_spawn(&l->t, NULL, later_fn, l));
    else
        CHECK_EQ(pthread_create(&l->p, NULL, later_fn, l), 0);
}

void later_join(struct later *l)
{
    if (l->ito)
        OK(ito_join(l->t, NULL));
    else
        CHECK_EQ(pthread_join(l->p, NULL), 0);
}

int tcp_listener(struct sockaddr_in *sa, int type_flags)
{
    int l = socket(AF_INET, SOCK_STREAM | type_flags, 0);
    CHECK(l >= 0);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)sa, sizeof *sa) == 0);
    CHECK(listen(l, 64) == 0);
    socklen_t len = sizeof *sa;
    CHECK(getsockname(l, (struct sockaddr *)sa, &len) == 0);
    return l;
}

int tcp_client(const struct sockaddr_in *sa)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s >= 0);
    CHECK(connect(s, (const struct sockaddr *)sa, sizeof *sa) == 0);
    return s;
}

bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_family == b->sin_family && a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* Two socket pairs of a type: s (ito) and t (libc). */
void pairs(int type, int s[2], int t[2])
{
    CHECK(socketpair(AF_UNIX, type, 0, s) == 0);
    CHECK(socketpair(AF_UNIX, type, 0, t) == 0);
}

void close4(int s[2], int t[2])
{
    CHECK(close(s[0]) == 0 && close(s[1]) == 0 && close(t[0]) == 0 && close(t[1]) == 0);
}

/* Run the topic's child check in a child process (argv[1] = its name). */
static void in_child(const char *name)
{
    static char err[16384];
    int st = test_run_self(name, err, sizeof err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char sb[128];
        fprintf(stderr, "io_semantics_%s: the check \"%s\" in a child process %s; its stderr:\n%s\n", io_topic.name,
                name, test_status_str(st, sb, sizeof sb), err);
        atomic_fetch_add(&failures, 1);
    }
}

static void *runner(void *a)
{
    io_topic.run(a);
    return NULL;
}

static void *child_runner(void *a)
{
    io_topic.child_run(a);
    return NULL;
}

static void on_alarm(int sig)
{
    const char *s = atomic_load(&last_step);
    char msg[256];
    int n = snprintf(msg, sizeof msg, "io_semantics_%s: timed out; last step started: %s\n", io_topic.name, s);
    if (n > 0)
        (void)!write(2, msg, (size_t)n);
    abort();
}

int main(int argc, char **argv)
{
    /* As the brief of io.h asks: compare with SIGPIPE ignored. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    umask(022);
    rings = ito_io_uring_active();
    if (argc == 1)
        printf("io_semantics_%s: io_uring active: %s\n", io_topic.name, rings ? "yes" : "no");
    fflush(stdout);

    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    dead_fd = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 100000 ? 99999 : (int)rl.rlim_cur - 1;
    for (int i = 0; i < 8; i++)
        CHECK(fcntl(dead_fd - i, F_GETFD) == -1 && errno == EBADF);
    bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(bad != MAP_FAILED);

    if (argc > 1) {
        CHECK(io_topic.child && strcmp(argv[1], io_topic.child) == 0);
        alarm(TEST_SANITIZED ? 30 : 10);
        struct ctx cm = { "child: main", true, dead_fd }, ci = { "child: ito thread", true, dead_fd };
        io_topic.child_run(&cm);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, child_runner, &ci));
        OK(ito_join(t, NULL));
        return atomic_load(&failures) ? 1 : 0;
    }
    if (io_topic.child)
        in_child(io_topic.child);
    alarm(TEST_SANITIZED ? 240 : 100);

    struct ctx cm = { "main", true, dead_fd };
    io_topic.run(&cm);
    if (rings && io_topic.main_rings)
        io_topic.main_rings(&cm);

    struct ctx ci = { "ito thread", true, dead_fd };
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, runner, &ci));
    OK(ito_join(t, NULL));

    struct ctx cf = { "foreign pthread", true, dead_fd };
    pthread_t pt;
    CHECK_EQ(pthread_create(&pt, NULL, runner, &cf), 0);
    CHECK_EQ(pthread_join(pt, NULL), 0);

    /* All at once: three ito threads and a pthread. */
    enum { NC = 3 };
    struct ctx cc[NC] = { { "concurrent ito 0", false, dead_fd - 1 },
                          { "concurrent ito 1", false, dead_fd - 2 },
                          { "concurrent ito 2", false, dead_fd - 3 } };
    struct ctx ccf = { "concurrent foreign", false, dead_fd - 4 };
    ito_thread_t ts[NC];
    for (int i = 0; i < NC; i++)
        OK(ito_spawn(&ts[i], NULL, runner, &cc[i]));
    CHECK_EQ(pthread_create(&pt, NULL, runner, &ccf), 0);
    for (int i = 0; i < NC; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(pthread_join(pt, NULL), 0);

    int f = atomic_load(&failures);
    if (f) {
        fprintf(stderr, "io_semantics_%s: %d mismatch(es) with the C library (io_uring %s)\n", io_topic.name, f,
                rings ? "on" : "off");
        return 1;
    }
    printf("io_semantics_%s: all checks passed\n", io_topic.name);
    return 0;
}
