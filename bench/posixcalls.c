/* SPDX-License-Identifier: MIT */
/*
 * posixcalls — POSIX thread calls of an unmodified program, on the C
 * library's threads or on ito's through libito-pthread (the drop-in).
 *
 *   posixcalls --impl pthread|ito-pthread --op nullfork|signalwait|yield|mutex|pipe [--n N]
 *
 * The program uses only <pthread.h>: it is the same binary both ways. With
 * --impl ito-pthread it runs itself again with libito-pthread preloaded (the
 * library next to the bench folder, as in the build tree) and ITO_VPROCS=1;
 * with --impl pthread the process is restricted to one CPU. So both run on
 * one processor, like the 1-vproc figures of nullfork, signalwait and yield,
 * which measure ito's own API on the same operations.
 *   nullfork    pthread_create + pthread_join of an empty thread
 *   signalwait  round trip of two threads through a mutex, two condition
 *               variables and a turn variable
 *   yield       two threads calling sched_yield in turn; ns per yield
 *   mutex       pthread_mutex_lock + unlock, uncontended
 *   pipe        round trip of a byte through two blocking pipes, one per
 *               direction: each read waits until the other thread writes
 *               (on ito the reader parks on the vproc's io_uring ring, like
 *               kpingpong's ito_read; on the C library the kernel thread
 *               blocks)
 * A warm-up of N/10 operations precedes the timed ones.
 */
#include <limits.h>
#include <unistd.h>

#include "common.h"

static void *empty(void *arg) { return arg; }

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static int turn;
static long rounds;

static void *pingpong(void *arg)
{
    int me = (int)(intptr_t)arg;
    pthread_mutex_lock(&m);
    for (long i = 0; i < rounds; i++) {
        while (turn != me)
            pthread_cond_wait(&turn_cv[me], &m);
        turn = !me;
        pthread_cond_signal(&turn_cv[!me]);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static uint64_t run_signalwait(long n)
{
    rounds = n;
    turn = 0;
    pthread_t a, b;
    uint64_t t0 = bench_now_ns();
    CHECK0(pthread_create(&a, NULL, pingpong, (void *)0));
    CHECK0(pthread_create(&b, NULL, pingpong, (void *)1));
    CHECK0(pthread_join(a, NULL));
    CHECK0(pthread_join(b, NULL));
    return bench_now_ns() - t0;
}

static long yields;

static void *yielder(void *arg)
{
    for (long i = 0; i < yields; i++)
        sched_yield();
    return NULL;
}

static uint64_t run_yield(long n)
{
    yields = n / 2;
    pthread_t a, b;
    uint64_t t0 = bench_now_ns();
    CHECK0(pthread_create(&a, NULL, yielder, NULL));
    CHECK0(pthread_create(&b, NULL, yielder, NULL));
    CHECK0(pthread_join(a, NULL));
    CHECK0(pthread_join(b, NULL));
    return bench_now_ns() - t0;
}

static int to_b[2], to_a[2];
static long trips;

static void *pipe_end(void *arg)
{
    int me = (int)(intptr_t)arg;
    int in = me ? to_b[0] : to_a[0], out = me ? to_a[1] : to_b[1];
    char c = 'p';
    for (long i = 0; i < trips; i++) {
        if (me == 0 && write(out, &c, 1) != 1)
            bench_fail("pipe write: %s", strerror(errno));
        if (read(in, &c, 1) != 1 || c != 'p')
            bench_fail("pipe read: wrong message or %s", strerror(errno));
        if (me == 1 && write(out, &c, 1) != 1)
            bench_fail("pipe write: %s", strerror(errno));
    }
    return NULL;
}

static uint64_t run_pipe(long n)
{
    trips = n;
    if (pipe(to_a) != 0 || pipe(to_b) != 0)
        bench_fail("pipe: %s", strerror(errno));
    pthread_t a, b;
    uint64_t t0 = bench_now_ns();
    CHECK0(pthread_create(&a, NULL, pipe_end, (void *)0));
    CHECK0(pthread_create(&b, NULL, pipe_end, (void *)1));
    CHECK0(pthread_join(a, NULL));
    CHECK0(pthread_join(b, NULL));
    uint64_t ns = bench_now_ns() - t0;
    close(to_a[0]), close(to_a[1]), close(to_b[0]), close(to_b[1]);
    return ns;
}

static uint64_t run_nullfork(long n)
{
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        CHECK0(pthread_create(&t, NULL, empty, NULL));
        CHECK0(pthread_join(t, NULL));
    }
    return bench_now_ns() - t0;
}

static uint64_t run_mutex(long n)
{
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    return bench_now_ns() - t0;
}

/* Run this program again with libito-pthread in front of the C library. */
static void reexec_on_ito(char **argv)
{
    char self[PATH_MAX], lib[PATH_MAX + 32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        bench_fail("cannot find this program (/proc/self/exe)");
    self[len] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    snprintf(lib, sizeof lib, "%s/../libito-pthread.so", self);
    if (access(lib, R_OK) != 0)
        bench_fail("%s not found (libito-pthread is built in plain builds only)", lib);
    setenv("LD_PRELOAD", lib, 1);
    setenv("ITO_VPROCS", "1", 1);
    setenv("POSIXCALLS_ON_ITO", "1", 1);
    *slash = '/';
    execv(self, argv);
    bench_fail("cannot run %s again: %s", self, strerror(errno));
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--op", "--n", NULL };
    bench_exp = "posixcalls";
    bench_impl = arg_str(argc, argv, "--impl", "pthread");
    args_check(argc, argv, known);
    const char *op = arg_str(argc, argv, "--op", "nullfork");
    bool ito = strcmp(bench_impl, "ito-pthread") == 0;
    if (!ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be pthread or ito-pthread");
    if (ito && !getenv("POSIXCALLS_ON_ITO"))
        reexec_on_ito(argv);
    if (!ito)
        restrict_to_cpus(1);
    uint64_t (*run)(long);
    long dflt;
    if (!strcmp(op, "nullfork"))
        run = run_nullfork, dflt = ito ? 200000 : 5000;
    else if (!strcmp(op, "signalwait"))
        run = run_signalwait, dflt = ito ? 500000 : 50000;
    else if (!strcmp(op, "yield"))
        run = run_yield, dflt = ito ? 2000000 : 200000;
    else if (!strcmp(op, "mutex"))
        run = run_mutex, dflt = 5000000;
    else if (!strcmp(op, "pipe"))
        run = run_pipe, dflt = ito ? 200000 : 50000;
    else
        bench_fail("--op must be nullfork, signalwait, yield, mutex or pipe");
    long n = (long)arg_int(argc, argv, "--n", dflt);
    if (n < 2)
        bench_fail("--n must be at least 2");
    run(n / 10 + 2);
    uint64_t ns = run(n);
    json_begin(bench_exp, bench_impl);
    json_str("op", op);
    json_int("cpus", 1);
    json_int("n", n);
    json_num("total_s", (double)ns / 1e9);
    json_num("ns_per_op", (double)ns / (double)n);
    json_end();
    return 0;
}
