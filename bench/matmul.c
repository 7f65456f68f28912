/* SPDX-License-Identifier: MIT */
/*
 * matmul — C = A x B for n x n matrices of doubles, split among T threads
 * ([LWP] Figs. 4 and 5).
 *
 *   matmul --impl ito|pthread|seq [--cpus N] [--n SIZE] [--threads T]
 *
 * Fig. 4: T = 4, n varied, on 1 CPU and on all of them. Fig. 5: n = 512 and
 * T = 1, 2, 4, ... 4096: the run time should not grow as threads get finer.
 *
 * Work split: thread t computes the elements [t n^2 / T, (t+1) n^2 / T) of C
 * in row-major order: whole rows while T <= n, parts of rows beyond. Each
 * element is a dot product of a row of A and a row of B^T (B is stored
 * transposed, i.e. column-major, before timing), so every element costs the
 * same and touches memory the same way whatever T is: the run time measures
 * the threads, not a change of loop shape or cache pattern. (An i-k-j loop
 * over tiles of 64 columns, tried first, ran 50 % slower with 4096 threads
 * even on one processor, from the strided access to B alone.)
 * "seq" runs the same T pieces one after another in the calling thread, no
 * threads: the cost of the split itself.
 * The time covers creating the T threads, the multiplication and joining them
 * (the matrices are allocated and initialized before).
 *
 * Verification: A and B hold small integers, so C is exact in doubles (the
 * order of the additions does not matter); two checksums (plain sum, and a
 * weighted sum with separable weights u_i v_j) are compared with their closed
 * forms, computed in O(n^2) from A and B. "verified": false (and exit status
 * 3) on a mismatch.
 */
#include "common.h"

static int n;
static double *A, *Bt, *C;
static long T;

/* C[i][j] = sum_k A[i][k] * Bt[j][k]; four partial sums (exact: integers). */
static void elements(long e0, long e1)
{
    for (long e = e0; e < e1; e++) {
        long i = e / n, j = e % n;
        const double *a = A + i * n, *b = Bt + j * n;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        long k = 0;
        for (; k + 4 <= n; k += 4) {
            s0 += a[k] * b[k];
            s1 += a[k + 1] * b[k + 1];
            s2 += a[k + 2] * b[k + 2];
            s3 += a[k + 3] * b[k + 3];
        }
        for (; k < n; k++)
            s0 += a[k] * b[k];
        C[e] = (s0 + s1) + (s2 + s3);
    }
}

static void *worker(void *arg)
{
    long t = (long)(intptr_t)arg;
    long nn = (long)n * n;
    elements(nn * t / T, nn * (t + 1) / T);
    return NULL;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--n", "--threads", NULL };
    bench_exp = "matmul";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    bool ito = strcmp(bench_impl, "ito") == 0, seq = strcmp(bench_impl, "seq") == 0;
    if (!ito && !seq && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito, pthread or seq");
    int cpus = seq ? 1 : arg_cpus(argc, argv);
    n = (int)arg_int(argc, argv, "--n", 512);
    T = arg_int(argc, argv, "--threads", 4);
    if (n < 1 || n > 16384 || T < 1 || T > 1000000)
        bench_fail("--n in 1..16384, --threads in 1..1000000");

    size_t nn = (size_t)n * (size_t)n;
    A = xmalloc(nn * sizeof *A);
    double *Bm = xmalloc(nn * sizeof *Bm);
    Bt = xmalloc(nn * sizeof *Bt);
    C = xmalloc(nn * sizeof *C);
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            A[i * n + j] = (double)((i * 7 + j * 3) % 11) - 5;
            Bm[i * n + j] = (double)((i * 5 + j * 2) % 13) - 6;
        }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            Bt[j * n + i] = Bm[i * n + j];
    memset(C, 0, nn * sizeof *C);

    uint64_t t0, t1;
    if (seq) {
        restrict_to_cpus(1);
        t0 = bench_now_ns();
        for (long t = 0; t < T; t++)
            worker((void *)(intptr_t)t);
        t1 = bench_now_ns();
    } else if (ito) {
        ito_start(cpus);
        ito_thread_t *ts = xmalloc(sizeof *ts * (size_t)T);
        t0 = bench_now_ns();
        for (long t = 0; t < T; t++)
            CHECK0(ito_spawn(&ts[t], NULL, worker, (void *)(intptr_t)t));
        for (long t = 0; t < T; t++)
            CHECK0(ito_join(ts[t], NULL));
        t1 = bench_now_ns();
    } else {
        restrict_to_cpus(cpus);
        pthread_t *ts = xmalloc(sizeof *ts * (size_t)T);
        t0 = bench_now_ns();
        for (long t = 0; t < T; t++)
            CHECK0(pthread_create(&ts[t], NULL, worker, (void *)(intptr_t)t));
        for (long t = 0; t < T; t++)
            CHECK0(pthread_join(ts[t], NULL));
        t1 = bench_now_ns();
    }

    /* sum_ij u_i v_j C_ij = sum_k (sum_i u_i A_ik) (sum_j B_kj v_j) */
    double got_sum = 0, got_w = 0, want_sum = 0, want_w = 0;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            double c = C[i * n + j];
            got_sum += c;
            got_w += (double)(i % 5 + 1) * (double)(j % 3 + 1) * c;
        }
    for (long k = 0; k < n; k++) {
        double ca = 0, cb = 0, cua = 0, cbv = 0;
        for (long i = 0; i < n; i++) {
            ca += A[i * n + k];
            cua += (double)(i % 5 + 1) * A[i * n + k];
        }
        for (long j = 0; j < n; j++) {
            cb += Bm[k * n + j];
            cbv += Bm[k * n + j] * (double)(j % 3 + 1);
        }
        want_sum += ca * cb;
        want_w += cua * cbv;
    }
    bool ok = got_sum == want_sum && got_w == want_w;

    json_begin(bench_exp, bench_impl);
    if (ito)
        json_common_ito();
    else
        json_common_pthread(cpus);
    json_int("n", n);
    json_int("threads", T);
    json_num("elements_per_thread", (double)nn / (double)T);
    json_num("seconds", (double)(t1 - t0) / 1e9);
    json_num("gflops", 2.0 * n * n * (double)n / (double)(t1 - t0));
    json_num("checksum", got_sum);
    json_bool("verified", ok);
    if (!ok) {
        char msg[200];
        snprintf(msg, sizeof msg, "checksum mismatch: sum %.17g (want %.17g), weighted %.17g (want %.17g)",
                 got_sum, want_sum, got_w, want_w);
        json_str("error", msg);
    }
    json_end();
    return ok ? 0 : 3;
}
