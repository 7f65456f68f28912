/* SPDX-License-Identifier: MIT */
/*
 * The allocation table: [SA]'s processor allocator, in shared memory.
 *
 * Problem. Several ito processes on one machine each run a vproc per
 * processor; the kernel time-slices the surplus, preempting lock holders
 * and idling processors while work waits ([SA §3.2, Table 5]). The
 * kernel of [SA] divides the processors among address spaces from two hints
 * (Table 3: "I could use n more", "this processor is idle"). Linux will not,
 * so the processes do it among themselves.
 *
 * Approach. One segment per user (and per domain, ITO_ALLOC_DOMAIN),
 * created on demand with mode 0600 by whichever process comes first: no
 * daemon. It lives where no other user can create a file, so that nobody
 * can take its name first (ito__table_path: the user's runtime directory,
 * /run for root); only a user without a runtime directory falls back to
 * /dev/shm, where another user who takes the name first keeps this user's
 * processes out of the sharing (they say so). Each process owns a slot where it posts its hints (how
 * many processors it could use, its priority, its affinity mask and quota)
 * on transitions only. Whoever changes its hints takes the table's lock and
 * divides the processors anew (divide.c: a pure function of the slots), and
 * if a grant changed — or a priority, or who is registered, which may
 * change who is above whom on a shared processor (the view's shared_above,
 * cpushare/weight.c) — bumps the generation word, a futex every process sleeps
 * on: nobody polls for changes.
 *
 * Faults. Any process may die at any point, also holding the lock.
 *   - The lock word names its holder by thread id and start time; a waiter
 *     checks every 10 ms that the holder still exists (/proc/TID/stat) and
 *     takes a dead holder's lock over — and a live one's that has held it
 *     for a second without an unlock (stopped, stuck, or named by a damaged
 *     word), saying so; an unlock frees only its own lock. The table may
 *     then be half-written, so it is checked and divided again.
 *   - A slot names its process by pid and start time (pids are reused, the
 *     pair is not); a division drops the slots of processes that are gone.
 *     Who notices: every process looks at the others' liveness at least
 *     once a second while it wants processors it does not hold (agent).
 *   - Every field read from the segment is checked before use: another
 *     process of the same user may have written anything there. A bad
 *     header resets the whole table (the processes then re-register, having
 *     lost their slots); a bad slot is freed. Masks are intersected with the
 *     online processors, counts bounded. A grant is only ever read under the
 *     lock, after that check.
 *   - The layout is versioned twice: in the segment's name (processes of an
 *     incompatible ito never meet) and in the header (anything else found
 *     there is damage).
 * Out of scope: a process of the same user that truncates the segment
 * (every mapping of it then faults) — it may as well kill its peers; the
 * user's own processes are trusted not to be malicious, only to be buggy,
 * stopped or killed.
 *
 * Memory order. Everything in a slot and the header's counters is written
 * and read under the lock: the lock's acquire CAS pairs with the release
 * store that frees it (unlock). The generation's release increment (after
 * the grants are written) pairs with the acquire load of a process that
 * then takes the lock to read its grant — the lock already orders that; the
 * generation only says when to look.
 */
#include "cpushare/table.h"
#include "base/libc.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/futex.h"
#include "base/panic.h"
#include "base/procstat.h"

/* The layout is an ABI between processes: pin it. */
_Static_assert(sizeof(ito__cpumask) == 128, "cpumask layout");
_Static_assert(offsetof(struct ito__table_slot, allowed) == 40, "slot layout");
_Static_assert(sizeof(struct ito__table_slot) == 328, "slot layout");
_Static_assert(offsetof(struct ito__table_header, lock) == 24, "header layout");
_Static_assert(offsetof(struct ito__table_header, online) == 80, "header layout");
_Static_assert(sizeof(struct ito__table_header) == 208, "header layout");
_Static_assert(sizeof(struct ito__table) == 208 + 64 * 328, "table layout");

/* Linux's largest pid_max (PID_MAX_LIMIT on 64-bit). */
#define PID_LIMIT 4194304
/* How often a waiter looks whether the lock's holder still exists. */
#define LOCK_CHECK_NS 10000000u
/* A holder that keeps the lock this long is stuck (a division takes
 * microseconds): stopped, hung, or not a holder at all (a lock word that
 * names a live thread by accident or by design). */
#define LOCK_STUCK_NS 1000000000u

/* ------------------------------------------------------------- processes */

uint64_t ito__table_start_time(pid_t pid)
{
    char buf[1024];
    if (pid <= 0 || pid > PID_LIMIT)
        return 0;
    const char *fields = ito__procstat_read(pid, buf, sizeof buf);
    const char *state = fields ? ito__procstat_field(fields, 3) : NULL;
    /* A zombie (Z: ended, not yet reaped by its parent, which may never
     * come) or a dead task (X) has ended: it holds nothing any more. */
    if (!state || *state == 'Z' || *state == 'X' || *state == 'x')
        return 0;
    const char *start = ito__procstat_field(fields, 22);
    return start ? strtoull(start, NULL, 10) : 0;
}

bool ito__table_alive(pid_t pid, uint64_t start_time)
{
    uint64_t st = ito__table_start_time(pid);
    return st != 0 && st == start_time;
}

/* This kernel thread as the lock names it. (Computed again when the thread
 * id changes: the child of a fork inherits its parent's thread-local copy.) */
static uint64_t lock_id(void)
{
    static __thread uint64_t id;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if ((uint32_t)id != (uint32_t)tid)
        id = (uint64_t)(uint32_t)ito__table_start_time(tid) << 32 | (uint32_t)tid;
    return id;
}

static bool holder_alive(uint64_t id)
{
    pid_t tid = (pid_t)(uint32_t)id;
    uint64_t st = ito__table_start_time(tid);
    return st != 0 && (uint32_t)st == (uint32_t)(id >> 32);
}

/* ------------------------------------------------------------- segment */

bool ito__table_domain_ok(const char *domain)
{
    size_t n = 0;
    for (const char *p = domain; *p; p++, n++)
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') && *p != '-' &&
            *p != '_')
            return false;
    return n >= 1 && n <= ITO__ALLOC_DOMAIN_MAX;
}

/* May only this user (or root) create files in dir? */
static bool private_dir(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

void ito__table_path(const char *domain, char *buf, size_t len)
{
    char dir[64];
    unsigned uid = (unsigned)geteuid();
    snprintf(dir, sizeof dir, "/run/user/%u", uid);
    if (!private_dir(dir))
        snprintf(dir, sizeof dir, "%s", uid == 0 && private_dir("/run") ? "/run" : "/dev/shm");
    if (domain && *domain)
        snprintf(buf, len, "%s/ito-alloc-%u-%s-v%d", dir, uid, domain, ITO__ALLOC_VERSION);
    else
        snprintf(buf, len, "%s/ito-alloc-%u-v%d", dir, uid, ITO__ALLOC_VERSION);
}

int ito__table_open(const char *path, struct ito__table **out)
{
    char dflt[160];
    if (!path) {
        ito__table_path(NULL, dflt, sizeof dflt);
        path = dflt;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    /* Another user's segment under our name is not ours to trust. */
    if (st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
        close(fd);
        return EACCES;
    }
    if ((st.st_mode & 077) != 0)
        fchmod(fd, 0600);
    if ((size_t)st.st_size < sizeof(struct ito__table) && ftruncate(fd, sizeof(struct ito__table)) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    void *p = mmap(NULL, sizeof(struct ito__table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return e;
    *out = p;
    return 0;
}

void ito__table_close(struct ito__table *t)
{
    if (t)
        munmap(t, sizeof *t);
}

/* ------------------------------------------------------------- checking */

static bool header_ok(const struct ito__table_header *h)
{
    return h->magic == ITO__ALLOC_MAGIC && h->version == ITO__ALLOC_VERSION && h->size == sizeof(struct ito__table) &&
           h->nslots == ITO__ALLOC_SLOTS && h->ncpus == ITO__ALLOC_MAX_CPUS;
}

static bool slot_ok(const struct ito__table_slot *s)
{
    if (s->state == ITO__SLOT_FREE)
        return true;
    return s->state == ITO__SLOT_USED && s->pid > 0 && s->pid <= PID_LIMIT && s->start_time != 0 &&
           s->priority >= ITO_ALLOC_PRIORITY_MIN && s->priority <= ITO_ALLOC_PRIORITY_MAX && s->want >= 0 &&
           s->want <= ITO__ALLOC_MAX_CPUS && s->quota >= 0 && s->quota <= ITO__ALLOC_MAX_CPUS &&
           s->vprocs >= 1 && s->vprocs <= ITO__ALLOC_MAX_CPUS && s->ngrant == ito__cpumask_count(&s->grant) &&
           memchr(s->name, '\0', sizeof s->name) != NULL;
}

/* Set by announce, under the lock: wake the processes at unlock. */
static __thread bool announced;

/* Tell every process to look again at its grant and view. Release: what
 * was written under the lock before the new generation (the lock orders it
 * anyway; see the essay). The sleepers are woken only once the lock is free
 * (ito__table_unlock): each of them takes it at once to read its grant, and
 * a sleeper woken while we hold it would wait for us — behind its own
 * wake-up, which preempts us (the agent's short slice): traces of
 * bench/realloc showed agents waiting milliseconds so. */
static void announce(struct ito__table_header *h)
{
    atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
    announced = true;
}

/* Reset the whole table (the lock stays ours). */
static void rebuild(struct ito__table *t)
{
    struct ito__table_header *h = &t->h;
    bool sane = h->magic == ITO__ALLOC_MAGIC && h->version == ITO__ALLOC_VERSION;
    uint64_t rebuilds = sane ? h->rebuilds : 0, takeovers = sane ? h->takeovers : 0;
    memset(t->slot, 0, sizeof t->slot);
    h->magic = ITO__ALLOC_MAGIC;
    h->version = ITO__ALLOC_VERSION;
    h->size = sizeof *t;
    h->nslots = ITO__ALLOC_SLOTS;
    h->ncpus = ITO__ALLOC_MAX_CPUS;
    h->next_serial = 1;
    h->divisions = h->reallocations = 0;
    h->rebuilds = rebuilds + 1;
    h->takeovers = takeovers;
    ito__cpumask_zero(&h->online);
    announce(h);   /* every process must look: its slot is gone */
}

/* ------------------------------------------------------------- the lock */

bool ito__table_lock(struct ito__table *t)
{
    struct ito__table_header *h = &t->h;
    uint64_t me = lock_id();
    bool takeover = false, stuck = false;
    uint64_t seen = 0, since = 0;   /* the holder we wait for, and since when */
    uint32_t seen_seq = 0;
    for (;;) {
        uint64_t cur = 0;
        /* Acquire pairs with the release store of ito__table_unlock. */
        if (atomic_compare_exchange_strong_explicit(&h->lock, &cur, me, memory_order_acquire, memory_order_relaxed))
            break;
        uint32_t seq = atomic_load_explicit(&h->lock_seq, memory_order_relaxed);
        if (atomic_load_explicit(&h->lock, memory_order_relaxed) != cur)
            continue;
        if (cur == me || !holder_alive(cur)) {
            /* Its holder is gone (or is a garbage word, or is us: a thread
             * that died inside, leaving a word equal to ours, cannot be
             * us, so it is garbage). */
            if (atomic_compare_exchange_strong_explicit(&h->lock, &cur, me, memory_order_acquire,
                                                        memory_order_relaxed)) {
                takeover = true;
                break;
            }
            continue;
        }
        uint64_t now = ito__now_ns();
        if (cur != seen || seq != seen_seq) {
            seen = cur, seen_seq = seq, since = now;
        } else if (now - since >= LOCK_STUCK_NS) {
            /* Held all this time without an unlock: taken over, as from the
             * dead. If the holder was only slow, it finds the lock not its
             * own at its unlock (which then leaves it alone), and the table
             * is checked by every holder anyway. */
            if (atomic_compare_exchange_strong_explicit(&h->lock, &cur, me, memory_order_acquire,
                                                        memory_order_relaxed)) {
                takeover = stuck = true;
                break;
            }
            continue;
        }
        ito__futex_wait_shared(&h->lock_seq, seq, now + LOCK_CHECK_NS);
    }
    if (stuck) {
        static _Atomic bool said;
        if (!atomic_exchange_explicit(&said, true, memory_order_relaxed))
            ito__warn("the processor allocation table's lock was held for over %u s by thread %u, which is "
                      "alive (stopped or stuck while holding it, or the lock word was damaged): taken over",
                      LOCK_STUCK_NS / 1000000000u, (unsigned)(uint32_t)seen);
    }
    bool fixed = takeover;
    if (!header_ok(h)) {
        bool fresh = h->magic == 0 && h->version == 0;   /* a new segment */
        rebuild(t);
        if (fresh)
            h->rebuilds = 0;
        fixed = true;
    }
    if (takeover)
        h->takeovers++;
    for (int i = 0; i < ITO__ALLOC_SLOTS; i++) {
        if (!slot_ok(&t->slot[i])) {
            memset(&t->slot[i], 0, sizeof t->slot[i]);
            fixed = true;
        }
    }
    return fixed;
}

void ito__table_unlock(struct ito__table *t)
{
    /* Release pairs with the acquire CAS of ito__table_lock. A lock taken
     * over from us (we held it too long) is no longer ours to free. */
    uint64_t me = lock_id();
    atomic_compare_exchange_strong_explicit(&t->h.lock, &me, 0, memory_order_release, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->h.lock_seq, 1, memory_order_relaxed);
    ito__futex_wake_shared(&t->h.lock_seq, 1);
    if (announced) {
        announced = false;
        ito__futex_wake_shared(&t->h.generation, INT_MAX);
    }
}

/* ------------------------------------------------------------- division */

/* The online processors (/sys/devices/system/cpu/online: "0-3,8-11"). */
static void online_cpus(ito__cpumask *m)
{
    ito__cpumask_zero(m);
    int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
    char buf[4096];
    ssize_t n = fd >= 0 ? ito__sys_read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0) {
        buf[n] = '\0';
        char *p = buf;
        while (isdigit((unsigned char)*p)) {
            long a = strtol(p, &p, 10), b = a;
            if (*p == '-')
                b = strtol(p + 1, &p, 10);
            for (long c = a; c <= b && c < ITO__ALLOC_MAX_CPUS; c++)
                ito__cpumask_set(m, (int)c);
            if (*p == ',')
                p++;
        }
    }
    if (ito__cpumask_count(m) == 0) {
        long nc = sysconf(_SC_NPROCESSORS_CONF);
        for (long c = 0; c < (nc > 0 ? nc : 1) && c < ITO__ALLOC_MAX_CPUS; c++)
            ito__cpumask_set(m, (int)c);
    }
}

bool ito__table_divide(struct ito__table *t)
{
    struct scratch {
        struct ito__divide_claim claims[ITO__ALLOC_SLOTS];
        ito__cpumask grant[ITO__ALLOC_SLOTS];
        int idx[ITO__ALLOC_SLOTS];
    } *w = malloc(sizeof *w);
    if (!w)
        return false;   /* the next change divides again */
    int n = 0;
    bool changed = false;
    ito__cpumask online;
    online_cpus(&online);
    for (int i = 0; i < ITO__ALLOC_SLOTS; i++) {
        struct ito__table_slot *s = &t->slot[i];
        if (s->state != ITO__SLOT_USED)
            continue;
        if (!ito__table_alive(s->pid, s->start_time)) {
            memset(s, 0, sizeof *s);   /* gone: its processors go to the others */
            changed = true;
            continue;
        }
        w->claims[n] = (struct ito__divide_claim){ .priority = s->priority, .want = s->want, .quota = s->quota,
                                                  .max = s->vprocs, .allowed = s->allowed, .held = s->grant };
        w->idx[n++] = i;
    }
    ito__divide(w->claims, n, &online, w->grant);
    for (int k = 0; k < n; k++) {
        struct ito__table_slot *s = &t->slot[w->idx[k]];
        if (!ito__cpumask_equal(&s->grant, &w->grant[k])) {
            s->grant = w->grant[k];
            s->ngrant = ito__cpumask_count(&w->grant[k]);
            s->grant_changes++;
            changed = true;
        }
    }
    free(w);
    t->h.online = online;
    t->h.divisions++;
    if (changed) {
        t->h.reallocations++;
        announce(&t->h);
    }
    return changed;
}

/* ------------------------------------------------------------- a process */

/* Is slot i still (pid, serial)'s? Under the lock. */
static struct ito__table_slot *mine(struct ito__table *t, int i, uint64_t serial)
{
    if (i < 0 || i >= ITO__ALLOC_SLOTS)
        return NULL;
    struct ito__table_slot *s = &t->slot[i];
    return s->state == ITO__SLOT_USED && s->serial == serial && s->pid == getpid() ? s : NULL;
}

static void fill(struct ito__table_slot *s, const struct ito__table_hints *hi)
{
    s->priority = hi->priority < ITO_ALLOC_PRIORITY_MIN   ? ITO_ALLOC_PRIORITY_MIN
                  : hi->priority > ITO_ALLOC_PRIORITY_MAX ? ITO_ALLOC_PRIORITY_MAX
                                                          : hi->priority;
    s->want = hi->want < 0 ? 0 : hi->want > ITO__ALLOC_MAX_CPUS ? ITO__ALLOC_MAX_CPUS : hi->want;
    s->quota = hi->quota < 0 ? 0 : hi->quota > ITO__ALLOC_MAX_CPUS ? ITO__ALLOC_MAX_CPUS : hi->quota;
    s->vprocs = hi->vprocs < 1 ? 1 : hi->vprocs > ITO__ALLOC_MAX_CPUS ? ITO__ALLOC_MAX_CPUS : hi->vprocs;
    s->allowed = hi->allowed;
}

int ito__table_join(struct ito__table *t, const struct ito__table_hints *hi, int *slot, uint64_t *serial)
{
    pid_t pid = getpid();
    uint64_t start = ito__table_start_time(pid);
    if (!start)
        return ESRCH;   /* no /proc */
    ito__table_lock(t);
    int free_i = -1;
    for (int i = 0; i < ITO__ALLOC_SLOTS && free_i < 0; i++)
        if (t->slot[i].state == ITO__SLOT_FREE)
            free_i = i;
    if (free_i < 0) {
        /* Full: make room from the dead, if any. */
        ito__table_divide(t);
        for (int i = 0; i < ITO__ALLOC_SLOTS && free_i < 0; i++)
            if (t->slot[i].state == ITO__SLOT_FREE)
                free_i = i;
    }
    if (free_i < 0) {
        ito__table_unlock(t);
        return ENOSPC;
    }
    struct ito__table_slot *s = &t->slot[free_i];
    memset(s, 0, sizeof *s);
    s->state = ITO__SLOT_USED;
    s->pid = pid;
    s->start_time = start;
    s->serial = t->h.next_serial++;
    memcpy(s->name, hi->name, sizeof s->name);
    s->name[sizeof s->name - 1] = '\0';
    fill(s, hi);
    *slot = free_i;
    *serial = s->serial;
    ito__table_divide(t);
    ito__table_unlock(t);
    return 0;
}

int ito__table_post(struct ito__table *t, int slot, uint64_t serial, const struct ito__table_hints *hi)
{
    bool fixed = ito__table_lock(t);
    struct ito__table_slot *s = mine(t, slot, serial);
    if (s) {
        struct ito__table_slot before = *s;
        fill(s, hi);
        if (fixed || s->want != before.want || s->priority != before.priority || s->quota != before.quota ||
            !ito__cpumask_equal(&s->allowed, &before.allowed)) {
            /* A new priority may change who is above whom on a shared
             * processor (the view's shared_above) with the same grants. */
            if (!ito__table_divide(t) && s->priority != before.priority)
                announce(&t->h);
        }
    } else if (fixed) {
        ito__table_divide(t);
    }
    ito__table_unlock(t);
    return s ? 0 : ESRCH;
}

void ito__table_leave(struct ito__table *t, int slot, uint64_t serial)
{
    ito__table_lock(t);
    struct ito__table_slot *s = mine(t, slot, serial);
    if (s)
        memset(s, 0, sizeof *s);
    if (!ito__table_divide(t) && s)
        announce(&t->h);   /* whom it was above may change, with the same grants */
    ito__table_unlock(t);
}

int ito__table_grant(struct ito__table *t, int slot, uint64_t serial, ito__cpumask *out, uint32_t *generation,
                     struct ito__table_view *view)
{
    /* Acquire pairs with the release increment of a division (the lock
     * below orders the grant itself). */
    *generation = atomic_load_explicit(&t->h.generation, memory_order_acquire);
    bool fixed = ito__table_lock(t);
    if (fixed)
        ito__table_divide(t);
    struct ito__table_slot *s = mine(t, slot, serial);
    if (s) {
        /* Checked like everything else read from the segment. */
        ito__cpumask_and(out, &s->grant, &t->h.online);
        if (ito__cpumask_count(out) == 0)
            *out = t->h.online;
    }
    if (view) {
        view->processes = 0;
        for (int i = 0; i < ITO__ALLOC_SLOTS; i++)
            view->processes += t->slot[i].state == ITO__SLOT_USED;
        view->reallocations = t->h.reallocations;
        ito__cpumask_zero(&view->shared_above);
        for (int i = 0; s && i < ITO__ALLOC_SLOTS; i++) {
            const struct ito__table_slot *o = &t->slot[i];
            if (o != s && o->state == ITO__SLOT_USED && o->priority > s->priority)
                for (int w = 0; w < ITO__CPUMASK_WORDS; w++)
                    view->shared_above.w[w] |= o->grant.w[w] & out->w[w];
        }
    }
    ito__table_unlock(t);
    return s ? 0 : ESRCH;
}
