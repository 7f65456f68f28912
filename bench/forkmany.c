/* SPDX-License-Identifier: MIT */
/*
 * forkmany — create COUNT threads, then join them all ([SA] / 003 "fork
 * many"; with --count 1000 it is [STH Table 1], "1,000 thread-forks").
 * Prints the time per thread and the total.
 *
 *   forkmany --impl ito|pthread [--cpus N] [--count COUNT] [--exp forkmany|fork1000]
 *
 * Each thread runs an empty function. A warm-up round of min(COUNT, 1000)
 * threads precedes the timed one.
 *
 * POSIX threads cannot always have COUNT threads created and not yet joined:
 * each keeps its stack mapping (and guard page) until it is joined, and
 * vm.max_map_count, pid_max and RLIMIT_NPROC bound them. When pthread_create
 * fails with EAGAIN, the threads created so far are joined and the timed run
 * is redone with 3/4 of the count reached; the output then says
 * "limited": true, the count used and why ("requested" is what was asked).
 */
#include "common.h"

static void *empty(void *arg) { return arg; }

/* Returns how many threads were created before a failure (count if none). */
static long run_pthread(pthread_t *ts, long count, int *err)
{
    long i;
    *err = 0;
    for (i = 0; i < count; i++) {
        int e = pthread_create(&ts[i], NULL, empty, NULL);
        if (e) {
            *err = e;
            break;
        }
    }
    for (long j = 0; j < i; j++)
        CHECK0(pthread_join(ts[j], NULL));
    return i;
}

static void run_ito(ito_thread_t *ts, long count)
{
    for (long i = 0; i < count; i++)
        CHECK0(ito_spawn(&ts[i], NULL, empty, NULL));
    for (long i = 0; i < count; i++)
        CHECK0(ito_join(ts[i], NULL));
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--count", "--exp", NULL };
    bench_exp = arg_str(argc, argv, "--exp", "forkmany");
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    int cpus = arg_cpus(argc, argv);
    bool ito = strcmp(bench_impl, "ito") == 0;
    if (!ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    long dflt = strcmp(bench_exp, "fork1000") == 0 ? 1000 : 100000;
    long requested = (long)arg_int(argc, argv, "--count", dflt);
    if (requested < 1)
        bench_fail("--count must be positive");
    long count = requested, warm = requested < 1000 ? requested : 1000;
    bool limited = false;
    char reason[256] = "";
    uint64_t t0, t1;

    if (ito) {
        ito_start(cpus);
        ito_thread_t *ts = xmalloc(sizeof *ts * (size_t)count);
        memset(ts, 0, sizeof *ts * (size_t)count);
        run_ito(ts, warm);
        ito_stats_t s0, s1;
        ito_stats_get(&s0);
        t0 = bench_now_ns();
        run_ito(ts, count);
        t1 = bench_now_ns();
        ito_stats_get(&s1);
        json_begin(bench_exp, bench_impl);
        json_common_ito();
        json_ito_stats(&s0, &s1);
    } else {
        restrict_to_cpus(cpus);
        pthread_t *ts = xmalloc(sizeof *ts * (size_t)count);
        memset(ts, 0, sizeof *ts * (size_t)count);
        int err;
        if (run_pthread(ts, warm, &err) != warm)
            bench_fail("pthread_create failed after fewer than %ld threads: %s", warm, strerror(err));
        for (int attempt = 0;; attempt++) {
            t0 = bench_now_ns();
            long got = run_pthread(ts, count, &err);
            t1 = bench_now_ns();
            if (got == count)
                break;
            if (err != EAGAIN || attempt == 4 || got < 2)
                bench_fail("pthread_create failed at thread %ld of %ld: %s", got, count, strerror(err));
            limited = true;
            snprintf(reason, sizeof reason,
                     "pthread_create: %s after %ld threads alive at once (pid_max, vm.max_map_count or RLIMIT_NPROC)",
                     strerror(err), got);
            count = got * 3 / 4;
        }
        json_begin(bench_exp, bench_impl);
        json_common_pthread(cpus);
    }
    json_int("count", count);
    json_int("requested", requested);
    json_bool("limited", limited);
    if (limited)
        json_str("limit_reason", reason);
    json_num("total_us", (double)(t1 - t0) / 1e3);
    json_num("ns_per_thread", (double)(t1 - t0) / (double)count);
    json_end();
    return 0;
}
