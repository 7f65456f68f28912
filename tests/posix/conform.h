/* SPDX-License-Identifier: MIT */
/* The POSIX conformance suite's helpers. Every program in tests/posix/ is a
 * plain pthread program: it includes no ito header and runs twice under
 * ctest, once on the C library's own threads (so that a case that fails there
 * is known to test the standard, not ito) and once on ito through the drop-in
 * (LD_PRELOAD=libito-pthread.so). A failed check prints the case, the place
 * and the values, and aborts. */
#ifndef ITO_TESTS_POSIX_CONFORM_H
#define ITO_TESTS_POSIX_CONFORM_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *conform_case = "(setup)";

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__,        \
                    conform_case, #cond);                                               \
            abort();                                                                    \
        }                                                                               \
    } while (0)

#define CHECK_EQ(a, b)                                                                  \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        if (va_ != vb_) {                                                               \
            fprintf(stderr, "%s:%d: [%s] CHECK_EQ failed: %s == %s (%lld vs %lld)\n",   \
                    __FILE__, __LINE__, conform_case, #a, #b, va_, vb_);                \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* A call that returns an error number (the pthread convention): 0 expected. */
#define OK(call) CHECK_EQ((call), 0)
/* ... or this error number. */
#define FAILS(call, err) CHECK_EQ((call), (err))
/* A call that returns -1 and sets errno (the semaphore convention). */
#define FAILS_ERRNO(call, err)                                                          \
    do {                                                                                \
        errno = 0;                                                                      \
        CHECK_EQ((call), -1);                                                           \
        CHECK_EQ(errno, (err));                                                         \
    } while (0)

/* TSan reports some deliberate misuse whose error a case checks, and does not
 * know a few calls: those cases skip themselves when UNDER_TSAN. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define BAD_CLOCK ((clockid_t)1000) /* names no clock */

static inline uint64_t ns_of(struct timespec ts)
{
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Runs fn(arg) on a new thread, joins it and returns its result as an int. */
static inline int on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    void *ret;
    OK(pthread_create(&t, NULL, fn, arg));
    OK(pthread_join(t, &ret));
    return (int)(intptr_t)ret;
}

/* A counter threads can wait on (mutex + condition variable). */
struct sync {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int value;
};

static inline void sync_init(struct sync *s)
{
    OK(pthread_mutex_init(&s->mu, NULL));
    OK(pthread_cond_init(&s->cv, NULL));
    s->value = 0;
}

static inline void sync_destroy(struct sync *s)
{
    OK(pthread_cond_destroy(&s->cv));
    OK(pthread_mutex_destroy(&s->mu));
}

static inline void sync_add(struct sync *s, int n)
{
    OK(pthread_mutex_lock(&s->mu));
    s->value += n;
    OK(pthread_cond_broadcast(&s->cv));
    OK(pthread_mutex_unlock(&s->mu));
}

static inline void sync_wait(struct sync *s, int at_least)
{
    OK(pthread_mutex_lock(&s->mu));
    while (s->value < at_least)
        OK(pthread_cond_wait(&s->cv, &s->mu));
    OK(pthread_mutex_unlock(&s->mu));
}

static inline uint64_t conform_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep `us` microseconds, whatever interrupts the sleep. */
static inline void conform_pause_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Poll cond every half millisecond for up to ms milliseconds; the case
 * fails if it does not come true. */
#define WAIT_UNTIL(cond, ms)                                                            \
    do {                                                                                \
        uint64_t give_up_ = conform_now(CLOCK_MONOTONIC) + (uint64_t)(ms) * 1000000ull; \
        while (!(cond)) {                                                               \
            CHECK(conform_now(CLOCK_MONOTONIC) < give_up_);                             \
            conform_pause_us(500);                                                      \
        }                                                                               \
    } while (0)

/* fork() for a case: the child is guarded against hanging by an alarm of
 * `secs` seconds (the parent's alarm is not inherited). */
static inline pid_t conform_fork(unsigned secs)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        alarm(secs);
    return pid;
}

/* The child must have exited normally with status `want`. */
static inline void conform_reap(pid_t pid, int want)
{
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    CHECK_EQ(r, pid);
    if (!WIFEXITED(status))
        fprintf(stderr, "[%s] child %d ended by signal %d\n", conform_case, (int)pid,
                WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), want);
}

/* An absolute time `ns` from now on `clock`, for the timed calls. */
static inline struct timespec conform_deadline(clockid_t clock, uint64_t ns)
{
    uint64_t t = conform_now(clock) + ns;
    struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };
    return ts;
}

/* A timer that sends `sig` to the process `first_ns` from now, then every
 * `every_ns` (0: once). timer_delete ends it. */
static inline timer_t conform_signal_timer(int sig, uint64_t first_ns, uint64_t every_ns)
{
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    timer_t timer;
    CHECK_EQ(timer_create(CLOCK_MONOTONIC, &ev, &timer), 0);
    struct itimerspec its = { { (time_t)(every_ns / 1000000000u), (long)(every_ns % 1000000000u) },
                              { (time_t)(first_ns / 1000000000u), (long)(first_ns % 1000000000u) } };
    CHECK_EQ(timer_settime(timer, 0, &its, NULL), 0);
    return timer;
}

/* How many kernel threads the process has now. */
static inline int conform_kernel_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Is `name` in the comma-separated list of CONFORM_SKIP? ctest sets it for
 * the cases that a run cannot pass, saying why where it sets it. */
static inline int conform_skipped(const char *name)
{
    const char *list = getenv("CONFORM_SKIP");
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* Run one case: its name shows in every failure; a case that hangs is ended
 * by SIGALRM after `secs` seconds (the default action prints nothing, so say
 * which case first). */
#define RUN_CASE(fn, secs)                                                              \
    do {                                                                                \
        conform_case = #fn;                                                             \
        if (conform_skipped(#fn)) {                                                     \
            fprintf(stderr, "case %s: skipped (CONFORM_SKIP)\n", #fn);                 \
            break;                                                                      \
        }                                                                               \
        fprintf(stderr, "case %s\n", #fn);                                              \
        alarm(secs);                                                                    \
        fn();                                                                           \
        alarm(0);                                                                       \
    } while (0)

#endif
