/* SPDX-License-Identifier: MIT */
/*
 * groups — [SKY §3] (SKY-1): threads that share data, under scheduling
 * strategies that do or do not keep them on one processor.
 *
 *   groups --impl ito|pthread [--groups off|on|pinned] [--cpus C]
 *          [--groups-per-cpu 4 | --ngroups G] [--threads-per-group 4]
 *          [--ws-kib W] [--write-pct 30] [--rounds R] [--sync yield|ring]
 *          [--order group|interleaved] [--counters on|off]
 *
 * The workload. G groups (default 4 per CPU used) of M threads (default 4).
 * Each group owns a working set of W KiB: W*16 cache lines of 8 words. Word j
 * of a line belongs to member j (the only one that writes it); word 7 holds
 * the line's write mask, fixed at the start: bit j is set in write-pct % of
 * the lines (a hash of the line and j). Each of a thread's R turns sweeps its
 * group's whole set in a scattered order (a stride of about 0.6 of the set,
 * coprime with its size: every line once per turn, a page apart or more,
 * which no hardware prefetcher follows), reading in every line the mask and
 * the next member's word and, where its mask bit is set, adding (j + 1) to
 * its own word. So every line is shared by the group (each member reads a
 * word another one writes) and each member writes write-pct % of the lines it
 * touches: [SKY]'s "share of writes that invalidate another processor's
 * copy". After a turn the thread lets the others run:
 *   --sync yield  ito_yield / sched_yield (default): the members of a group
 *                 are all ready at once and interleave turn by turn;
 *   --sync ring   a token ring: member j waits for a semaphore that member
 *                 j-1 posts after its turn (ito_sem / POSIX sem_t), so one
 *                 member of each group is ready at a time.
 * Turns take a few microseconds (hundreds of switches per ms on each CPU).
 * Under a scheduler that spreads a group's members over the CPUs, its lines
 * move between the CPUs' private caches (read by one, written by another,
 * read again); under "affinity" with groups they stay in the one CPU that
 * holds the group, and with the default size the sets of the groups that one
 * CPU holds fit in its L2 together (4 x W <= L2 / 2), while a CPU that runs
 * every group's threads cycles through all the sets, G x W >= L2 when G >= 8
 * (2 CPUs or more). Measured on a 2-CPU KVM guest (1 MiB private L2s, shared
 * L3): the capacity part hardly matters there (with --write-pct 0 every
 * configuration visits a line in the same time); the writes to shared lines
 * do.
 *
 * The default W is L2 / (2 x groups-per-cpu) rounded down to a power of two
 * (L2: /sys/devices/system/cpu/cpuN/cache, level 2, of the first usable CPU;
 * 128 KiB for a 1 MiB L2 and 4 groups per CPU).
 *
 * Configurations: --impl ito with the policy of ITO_POLICY and --groups on
 * (each group's threads spawned into one ito_group_t, ito_attr_set_group;
 * pinned: ITO_GROUP_PINNED) or off; --impl pthread: the same program with
 * POSIX threads (sched_yield / sem_t) on the first C usable CPUs: the kernel's
 * scheduler, for reference. Threads are spawned group by group (--order
 * group; interleaved: member 0 of every group, then member 1...).
 *
 * Measured: `seconds` from the first spawn to the last join; `cache_misses`
 * (PERF_COUNT_HW_CACHE_MISSES) and `l1d_misses` (L1D read misses,
 * PERF_TYPE_HW_CACHE) over the same span, user space only, for the whole
 * process: the counters are opened before ito_init (or the first
 * pthread_create) with inherit=1, so they cover every kernel thread created
 * after them (ito's vprocs and spare activations included) and a read sums
 * the live ones. Where perf_event_open fails (no PMU in a virtual machine,
 * perf_event_paranoid), `counters` is false and `counters_reason` says why.
 * `turn_ns` and `ns_per_line`: the mean turn and its cost per line (its own
 * memory accesses, the switches excluded); `cross_pct`: turns that found the
 * group's previous turn ran on another CPU (vproc); `migrations_pct`: turns
 * of a thread on another CPU than its previous one; `busiest_cpu_pct`: the
 * turns run on the CPU that ran the most (100 / C when balanced); ito's
 * counters (`switches`, `steals`...), `kernel_switches` (getrusage). The result is verified: every
 * word must equal its initial value plus R x (j + 1) where its mask bit is
 * set (additions by one writer each: the same whatever the interleaving),
 * else the run fails.
 */
#include "common.h"

#include <linux/perf_event.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define WORDS 8           /* 64-byte line */
#define MASK_WORD 7       /* word 7: the line's write mask (read-only) */
#define MAX_MEMBERS 7     /* words 0..6: one writer each */

struct line {
    uint64_t w[WORDS];
} __attribute__((aligned(64)));

struct group {
    struct line *lines;
    ito_group_t ig;
    ito_sem_t isem[MAX_MEMBERS];
    sem_t psem[MAX_MEMBERS];
    _Atomic int last_cpu __attribute__((aligned(64)));   /* where the group's last turn ran (-1: none) */
};

struct member {
    struct group *g;
    int j;
    uint64_t sink;          /* what the reads summed: keeps them */
    uint64_t turn_ns;       /* time in turns */
    long cross, migrations;
    long *on_cpu;           /* [CPU or vproc]: turns run there */
} __attribute__((aligned(64)));

static bool use_ito, ring;
static int members;         /* M */
static int ncpu_ids;        /* size of the on_cpu arrays */
static long nlines, stride, rounds;

/* ------------------------------------------------------------ caches */

/* Size in KiB of the cache of `level` (data or unified) of CPU `cpu`, and
 * whether other CPUs share it; 0 if unknown. */
static long cache_kib(int cpu, int level, bool *shared)
{
    for (int i = 0; i < 16; i++) {
        char p[160], buf[64];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
        FILE *f = fopen(p, "r");
        if (!f)
            break;
        int lv = 0;
        if (fscanf(f, "%d", &lv) != 1)
            lv = 0;
        fclose(f);
        if (lv != level)
            continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
        f = fopen(p, "r");
        if (!f || !fgets(buf, sizeof buf, f)) {
            if (f)
                fclose(f);
            continue;
        }
        fclose(f);
        if (strncmp(buf, "Instruction", 11) == 0)
            continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
        f = fopen(p, "r");
        long kib = 0;
        char unit = 'K';
        if (f) {
            if (fscanf(f, "%ld%c", &kib, &unit) < 1)
                kib = 0;
            fclose(f);
        }
        if (unit == 'M')
            kib *= 1024;
        if (shared) {
            *shared = false;
            snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
            f = fopen(p, "r");
            if (f && fgets(buf, sizeof buf, f))
                *shared = strchr(buf, ',') || strchr(buf, '-');
            if (f)
                fclose(f);
        }
        return kib;
    }
    return 0;
}

/* ---------------------------------------------------------- counters */

struct counter {
    int fd;
    uint64_t v0, e0, r0;
};

static struct counter c_miss = { -1, 0, 0, 0 }, c_l1d = { -1, 0, 0, 0 };
static char counters_reason[256];
static bool counters_scaled;

static int perf_open(uint32_t type, uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.inherit = 1;            /* every thread created from now on, ito's vprocs included */
    a.exclude_kernel = 1;     /* what perf_event_paranoid 2 allows */
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static const char *errno_name(int e)
{
    switch (e) {
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    default: return "errno";
    }
}

/* Open the counters; on failure say why in counters_reason. */
static bool counters_open(void)
{
    c_miss.fd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
    if (c_miss.fd < 0) {
        int e = errno;
        char paranoid[16] = "?";
        FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
        if (f) {
            if (!fgets(paranoid, sizeof paranoid, f))
                strcpy(paranoid, "?");
            paranoid[strcspn(paranoid, "\n")] = 0;
            fclose(f);
        }
        bool pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
                   access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
        const char *why = "";
        if (e == ENOENT || e == ENODEV || e == EOPNOTSUPP)
            why = pmu ? "the PMU does not count this event" :
                        "no hardware PMU exposed to this kernel (no /sys/bus/event_source/devices/cpu; "
                        "usual in a virtual machine)";
        else if (e == EACCES || e == EPERM)
            why = "not permitted (see kernel.perf_event_paranoid)";
        else if (e == ENOSYS)
            why = "no perf_event_open in this kernel";
        snprintf(counters_reason, sizeof counters_reason,
                 "perf_event_open(PERF_COUNT_HW_CACHE_MISSES): %s (%s): %s; perf_event_paranoid=%s", strerror(e),
                 errno_name(e), why, paranoid);
        return false;
    }
    c_l1d.fd = perf_open(PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                                 ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
    return true;
}

static bool counter_read(int fd, uint64_t *v, uint64_t *en, uint64_t *run)
{
    uint64_t buf[3];
    if (fd < 0 || read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        return false;
    *v = buf[0];
    *en = buf[1];
    *run = buf[2];
    return true;
}

static void counter_start(struct counter *c)
{
    if (!counter_read(c->fd, &c->v0, &c->e0, &c->r0))
        c->fd = -1;
}

/* The count since counter_start, scaled up if the kernel multiplexed it; -1
 * if it could not be read. */
static long long counter_delta(struct counter *c)
{
    uint64_t v, e, r;
    if (!counter_read(c->fd, &v, &e, &r))
        return -1;
    double dv = (double)(v - c->v0), de = (double)(e - c->e0), dr = (double)(r - c->r0);
    if (dr > 0 && dr < de) {
        counters_scaled = true;
        dv *= de / dr;
    }
    return (long long)dv;
}

/* ---------------------------------------------------------- workload */

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t initial(long g, long i, int j)
{
    return hash64(((uint64_t)g << 40) ^ ((uint64_t)i << 4) ^ (uint64_t)j) & 0xffffffffull;
}

static int where(void)
{
    return use_ito ? ito_vproc_self() : sched_getcpu();
}

/* One turn: sweep the group's set once in the scattered order. */
static uint64_t turn(struct line *L, int j, long start)
{
    int nb = (j + 1) % members;
    uint64_t add = (uint64_t)j + 1, bit = 1ull << j, s = 0;
    long i = start;
    for (long k = 0; k < nlines; k++) {
        uint64_t *w = L[i].w;
        uint64_t m = __atomic_load_n(&w[MASK_WORD], __ATOMIC_RELAXED);
        s += __atomic_load_n(&w[nb], __ATOMIC_RELAXED);
        if (m & bit)   /* only member j writes word j: a relaxed load and store suffice */
            __atomic_store_n(&w[j], __atomic_load_n(&w[j], __ATOMIC_RELAXED) + add, __ATOMIC_RELAXED);
        i += stride;
        if (i >= nlines)
            i -= nlines;
    }
    return s;
}

static void *member_main(void *arg)
{
    struct member *me = arg;
    struct group *g = me->g;
    int j = me->j, prev = -1;
    uint64_t s = 0, ns = 0;
    long start = (long)((uint64_t)j * (uint64_t)nlines / (uint64_t)members);
    for (long r = 0; r < rounds; r++) {
        if (ring) {
            if (use_ito)
                CHECK0(ito_sem_wait(&g->isem[j]));
            else
                while (sem_wait(&g->psem[j]) != 0)
                    if (errno != EINTR)
                        bench_fail("sem_wait: %s", strerror(errno));
        }
        int cpu = where();
        int last = atomic_exchange_explicit(&g->last_cpu, cpu, memory_order_relaxed);
        me->cross += last >= 0 && last != cpu;
        me->migrations += prev >= 0 && prev != cpu;
        if (cpu >= 0 && cpu < ncpu_ids)
            me->on_cpu[cpu]++;
        prev = cpu;
        uint64_t t0 = bench_now_ns();
        s += turn(g->lines, j, start);
        ns += bench_now_ns() - t0;
        start += 977;   /* another starting line each turn */
        if (start >= nlines)
            start %= nlines;
        if (ring) {
            int nx = (j + 1) % members;
            if (use_ito)
                CHECK0(ito_sem_post(&g->isem[nx]));
            else if (sem_post(&g->psem[nx]) != 0)
                bench_fail("sem_post: %s", strerror(errno));
        } else if (use_ito) {
            ito_yield();
        } else {
            sched_yield();
        }
    }
    me->sink = s;
    me->turn_ns = ns;
    return NULL;
}

static long gcd(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--groups", "--cpus", "--vprocs", "--groups-per-cpu", "--ngroups",
                                         "--threads-per-group", "--ws-kib", "--write-pct", "--rounds", "--sync",
                                         "--order", "--counters", NULL };
    bench_exp = "groups";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    const char *grp = arg_str(argc, argv, "--groups", "off");
    bool groups_on = strcmp(grp, "on") == 0, pinned = strcmp(grp, "pinned") == 0;
    if (!groups_on && !pinned && strcmp(grp, "off") != 0)
        bench_fail("--groups must be off, on or pinned");
    if ((groups_on || pinned) && !use_ito)
        bench_fail("--groups on|pinned needs --impl ito");
    const char *sync = arg_str(argc, argv, "--sync", "yield");
    ring = strcmp(sync, "ring") == 0;
    if (!ring && strcmp(sync, "yield") != 0)
        bench_fail("--sync must be yield or ring");
    const char *order = arg_str(argc, argv, "--order", "group");
    bool interleaved = strcmp(order, "interleaved") == 0;
    if (!interleaved && strcmp(order, "group") != 0)
        bench_fail("--order must be group or interleaved");
    const char *cnt = arg_str(argc, argv, "--counters", "on");
    if (strcmp(cnt, "on") != 0 && strcmp(cnt, "off") != 0)
        bench_fail("--counters must be on or off");

    int cpus = arg_cpus(argc, argv);
    long per_cpu = (long)arg_int(argc, argv, "--groups-per-cpu", 4);
    long ngroups = (long)arg_int(argc, argv, "--ngroups", per_cpu * cpus);
    members = (int)arg_int(argc, argv, "--threads-per-group", 4);
    long write_pct = (long)arg_int(argc, argv, "--write-pct", 30);
    rounds = (long)arg_int(argc, argv, "--rounds", 5000);
    if (per_cpu < 1 || ngroups < 1 || rounds < 1)
        bench_fail("--groups-per-cpu, --ngroups and --rounds must be at least 1");
    if (members < 2 || members > MAX_MEMBERS)
        bench_fail("--threads-per-group must be between 2 and %d (one word of a cache line each)", MAX_MEMBERS);
    if (write_pct < 0 || write_pct > 100)
        bench_fail("--write-pct must be between 0 and 100");

    /* The caches of the first CPU used, and the working set per group. */
    int cpu0 = cpu_nth(0);
    bool l2_shared = false, l3_shared = false;
    long l1d = cache_kib(cpu0, 1, NULL), l2 = cache_kib(cpu0, 2, &l2_shared), l3 = cache_kib(cpu0, 3, &l3_shared);
    long dflt = 128;
    if (l2 > 0) {
        long want = l2 / (2 * ((ngroups + cpus - 1) / cpus));   /* the sets one CPU holds: half its L2 */
        dflt = 4;
        while (dflt * 2 <= want)
            dflt *= 2;
    }
    long ws_kib = (long)arg_int(argc, argv, "--ws-kib", dflt);
    if (ws_kib < 4 || ws_kib % 4)
        bench_fail("--ws-kib must be a multiple of 4 (at least 4)");
    nlines = ws_kib * 1024 / (long)sizeof(struct line);
    /* A stride of about 0.6 of the set, coprime with it: every line once per
     * turn, consecutive lines at least a page apart (sets of 128 lines or more). */
    stride = (long)((double)nlines * 0.618) | 1;
    while (gcd(stride, nlines) != 1)
        stride += 2;

    /* The groups' data: one mapping per group (no line shared between groups). */
    struct group *G = xmalloc((size_t)ngroups * sizeof *G);
    for (long g = 0; g < ngroups; g++) {
        G[g].lines = mmap(NULL, (size_t)nlines * sizeof(struct line), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (G[g].lines == MAP_FAILED)
            bench_fail("mmap: %s", strerror(errno));
        atomic_init(&G[g].last_cpu, -1);
        for (long i = 0; i < nlines; i++) {
            uint64_t m = 0;
            for (int j = 0; j < members; j++) {
                G[g].lines[i].w[j] = initial(g, i, j);
                if ((long)(hash64(((uint64_t)g << 40) ^ ((uint64_t)i << 4) ^ (uint64_t)j ^ 0x5bd1e995ull) % 100) <
                    write_pct)
                    m |= 1ull << j;
            }
            G[g].lines[i].w[MASK_WORD] = m;
        }
    }
    long nthreads = ngroups * members;
    struct member *M = aligned_alloc(64, (size_t)nthreads * sizeof *M);
    if (!M)
        bench_fail("out of memory");
    memset(M, 0, (size_t)nthreads * sizeof *M);
    ncpu_ids = use_ito ? cpus : cpu_nth(cpus - 1) + 1;
    for (long k = 0; k < nthreads; k++) {
        M[k].on_cpu = calloc((size_t)ncpu_ids, sizeof(long));
        if (!M[k].on_cpu)
            bench_fail("out of memory");
    }
    /* spawn order: group by group, or member j of every group in turn */
    for (long k = 0; k < nthreads; k++) {
        long g = interleaved ? k % ngroups : k / members;
        int j = (int)(interleaved ? k / ngroups : k % members);
        M[k].g = &G[g];
        M[k].j = j;
    }

    bool counters = false;
    if (strcmp(cnt, "on") == 0)
        counters = counters_open();   /* before any thread: inherit covers them all */
    else
        snprintf(counters_reason, sizeof counters_reason, "--counters off");

    ito_stats_t s0, s1;
    struct rusage ru0, ru1;
    uint64_t t0, ns;
    if (use_ito) {
        ito_start(cpus);
        for (long g = 0; g < ngroups; g++) {
            if (groups_on || pinned)
                CHECK0(ito_group_create(&G[g].ig, pinned ? ITO_GROUP_PINNED : 0));
            for (int j = 0; j < members; j++)
                CHECK0(ito_sem_init(&G[g].isem[j], j == 0));
        }
        ito_thread_t *th = xmalloc((size_t)nthreads * sizeof *th);
        ito_stats_get(&s0);
        getrusage(RUSAGE_SELF, &ru0);
        counter_start(&c_miss);
        counter_start(&c_l1d);
        t0 = bench_now_ns();
        for (long k = 0; k < nthreads; k++) {
            ito_attr_t a;
            CHECK0(ito_attr_init(&a));
            if (groups_on || pinned)
                CHECK0(ito_attr_set_group(&a, &M[k].g->ig));
            CHECK0(ito_spawn(&th[k], &a, member_main, &M[k]));
        }
        for (long k = 0; k < nthreads; k++)
            CHECK0(ito_join(th[k], NULL));
        ns = bench_now_ns() - t0;
        ito_stats_get(&s1);
        if (groups_on || pinned)
            for (long g = 0; g < ngroups; g++)
                CHECK0(ito_group_destroy(&G[g].ig));
    } else {
        restrict_to_cpus(cpus);
        for (long g = 0; g < ngroups; g++)
            for (int j = 0; j < members; j++)
                if (sem_init(&G[g].psem[j], 0, j == 0) != 0)
                    bench_fail("sem_init: %s", strerror(errno));
        pthread_t *th = xmalloc((size_t)nthreads * sizeof *th);
        getrusage(RUSAGE_SELF, &ru0);
        counter_start(&c_miss);
        counter_start(&c_l1d);
        t0 = bench_now_ns();
        for (long k = 0; k < nthreads; k++)
            CHECK0(pthread_create(&th[k], NULL, member_main, &M[k]));
        for (long k = 0; k < nthreads; k++)
            CHECK0(pthread_join(th[k], NULL));
        ns = bench_now_ns() - t0;
    }
    long long misses = counters ? counter_delta(&c_miss) : -1;
    long long l1dm = counters ? counter_delta(&c_l1d) : -1;
    getrusage(RUSAGE_SELF, &ru1);
    if (counters && misses < 0) {
        counters = false;
        snprintf(counters_reason, sizeof counters_reason, "reading the PERF_COUNT_HW_CACHE_MISSES counter failed");
    }

    /* Verify: word j of line i = its initial value + rounds x (j + 1) where
     * bit j of the mask is set; the mask unchanged. */
    uint64_t sink = 0;
    long cross = 0, migr = 0;
    uint64_t turn_ns = 0;
    long *on_cpu = calloc((size_t)ncpu_ids, sizeof(long)), busiest = 0;
    if (!on_cpu)
        bench_fail("out of memory");
    for (long k = 0; k < nthreads; k++) {
        for (int c = 0; c < ncpu_ids; c++)
            on_cpu[c] += M[k].on_cpu[c];
        sink += M[k].sink;
        cross += M[k].cross;
        migr += M[k].migrations;
        turn_ns += M[k].turn_ns;
    }
    for (long g = 0; g < ngroups; g++)
        for (long i = 0; i < nlines; i++) {
            const struct line *l = &G[g].lines[i];
            uint64_t m = 0;
            for (int j = 0; j < members; j++) {
                bool wr = (long)(hash64(((uint64_t)g << 40) ^ ((uint64_t)i << 4) ^ (uint64_t)j ^ 0x5bd1e995ull) %
                               100) < write_pct;
                m |= (uint64_t)wr << j;
                uint64_t want = initial(g, i, j) + (wr ? (uint64_t)rounds * (uint64_t)(j + 1) : 0);
                if (l->w[j] != want)
                    bench_fail("group %ld line %ld word %d: %llu, expected %llu (lost or extra updates)", g, i, j,
                               (unsigned long long)l->w[j], (unsigned long long)want);
            }
            if (l->w[MASK_WORD] != m)
                bench_fail("group %ld line %ld: mask word changed", g, i);
        }

    long long turns = (long long)nthreads * rounds;
    json_begin(bench_exp, bench_impl);
    if (use_ito) {
        json_common_ito();
        json_ito_stats(&s0, &s1);
    } else {
        json_common_pthread(cpus);
    }
    json_str("groups", use_ito ? grp : "n/a");
    json_str("sync", sync);
    json_str("order", order);
    json_int("ngroups", ngroups);
    json_int("threads_per_group", members);
    json_int("threads", nthreads);
    json_int("ws_kib", ws_kib);
    json_int("write_pct", write_pct);
    json_int("rounds", rounds);
    json_int("turns", turns);
    json_int("lines_per_turn", nlines);
    json_int("l1d_kib", l1d);
    json_int("l2_kib", l2);
    json_bool("l2_shared", l2_shared);
    json_int("l3_kib", l3);
    json_int("sets_per_cpu_kib", ws_kib * ((ngroups + cpus - 1) / cpus));
    json_int("sets_total_kib", ws_kib * ngroups);
    json_num("seconds", (double)ns / 1e9);
    json_num("turn_ns", (double)turn_ns / (double)turns);
    json_num("ns_per_line", (double)turn_ns / (double)turns / (double)nlines);
    json_num("cross_pct", 100.0 * (double)cross / (double)turns);
    json_num("migrations_pct", 100.0 * (double)migr / (double)turns);
    for (int c = 0; c < ncpu_ids; c++)
        busiest = on_cpu[c] > busiest ? on_cpu[c] : busiest;
    json_num("busiest_cpu_pct", 100.0 * (double)busiest / (double)turns);   /* 100 / cpus: balanced */
    json_int("kernel_switches", (long long)(ru1.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nvcsw - ru0.ru_nivcsw));
    json_bool("counters", counters);
    if (counters) {
        json_int("cache_misses", misses);
        if (l1dm >= 0)
            json_int("l1d_misses", l1dm);
        else {
            json_sep();
            json_raw("\"l1d_misses\":null");
        }
        json_bool("counters_scaled", counters_scaled);
    } else {
        json_str("counters_reason", counters_reason);
        json_sep();
        json_raw("\"cache_misses\":null,\"l1d_misses\":null");
    }
    json_hex("read_sum", sink);
    json_bool("verified", true);
    json_end();
    return 0;
}
