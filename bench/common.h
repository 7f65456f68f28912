/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the benchmark programs: the clock, the CPUs this process
 * may use and pinning to them, ito initialization, one-line JSON output and
 * fatal errors.
 *
 * Every program runs ONE measurement of ONE implementation per process and
 * prints ONE JSON object on stdout (bench/run.py repeats and aggregates).
 * A failure (a call returning an error, a wrong result) prints a JSON object
 * with "error" (and "verified": false where it applies) and exits non-zero,
 * so that run.py can report it; nothing is retried or hidden here.
 *
 * A pthread run never calls into ito, so ito's vprocs are never started in it
 * (the library has no constructor that starts them).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#define BENCH_UNUSED __attribute__((unused))

/* ------------------------------------------------------------------ clock */

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------- JSON */

/* One JSON object, built field by field, printed as one line by json_end. */
static char json_buf[8192];
static size_t json_len;

static BENCH_UNUSED void json_raw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json_buf + json_len, sizeof json_buf - json_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        json_len += (size_t)n;
    if (json_len >= sizeof json_buf)
        json_len = sizeof json_buf - 1;
}

static BENCH_UNUSED void json_sep(void)
{
    if (json_len > 1)
        json_raw(",");
}

static BENCH_UNUSED void json_str(const char *k, const char *v)
{
    json_sep();
    json_raw("\"%s\":\"", k);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            json_raw("\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            json_raw("\\u%04x", *p);
        else
            json_raw("%c", *p);
    }
    json_raw("\"");
}

static BENCH_UNUSED void json_int(const char *k, long long v) { json_sep(); json_raw("\"%s\":%lld", k, v); }
static BENCH_UNUSED void json_bool(const char *k, bool v) { json_sep(); json_raw("\"%s\":%s", k, v ? "true" : "false"); }
static BENCH_UNUSED void json_num(const char *k, double v) { json_sep(); json_raw("\"%s\":%.6g", k, v); }
static BENCH_UNUSED void json_hex(const char *k, uint64_t v) { json_sep(); json_raw("\"%s\":\"%016llx\"", k, (unsigned long long)v); }

static BENCH_UNUSED void json_begin(const char *exp, const char *impl)
{
    json_len = 0;
    json_buf[0] = 0;
    json_raw("{");
    json_str("exp", exp);
    json_str("impl", impl);
}

static BENCH_UNUSED void json_end(void)
{
    json_raw("}");
    fputs(json_buf, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* ------------------------------------------------------------------ errors */

static const char *bench_exp = "?", *bench_impl = "?";

/* Print {"exp":..,"impl":..,"error":msg} on stdout, the message on stderr, exit 2. */
static BENCH_UNUSED __attribute__((noreturn, format(printf, 1, 2))) void bench_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench %s/%s: %s\n", bench_exp, bench_impl, msg);
    json_begin(bench_exp, bench_impl);
    json_str("error", msg);
    json_end();
    exit(2);
}

/* Check a call returning 0 or an errno value. */
#define CHECK0(call)                                                              \
    do {                                                                          \
        int e_ = (call);                                                          \
        if (e_)                                                                   \
            bench_fail("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, strerror(e_)); \
    } while (0)

static BENCH_UNUSED void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        bench_fail("out of memory (%zu bytes)", n);
    return p;
}

/* ------------------------------------------------------------------- CPUs */

#define BENCH_MAX_CPUS 1024
static int bench_cpus[BENCH_MAX_CPUS];
static int bench_ncpus;

/* The CPUs in this process's affinity mask (read once, before any pinning). */
static BENCH_UNUSED int cpus_usable(void)
{
    if (bench_ncpus)
        return bench_ncpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        bench_fail("sched_getaffinity: %s", strerror(errno));
    for (int c = 0; c < CPU_SETSIZE && bench_ncpus < BENCH_MAX_CPUS; c++)
        if (CPU_ISSET(c, &set))
            bench_cpus[bench_ncpus++] = c;
    return bench_ncpus;
}

/* The i-th usable CPU (modulo their number). */
static BENCH_UNUSED int cpu_nth(int i)
{
    int n = cpus_usable();
    return bench_cpus[i % n];
}

/* Restrict the calling thread (and the threads it creates later) to the
 * first n usable CPUs. */
static BENCH_UNUSED void restrict_to_cpus(int n)
{
    int have = cpus_usable();
    if (n < 1 || n > have)
        bench_fail("asked for %d CPUs, %d usable", n, have);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        CPU_SET(bench_cpus[i], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        bench_fail("sched_setaffinity: %s", strerror(errno));
}

/* Pin a pthread to one CPU. */
static BENCH_UNUSED void pin_pthread(pthread_t t, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK0(pthread_setaffinity_np(t, sizeof set, &set));
}

/* pthread attributes that start the thread pinned to one CPU. */
static BENCH_UNUSED void attr_pinned(pthread_attr_t *a, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK0(pthread_attr_init(a));
    CHECK0(pthread_attr_setaffinity_np(a, sizeof set, &set));
}

/* ------------------------------------------------- processes measured together */

/* Memory shared with the processes this one forks (zeroed). */
static BENCH_UNUSED void *bench_shared(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bench_fail("mmap: %s", strerror(errno));
    return p;
}

static char bench_domain[64];

/* The ito processes this one starts meet in an allocation domain of their
 * own (ITO_ALLOC_DOMAIN=prefix-PID): other ito processes on the machine do
 * not count. Before they start. */
static BENCH_UNUSED void bench_own_domain(const char *prefix)
{
    snprintf(bench_domain, sizeof bench_domain, "%s-%d", prefix, (int)getpid());
    setenv("ITO_ALLOC_DOMAIN", bench_domain, 1);
}

/* Remove that domain's allocation table once its processes have exited
 * (DIR/ito-alloc-UID-DOMAIN-vVERSION, whatever the version; DIR as
 * src/cpushare/table.c's ito__table_path chooses it). */
static BENCH_UNUSED void bench_own_domain_remove(void)
{
    unsigned uid = (unsigned)geteuid();
    char dirs[3][32];
    snprintf(dirs[0], sizeof dirs[0], "/run/user/%u", uid);
    snprintf(dirs[1], sizeof dirs[1], "/run");
    snprintf(dirs[2], sizeof dirs[2], "/dev/shm");
    for (int d = 0; d < 3; d++) {
        char pat[192];
        snprintf(pat, sizeof pat, "%s/ito-alloc-%u-%s-v*", dirs[d], uid, bench_domain);
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0)
            for (size_t i = 0; i < g.gl_pathc; i++)
                unlink(g.gl_pathv[i]);
        globfree(&g);
    }
}

/* -------------------------------------------------------------------- ito */

/* Start ito with `vprocs` vprocs (0: its default). The caller (main) becomes
 * an ito thread on vproc 0. Fails unless ito got exactly what was asked. */
static BENCH_UNUSED void ito_start(int vprocs)
{
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = vprocs;
    CHECK0(ito_init(&cfg));
    if (vprocs && ito_vproc_count() != vprocs)
        bench_fail("ito_vproc_count() = %d, asked for %d", ito_vproc_count(), vprocs);
}

/* Run fn(0) and fn(1) in two threads and join them: ito threads — both on
 * vproc 0, or with `cross` on vprocs 0 and 1 (placed only when there are
 * several vprocs; want_vproc receives the placement) — or pthreads pinned to
 * the first usable CPU, or with `cross` to the first two. */
static BENCH_UNUSED void run_pair(bool ito, void *(*fn)(void *), bool cross, int vprocs, int want_vproc[2])
{
    if (ito) {
        ito_thread_t t[2];
        for (int i = 0; i < 2; i++) {
            ito_attr_t a;
            CHECK0(ito_attr_init(&a));
            want_vproc[i] = cross ? i : 0;
            if (vprocs > 1)
                CHECK0(ito_attr_set_vproc(&a, want_vproc[i]));
            CHECK0(ito_spawn(&t[i], &a, fn, (void *)(intptr_t)i));
        }
        for (int i = 0; i < 2; i++)
            CHECK0(ito_join(t[i], NULL));
    } else {
        pthread_t t[2];
        for (int i = 0; i < 2; i++) {
            pthread_attr_t a;
            attr_pinned(&a, cpu_nth(cross ? i : 0));
            CHECK0(pthread_create(&t[i], &a, fn, (void *)(intptr_t)i));
            pthread_attr_destroy(&a);
        }
        for (int i = 0; i < 2; i++)
            CHECK0(pthread_join(t[i], NULL));
    }
}

/* Fields every measurement carries: how many CPUs / vprocs it used. */
static BENCH_UNUSED void json_common_ito(void)
{
    json_int("vprocs", ito_vproc_count());
    json_int("cpus", ito_vproc_count());
    json_str("policy", ito_policy_name());
    json_int("ncpu_usable", cpus_usable());
}

static BENCH_UNUSED void json_common_pthread(int cpus)
{
    json_int("cpus", cpus);
    json_int("ncpu_usable", cpus_usable());
}

/* ito statistics, as a delta between two snapshots. */
static BENCH_UNUSED void json_ito_stats(const ito_stats_t *a, const ito_stats_t *b)
{
    json_int("switches", (long long)(b->switches - a->switches));
    json_int("steals", (long long)(b->steals - a->steals));
    json_int("idle_sleeps", (long long)(b->idle_sleeps - a->idle_sleeps));
}

/* -------------------------------------------------------------- arguments */

/* A minimal "--name value" parser: arg_str(argc, argv, "--impl", "ito"). */
static BENCH_UNUSED const char *arg_str(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= argc)
                bench_fail("%s needs a value", name);
            return argv[i + 1];
        }
        size_t l = strlen(name);
        if (strncmp(argv[i], name, l) == 0 && argv[i][l] == '=')
            return argv[i] + l + 1;
    }
    return dflt;
}

static BENCH_UNUSED long long arg_int(int argc, char **argv, const char *name, long long dflt)
{
    const char *s = arg_str(argc, argv, name, NULL);
    if (!s)
        return dflt;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        bench_fail("%s: not an integer: '%s'", name, s);
    return v;
}

/* The vprocs for run_pair: --vprocs (or --cpus), by default 2 with `cross`
 * and 1 without; ito is started with them when `ito`. */
static BENCH_UNUSED int pair_vprocs(int argc, char **argv, bool ito, bool cross)
{
    int min = cross ? 2 : 1, vprocs = min;
    if (ito) {
        vprocs = (int)arg_int(argc, argv, "--vprocs", arg_int(argc, argv, "--cpus", vprocs));
        if (vprocs < min || vprocs > cpus_usable())
            bench_fail("--vprocs %d: between %d and %d here", vprocs, min, cpus_usable());
        ito_start(vprocs);
    }
    return vprocs;
}

/* --cpus N (alias --vprocs N): how many CPUs a run uses; all usable ones by
 * default. ito runs on that many vprocs, pthreads are restricted to the first
 * that many usable CPUs. */
static BENCH_UNUSED int arg_cpus(int argc, char **argv)
{
    long long c = arg_int(argc, argv, "--cpus", arg_int(argc, argv, "--vprocs", cpus_usable()));
    if (c < 1 || c > cpus_usable())
        bench_fail("--cpus %lld: between 1 and %d here", c, cpus_usable());
    return (int)c;
}

/* Check that every "--x" argument is one of `known` (NULL-terminated). */
static BENCH_UNUSED void args_check(int argc, char **argv, const char *const *known)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0)
            continue;
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++) {
            size_t l = strlen(*k);
            ok = strncmp(argv[i], *k, l) == 0 && (argv[i][l] == 0 || argv[i][l] == '=');
        }
        if (!ok)
            bench_fail("unknown option %s", argv[i]);
        if (!strchr(argv[i], '='))
            i++;   /* skip its value */
    }
}

#endif /* BENCH_COMMON_H */
