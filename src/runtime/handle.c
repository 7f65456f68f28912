/* SPDX-License-Identifier: MIT */
/*
 * Thread descriptors and checked handles.
 *
 * Descriptors live in chunks of 1024 that are never freed, so any pointer to
 * a descriptor stays readable forever (type-stable memory) and a handle can
 * be checked without locks: a handle is (generation << 32 | index), the index
 * finds the descriptor through a two-level table, and the generation must
 * match the one in the descriptor's ctl word, which also carries a FREE flag.
 * Each reuse of a descriptor increments its generation, so a stale handle
 * gives ESRCH rather than naming another thread (until the 32-bit generation
 * of that one descriptor wraps, after 4 billion reuses).
 *
 * Free descriptors are cached per vproc (LIFO, no atomics), with a global
 * list behind the caches.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/thread.h"

#define CHUNK_SHIFT ITO__HANDLE_CHUNK_SHIFT
#define CHUNK_SIZE (1u << CHUNK_SHIFT)
#define MAX_CHUNKS ITO__HANDLE_MAX_CHUNKS
#define CACHE_MAX 64
#define CACHE_BATCH 32

struct ito__thread *_Atomic ito__handle_chunks[MAX_CHUNKS];
_Atomic uint32_t ito__handle_nchunks;
#define chunks ito__handle_chunks
#define nchunks ito__handle_nchunks
static ito__spinlock glock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_HANDLES);
static struct ito__thread *gfree;      /* glock */

/* Under glock: add a chunk of free descriptors to gfree. */
static bool grow(void)
{
    uint32_t c = atomic_load_explicit(&nchunks, memory_order_relaxed);
    if (c == MAX_CHUNKS)
        return false;
    /* Fresh zeroed pages, populated by one system call rather than faulted in
     * one by one as the descriptors are first used. */
    struct ito__thread *ts = mmap(NULL, CHUNK_SIZE * sizeof *ts, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (ts == MAP_FAILED)
        return false;
    ito__lsan_root(ts, CHUNK_SIZE * sizeof *ts);   /* descriptors point at malloc'd keys */
    for (uint32_t i = CHUNK_SIZE; i-- > 0;) {
        struct ito__thread *t = &ts[i];
        t->index = c * CHUNK_SIZE + i;
        atomic_init(&t->ctl, ITO__CTL_FREE);
        atomic_init(&t->state, ITO__TS_FREE);
        t->wait.thread = t;
        ito__spin_init(&t->lk, ITO__LOCK_THREAD);
        t->free_next = gfree;
        gfree = t;
    }
    atomic_store_explicit(&chunks[c], ts, memory_order_release);
    /* Release: a lookup that sees the new count sees the chunk pointer. */
    atomic_store_explicit(&nchunks, c + 1, memory_order_release);
    return true;
}

static struct ito__thread *take_global(struct ito__vproc *vp)
{
    ito__spin_lock(&glock);
    if (!gfree && !grow()) {
        ito__spin_unlock(&glock);
        return NULL;
    }
    struct ito__thread *t = gfree;
    gfree = t->free_next;
    if (vp) {
        /* Bring a batch into the cache. */
        while (gfree && vp->nfree_threads < CACHE_BATCH) {
            struct ito__thread *x = gfree;
            gfree = x->free_next;
            x->free_next = vp->free_threads;
            vp->free_threads = x;
            vp->nfree_threads++;
        }
    }
    ito__spin_unlock(&glock);
    return t;
}

struct ito__thread *ito__thread_alloc(struct ito__vproc *vp)
{
    struct ito__thread *t;
    if (vp && vp->free_threads) {
        t = vp->free_threads;
        vp->free_threads = t->free_next;
        vp->nfree_threads--;
    } else if (!(t = take_global(vp))) {
        return NULL;
    }
    /* New generation (never 0, so no handle is 0). Not yet visible to any
     * valid handle, so no lock: stale handles fail on the FREE flag until the
     * caller publishes the new ctl. */
    uint32_t gen = ito__ctl_gen(atomic_load_explicit(&t->ctl, memory_order_relaxed)) + 1;
    if (gen == 0)
        gen = 1;
    atomic_store_explicit(&t->ctl, (uint64_t)gen << 32 | ITO__CTL_FREE, memory_order_relaxed);
    t->epoch = ito__fork_epoch;
    atomic_store_explicit(&t->cpu_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&t->cpu_watched, false, memory_order_relaxed);
    return t;
}

void ito__handles_forked(void)
{
    /* The free list may be half-linked by a kernel thread that the fork left
     * behind: start a new one. The free descriptors of the parent are not
     * used again (their pages are shared with it until written). */
    ito__spin_init(&glock, ITO__LOCK_HANDLES);
    gfree = NULL;
}

void ito__thread_unalloc(struct ito__thread *t)
{
    ito__spin_lock(&glock);   /* (rare: to the shared list) */
    t->free_next = gfree;
    gfree = t;
    ito__spin_unlock(&glock);
}

void ito__thread_free_here(struct ito__thread *t)
{
    ito__critical_enter();
    ito__thread_free(ito__vproc_self(), t);
    ito__critical_exit();
}

void ito__thread_free(struct ito__vproc *vp, struct ito__thread *t)
{
    if (!ITO_OWN_TLS && t->keys)
        ito__keys_free(t);   /* (with ITO_OWN_TLS, freed at exit: runtime/key.c) */
    /* Under t->lk: an operation through a handle holds it while it uses t
     * (ito__thread_lock_live), so it finishes before t can be reused; and
     * it may have written the fields reset here. */
    ito__spin_lock(&t->lk);
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_relaxed);
    atomic_store_explicit(&t->ctl, (ctl & ~(uint64_t)UINT32_MAX) | ITO__CTL_FREE, memory_order_release);
    /* Clean for the next spawn (thread.h). Exit has already reset the stack,
     * `started`, the inline links and the exit waiters. */
    t->vp = NULL;
    t->flags = 0;
    atomic_store_explicit(&t->susp_req, 0, memory_order_relaxed);
    atomic_store_explicit(&t->joiner, NULL, memory_order_relaxed);
    t->data = NULL;
    __atomic_store_n(&t->group, NULL, __ATOMIC_RELAXED);
    atomic_store_explicit(&t->cpus, NULL, memory_order_relaxed);
    t->name[0] = 0;
    t->interruptible = false;
    t->asan_fake_stack = NULL;
    t->tsan_fiber = NULL;
    ito__spin_unlock(&t->lk);
    ito__thread_set_state(t, ITO__TS_EXITED, ITO__TS_FREE);
    if (vp) {
        t->free_next = vp->free_threads;
        vp->free_threads = t;
        if (++vp->nfree_threads <= CACHE_MAX)
            return;
        /* Spill half the cache. */
        struct ito__thread *head = vp->free_threads, *tail = head;
        for (unsigned i = 1; i < CACHE_BATCH; i++)
            tail = tail->free_next;
        vp->free_threads = tail->free_next;
        vp->nfree_threads -= CACHE_BATCH;
        ito__spin_lock(&glock);
        tail->free_next = gfree;
        gfree = head;
        ito__spin_unlock(&glock);
        return;
    }
    ito__spin_lock(&glock);
    t->free_next = gfree;
    gfree = t;
    ito__spin_unlock(&glock);
}

bool ito__thread_lock_live(struct ito__thread *t, uint64_t id)
{
    ito__spin_lock(&t->lk);
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_relaxed);
    if (ito__ctl_gen(ctl) != (uint32_t)(id >> 32) || (ctl & ITO__CTL_FREE)) {
        ito__spin_unlock(&t->lk);
        return false;
    }
    return true;
}
