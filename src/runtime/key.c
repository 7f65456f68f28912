/* SPDX-License-Identifier: MIT */
/*
 * Thread-specific data keys (pthread_key_* for ito threads).
 *
 * A key is a slot number with a sequence word: odd while the key exists; each
 * create and delete increments it, so a value stored under a deleted key is
 * invisible under a later key that reuses the slot. Each thread stores
 * (sequence, value) pairs in blocks of 32 slots, allocated the first time
 * the thread sets a value in that block, so threads that use no keys pay
 * nothing. Destructors run at thread exit, up to ITO_DESTRUCTOR_ITERATIONS
 * rounds (a destructor may set values again).
 */
#include <errno.h>
#include <stdlib.h>

#include <ito.h>

#include "runtime/spinlock.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"

#define BLOCK 32
#define NBLOCKS (ITO_KEYS_MAX / BLOCK)

struct slot {
    uint32_t seq;
    void *value;
};

struct ito__keys {
    struct slot *blocks[NBLOCKS];
};

static struct {
    _Atomic uint32_t seq;                 /* odd: in use */
    void (*_Atomic dtor)(void *);
} keys[ITO_KEYS_MAX];
static ito__spinlock keys_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_KEYS);           /* serializes create/delete */

/* Where a thread's values hang. With ITO_OWN_TLS every context has its own
 * TLS block, so a thread-local pointer is the thread's own: it also serves a
 * kernel thread that ito did not create, and the initial thread before ito
 * adopts it (the POSIX face needs both); the values are freed at exit, in
 * the thread. Otherwise the descriptor holds them (a thread-local variable
 * belongs to the carrier there), freed with the descriptor. */
#if ITO_OWN_TLS
static __thread struct ito__keys *own_keys __attribute__((tls_model("initial-exec")));
#endif

static struct ito__keys **keys_of(struct ito__thread *t)
{
#if ITO_OWN_TLS
    (void)t;
    return &own_keys;   /* t is the caller (every use is the thread's own) */
#else
    return t ? &t->keys : NULL;
#endif
}

void ito__keys_forked(void)
{
    ito__spin_init(&keys_lock, ITO__LOCK_KEYS);   /* a holder the fork left behind never frees it */
}

ITO_API int ito_key_create(ito_key_t *key, void (*dtor)(void *))
{
    if (!key)
        return EINVAL;
    ito__spin_lock(&keys_lock);
    for (uint32_t k = 0; k < ITO_KEYS_MAX; k++) {
        uint32_t s = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
        if (!(s & 1)) {
            atomic_store_explicit(&keys[k].dtor, dtor, memory_order_relaxed);
            /* Release: the destructor is visible with the new sequence. */
            atomic_store_explicit(&keys[k].seq, s + 1, memory_order_release);
            ito__spin_unlock(&keys_lock);
            *key = k;
            return 0;
        }
    }
    ito__spin_unlock(&keys_lock);
    return EAGAIN;
}

ITO_API int ito_key_delete(ito_key_t k)
{
    if (k >= ITO_KEYS_MAX)
        return EINVAL;
    int e = 0;
    ito__spin_lock(&keys_lock);
    uint32_t s = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
    if (s & 1)
        atomic_store_explicit(&keys[k].seq, s + 1, memory_order_release);
    else
        e = EINVAL;
    ito__spin_unlock(&keys_lock);
    return e;
}

int ito__setspecific(ito_key_t k, const void *value)
{
    if (k >= ITO_KEYS_MAX)
        return EINVAL;
    uint32_t s = atomic_load_explicit(&keys[k].seq, memory_order_acquire);
    if (!(s & 1))
        return EINVAL;
    struct ito__keys **kp = keys_of(ito__thread_self());
    if (!kp)
        return EPERM;
    if (!*kp && !(*kp = calloc(1, sizeof **kp)))
        return ENOMEM;
    struct slot **b = &(*kp)->blocks[k / BLOCK];
    if (!*b && !(*b = calloc(BLOCK, sizeof **b)))
        return ENOMEM;
    (*b)[k % BLOCK] = (struct slot){ s, (void *)value };
    return 0;
}

void *ito__getspecific(ito_key_t k)
{
    if (k >= ITO_KEYS_MAX)
        return NULL;
    struct ito__keys **kp = keys_of(ito__thread_self());
    if (!kp || !*kp)
        return NULL;
    struct slot *b = (*kp)->blocks[k / BLOCK];
    if (!b)
        return NULL;
    struct slot *sl = &b[k % BLOCK];
    return sl->seq == atomic_load_explicit(&keys[k].seq, memory_order_relaxed) ? sl->value : NULL;
}

#if ITO_OWN_TLS
bool ito__keys_any(struct ito__thread *t)
{
    struct ito__keys **kp = keys_of(t);
    return kp && *kp;
}
#endif

void ito__keys_run_destructors(struct ito__thread *t)
{
    struct ito__keys **kp = keys_of(t);
    for (int round = 0; round < ITO_DESTRUCTOR_ITERATIONS && kp && *kp; round++) {
        bool any = false;
        for (uint32_t bi = 0; bi < NBLOCKS; bi++) {
            struct slot *b = (*kp)->blocks[bi];
            if (!b)
                continue;
            for (uint32_t i = 0; i < BLOCK; i++) {
                uint32_t k = bi * BLOCK + i;
                if (!b[i].value)
                    continue;
                uint32_t s = atomic_load_explicit(&keys[k].seq, memory_order_acquire);
                void (*dtor)(void *) = atomic_load_explicit(&keys[k].dtor, memory_order_relaxed);
                void *v = b[i].value;
                b[i].value = NULL;
                if (b[i].seq == s && dtor) {
                    dtor(v);   /* may switch, may set values again */
                    any = true;
                }
            }
        }
        if (!any)
            break;
    }
}

void ito__keys_free(struct ito__thread *t)
{
    struct ito__keys **kp = keys_of(t);
    if (!kp || !*kp)
        return;
    for (uint32_t bi = 0; bi < NBLOCKS; bi++)
        free((*kp)->blocks[bi]);
    free(*kp);
    *kp = NULL;
}
