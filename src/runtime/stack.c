/* SPDX-License-Identifier: MIT */
/*
 * Thread stacks.
 *
 * Stacks are mmap'd (MAP_NORESERVE: address space only; pages are touched on
 * demand) and pooled: each vproc keeps a small LIFO cache of default-size
 * stacks, so a thread that exits hands a warm stack to the next one started
 * there; beyond it, stacks go to a global pool. Default-size stacks are
 * never unmapped, but once the global pool holds more than ITO__POOL_HOT of
 * them, a chunk whose stacks are all back in the pool gives its pages back to
 * the kernel with one madvise(MADV_DONTNEED) — one system call per chunk, not
 * per stack, so that a million exiting threads do not cost a million calls.
 *
 * Promises. A thread that exists must never fail for want of a stack: when
 * memory or mappings run out, the spawn must fail (EAGAIN), not the thread's
 * first run. Yet a thread that has not run needs no stack: a join may run it
 * inline on the joiner's stack (inline.c), and a thread that starts after
 * others have exited should take one of their warm stacks rather than touch
 * new pages (taking a stack at each spawn made fork-many, 100,000 threads
 * spawned then joined, 5 times slower). So a spawn takes a *promise* and the
 * first run takes a stack. The pool counts the promises it gave (`promised`)
 * and keeps them below the default-size stacks mapped (`total`): a spawn that
 * needs more maps a chunk first, or fails. Each vproc holds a batch of
 * promises, so that spawning touches no shared line, and never fewer than the
 * stacks in its cache; then the stacks outside every cache (the pool's, and
 * the chunks' never handed out) are at least as many as the threads promised
 * one and not started yet, and a first run always finds one. A thread that
 * ends gives its promise (with its stack) to the vproc it ends on; a vproc
 * with too many gives a batch back. Once a promise has been refused, and
 * until a chunk is mapped again, vprocs give them back at once (with the
 * stacks of threads that end), so that a spawn on any vproc succeeds again as
 * soon as threads have ended anywhere.
 *
 * Sizes. A thread that asks for a smaller stack than the default is promised
 * one of the default size ("at least" what it asks for: ito.h): its spawn
 * costs the same, and it may still run inline. A larger one is mapped at the
 * spawn (one mapping each, pooled when freed): rare, and never run inline.
 *
 * Chunks. Default-size stacks come from chunks of up to 256 (one mmap: a page
 * for the chunk's record, then each stack above a page for its guard; a
 * smaller one where address space is short), handed out in order, and only
 * once the pool has no used stack left.
 *
 * Guard pages. A PROT_NONE page below each stack turns an overflow into a
 * SIGSEGV that overflow.c reports. But each guarded stack costs two kernel
 * mappings (VMAs), and vm.max_map_count (65530 by default) caps them per
 * process: a million threads cannot all have guard pages. So ito gives guard
 * pages to at most a quarter of max_map_count stacks (half the mappings), as
 * they are first handed out, and none beyond that or when the kernel refuses
 * one, with a one-time warning. For an unguarded stack, the stack pointer is
 * checked whenever its thread switches out, so an overflow that is still in
 * progress there is reported (a canary would cost a resident page per stack,
 * which a million threads cannot afford).
 *
 * Sizes here are what is mapped: twice what threads ask for
 * (ito__stack_reserve, stack.h). After initialization nothing here calls
 * malloc: a vproc takes a stack when it starts a new thread, and that may
 * happen in the time-slice signal's handler.
 */
#include "runtime/stack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/env.h"
#include "base/panic.h"
#include "runtime/spinlock.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"

#define ITO__POOL_HOT 256          /* global pool stacks kept with their pages */
#define ITO__CHUNK 256             /* default-size stacks per chunk ... */
#define ITO__CHUNK_BYTES ((size_t)1 << 30)   /* ... and at most this much of them: 8 MiB
                                                stacks (the POSIX face's) come 63 at a time */
#define ITO__OTHER_POOL 64         /* pooled stacks of non-default sizes */

/* One mmap of default-size stacks; it lives as long as the process, in
 * the page below them (add_chunk). */
struct ito__stack_chunk {
    char *base;                     /* the first stack's guard page */
    size_t len;
    unsigned n;                     /* stacks it holds */
    unsigned carved;                /* of them, handed out at least once (pool.lock) */
    unsigned nfree;                 /* of those, in the global pool (pool.lock) */
    struct ito__stack_chunk *next;  /* in pool.fresh */
};

/* Everything here under `lock`. */
struct pool {
    ito__spinlock lock;
    struct ito__stack *items;       /* default-size stacks handed out before, free again */
    size_t n, cap;                  /* cap >= total: giving back never allocates */
    size_t total;                   /* default-size stacks mapped */
    size_t promised;                /* promises out (vprocs', threads'): <= total */
    struct ito__stack_chunk *fresh, *fresh_tail;   /* chunks with stacks never handed out */
    struct ito__stack other[ITO__OTHER_POOL];      /* other sizes */
    unsigned nother;
};

static struct pool pool = { .lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_STACKS) };
/* Relaxed: a vproc that misses a change gives a promise back a little later,
 * or keeps one a little longer; nothing depends on it but where they wait. */
_Atomic bool ito__stacks_short;
static size_t page_size;
size_t ito__stack_default_size;
#define default_size ito__stack_default_size
static _Atomic long guarded_left;      /* stacks that may still get a guard page */
static long max_map_count;             /* read at init: later reads may run in a signal handler */

size_t ito__stack_round(size_t size)
{
    return (size + page_size - 1) & ~(page_size - 1);
}

static long read_max_map_count(void)
{
    long v = 65530;   /* the kernel's default */
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 65530;
        fclose(f);
    }
    return v;
}

int ito__stacks_init(size_t dflt)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    default_size = ito__stack_round(ito__stack_reserve(dflt));
    max_map_count = read_max_map_count();
    atomic_store(&guarded_left, max_map_count / 4);
    return 0;
}

static bool take_guard(long n)
{
    long left = atomic_load_explicit(&guarded_left, memory_order_relaxed);
    while (left >= n) {
        if (atomic_compare_exchange_weak_explicit(&guarded_left, &left, left - n,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    }
    ITO_WARN_ONCE("so many thread stacks exist that guard pages would exhaust vm.max_map_count "
                  "(%ld); new stacks get no guard page, and an overflow is detected late (when "
                  "the thread switches out). Raise it (sysctl -w vm.max_map_count=N) to keep "
                  "guard pages.",
                  max_map_count);
    return false;
}

static void init_stack(struct ito__stack *s, void *lo, size_t size, uint32_t flags,
                       struct ito__stack_chunk *chunk)
{
    s->lo = lo;
    s->size = size;
    s->flags = flags | ITO__STACK_POOLED;
    s->vg_id = ito__vg_stack_register(lo, (char *)lo + size);
    s->chunk = chunk;
}

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, len, MADV_NOHUGEPAGE);   /* a huge page would make 2 MiB of a stack resident */
    ito__lsan_root(p, len);
    return p;
}

static void unmap(void *p, size_t len)
{
    ito__lsan_unroot(p, len);
    munmap(p, len);
}

/* ------------------------------------------------------------ the pool */

/* Add k default-size stacks to the global pool (pool.lock held); used ones
 * beyond ITO__POOL_HOT give their pages back to the kernel. */
static void pool_add_locked(struct ito__stack *s, unsigned k)
{
    ITO_BUG_ON(pool.n + k > pool.cap);   /* add_chunk made room for every stack */
    for (unsigned i = 0; i < k; i++) {
        struct ito__stack_chunk *c = s[i].chunk;
        pool.items[pool.n++] = s[i];
        if (++c->nfree == c->carved && pool.n > ITO__POOL_HOT)
            madvise(c->base, c->len, MADV_DONTNEED);   /* the whole chunk is idle */
    }
}

/* Map a chunk of up to ITO__CHUNK default-size stacks, at least `need`;
 * false if memory or mappings are short. */
static bool add_chunk(size_t need)
{
    size_t stride = default_size + page_size;
    size_t n = ITO__CHUNK_BYTES / stride < ITO__CHUNK ? ITO__CHUNK_BYTES / stride : ITO__CHUNK;
    if (n < 1)
        n = 1;
    char *head;
    while (!(head = map(page_size + n * stride))) {
        if (n <= need)
            return false;
        n = need;   /* a smaller one may still fit (RLIMIT_AS) */
    }
    struct ito__stack_chunk *chunk = (struct ito__stack_chunk *)head;
    *chunk = (struct ito__stack_chunk){ .base = head + page_size, .len = n * stride, .n = (unsigned)n };
    ito__spin_lock(&pool.lock);
    if (pool.total + n > pool.cap) {
        size_t cap = pool.cap ? pool.cap * 2 : 1024;
        while (cap < pool.total + n)
            cap *= 2;
        void *items = pool.items ? mremap(pool.items, pool.cap * sizeof *pool.items, cap * sizeof *pool.items,
                                          MREMAP_MAYMOVE)
                                 : mmap(NULL, cap * sizeof *pool.items, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (items == MAP_FAILED) {
            ito__spin_unlock(&pool.lock);
            unmap(head, page_size + n * stride);
            return false;
        }
        pool.items = items;
        pool.cap = cap;
    }
    pool.total += n;
    atomic_store_explicit(&ito__stacks_short, false, memory_order_relaxed);
    if (pool.fresh_tail)
        pool.fresh_tail->next = chunk;
    else
        pool.fresh = chunk;
    pool.fresh_tail = chunk;
    ito__spin_unlock(&pool.lock);
    return true;
}

/* Give out k promises, mapping stacks for them if needed; false if memory
 * or mappings are short (then ito__stacks_short is set). */
static bool promise(size_t k)
{
    for (;;) {
        ito__spin_lock(&pool.lock);
        size_t total = pool.total;
        if (pool.promised + k <= total) {
            pool.promised += k;
            ito__spin_unlock(&pool.lock);
            return true;
        }
        size_t need = pool.promised + k - total;
        ito__spin_unlock(&pool.lock);
        if (!add_chunk(need)) {
            atomic_store_explicit(&ito__stacks_short, true, memory_order_relaxed);
            return false;
        }
    }
}

static void unpromise(size_t k)
{
    ito__spin_lock(&pool.lock);
    pool.promised -= k;
    ito__spin_unlock(&pool.lock);
}

/* Give a stack never handed out before its guard page and its record. */
static void carve(struct ito__stack *s)
{
    /* A guard page splits the mapping: with vm.max_map_count reached it
     * fails, and the stack goes without (chunks are never unmapped). */
    bool guard = take_guard(1) && mprotect((char *)s->lo - page_size, page_size, PROT_NONE) == 0;
    init_stack(s, s->lo, default_size, guard ? ITO__STACK_GUARDED : 0, s->chunk);
}

/* ------------------------------------------------------- default sizes */

/* Take up to `want` stacks out of the pool into out: used ones first, then
 * ones never handed out. Returns how many. */
static unsigned pool_take(struct ito__stack *out, unsigned want)
{
    size_t stride = default_size + page_size;
    unsigned got = 0, used;
    ito__spin_lock(&pool.lock);
    while (got < want && pool.n) {
        out[got] = pool.items[--pool.n];
        out[got++].chunk->nfree--;
    }
    used = got;
    while (got < want && pool.fresh) {
        struct ito__stack_chunk *c = pool.fresh;
        out[got].lo = c->base + c->carved * stride + page_size;
        out[got++].chunk = c;
        if (++c->carved == c->n && !(pool.fresh = c->next))
            pool.fresh_tail = NULL;
    }
    ito__spin_unlock(&pool.lock);
    for (unsigned i = used; i < got; i++)
        carve(&out[i]);   /* (system calls: outside the lock) */
    return got;
}

/* A vproc with too many spare promises gives some back; all of them while
 * memory is short. */
static void promises_trim(struct ito__stack_cache *c)
{
    int keep = atomic_load_explicit(&ito__stacks_short, memory_order_relaxed) ? 0 : ITO__STACK_PROMISES;
    if (c->spare > keep) {
        unpromise((size_t)(c->spare - keep));
        c->spare = keep;
    }
}

void ito__stack_take_slow(struct ito__vproc *vp, struct ito__stack *out)
{
    struct ito__stack_cache *c = vp ? vp->stacks : NULL;
    if (c && c->n) {
        *out = c->s[--c->n];
        c->spare++;
        promises_trim(c);
        return;
    }
    /* Refill the empty cache, with no more stacks than spare promises. */
    unsigned want = 1;
    if (c)
        want += c->spare < ITO__STACK_CACHE / 2 - 1 ? (unsigned)c->spare : ITO__STACK_CACHE / 2 - 1;
    struct ito__stack tmp[ITO__STACK_CACHE / 2];
    unsigned got = pool_take(tmp, want);
    /* The promises guarantee a stack (above); should they not, map one. */
    ITO_ASSERT(got);
    while (!got) {
        if (!add_chunk(1))
            ito__panic("cannot map a stack for a thread that was promised one; please report it");
        got = pool_take(tmp, 1);
    }
    *out = tmp[--got];
    for (unsigned i = 0; i < got; i++)
        c->s[c->n++] = tmp[i];
    if (c)
        c->spare -= (int)got;
}

void ito__stack_unpromise_slow(struct ito__vproc *vp)
{
    struct ito__stack_cache *c = vp ? vp->stacks : NULL;
    if (!c) {
        unpromise(1);
        return;
    }
    c->spare++;
    promises_trim(c);
}

/* --------------------------------------------------------- other sizes */

/* One mapping for one stack of any size. */
static int map_single(size_t size, struct ito__stack *out)
{
    bool guarded = take_guard(1);
    size_t len = size + (guarded ? page_size : 0);
    char *base = map(len);
    if (!base) {
        if (guarded)
            atomic_fetch_add(&guarded_left, 1);
        return ENOMEM;
    }
    if (guarded && mprotect(base, page_size, PROT_NONE) != 0) {
        /* No mapping left to split off a guard page: map it without one
         * (ito__stack_put_slow finds the mapping by the flag). */
        unmap(base, len);
        guarded = false;
        if (!(base = map(size)))
            return ENOMEM;
    }
    init_stack(out, base + (guarded ? page_size : 0), size, guarded ? ITO__STACK_GUARDED : 0, NULL);
    return 0;
}

int ito__stack_promise_slow(struct ito__vproc *vp, size_t size, struct ito__stack *out)
{
    size = ito__stack_round(size);
    struct ito__stack_cache *c = vp ? vp->stacks : NULL;
    if (size > default_size) {
        /* Mapped now, or taken from the pool of larger sizes. */
        ito__spin_lock(&pool.lock);
        for (unsigned i = 0; i < pool.nother; i++) {
            if (pool.other[i].size == size) {
                *out = pool.other[i];
                pool.other[i] = pool.other[--pool.nother];
                ito__spin_unlock(&pool.lock);
                return 0;
            }
        }
        ito__spin_unlock(&pool.lock);
        return map_single(size, out);
    }
    if (!c)
        return promise(1) ? 0 : ENOMEM;
    if (c->spare > 0) {
        c->spare--;
    } else if (promise(ITO__STACK_PROMISES)) {
        c->spare += ITO__STACK_PROMISES - 1;
    } else if (!promise(1)) {
        if (!c->n)
            return ENOMEM;
        /* Short of memory: a cached stack goes to the pool, and its promise
         * serves this thread. */
        ito__spin_lock(&pool.lock);
        pool_add_locked(&c->s[--c->n], 1);
        ito__spin_unlock(&pool.lock);
    }
    return 0;
}

void ito__stack_put_slow(struct ito__vproc *vp, struct ito__stack *s)
{
    if (s->size == default_size) {
        struct ito__stack_cache *c = vp ? vp->stacks : NULL;
        if (!c || atomic_load_explicit(&ito__stacks_short, memory_order_relaxed)) {
            /* The stack and its promise to the pool, for any vproc. */
            ito__spin_lock(&pool.lock);
            pool_add_locked(s, 1);
            pool.promised--;
            ito__spin_unlock(&pool.lock);
            if (c)
                promises_trim(c);
            return;
        }
        if (c->n < ITO__STACK_CACHE) {
            c->s[c->n++] = *s;
            return;
        }
        /* Spill: this stack and half the cache to the global pool; their
         * promises stay, spare (and trimmed). */
        ito__spin_lock(&pool.lock);
        pool_add_locked(s, 1);
        pool_add_locked(&c->s[c->n - ITO__STACK_CACHE / 2], ITO__STACK_CACHE / 2);
        ito__spin_unlock(&pool.lock);
        c->n -= ITO__STACK_CACHE / 2;
        c->spare += ITO__STACK_CACHE / 2 + 1;
        promises_trim(c);
        return;
    }
    ito__spin_lock(&pool.lock);
    if (pool.nother < ITO__OTHER_POOL) {
        pool.other[pool.nother++] = *s;
        ito__spin_unlock(&pool.lock);
        return;
    }
    ito__spin_unlock(&pool.lock);
    /* A single mapping: give it back to the kernel. */
    ito__vg_stack_deregister(s->vg_id);
    bool guarded = s->flags & ITO__STACK_GUARDED;
    char *base = (char *)s->lo - (guarded ? page_size : 0);
    unmap(base, s->size + (guarded ? page_size : 0));
    if (guarded)
        atomic_fetch_add(&guarded_left, 1);
}

void ito__stacks_forked(const struct ito__stack *kept)
{
    /* The pool may be half-updated by a kernel thread the fork left behind:
     * start empty (the parent's pooled stacks stay mapped, unused). A
     * chunk's free count may then stay above zero for good; it only decides
     * when an idle chunk's pages go back to the kernel. The forking thread
     * keeps its stack, and the promise that goes with it: both counted. */
    ito__spin_init(&pool.lock, ITO__LOCK_STACKS);
    pool.n = 0;
    pool.nother = 0;
    pool.fresh = pool.fresh_tail = NULL;
    pool.total = pool.promised = kept && (kept->flags & ITO__STACK_POOLED) && kept->size == default_size;
}

struct ito__stack_cache *ito__stack_cache_create(void)
{
    return calloc(1, sizeof(struct ito__stack_cache));
}

void ito__stack_overflowed(size_t requested, uint32_t thread_index, const char *name)
{
    ito__panic("thread %u \"%s\" overflowed its stack of %zu bytes (its stack has no guard page: "
               "memory below it may be corrupted). Give it a larger stack: "
               "ito_attr_set_stack_size() or ITO_STACK_SIZE=<bytes>",
               thread_index, name, requested);
}

int ito__stack_map_standalone(size_t size, struct ito__stack *out, void **mapping, size_t *mapping_size)
{
    if (!page_size)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page_size - 1) & ~(page_size - 1);
    size_t len = size + page_size;
    char *base = map(len);
    if (!base)
        return ENOMEM;
    mprotect(base, page_size, PROT_NONE);
    out->lo = base + page_size;
    out->size = size;
    out->flags = ITO__STACK_GUARDED;
    out->vg_id = ito__vg_stack_register(out->lo, base + len);
    out->chunk = NULL;
    *mapping = base;
    *mapping_size = len;
    return 0;
}

void ito__stack_unmap_standalone(void *mapping, size_t mapping_size, struct ito__stack *s)
{
    ito__vg_stack_deregister(s->vg_id);
    unmap(mapping, mapping_size);
}

size_t ito__default_stack_size(void)
{
    if (ito__runtime_built())
        return ito__rt.stack_size;
    return (size_t)ito__env_int("ITO_STACK_SIZE", ITO_STACK_DEFAULT, ITO_STACK_MIN, ITO_STACK_MAX, true);
}
