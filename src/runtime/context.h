/* SPDX-License-Identifier: MIT */
/* The machine-level context switch (src/arch/<arch>/context.S) as the core
 * sees it. A context is a stack with a saved frame; ctx.sp is NULL while the
 * context runs and the saved stack pointer while it is suspended. */
#ifndef ITO_RUNTIME_CONTEXT_H
#define ITO_RUNTIME_CONTEXT_H

#include <stdint.h>
#include "arch.h"

struct ito__ctx {
    void *sp;
};

typedef struct ito__transfer {
    struct ito__ctx *from;   /* the context that switched here (already saved) */
    void *arg;               /* what it passed */
} ito__transfer_t;

/* Save the running context into *from, resume the one saved at to_sp. */
ito__transfer_t ito__ctx_jump(struct ito__ctx *from, void *to_sp, void *arg);
/* Build a new context at the top of a stack; returns its stack pointer. */
void *ito__ctx_make(void *stack_top, void (*fn)(ito__transfer_t), uint64_t fpctl);
/* Called if a context's entry function returns (never returns itself):
 * the runtime's report (sched.c), which it stores in ito__ctx_on_return, the
 * trampoline's hook (context.S), at initialization. */
_Noreturn void ito__ctx_returned(void);
extern void (*ito__ctx_on_return)(void);

#endif
