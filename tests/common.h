/* SPDX-License-Identifier: MIT */
/* Shared helpers for ito's tests: checks that abort with the location and
 * values, scaled iteration counts, and small utilities. */
#ifndef ITO_TESTS_COMMON_H
#define ITO_TESTS_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito.h>

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* Compare integers, printing both values on failure. */
#define CHECK_EQ(a, b)                                                                  \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        if (va_ != vb_) {                                                               \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n",        \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                              \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* An ito call that must succeed (returns 0). */
#define OK(call) CHECK_EQ((call), 0)

/* n scaled by ITO_TEST_SCALE (0.1 in sanitizer builds), at least 1. */
static inline long test_scaled(long n)
{
    const char *s = getenv("ITO_TEST_SCALE");
    double f = s ? atof(s) : 1.0;
    long v = (long)(n * (f > 0 ? f : 1.0));
    return v > 0 ? v : 1;
}

/* A small deterministic PRNG for random interleavings (xorshift64*). */
static inline uint64_t test_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static inline struct timespec test_deadline_in(uint64_t ns)
{
    uint64_t t = ito_now_ns() + ns;
    struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };
    return ts;
}

/* ---- helpers added for the test suite ---------------------------------- */

#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Poll `cond` (re-evaluated) every millisecond, from an ito thread or a
 * foreign kernel thread, for at most `secs` seconds; abort with the location
 * if it never becomes true. A guard against hangs, not a timing assertion. */
#define WAIT_UNTIL(cond, secs)                                                          \
    do {                                                                                \
        uint64_t wu_end_ = ito_now_ns() + (uint64_t)(secs) * 1000000000ull;             \
        while (!(cond)) {                                                               \
            if (ito_now_ns() > wu_end_) {                                               \
                fprintf(stderr, "%s:%d: WAIT_UNTIL timed out after %ds: %s\n",          \
                        __FILE__, __LINE__, (int)(secs), #cond);                        \
                abort();                                                                \
            }                                                                           \
            ito_sleep_ns(1000000);                                                      \
        }                                                                               \
    } while (0)

/* The handle of a thread that is certainly not alive: a forged one. */
#define TEST_FORGED_THREAD ((ito_thread_t){ 12345 })

/* Run this test's own executable again with argv[1] = arg (for code that must
 * run in a fresh process, e.g. one that dies on purpose). Its stderr is
 * collected into err (NUL-terminated, truncated to errlen - 1 bytes); its
 * stdout is inherited. Returns the wait status. Call it before anything in the
 * parent that must not be forked (it forks, then execs at once).
 * test_run_self_watched also kills the child (SIGKILL: an idle ito process
 * keeps other signals pending) once it has run limit_ms (0: never), and
 * calls on_quiet(pid) whenever its stderr has been quiet for quiet_ms. */
static inline int test_run_self_watched(const char *arg, char *err, size_t errlen, int limit_ms, int quiet_ms,
                                        void (*on_quiet)(pid_t pid))
{
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        char *argv[] = { (char *)"self", (char *)arg, NULL };
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int wait_ms = quiet_ms > 0 ? quiet_ms : -1;
        if (limit_ms > 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            int64_t left = limit_ms - ((int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
            if (left <= 0) {
                kill(pid, SIGKILL);
                break;
            }
            if (wait_ms < 0 || left < wait_ms)
                wait_ms = (int)left;
        }
        struct pollfd pfd = { .fd = fd[0], .events = POLLIN };
        int p = poll(&pfd, 1, wait_ms);
        if (p < 0 && errno == EINTR)
            continue;
        if (p == 0) {
            if (on_quiet && quiet_ms > 0)
                on_quiet(pid);
            continue;
        }
        char tmp[4096];
        ssize_t r = read(fd[0], tmp, sizeof tmp);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r && n + 1 < errlen; i++)
            err[n++] = tmp[i];
    }
    if (errlen)
        err[n] = 0;
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR);
    return st;
}

static inline int test_run_self(const char *arg, char *err, size_t errlen)
{
    return test_run_self_watched(arg, err, errlen, 0, 0, NULL);
}

/* How many times needle occurs in hay. */
static inline int test_count(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

/* Spawn fn(NULL) in a thread named `name`. */
static inline ito_thread_t test_spawn_named(const char *name, void *(*fn)(void *))
{
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_name(&at, name));
    ito_thread_t t;
    OK(ito_spawn(&t, &at, fn, NULL));
    return t;
}

/* Run part() in a forked child that first sets the environment variables
 * env (pairs of name and value, NULL-terminated; NULL for none), then
 * initializes ito with `vprocs` vprocs (0: the default): for settings chosen
 * at initialization. Aborts, naming the part, if the child fails. Call it
 * before ito is initialized in the parent. */
static inline void test_run_part(const char *test, const char *name, void (*part)(void), int vprocs,
                                 const char *const *env)
{
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int i = 0; env && env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        ito_config_t c = ITO_CONFIG_INIT;
        c.vprocs = vprocs;
        OK(ito_init(&c));
        part();
        fflush(stdout);
        _exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: part \"%s\" failed\n", test, name);
        abort();
    }
}

/* Describe a wait status (for failure messages). */
/* Sleep (ito_sleep_ns, 100 ms at a time) until the process has used `ms`
 * of CPU time, or 60 s have gone by: shares of CPU time measured so are
 * the same on a loaded machine, which gives the process less of it. */
static inline void test_sleep_cpu_time(long ms)
{
    struct timespec c0, c, w0, now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    do {
        ito_sleep_ns(100 * 1000000ull);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((c.tv_sec - c0.tv_sec) * 1000000000ll + (c.tv_nsec - c0.tv_nsec) < ms * 1000000ll &&
             now.tv_sec - w0.tv_sec < 60);
}

static inline const char *test_status_str(int st, char *buf, size_t len)
{
    if (WIFEXITED(st))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "status 0x%x", st);
    return buf;
}

/* The child must have died of `sig` and written `needle` to stderr. */
#define CHECK_DIED_WITH(st, sig, errtext, needle)                                       \
    do {                                                                                \
        char sb_[128];                                                                  \
        if (!WIFSIGNALED(st) || WTERMSIG(st) != (sig)) {                                \
            fprintf(stderr, "%s:%d: child %s, expected signal %d; its stderr:\n%s\n",   \
                    __FILE__, __LINE__, test_status_str(st, sb_, sizeof sb_), (sig),   \
                    (errtext));                                                         \
            abort();                                                                    \
        }                                                                               \
        if (!strstr((errtext), (needle))) {                                             \
            fprintf(stderr, "%s:%d: child's stderr lacks \"%s\"; it was:\n%s\n",        \
                    __FILE__, __LINE__, (needle), (errtext));                           \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* A misuse that must abort with a clear message: its case runs in a fresh
 * process (test_run_self) and must die of SIGABRT with `needle` in its
 * stderr. */
struct test_abort_case {
    const char *name;
    void (*fn)(void);
    const char *needle;
};

/* main() of a test made of abort cases: with one argument, run that case
 * (the child); without, run every case in a child and check its death, each
 * message also containing `also` (NULL: nothing more). Returns main's status. */
static inline int test_abort_cases(int argc, char **argv, const struct test_abort_case *cases, int n,
                                   const char *also)
{
    if (argc == 2) {
        for (int i = 0; i < n; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                cases[i].fn();
                fprintf(stderr, "case %s: did not abort\n", argv[1]);
                return 0;
            }
        return 2;
    }
    for (int i = 0; i < n; i++) {
        static char err[8192];
        int st = test_run_self(cases[i].name, err, sizeof err);
        fprintf(stderr, "case %s:\n", cases[i].name);
        CHECK_DIED_WITH(st, SIGABRT, err, cases[i].needle);
        CHECK(!also || strstr(err, also) != NULL);
    }
    return 0;
}

/* Resident set size of this process in KiB (VmRSS), or -1. */
static inline long test_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* errno read and written through calls the compiler cannot inline or merge:
 * glibc declares __errno_location() const, so code that uses errno directly
 * on both sides of a call that may switch (and migrate the ito thread to
 * another kernel thread) may use the old kernel thread's errno. These
 * evaluate it afresh. (errno_direct.c shows the plain way.) */
static __attribute__((noipa, unused)) int test_errno(void) { return errno; }
static __attribute__((noipa, unused)) void test_set_errno(int v) { errno = v; }

/* True when built with AddressSanitizer or ThreadSanitizer. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#else
#define TEST_SANITIZED 0
#endif

#endif
