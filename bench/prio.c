/* SPDX-License-Identifier: MIT */
/*
 * prio — the scheduling policies' decisions and priorities.
 *
 *   prio --mode decide --impl ito --ready R [--ms D] [--prios random|same]
 *       One vproc, R threads that yield in a loop, so R - 1 are ready at every
 *       decision; main (the most urgent) sleeps D ms meanwhile. Run with
 *       ITO_STATS_CYCLES=1: `cycles_per_decision` is the mean time stamp
 *       counter cycles of one pick over the window, `ns_per_switch` the wall
 *       time per decision. Threads get random priorities 0..30 (or all the
 *       same).
 *   prio --mode share --impl ito|pthread [--ms D]
 *       One CPU, four busy threads at priorities 0, 10, 20, 31 (POSIX
 *       threads: nice 19, 13, 6, 0): each one's share of the work done in
 *       D ms (`share_0` ... `share_3`).
 *   prio --mode wake --impl ito|pthread [--samples S]
 *       Every CPU runs a least-urgent thread that computes (priority 0;
 *       POSIX threads: nice 19, pinned one per CPU). The one on the first
 *       CPU notes the time and posts a semaphore about every millisecond; a
 *       most-urgent thread (priority 31; nice 0) waits on it and notes when it
 *       runs. `p50_us`, `p99_us`, `max_us` of the S latencies.
 */
#include "common.h"

#include <semaphore.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>

static bool use_ito;
static atomic_int stop;

/* ------------------------------------------------------------ decide */

static atomic_long started;

static void *yielder(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ito_yield();
    return NULL;
}

static void mode_decide(int argc, char **argv)
{
    long ready = (long)arg_int(argc, argv, "--ready", 1000);
    long ms = (long)arg_int(argc, argv, "--ms", 300);
    bool same = strcmp(arg_str(argc, argv, "--prios", "random"), "same") == 0;
    if (!use_ito)
        bench_fail("--mode decide measures ito's policies only");
    if (ready < 2)
        bench_fail("--ready must be at least 2");
    ito_start(1);
    CHECK0(ito_set_priority(ito_self(), ITO_PRIO_MAX));
    ito_thread_t *t = xmalloc((size_t)ready * sizeof *t);
    uint64_t seed = 12345;
    for (long i = 0; i < ready; i++) {
        ito_attr_t a;
        CHECK0(ito_attr_init(&a));
        CHECK0(ito_attr_set_stack_size(&a, ITO_STACK_MIN));
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        CHECK0(ito_attr_set_priority(&a, same ? ITO_PRIO_DEFAULT : (int)((seed >> 33) % ITO_PRIO_MAX)));
        CHECK0(ito_spawn(&t[i], &a, yielder, NULL));
    }
    while (atomic_load(&started) < ready)
        ito_sleep_ns(1000000);
    ito_stats_t s0, s1;
    ito_stats_get(&s0);
    uint64_t t0 = bench_now_ns();
    ito_sleep_ns((uint64_t)ms * 1000000u);
    uint64_t ns = bench_now_ns() - t0;
    ito_stats_get(&s1);
    atomic_store(&stop, 1);
    for (long i = 0; i < ready; i++)
        CHECK0(ito_join(t[i], NULL));
    long long d = (long long)(s1.decisions - s0.decisions);
    if (d <= 0)
        bench_fail("no decisions in the window");
    if (s1.decision_cycles == s0.decision_cycles)
        bench_fail("no decision cycles: run with ITO_STATS_CYCLES=1");
    json_begin("decide", bench_impl);
    json_common_ito();
    json_int("ready", ready);
    json_bool("same_priority", same);
    json_int("decisions", d);
    json_num("cycles_per_decision", (double)(s1.decision_cycles - s0.decision_cycles) / (double)d);
    json_num("ns_per_switch", (double)ns / (double)d);
    json_end();
}

/* ------------------------------------------------------------- share */

enum { NSHARE = 4 };
static const int share_prio[NSHARE] = { 0, 10, 20, 31 };
static const int share_nice[NSHARE] = { 19, 13, 6, 0 };
static atomic_ullong work[NSHARE];

static void *busy(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (!use_ito)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), share_nice[i]);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (volatile int k = 0; k < 1000; k++)
            ;
        atomic_fetch_add_explicit(&work[i], 1, memory_order_relaxed);
    }
    return NULL;
}

static void mode_share(int argc, char **argv)
{
    long ms = (long)arg_int(argc, argv, "--ms", 1000);
    if (use_ito) {
        ito_start(1);
        CHECK0(ito_set_priority(ito_self(), ITO_PRIO_MAX));
        ito_thread_t t[NSHARE];
        for (int i = 0; i < NSHARE; i++) {
            ito_attr_t a;
            CHECK0(ito_attr_init(&a));
            CHECK0(ito_attr_set_priority(&a, share_prio[i]));
            CHECK0(ito_spawn(&t[i], &a, busy, (void *)(intptr_t)i));
        }
        ito_sleep_ns((uint64_t)ms * 1000000u);
        atomic_store(&stop, 1);
        for (int i = 0; i < NSHARE; i++)
            CHECK0(ito_join(t[i], NULL));
    } else {
        pthread_t t[NSHARE];
        pthread_attr_t a;
        attr_pinned(&a, cpu_nth(0));
        for (int i = 0; i < NSHARE; i++)
            CHECK0(pthread_create(&t[i], &a, busy, (void *)(intptr_t)i));
        pthread_attr_destroy(&a);
        usleep((useconds_t)ms * 1000);
        atomic_store(&stop, 1);
        for (int i = 0; i < NSHARE; i++)
            CHECK0(pthread_join(t[i], NULL));
    }
    unsigned long long total = 0;
    for (int i = 0; i < NSHARE; i++)
        total += atomic_load(&work[i]);
    json_begin("share", bench_impl);
    if (use_ito)
        json_common_ito();
    else
        json_common_pthread(1);
    char k[32];
    for (int i = 0; i < NSHARE; i++) {
        snprintf(k, sizeof k, "share_%d", i);
        json_num(k, total ? (double)atomic_load(&work[i]) / (double)total : 0);
        snprintf(k, sizeof k, "%s_%d", use_ito ? "prio" : "nice", i);
        json_int(k, use_ito ? share_prio[i] : share_nice[i]);
    }
    /* The least urgent thread's share against the most urgent one's. */
    json_num("top_over_bottom", atomic_load(&work[0]) ? (double)atomic_load(&work[NSHARE - 1]) /
                                                          (double)atomic_load(&work[0]) : 0);
    json_num("seconds", (double)ms / 1e3);
    json_end();
}

/* -------------------------------------------------------------- wake */

static long samples_n;
static uint64_t *lat;
static atomic_long nlat;
static _Atomic uint64_t posted_at;
static ito_sem_t isem;
static sem_t psem;

static void *urgent(void *arg)
{
    (void)arg;
    for (long i = 0; i < samples_n; i++) {
        if (use_ito)
            CHECK0(ito_sem_wait(&isem));
        else
            while (sem_wait(&psem) != 0)
                ;
        lat[i] = bench_now_ns() - atomic_load(&posted_at);
        atomic_store(&nlat, i + 1);
    }
    return NULL;
}

static void *spinner(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (!use_ito)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    uint64_t next = bench_now_ns() + 1000000;
    long posted = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        if (i == 0 && posted < samples_n && bench_now_ns() >= next) {
            if (atomic_load(&nlat) < posted) {   /* the last one not taken yet: wait for it */
                next += 100000;
                continue;
            }
            atomic_store(&posted_at, bench_now_ns());
            if (use_ito)
                CHECK0(ito_sem_post(&isem));
            else
                CHECK0(sem_post(&psem));
            posted++;
            next = bench_now_ns() + 1000000;
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void mode_wake(int argc, char **argv)
{
    samples_n = (long)arg_int(argc, argv, "--samples", 300);
    int cpus = arg_cpus(argc, argv);
    lat = xmalloc((size_t)samples_n * sizeof *lat);
    if (use_ito) {
        ito_start(cpus);
        CHECK0(ito_sem_init(&isem, 0));
        ito_attr_t a;
        CHECK0(ito_attr_init(&a));
        CHECK0(ito_attr_set_priority(&a, ITO_PRIO_MAX));
        ito_thread_t u, *s = xmalloc((size_t)cpus * sizeof *s);
        CHECK0(ito_spawn(&u, &a, urgent, NULL));
        for (int i = 0; i < cpus; i++) {
            CHECK0(ito_attr_set_priority(&a, 0));
            CHECK0(ito_attr_set_vproc(&a, i));
            CHECK0(ito_spawn(&s[i], &a, spinner, (void *)(intptr_t)i));
        }
        CHECK0(ito_join(u, NULL));
        atomic_store(&stop, 1);
        for (int i = 0; i < cpus; i++)
            CHECK0(ito_join(s[i], NULL));
    } else {
        CHECK0(sem_init(&psem, 0, 0));
        pthread_t u, *s = xmalloc((size_t)cpus * sizeof *s);
        CHECK0(pthread_create(&u, NULL, urgent, NULL));
        for (int i = 0; i < cpus; i++) {
            pthread_attr_t a;
            attr_pinned(&a, cpu_nth(i));
            CHECK0(pthread_create(&s[i], &a, spinner, (void *)(intptr_t)i));
            pthread_attr_destroy(&a);
        }
        CHECK0(pthread_join(u, NULL));
        atomic_store(&stop, 1);
        for (int i = 0; i < cpus; i++)
            CHECK0(pthread_join(s[i], NULL));
    }
    qsort(lat, (size_t)samples_n, sizeof *lat, cmp_u64);
    json_begin("wake", bench_impl);
    if (use_ito)
        json_common_ito();
    else
        json_common_pthread(cpus);
    json_int("samples", samples_n);
    json_num("p50_us", (double)lat[samples_n / 2] / 1e3);
    json_num("p99_us", (double)lat[samples_n * 99 / 100] / 1e3);
    json_num("max_us", (double)lat[samples_n - 1] / 1e3);
    json_end();
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--mode", "--ready", "--ms", "--prios", "--samples", "--cpus",
                                         "--vprocs", NULL };
    bench_exp = "prio";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    const char *mode = arg_str(argc, argv, "--mode", "decide");
    if (!strcmp(mode, "decide"))
        mode_decide(argc, argv);
    else if (!strcmp(mode, "share"))
        mode_share(argc, argv);
    else if (!strcmp(mode, "wake"))
        mode_wake(argc, argv);
    else
        bench_fail("--mode must be decide, share or wake");
    return 0;
}
