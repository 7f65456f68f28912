/* SPDX-License-Identifier: MIT */
/*
 * procprio — two parallel programs of unequal priority on one machine
 * ([SA §4.1]: processors go to the highest priority that can use them).
 *
 *   procprio --impl ito|pthread [--rounds R] [--round-us U] [--high-threads T]
 *
 * Both programs are bulk-synchronous: in each round every one of their
 * threads computes U µs (default 500) of arithmetic, then all meet at a
 * barrier (ito_barrier_t, or pthread_barrier_t). The low-priority program L
 * runs a thread per CPU and never stops; the high-priority program H runs T
 * threads (default: one per CPU) for R rounds (default 400). Measured:
 *   alone_s   H's time alone (the second of two runs: the first,
 *             alone_first_s, also wakes the CPUs up);
 *   high_s    H's time while L computes;
 *   slowdown  high_s / alone_s: what L costs H (1.0: H kept its processors);
 *   low_share L's rounds per second while H ran, over L's rate alone: the
 *             part of the machine L got.
 * ito: H has ITO_PRIORITY=10, L ITO_PRIORITY=0, in an allocation domain of
 * their own. pthread: L runs at nice 19, H at nice 0 — what the kernel offers
 * instead; its threads are not pinned.
 * With T < CPUs, H can use only T processors and the others should be L's.
 */
#include "common.h"

#include <limits.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

static enum { ITO, PTH } impl;
static long rounds = 400, round_us = 500;
static uint64_t iters_per_us;

/* Shared between the parent and the programs. */
static struct shared {
    _Atomic int low_ready, stop;
    _Atomic uint64_t low_rounds;
    double high_s;
} *sh;

static volatile double sink;

static void compute(uint64_t iters)
{
    double x = 1.0;
    for (uint64_t i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void calibrate(void)
{
    uint64_t n = 1000000, t0 = bench_now_ns();
    compute(n);
    uint64_t dt = bench_now_ns() - t0;
    for (int i = 0; i < 3; i++) {   /* take the fastest of a few */
        t0 = bench_now_ns();
        compute(n);
        uint64_t d = bench_now_ns() - t0;
        if (d < dt)
            dt = d;
    }
    iters_per_us = n * 1000 / (dt ? dt : 1);
    if (!iters_per_us)
        iters_per_us = 1;
}

struct program {
    int threads;
    long rounds;   /* < 0: until sh->stop */
    bool low;
    _Atomic long quit_at;   /* L: the last round */
    ito_barrier_t ib;
    pthread_barrier_t pb;
};

static void *worker(void *arg)
{
    struct program *p = arg;
    for (long r = 0; p->rounds < 0 || r < p->rounds; r++) {
        compute(iters_per_us * (uint64_t)round_us);
        int serial = impl == ITO ? ito_barrier_wait(&p->ib) : pthread_barrier_wait(&p->pb);
        bool last = impl == ITO ? serial == ITO_BARRIER_SERIAL : serial == PTHREAD_BARRIER_SERIAL_THREAD;
        if (p->low && last) {
            atomic_fetch_add(&sh->low_rounds, 1);
            /* Everyone stops after the next round: it was written before
             * its barrier, which orders it before every worker's load. */
            if (atomic_load(&sh->stop) && atomic_load_explicit(&p->quit_at, memory_order_relaxed) == LONG_MAX)
                atomic_store_explicit(&p->quit_at, r + 1, memory_order_relaxed);
        }
        if (r >= atomic_load_explicit(&p->quit_at, memory_order_relaxed))
            break;
    }
    return NULL;
}

/* Run a program in this (child) process; returns its time in seconds. */
static double run_program(int threads, long nrounds, bool low)
{
    struct program p = { .threads = threads, .rounds = nrounds, .low = low, .quit_at = LONG_MAX };
    if (impl == ITO) {
        ito_start(0);
        CHECK0(ito_barrier_init(&p.ib, (unsigned)threads));
    } else {
        CHECK0(pthread_barrier_init(&p.pb, NULL, (unsigned)threads));
    }
    if (low)
        atomic_store(&sh->low_ready, 1);
    uint64_t t0 = bench_now_ns();
    ito_thread_t it[BENCH_MAX_CPUS];
    pthread_t pt[BENCH_MAX_CPUS];
    for (int i = 1; i < threads; i++)
        CHECK0(impl == ITO ? ito_spawn(&it[i], NULL, worker, &p) : pthread_create(&pt[i], NULL, worker, &p));
    worker(&p);
    for (int i = 1; i < threads; i++)
        CHECK0(impl == ITO ? ito_join(it[i], NULL) : pthread_join(pt[i], NULL));
    return (double)(bench_now_ns() - t0) / 1e9;
}

static pid_t spawn(int threads, long nrounds, bool low)
{
    pid_t pid = fork();
    if (pid < 0)
        bench_fail("fork: %s", strerror(errno));
    if (pid)
        return pid;
    if (impl == ITO)
        setenv("ITO_PRIORITY", low ? "0" : "10", 1);
    else if (low && setpriority(PRIO_PROCESS, 0, 19) != 0)
        _exit(3);
    double s = run_program(threads, nrounds, low);
    if (!low)
        sh->high_s = s;
    exit(0);   /* exit, not _exit: ito leaves the table at exit */
}

static void wait_ok(pid_t pid, const char *what)
{
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bench_fail("the %s program failed", what);
}

/* L's rounds per second over `ms` from now. */
static double low_rate(long ms)
{
    uint64_t r0 = atomic_load(&sh->low_rounds), t0 = bench_now_ns();
    usleep((useconds_t)ms * 1000u);
    return (double)(atomic_load(&sh->low_rounds) - r0) * 1e9 / (double)(bench_now_ns() - t0);
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--rounds", "--round-us", "--high-threads", NULL };
    args_check(argc, argv, known);
    bench_exp = "procprio";
    const char *im = arg_str(argc, argv, "--impl", "ito");
    if (strcmp(im, "ito") && strcmp(im, "pthread"))
        bench_fail("--impl ito|pthread");
    impl = !strcmp(im, "ito") ? ITO : PTH;
    bench_impl = im;
    int ncpu = cpus_usable();
    rounds = arg_int(argc, argv, "--rounds", 400);
    round_us = arg_int(argc, argv, "--round-us", 500);
    int high_threads = (int)arg_int(argc, argv, "--high-threads", ncpu);
    if (rounds < 1 || round_us < 1 || high_threads < 1 || high_threads > ncpu)
        bench_fail("--rounds >= 1, --round-us >= 1, --high-threads 1..%d", ncpu);
    if (impl == ITO && getenv("ITO_ALLOCATOR") && !strcmp(getenv("ITO_ALLOCATOR"), "0"))
        bench_fail("ITO_ALLOCATOR=0: there is no allocator to measure");
    bench_own_domain("procprio");
    sh = bench_shared(sizeof *sh);
    calibrate();

    /* H alone, twice: the first run also wakes the CPUs up (an idle
     * virtual machine's first tenth of a second can run 30 % slower), so
     * the second is the one kept. */
    wait_ok(spawn(high_threads, rounds, false), "high-priority");
    double cold = sh->high_s;
    wait_ok(spawn(high_threads, rounds, false), "high-priority");
    double alone = sh->high_s;

    /* L alone, then H arrives. */
    pid_t low = spawn(ncpu, -1, true);
    while (!atomic_load(&sh->low_ready))
        usleep(1000);
    usleep(100000);
    double rate_alone = low_rate(300);
    uint64_t r0 = atomic_load(&sh->low_rounds), t0 = bench_now_ns();
    wait_ok(spawn(high_threads, rounds, false), "high-priority");
    double rate_during = (double)(atomic_load(&sh->low_rounds) - r0) * 1e9 / (double)(bench_now_ns() - t0);
    double high = sh->high_s;
    atomic_store(&sh->stop, 1);
    wait_ok(low, "low-priority");
    bench_own_domain_remove();

    json_begin("procprio", im);
    json_int("cpus", ncpu);
    json_int("ncpu_usable", ncpu);
    json_int("high_threads", high_threads);
    json_int("rounds", rounds);
    json_int("round_us", round_us);
    json_num("alone_s", alone);
    json_num("alone_first_s", cold);
    json_num("high_s", high);
    json_num("slowdown", high / alone);
    json_num("low_rate_alone", rate_alone);
    json_num("low_rate_during", rate_during);
    json_num("low_share", rate_alone > 0 ? rate_during / rate_alone : 0);
    json_end();
    return 0;
}
