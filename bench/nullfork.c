/* SPDX-License-Identifier: MIT */
/*
 * nullfork — create + join of an empty thread, one after another, N times
 * ([SA Table 4] "null fork"). Prints the mean cost of one create + join.
 *
 *   nullfork --impl ito|pthread [--cpus N] [--n COUNT]
 *
 * --cpus (alias --vprocs): ito runs on N vprocs (each pinned to one CPU by
 * ito); pthreads run with the process restricted to the first N usable CPUs.
 * A warm-up of N/10 forks precedes the timed ones.
 */
#include "common.h"

static void *empty(void *arg) { return arg; }

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--n", NULL };
    bench_exp = "nullfork";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    int cpus = arg_cpus(argc, argv);
    bool ito = strcmp(bench_impl, "ito") == 0;
    if (!ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    long n = (long)arg_int(argc, argv, "--n", ito ? 200000 : 5000);
    if (n < 1)
        bench_fail("--n must be positive");
    long warm = n / 10 + 1;
    uint64_t t0, t1;

    if (ito) {
        ito_start(cpus);
        ito_thread_t t;
        for (long i = 0; i < warm; i++) {
            CHECK0(ito_spawn(&t, NULL, empty, NULL));
            CHECK0(ito_join(t, NULL));
        }
        ito_stats_t s0, s1;
        ito_stats_get(&s0);
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
            CHECK0(ito_spawn(&t, NULL, empty, NULL));
            CHECK0(ito_join(t, NULL));
        }
        t1 = bench_now_ns();
        ito_stats_get(&s1);
        json_begin(bench_exp, bench_impl);
        json_common_ito();
        json_ito_stats(&s0, &s1);
    } else {
        restrict_to_cpus(cpus);
        pthread_t t;
        for (long i = 0; i < warm; i++) {
            CHECK0(pthread_create(&t, NULL, empty, NULL));
            CHECK0(pthread_join(t, NULL));
        }
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
            CHECK0(pthread_create(&t, NULL, empty, NULL));
            CHECK0(pthread_join(t, NULL));
        }
        t1 = bench_now_ns();
        json_begin(bench_exp, bench_impl);
        json_common_pthread(cpus);
    }
    json_int("threads", 1);
    json_int("n", n);
    json_num("total_s", (double)(t1 - t0) / 1e9);
    json_num("ns_per_op", (double)(t1 - t0) / (double)n);
    json_end();
    return 0;
}
