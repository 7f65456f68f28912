/* SPDX-License-Identifier: MIT */
/* Thread stacks: mmap'd, pooled per vproc, a guard page below each while the
 * kernel's mapping budget allows it. See stack.c. */
#ifndef ITO_RUNTIME_STACK_H
#define ITO_RUNTIME_STACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/compiler.h"

struct ito__vproc;

enum {
    ITO__STACK_GUARDED = 1u << 0,   /* a PROT_NONE page sits just below lo */
    ITO__STACK_POOLED = 1u << 1,    /* belongs to ito's pools (else: not ours, e.g. main's) */
    ITO__STACK_CALLER = 1u << 2,    /* the caller's (pthread_attr_setstack): no margin is ours
                                       to police, and the caller frees it after the join */
};

struct ito__stack {
    void *lo;                /* lowest usable address; NULL: no stack */
    size_t size;             /* usable bytes */
    uint32_t flags;
    uint32_t vg_id;          /* valgrind stack id */
    struct ito__stack_chunk *chunk;  /* the mapping it was carved from (stack.c), or NULL */
};

static inline void *ito__stack_top(const struct ito__stack *s) { return (char *)s->lo + s->size; }

/* Pooled stacks get twice the requested size of address space: the upper
 * half for the thread itself, the rest so that a child it joins before the
 * child has started can run inline on this stack with its own full requested
 * size (inline.c). Pages are touched on demand, so this costs no memory. */
static inline size_t ito__stack_reserve(size_t requested) { return 2 * requested; }

int ito__stacks_init(size_t default_requested);
/* A vproc's LIFO cache of default-size stacks and its promises (owner only):
 * it holds one promise for each cached stack, and `spare` more (stack.c). */
#define ITO__STACK_CACHE 64
#define ITO__STACK_PROMISES 32   /* promises a vproc takes from the pool at once; it gives back
                                    what it holds beyond twice as many spare */
struct ito__stack_cache {
    unsigned n;
    int spare;
    struct ito__stack s[ITO__STACK_CACHE];
};
extern size_t ito__stack_default_size;   /* mapped size of default stacks */
/* A promise was refused and no stack mapped since: vprocs give stacks and
 * promises back to the pool at once, for any vproc to spawn with (stack.c). */
extern _Atomic bool ito__stacks_short;

int ito__stack_promise_slow(struct ito__vproc *vp, size_t size, struct ito__stack *out);
void ito__stack_take_slow(struct ito__vproc *vp, struct ito__stack *out);
void ito__stack_put_slow(struct ito__vproc *vp, struct ito__stack *s);
void ito__stack_unpromise_slow(struct ito__vproc *vp);

/* At a spawn: make sure a new thread will have a stack of `size` mapped bytes
 * (0: the default size). A stack of the default size, or smaller, is promised
 * (one of the pools is kept for the thread; out->lo, NULL from the caller,
 * stays so) and a default-size one taken when the thread first runs
 * (ito__stack_take); a larger stack is mapped into out now. vp is the calling
 * vproc, c its cache (both NULL from a foreign kernel thread). Returns 0, or
 * ENOMEM when no stack can be mapped. */
ITO_INLINE int ito__stack_promise(struct ito__vproc *vp, struct ito__stack_cache *c, size_t size,
                                  struct ito__stack *out)
{
    if (ITO_LIKELY(!size && c && c->spare > 0)) {
        c->spare--;
        return 0;
    }
    return ito__stack_promise_slow(vp, size ? size : ito__stack_default_size, out);
}

/* ito__stack_promise's quick case: true if the cache had a spare promise of
 * a default-size stack, now taken. */
ITO_INLINE bool ito__stack_promise_spare(struct ito__stack_cache *c)
{
    if (c->spare <= 0)
        return false;
    c->spare--;
    return true;
}

/* At the first run on vproc vp: take the default-size stack promised to the
 * thread. Cannot fail. */
ITO_INLINE void ito__stack_take(struct ito__vproc *vp, struct ito__stack_cache *c, struct ito__stack *out)
{
    if (ITO_LIKELY(c && c->n && c->spare < 2 * ITO__STACK_PROMISES)) {
        *out = c->s[--c->n];
        c->spare++;   /* (the thread's promise stands for the stack now) */
        return;
    }
    ito__stack_take_slow(vp, out);
}

/* Give a stack back (with its promise, if of the default size) to the cache
 * or the pools. */
ITO_INLINE void ito__stack_put(struct ito__vproc *vp, struct ito__stack_cache *c, struct ito__stack *s)
{
    if (ITO_LIKELY(c && c->n < ITO__STACK_CACHE && s->size == ito__stack_default_size &&
                   !atomic_load_explicit(&ito__stacks_short, memory_order_relaxed))) {
        c->s[c->n++] = *s;
        return;
    }
    ito__stack_put_slow(vp, s);
}

/* A thread promised a default-size stack ends without having taken it (it
 * ran inline on its joiner's stack): its promise goes to vproc vp, whose
 * cache is c (ito__stack_unpromise_slow where there may be none). */
ITO_INLINE void ito__stack_unpromise(struct ito__vproc *vp, struct ito__stack_cache *c)
{
    if (ITO_LIKELY(c->spare < 2 * ITO__STACK_PROMISES)) {
        c->spare++;
        return;
    }
    ito__stack_unpromise_slow(vp);
}
/* Map a standalone guarded stack (for continuations and scheduler contexts). */
int ito__stack_map_standalone(size_t size, struct ito__stack *out, void **mapping, size_t *mapping_size);
void ito__stack_unmap_standalone(void *mapping, size_t mapping_size, struct ito__stack *s);
/* An unguarded stack's thread switched out with its stack pointer below the
 * margin: report the overflow and abort. */
void ito__stack_overflowed(size_t requested, uint32_t thread_index, const char *name)
    __attribute__((noreturn, cold));
/* A thread that switches out with its stack pointer less than this above the
 * bottom of a stack without guard page counts as overflowed: it has used more
 * than twice its request minus the margin, so more than it asked for
 * (ITO_STACK_MIN is this size). */
#define ITO__STACK_MARGIN (16u * 1024)
struct ito__stack_cache *ito__stack_cache_create(void);
/* The child of fork: an empty pool, its lock free; `kept` is the forking
 * thread's stack, which it keeps (runtime/fork.c). */
void ito__stacks_forked(const struct ito__stack *kept);
/* Round a requested size to whole pages. */
size_t ito__stack_round(size_t size);
/* Below a stack without a guard page of ours (main's kernel stack, whose
 * growth the kernel stops at RLIMIT_STACK; a pooled stack past the guard-page
 * budget), a fault this close counts as an overflow. */
#define ITO__STACK_FAULT_REACH (64u * 1024)

/* True if a fault at addr means that stack s overflowed: the guard page of a
 * guarded stack, or just below a stack without one. */
static inline int ito__stack_overflow_fault(const struct ito__stack *s, uintptr_t addr, size_t page)
{
    uintptr_t lo = (uintptr_t)s->lo;
    if (!lo)
        return 0;
    if (s->flags & ITO__STACK_GUARDED)
        return addr < lo && addr >= lo - page;
    return addr < lo + page && addr >= lo - ITO__STACK_FAULT_REACH;
}

/* The default stack size: ito__rt's once initialized, else ITO_STACK_SIZE
 * or the built-in default. */
size_t ito__default_stack_size(void);

#endif
