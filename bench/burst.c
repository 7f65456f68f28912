/* SPDX-License-Identifier: MIT */
/*
 * burst — how fast a burst of work reaches every idle processor. Each round,
 * after a pause long enough for every other vproc to fall asleep (5 ms; the
 * spin window is 50 µs), main spawns T threads in a loop; each computes for
 * W µs; main then waits on a semaphore that the last thread to start posts.
 * Prints the median over the rounds of the time from the first spawn
 * until every one of the T threads has started ("reach"), and of main's cost
 * per spawn in the loop. With T = V each vproc must get one: a vproc woken
 * late shows in the reach; a producer that pays a kernel wake-up per spawn
 * shows in the spawn cost. ito also reports how many vprocs the threads
 * started on (median): with more vprocs than CPUs the times are the kernel's
 * time-sharing, but which vprocs were woken is ito's.
 *
 *   burst --impl ito|pthread [--cpus V | --vprocs V] [--threads T] [--work-us W] [--rounds R]
 *
 * ito: V vprocs, one per CPU with --cpus, any number with --vprocs (more
 * than the CPUs: the kernel time-shares them); pthreads: T threads on the
 * first V usable CPUs.
 * Defaults: T = V, W = 500, R = 41.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "common.h"

static _Atomic long started;
static long nthreads;
static uint64_t work_ns;
static uint64_t last_start;   /* when the last thread started */
static _Atomic bool ran_on[1024];   /* ito: the vprocs the round's threads started on */
static bool use_ito;
static ito_sem_t all_started_ito;   /* posted by the last thread to start */
static sem_t all_started_posix;

static void spin_for(uint64_t ns)
{
    uint64_t t0 = bench_now_ns();
    while (bench_now_ns() - t0 < ns)
        ;
}

static void *worker(void *arg)
{
    if (use_ito)
        atomic_store_explicit(&ran_on[ito_vproc_self()], true, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&started, 1, memory_order_relaxed) + 1 == nthreads) {
        last_start = bench_now_ns();   /* read by main after the post */
        if (use_ito)
            CHECK0(ito_sem_post(&all_started_ito));
        else
            CHECK0(sem_post(&all_started_posix));
    }
    spin_for(work_ns);
    return arg;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--threads", "--work-us", "--rounds", NULL };
    bench_exp = "burst";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    bool ito = use_ito = strcmp(bench_impl, "ito") == 0;
    if (!ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    /* --vprocs beyond the CPUs: oversubscribed, to see the wake-up order of
     * a machine larger than this one (the kernel time-shares the carriers). */
    long long asked = arg_int(argc, argv, "--vprocs", 0);
    if (asked < 0 || asked > 1024 || (asked && !ito))
        bench_fail("--vprocs: 1..1024, for ito only (pthreads: --cpus)");
    int cpus = asked ? (int)asked : (int)arg_int(argc, argv, "--cpus", cpus_usable());
    if (!asked && (cpus < 1 || cpus > cpus_usable()))
        bench_fail("--cpus %d: between 1 and %d here", cpus, cpus_usable());
    if (ito)
        ito_start(cpus);
    else
        restrict_to_cpus(cpus);
    int v = ito ? ito_vproc_count() : cpus;
    nthreads = (long)arg_int(argc, argv, "--threads", v);
    long work_us = (long)arg_int(argc, argv, "--work-us", 500);
    long rounds = (long)arg_int(argc, argv, "--rounds", 41);
    if (nthreads < 1 || nthreads > 4096 || work_us < 0 || rounds < 1)
        bench_fail("--threads must be 1..4096, --work-us >= 0, --rounds >= 1");
    work_ns = (uint64_t)work_us * 1000u;
    if (ito)
        CHECK0(ito_sem_init(&all_started_ito, 0));
    else
        CHECK0(sem_init(&all_started_posix, 0, 0));
    uint64_t *reach = xmalloc((size_t)rounds * sizeof *reach);
    uint64_t *spawn = xmalloc((size_t)rounds * sizeof *spawn);
    uint64_t *reached = xmalloc((size_t)rounds * sizeof *reached);
    ito_thread_t *it = xmalloc((size_t)nthreads * sizeof *it);
    pthread_t *pt = xmalloc((size_t)nthreads * sizeof *pt);
    ito_stats_t s0, s1;
    if (ito)
        CHECK0(ito_stats_get(&s0));
    for (long r = 0; r < rounds; r++) {
        struct timespec pause = { 0, 5000000 };
        if (ito)
            CHECK0(ito_sleep_ns(5000000));
        else
            nanosleep(&pause, NULL);
        atomic_store_explicit(&started, 0, memory_order_relaxed);
        uint64_t t0 = bench_now_ns();
        for (long i = 0; i < nthreads; i++) {
            if (ito)
                CHECK0(ito_spawn(&it[i], NULL, worker, NULL));
            else
                CHECK0(pthread_create(&pt[i], NULL, worker, NULL));
        }
        uint64_t t1 = bench_now_ns();
        /* main waits parked, its processor free for the threads (it runs
         * again only when one of them is done: the time is the last
         * thread's, taken before its post). */
        if (ito)
            CHECK0(ito_sem_wait(&all_started_ito));
        else
            while (sem_wait(&all_started_posix) != 0)
                if (errno != EINTR)
                    bench_fail("sem_wait: %s", strerror(errno));
        for (long i = 0; i < nthreads; i++) {
            if (ito)
                CHECK0(ito_join(it[i], NULL));
            else
                CHECK0(pthread_join(pt[i], NULL));
        }
        reach[r] = last_start - t0;
        reached[r] = 0;
        for (int k = 0; ito && k < v; k++)
            reached[r] += atomic_exchange_explicit(&ran_on[k], false, memory_order_relaxed);
        spawn[r] = (t1 - t0) / (uint64_t)nthreads;
    }
    if (ito)
        CHECK0(ito_stats_get(&s1));
    qsort(reach, (size_t)rounds, sizeof *reach, cmp_u64);
    qsort(spawn, (size_t)rounds, sizeof *spawn, cmp_u64);
    qsort(reached, (size_t)rounds, sizeof *reached, cmp_u64);
    json_begin(bench_exp, bench_impl);
    if (ito) {
        json_common_ito();
        json_ito_stats(&s0, &s1);
        json_num("wakeups_per_round", (double)(s1.wakeups - s0.wakeups) / (double)rounds);
        json_int("vprocs_reached", (long long)reached[rounds / 2]);
    } else {
        json_common_pthread(v);
    }
    json_int("threads", nthreads);
    json_int("work_us", work_us);
    json_int("rounds", rounds);
    json_num("reach_us", (double)reach[rounds / 2] / 1e3);
    json_num("reach_us_p90", (double)reach[rounds * 9 / 10] / 1e3);
    json_num("ns_per_spawn", (double)spawn[rounds / 2]);
    json_end();
    return 0;
}
