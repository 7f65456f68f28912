/* SPDX-License-Identifier: MIT */
/*
 * signalwait — two threads ping-pong through a mutex and two condition
 * variables with a turn variable ([SA Table 4] "signal-wait"). Prints the
 * round trip: A hands the turn to B and B hands it back.
 *
 *   signalwait --impl ito|pthread --placement same|cross [--n ROUNDTRIPS] [--vprocs V]
 *
 * same:  ito on 1 vproc (or, with --vprocs V > 1, both threads placed on
 *        vproc 0); pthreads both pinned to the first usable CPU.
 * cross: ito on V vprocs (default 2), the threads placed on vprocs 0 and 1
 *        (ito_attr_set_vproc); pthreads pinned to the first two usable CPUs.
 *        Needs 2 CPUs.
 * ito: every 64th iteration each thread checks that it runs on the vproc it
 * was placed on; "misplaced" counts the checks that found otherwise (the
 * policy may move a thread to an idle vproc).
 * raw (cross only): two pinned pthreads hand one cache line back and forth
 * (an atomic flag, spinning): the hardware's floor for any cross-CPU round
 * trip, which a mutex and condition round trip cannot beat.
 * A warm-up of N/10 round trips precedes the timed run.
 */
#include <stdatomic.h>

#include "common.h"

static bool use_ito, use_raw;
static ito_mutex_t im = ITO_MUTEX_INIT;
static ito_cond_t ic[2] = { ITO_COND_INIT, ITO_COND_INIT };
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static int turn;
static long rounds;
static int want_vproc[2];
static long misplaced[2];

static _Atomic int raw_flag __attribute__((aligned(64)));

static void *raw_player(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long i = 0; i < rounds; i++) {
        if (me == 0)
            atomic_store_explicit(&raw_flag, 1, memory_order_release);
        int want = me == 0 ? 0 : 1;
        while (atomic_load_explicit(&raw_flag, memory_order_acquire) != want)
            __builtin_ia32_pause();
        if (me == 1)
            atomic_store_explicit(&raw_flag, 0, memory_order_release);
    }
    return NULL;
}

static void *player(void *arg)
{
    int me = (int)(intptr_t)arg, other = 1 - me;
    long bad = 0;
    if (use_ito) {
        for (long i = 0; i < rounds; i++) {
            if ((i & 63) == 0 && ito_vproc_self() != want_vproc[me])
                bad++;
            CHECK0(ito_mutex_lock(&im));
            while (turn != me)
                CHECK0(ito_cond_wait(&ic[me], &im));
            turn = other;
            CHECK0(ito_cond_signal(&ic[other]));
            CHECK0(ito_mutex_unlock(&im));
        }
    } else {
        for (long i = 0; i < rounds; i++) {
            CHECK0(pthread_mutex_lock(&pm));
            while (turn != me)
                CHECK0(pthread_cond_wait(&pc[me], &pm));
            turn = other;
            CHECK0(pthread_cond_signal(&pc[other]));
            CHECK0(pthread_mutex_unlock(&pm));
        }
    }
    misplaced[me] = bad;
    return NULL;
}

static uint64_t run(long n, int cross, int vprocs)
{
    rounds = n;
    turn = 0;
    atomic_store(&raw_flag, 0);
    uint64_t t0 = bench_now_ns();
    run_pair(use_ito, use_raw ? raw_player : player, cross, vprocs, want_vproc);
    return bench_now_ns() - t0;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--n", "--placement", "--vprocs", "--cpus", NULL };
    bench_exp = "signalwait";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    use_raw = strcmp(bench_impl, "raw") == 0;
    if (!use_ito && !use_raw && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito, pthread or raw");
    const char *placement = arg_str(argc, argv, "--placement", "same");
    int cross;
    if (strcmp(placement, "same") == 0)
        cross = 0;
    else if (strcmp(placement, "cross") == 0)
        cross = 1;
    else
        bench_fail("--placement must be same or cross");
    if (use_raw && !cross)
        bench_fail("--impl raw measures the cross-CPU floor: use --placement cross");
    if (cross && cpus_usable() < 2)
        bench_fail("--placement cross needs 2 usable CPUs; this process has %d", cpus_usable());
    long n = (long)arg_int(argc, argv, "--n", use_ito || use_raw ? 200000 : 20000);
    if (n < 1)
        bench_fail("--n must be positive");
    int vprocs = pair_vprocs(argc, argv, use_ito, cross);
    run(n / 10 + 1, cross, vprocs);
    ito_stats_t s0, s1;
    if (use_ito)
        ito_stats_get(&s0);
    uint64_t ns = run(n, cross, vprocs);
    json_begin(bench_exp, bench_impl);
    json_str("placement", placement);
    if (use_ito) {
        ito_stats_get(&s1);
        json_common_ito();
        json_ito_stats(&s0, &s1);
        json_int("misplaced", misplaced[0] + misplaced[1]);
        json_int("placement_checks", 2 * ((n + 63) / 64));
    } else {
        json_common_pthread(cross ? 2 : 1);
    }
    json_int("threads", 2);
    json_int("n", n);
    json_num("total_s", (double)ns / 1e9);
    json_num("ns_per_roundtrip", (double)ns / (double)n);
    json_end();
    return 0;
}
