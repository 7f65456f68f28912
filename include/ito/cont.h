/* SPDX-License-Identifier: MIT */
/*
 * ito/cont.h — one-shot continuations: the layer ito's threads are built on.
 *
 * A continuation is a suspended computation: a stack and the registers saved
 * on it. ito_cont_switch() suspends the running computation and resumes
 * another, passing it a value; the resumed side receives the value together
 * with the continuation of the computation that switched to it. Each
 * continuation can be resumed once (it is consumed; switching away again
 * produces a fresh one). This is enough to build coroutines, generators or a
 * scheduler of one's own: Scheme Threads builds its thread dispatcher on
 * continuations in exactly this way [STH §4].
 *
 *     static void body(ito_cont_transfer_t t) {            // runs on the new stack
 *         for (int i = 0;; i++)
 *             t = ito_cont_switch(t.from, (void *)(intptr_t)i);   // yield i
 *     }
 *     ito_cont_stack_t s;  ito_cont_stack_alloc(&s, 0);
 *     ito_cont_t k = ito_cont_make(&s, body);
 *     ito_cont_transfer_t r = ito_cont_switch(k, NULL);   // r.value == 0
 *     r = ito_cont_switch(r.from, NULL);                 // r.value == 1
 *
 * Only the callee-saved registers, the stack pointer, MXCSR and the x87
 * control word travel with a switch (the SysV x86-64 calling convention); a
 * switch costs a few nanoseconds and no system call. Continuations belong to
 * the kernel thread that makes and runs them: ito's scheduler knows nothing of
 * them, so a continuation must not be resumed by an ito thread other than the
 * one that made it while that thread may have migrated. Stacks are annotated
 * for AddressSanitizer, ThreadSanitizer and valgrind.
 *
 * None of these functions is async-signal-safe; all may be called from any
 * kernel thread and do not need ito_init().
 */
#ifndef ITO_CONT_H
#define ITO_CONT_H

#include <ito.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A suspended computation. Opaque; lives on its own stack. */
typedef struct ito_cont *ito_cont_t;

/* What a switch delivers to the resumed side. */
typedef struct ito_cont_transfer {
    ito_cont_t from;   /* the computation that switched here (resume it to go back) */
    void *value;       /* the value it passed */
} ito_cont_transfer_t;

/* Entry of a new continuation. It must never return: it ends by switching to
 * another continuation for the last time (returning aborts with a message). */
typedef void (*ito_cont_fn_t)(ito_cont_transfer_t t);

/* A stack for continuations: mmap'd, with a guard page below it. */
typedef struct ito_cont_stack {
    void *base;        /* lowest usable address */
    size_t size;       /* usable bytes */
    void *mapping_;    /* private */
    size_t mapping_size_;
    unsigned tool_id_;
} ito_cont_stack_t;

/* Allocate a stack of at least `size` bytes (0: ITO_STACK_DEFAULT), rounded up
 * to pages. Returns 0, EINVAL (size > ITO_STACK_MAX) or ENOMEM. */
ITO_API int ito_cont_stack_alloc(ito_cont_stack_t *s, size_t size);
/* Free a stack; no continuation may live on it any more. */
ITO_API void ito_cont_stack_free(ito_cont_stack_t *s);

/* Make a continuation that, when first resumed, calls fn on the given stack
 * with the transfer of the switch that resumed it. The stack may also be any
 * caller-owned memory described by a ito_cont_stack_t (base, size). Returns
 * NULL if the stack is smaller than 4 KiB or misdescribed. */
ITO_API ito_cont_t ito_cont_make(const ito_cont_stack_t *stack, ito_cont_fn_t fn);

/* Suspend the running computation and resume `to`, passing `value`. Returns
 * when some computation resumes the one suspended here, with what it passed.
 * `to` is consumed. Aborts with a message if `to` is NULL. */
ITO_API ito_cont_transfer_t ito_cont_switch(ito_cont_t to, void *value);

#ifdef __cplusplus
}
#endif

#endif /* ITO_CONT_H */
