/* SPDX-License-Identifier: MIT */
/*
 * kpingpong — signal-wait through the kernel ([SA §5.2]): two threads
 * ping-pong one message with blocking reads and writes on two kernel
 * channels, one per direction. Prints the round trip: A writes, B's read
 * returns, B writes back, A's read returns.
 *
 *   kpingpong --impl ito|pthread --chan pipe|eventfd --placement same|cross
 *             [--n ROUNDTRIPS] [--vprocs V]
 *
 * ito: ito threads calling ito_read/ito_write (the thread parks on its vproc's
 * io_uring ring, not the vproc). pthread: POSIX threads calling read/write
 * (the kernel thread blocks). Descriptors are blocking in both.
 * pipe:    a byte through each of two pipes.
 * eventfd: an 8-byte counter increment through each of two eventfds.
 * same:  ito on 1 vproc (or, with --vprocs V > 1, both threads placed on
 *        vproc 0); pthreads both pinned to the first usable CPU.
 * cross: ito on V vprocs (default 2), the threads placed on vprocs 0 and 1;
 *        pthreads pinned to the first two usable CPUs. Needs 2 CPUs.
 * ito: "io_uring" says whether ito's I/O went through the rings (with
 * ITO_IO_URING=0 it makes the plain, vproc-blocking calls, which deadlocks
 * "same"); "misplaced" as in signalwait.
 * A warm-up of N/10 round trips precedes the timed run; every message is
 * checked (its value, its length).
 */
#include <fcntl.h>
#include <sys/eventfd.h>

#include "common.h"

static bool use_ito, use_efd;
static int chan[2][2];           /* chan[d]: direction d (0: A->B, 1: B->A); [0] read end, [1] write end */
static long rounds;
static int want_vproc[2];
static long misplaced[2];

static void xfer(bool wr, int fd)
{
    uint64_t v = 1;
    size_t len = use_efd ? sizeof v : 1;
    ssize_t r;
    if (use_ito)
        r = wr ? ito_write(fd, &v, len) : ito_read(fd, &v, len);
    else
        r = wr ? write(fd, &v, len) : read(fd, &v, len);
    if (r != (ssize_t)len || v != 1)
        bench_fail("%s returned %zd (value %llu): %s", wr ? "write" : "read", r, (unsigned long long)v,
                   r < 0 ? strerror(errno) : "short or wrong message");
}

static void *player(void *arg)
{
    int me = (int)(intptr_t)arg;
    long bad = 0;
    for (long i = 0; i < rounds; i++) {
        if (use_ito && (i & 63) == 0 && ito_vproc_self() != want_vproc[me])
            bad++;
        if (me == 0) {
            xfer(true, chan[0][1]);
            xfer(false, chan[1][0]);
        } else {
            xfer(false, chan[0][0]);
            xfer(true, chan[1][1]);
        }
    }
    misplaced[me] = bad;
    return NULL;
}

static uint64_t run(long n, int cross, int vprocs)
{
    rounds = n;
    uint64_t t0 = bench_now_ns();
    run_pair(use_ito, player, cross, vprocs, want_vproc);
    return bench_now_ns() - t0;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--n", "--chan", "--placement", "--vprocs", "--cpus", NULL };
    bench_exp = "kpingpong";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    const char *ch = arg_str(argc, argv, "--chan", "pipe");
    use_efd = strcmp(ch, "eventfd") == 0;
    if (!use_efd && strcmp(ch, "pipe") != 0)
        bench_fail("--chan must be pipe or eventfd");
    const char *placement = arg_str(argc, argv, "--placement", "same");
    int cross = strcmp(placement, "cross") == 0;
    if (!cross && strcmp(placement, "same") != 0)
        bench_fail("--placement must be same or cross");
    if (cross && cpus_usable() < 2)
        bench_fail("--placement cross needs 2 usable CPUs; this process has %d", cpus_usable());
    long n = (long)arg_int(argc, argv, "--n", 50000);
    if (n < 1)
        bench_fail("--n must be positive");
    for (int d = 0; d < 2; d++) {
        if (use_efd) {
            chan[d][0] = chan[d][1] = eventfd(0, EFD_CLOEXEC);
            if (chan[d][0] < 0)
                bench_fail("eventfd: %s", strerror(errno));
        } else if (pipe2(chan[d], O_CLOEXEC) != 0) {
            bench_fail("pipe2: %s", strerror(errno));
        }
    }
    int vprocs = pair_vprocs(argc, argv, use_ito, cross);
    run(n / 10 + 1, cross, vprocs);
    ito_stats_t s0, s1;
    if (use_ito)
        ito_stats_get(&s0);
    uint64_t ns = run(n, cross, vprocs);
    json_begin(bench_exp, bench_impl);
    json_str("chan", ch);
    json_str("placement", placement);
    if (use_ito) {
        ito_stats_get(&s1);
        json_common_ito();
        json_ito_stats(&s0, &s1);
        json_bool("io_uring", ito_io_uring_active());
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
