/* SPDX-License-Identifier: MIT */
/*
 * sumthreads — [SSH §7]: a main thread spawns T threads that each sum n
 * integers, then collects their results.
 *
 *   sumthreads --impl ito|pthread --threads T --n N [--cpus C]
 *
 * Every thread sums the same read-only array of n integers and stores its
 * sum; main joins them all in creation order and checks every sum. `seconds`
 * covers the spawns, the sums and the joins. ito: the policy is ITO_POLICY's;
 * `decisions` counts its scheduling decisions and, with ITO_STATS_CYCLES=1,
 * `cycles_per_decision` is the mean time stamp counter cycles of one pick.
 * POSIX threads get 64 KiB stacks (T up to 100,000 at once); on EAGAIN main
 * joins the oldest outstanding threads before creating more (`joined_early`).
 */
#include "common.h"

static int *data;
static long n;

struct job {
    long long sum;
};

static void *summer(void *arg)
{
    struct job *j = arg;
    long long s = 0;
    for (long i = 0; i < n; i++)
        s += data[i];
    j->sum = s;
    return NULL;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--threads", "--n", "--cpus", "--vprocs", NULL };
    bench_exp = "sumthreads";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    bool use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    long t = (long)arg_int(argc, argv, "--threads", 1000);
    n = (long)arg_int(argc, argv, "--n", 1000);
    if (t < 1 || n < 1)
        bench_fail("--threads and --n must be at least 1");
    int cpus = arg_cpus(argc, argv);
    data = xmalloc((size_t)n * sizeof *data);
    for (long i = 0; i < n; i++)
        data[i] = (int)(i % 1000);
    long long expect = 0;
    for (long i = 0; i < n; i++)
        expect += data[i];
    struct job *jobs = xmalloc((size_t)t * sizeof *jobs);
    long limited = 0;
    ito_stats_t s0, s1;
    uint64_t t0;
    if (use_ito) {
        ito_start(cpus);
        ito_thread_t *th = xmalloc((size_t)t * sizeof *th);
        ito_stats_get(&s0);
        t0 = bench_now_ns();
        for (long i = 0; i < t; i++)
            CHECK0(ito_spawn(&th[i], NULL, summer, &jobs[i]));
        for (long i = 0; i < t; i++)
            CHECK0(ito_join(th[i], NULL));
    } else {
        restrict_to_cpus(cpus);
        pthread_t *th = xmalloc((size_t)t * sizeof *th);
        pthread_attr_t a;
        CHECK0(pthread_attr_init(&a));
        CHECK0(pthread_attr_setstacksize(&a, 64 * 1024));
        t0 = bench_now_ns();
        long joined = 0;
        for (long i = 0; i < t; i++) {
            int e;
            while ((e = pthread_create(&th[i], &a, summer, &jobs[i])) == EAGAIN && joined < i) {
                CHECK0(pthread_join(th[joined++], NULL));   /* make room */
                limited++;
            }
            CHECK0(e);
        }
        for (long i = joined; i < t; i++)
            CHECK0(pthread_join(th[i], NULL));
        pthread_attr_destroy(&a);
    }
    uint64_t ns = bench_now_ns() - t0;
    for (long i = 0; i < t; i++)
        if (jobs[i].sum != expect)
            bench_fail("thread %ld summed %lld, expected %lld", i, jobs[i].sum, expect);
    json_begin(bench_exp, bench_impl);
    if (use_ito) {
        ito_stats_get(&s1);
        json_common_ito();
        long long d = (long long)(s1.decisions - s0.decisions);
        json_int("decisions", d);
        if (s1.decision_cycles > s0.decision_cycles && d > 0)
            json_num("cycles_per_decision", (double)(s1.decision_cycles - s0.decision_cycles) / (double)d);
    } else {
        json_common_pthread(cpus);
        json_int("joined_early", limited);
    }
    json_int("threads", t);
    json_int("n", n);
    json_bool("verified", true);
    json_num("seconds", (double)ns / 1e9);
    json_end();
    return 0;
}
