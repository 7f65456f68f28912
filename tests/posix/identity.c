/* SPDX-License-Identifier: MIT */
/* What a thread owns in the C library stays its own while ito moves it
 * between kernel threads: errno, __thread variables (the program's, and a
 * library's loaded later with dlopen, both TLS models), the stack canary,
 * pthread_self, the owner that stdio's locks record (no torn lines), the
 * thread's locale (a new thread starts in the global one: "uselocale ...
 * The initial thread's locale is the global locale", and each thread's
 * locale is its own). And thousands of threads can wait at once on a
 * handful of kernel threads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "tls_lib.h"

static __thread long mine = 42;                 /* an initial value every thread starts with */
static __thread char mine_buf[64] = "initial";  /* a block, not a register */

#define NTHREADS 64
#define ROUNDS 2000

static void *identity(void *arg)
{
    long id = (long)arg;
    CHECK_EQ(mine, 42);
    CHECK(!strcmp(mine_buf, "initial"));
    CHECK_EQ(errno, 0);
    pthread_t self = pthread_self();
    for (int r = 0; r < ROUNDS; r++) {
        mine = id * 1000 + r;
        snprintf(mine_buf, sizeof mine_buf, "thread %ld round %d", id, r);
        errno = (int)(id + r);
        /* Give ito every chance to move us: yield, sleep, block. */
        if (r % 3 == 0)
            sched_yield();
        else if (r % 3 == 1)
            usleep(r % 50 == 1 ? 100 : 0);
        CHECK_EQ(errno, id + r);
        CHECK_EQ(mine, id * 1000 + r);
        char want[64];
        snprintf(want, sizeof want, "thread %ld round %d", id, r);
        CHECK(!strcmp(mine_buf, want));
        CHECK(pthread_equal(pthread_self(), self));
    }
    return (void *)id;
}

static void case_tls_errno_self(void)
{
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        OK(pthread_create(&t[i], NULL, identity, (void *)i));
    for (long i = 0; i < NTHREADS; i++) {
        void *r;
        OK(pthread_join(t[i], &r));
        CHECK_EQ((long)r, i);
    }
    CHECK_EQ(mine, 42);   /* main's own, untouched by the others */
}

/* Lines written by many threads at once through one FILE never interleave:
 * stdio's lock records its owner by thread, and each thread has its own. */
static void *writer(void *arg)
{
    FILE *f = arg;
    for (int i = 0; i < 500; i++) {
        flockfile(f);   /* a recursive lock: printf takes it again inside */
        fprintf(f, "%lx:", (unsigned long)pthread_self());
        if (i % 7 == 0)
            sched_yield();   /* switched out while holding the stream */
        fprintf(f, "%d:end\n", i);
        funlockfile(f);
    }
    return NULL;
}

static void case_stdio_lines(void)
{
    char path[] = "/tmp/ito-posix-stdio-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    CHECK(f != NULL);
    pthread_t t[16];
    for (int i = 0; i < 16; i++)
        OK(pthread_create(&t[i], NULL, writer, f));
    for (int i = 0; i < 16; i++)
        OK(pthread_join(t[i], NULL));
    fflush(f);
    rewind(f);
    char line[128];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long who;
        int n;
        char end[8];
        CHECK_EQ(sscanf(line, "%lx:%d:%7s", &who, &n, end), 3);
        CHECK(!strcmp(end, "end"));
        lines++;
    }
    CHECK_EQ(lines, 16 * 500);
    fclose(f);
    unlink(path);
}

/* A library loaded after the threads exist: its __thread variables have
 * their initial values in every thread, and stay per thread. */
static long (*lib_get)(int model);
static void (*lib_set)(int model, long v);

static void *use_lib(void *arg)
{
    long id = (long)arg;
    for (int model = 0; model < 2; model++) {
        CHECK_EQ(lib_get(model), 1000 + model);
        lib_set(model, id);
    }
    sched_yield();
    usleep(1000);
    for (int model = 0; model < 2; model++)
        CHECK_EQ(lib_get(model), id);
    return NULL;
}

static void case_dlopen_tls(void)
{
    struct tls_lib l = tls_lib_load();
    lib_get = l.get;
    lib_set = l.set;
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        OK(pthread_create(&t[i], NULL, use_lib, (void *)(i + 1)));
    for (int i = 0; i < 8; i++)
        OK(pthread_join(t[i], NULL));
}

/* Threads that existed before the dlopen (parked meanwhile). */
static sem_t go, ready;

static void *before_dlopen(void *arg)
{
    sem_post(&ready);
    sem_wait(&go);
    return use_lib(arg);
}

static void case_dlopen_tls_existing(void)
{
    OK(sem_init(&go, 0, 0));
    OK(sem_init(&ready, 0, 0));
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        OK(pthread_create(&t[i], NULL, before_dlopen, (void *)(i + 1)));
    for (int i = 0; i < 8; i++)
        OK(sem_wait(&ready));
    case_dlopen_tls();   /* loads the library (or finds it loaded) */
    for (int i = 0; i < 8; i++)
        OK(sem_post(&go));
    for (int i = 0; i < 8; i++)
        OK(pthread_join(t[i], NULL));
}

/* -fstack-protector-all: every function here checks the canary on return,
 * also after resuming on another kernel thread. */
__attribute__((noinline)) static int canary_frame(int depth)
{
    volatile char buf[32];
    memset((char *)buf, depth, sizeof buf);
    if (depth > 0) {
        sched_yield();
        return canary_frame(depth - 1) + buf[3];
    }
    return buf[5];
}

static void *canary(void *arg)
{
    int s = 0;
    for (int i = 0; i < 200; i++)
        s += canary_frame(8);
    return (void *)(long)s;
}

static void case_stack_canary(void)
{
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        OK(pthread_create(&t[i], NULL, canary, NULL));
    for (int i = 0; i < 8; i++)
        OK(pthread_join(t[i], NULL));
}

/* Thousands of threads blocked at once: on ito they wait on a few kernel
 * threads (the carriers), not one each. */
#define WAITERS 5000
static pthread_mutex_t wm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wc = PTHREAD_COND_INITIALIZER;
static int released, arrived;

static void *waiter(void *arg)
{
    pthread_mutex_lock(&wm);
    arrived++;
    while (!released)
        pthread_cond_wait(&wc, &wm);
    pthread_mutex_unlock(&wm);
    return NULL;
}

static void case_thousands_waiting(void)
{
    pthread_attr_t a;
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstacksize(&a, 64 * 1024));
    pthread_t *t = calloc(WAITERS, sizeof *t);
    CHECK(t != NULL);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_create(&t[i], &a, waiter, NULL));
    for (;;) {
        pthread_mutex_lock(&wm);
        int n = arrived;
        pthread_mutex_unlock(&wm);
        if (n == WAITERS)
            break;
        usleep(1000);
    }
    int kt = conform_kernel_threads();
    fprintf(stderr, "%d threads waiting on %d kernel threads\n", WAITERS, kt);
    if (getenv("POSIX_EXPECT_FEW_KERNEL_THREADS"))
        CHECK(kt < 64);
    pthread_mutex_lock(&wm);
    released = 1;
    pthread_cond_broadcast(&wc);
    pthread_mutex_unlock(&wm);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_join(t[i], NULL));
    free(t);
    pthread_attr_destroy(&a);
}

/* Each thread starts in the global locale whatever the threads before it
 * (whose C-library state ito reuses) did, and the character tables work. */
#define LOCALE_ROUNDS 50

static void *switches_locale(void *arg)
{
    CHECK(uselocale((locale_t)0) == LC_GLOBAL_LOCALE);
    CHECK(isdigit('7') && !isdigit('x') && isalpha('q') && toupper('q') == 'Q');
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    CHECK(c != (locale_t)0);
    CHECK(uselocale(c) == LC_GLOBAL_LOCALE);
    CHECK(uselocale((locale_t)0) == c);
    sched_yield();   /* (may move to another kernel thread: the locale moves too) */
    CHECK(uselocale((locale_t)0) == c);
    CHECK(isdigit('7') && toupper('q') == 'Q');
    return c;        /* exits still in it; main frees it */
}

static void case_locale_per_thread(void)
{
    for (int i = 0; i < LOCALE_ROUNDS; i++) {
        pthread_t t;
        void *c;
        OK(pthread_create(&t, NULL, switches_locale, NULL));
        OK(pthread_join(t, &c));
        freelocale((locale_t)c);
    }
    CHECK(uselocale((locale_t)0) == LC_GLOBAL_LOCALE);
}

int main(void)
{
    RUN_CASE(case_tls_errno_self, 60);
    RUN_CASE(case_stdio_lines, 60);
    RUN_CASE(case_dlopen_tls_existing, 60);
    RUN_CASE(case_stack_canary, 60);
    RUN_CASE(case_thousands_waiting, 120);
    RUN_CASE(case_locale_per_thread, 30);
    return 0;
}
