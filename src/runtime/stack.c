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
 * Guard pages. A PROT_NONE page below each stack turns an overflow into a
 * SIGSEGV that overflow.c reports. But each guarded stack costs two kernel
 * mappings (VMAs), and vm.max_map_count (65530 by default) caps them per
 * process: a million threads cannot all have guard pages. So ito gives guard
 * pages to at most a quarter of max_map_count stacks (half the mappings), and
 * beyond that carves stacks from large unguarded chunks (one mapping per 256
 * stacks), with a one-time warning. For an unguarded stack, the stack pointer
 * is checked whenever its thread switches out, so an overflow that is still
 * in progress there is reported (a canary would cost a resident page per
 * stack, which a million threads cannot afford).
 *
 * Default-size stacks come from chunks (16 guarded or 256 unguarded stacks per
 * mmap, and a page for the chunk's record); other sizes get a mapping each.
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
#define ITO__CHUNK_GUARDED 16
#define ITO__CHUNK_UNGUARDED 256
#define ITO__OTHER_POOL 64         /* pooled stacks of non-default sizes */

/* One mmap of default-size stacks; it lives as long as the process, in
 * the page below them (map_chunk). */
struct ito__stack_chunk {
    char *base;
    size_t len;
    unsigned n;           /* stacks carved from it */
    unsigned nfree;       /* of them, in the global pool (pool.lock) */
};

struct pool {
    ito__spinlock lock;
    struct ito__stack *items;     /* default size */
    size_t n, cap;
    struct ito__stack other[ITO__OTHER_POOL];   /* other sizes */
    unsigned nother;
};

static struct pool pool = { .lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_STACKS) };
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

/* Add k default-size stacks to the global pool; used ones beyond
 * ITO__POOL_HOT give their pages back to the kernel. */
static void pool_add(struct ito__stack *s, unsigned k, bool fresh)
{
    ito__spin_lock(&pool.lock);
    if (pool.n + k > pool.cap) {
        size_t cap = pool.cap ? pool.cap * 2 : 1024;
        while (cap < pool.n + k)
            cap *= 2;
        void *items = pool.items ? mremap(pool.items, pool.cap * sizeof *pool.items, cap * sizeof *pool.items,
                                          MREMAP_MAYMOVE)
                                 : mmap(NULL, cap * sizeof *pool.items, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (items == MAP_FAILED)
            ito__panic("out of memory while pooling thread stacks");
        pool.items = items;
        pool.cap = cap;
    }
    for (unsigned i = 0; i < k; i++) {
        struct ito__stack_chunk *c = s[i].chunk;
        pool.items[pool.n++] = s[i];
        if (++c->nfree == c->n && !fresh && pool.n > ITO__POOL_HOT)
            madvise(c->base, c->len, MADV_DONTNEED);   /* the whole chunk is idle */
    }
    ito__spin_unlock(&pool.lock);
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

/* Map a chunk of default-size stacks; out receives up to `max` of them. */
static unsigned map_chunk(struct ito__stack *out, unsigned max)
{
    bool guarded = take_guard(ITO__CHUNK_GUARDED);
    unsigned n = guarded ? ITO__CHUNK_GUARDED : ITO__CHUNK_UNGUARDED;
    size_t stride = default_size + (guarded ? page_size : 0);
    /* The chunk's record lives in a page of its own below its stacks (out
     * of reach of the madvise that empties them): no malloc, since this
     * runs when a vproc starts a new thread, also from the time-slice
     * signal's handler. */
    char *head = map(page_size + n * stride);
    if (!head) {
        if (guarded)
            atomic_fetch_add(&guarded_left, ITO__CHUNK_GUARDED);
        return 0;
    }
    char *base = head + page_size;
    struct ito__stack_chunk *chunk = (struct ito__stack_chunk *)head;
    *chunk = (struct ito__stack_chunk){ base, n * stride, n, 0 };
    struct ito__stack extra[ITO__CHUNK_UNGUARDED];
    unsigned k = 0, nextra = 0;
    for (unsigned i = 0; i < n; i++) {
        char *lo = base + i * stride + (guarded ? page_size : 0);
        if (guarded)
            mprotect(lo - page_size, page_size, PROT_NONE);
        struct ito__stack *s = k < max ? &out[k++] : &extra[nextra++];
        init_stack(s, lo, default_size, guarded ? ITO__STACK_GUARDED : 0, chunk);
    }
    if (nextra)
        pool_add(extra, nextra, true);
    return k;
}

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
    if (guarded)
        mprotect(base, page_size, PROT_NONE);
    init_stack(out, base + (guarded ? page_size : 0), size, guarded ? ITO__STACK_GUARDED : 0, NULL);
    return 0;
}

int ito__stack_get_slow(struct ito__vproc *vp, size_t size, struct ito__stack *out)
{
    size = ito__stack_round(size);
    if (size == default_size) {
        struct ito__stack_cache *c = vp ? vp->stacks : NULL;
        if (c && c->n) {
            *out = c->s[--c->n];
            return 0;
        }
        /* Refill: half a cache from the global pool, else a new chunk. */
        unsigned want = c ? ITO__STACK_CACHE / 2 : 1, got = 0;
        struct ito__stack tmp[ITO__STACK_CACHE / 2];
        ito__spin_lock(&pool.lock);
        while (got < want && pool.n) {
            tmp[got] = pool.items[--pool.n];
            tmp[got++].chunk->nfree--;
        }
        ito__spin_unlock(&pool.lock);
        if (!got)
            got = map_chunk(tmp, want);
        if (!got)
            return ENOMEM;
        *out = tmp[--got];
        for (unsigned i = 0; i < got; i++)
            c->s[c->n++] = tmp[i];
        return 0;
    }
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

void ito__stack_put_slow(struct ito__vproc *vp, struct ito__stack *s)
{
    if (s->size == default_size) {
        struct ito__stack_cache *c = vp ? vp->stacks : NULL;
        if (c && c->n < ITO__STACK_CACHE) {
            c->s[c->n++] = *s;
            return;
        }
        /* Spill: half the cache (or this one stack) to the global pool. */
        struct ito__stack tmp[ITO__STACK_CACHE / 2 + 1];
        unsigned k = 0;
        tmp[k++] = *s;
        if (c)
            while (k < ITO__STACK_CACHE / 2 + 1)
                tmp[k++] = c->s[--c->n];
        pool_add(tmp, k, false);
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

void ito__stacks_forked(void)
{
    /* The pool may be half-updated by a kernel thread the fork left behind:
     * start empty (the parent's pooled stacks stay mapped, unused). A
     * chunk's free count may then stay above zero for good; it only decides
     * when an idle chunk's pages go back to the kernel. */
    ito__spin_init(&pool.lock, ITO__LOCK_STACKS);
    pool.n = 0;
    pool.nother = 0;
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
