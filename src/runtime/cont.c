/* SPDX-License-Identifier: MIT */
/*
 * One-shot continuations (include/ito/cont.h) on the core's context switch.
 *
 * A continuation is a record on the suspended stack: the saved context plus
 * what sanitizers need to follow the switch (the stack's bounds, ASan's fake
 * stack, TSan's fiber). ito_cont_switch builds the caller's record in its own
 * frame, so suspending costs no allocation; the resumed side learns the
 * bounds of the stack it came from (from ASan) and fills them into that
 * record. A new continuation's record sits at the top of its stack.
 *
 * In TSan builds a fiber is created per ito_cont_make and never destroyed
 * (the library cannot know when a continuation has run for the last time).
 */
#include <errno.h>
#include <stdint.h>

#include <ito/cont.h>

#include "runtime/critical.h"
#include "base/panic.h"
#include "runtime/context.h"
#include "runtime/sanitizer.h"
#include "runtime/stack.h"

struct ito_cont {
    struct ito__ctx ctx;
    ito_cont_fn_t fn;            /* entry, for a new continuation */
    const void *stack_lo;        /* bounds of the stack it lives on, when known */
    size_t stack_size;
    void *fake_stack;            /* ASan */
    void *tsan_fiber;            /* TSan */
};

/* What a switch passes through the context switch's argument. */
struct packet {
    struct ito_cont *to;
    void *value;
};

static ito_cont_transfer_t arrived(ito__transfer_t tr, void *fake_stack)
{
    const void *lo;
    size_t size;
#ifdef ITO_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, &lo, &size);
#else
    (void)fake_stack;
    lo = NULL;
    size = 0;
#endif
    struct ito_cont *from = ITO_CONTAINER_OF(tr.from, struct ito_cont, ctx);
    if (lo) {
        from->stack_lo = lo;
        from->stack_size = size;
    }
    struct packet *p = tr.arg;
    return (ito_cont_transfer_t){ from, p->value };
}

static void cont_entry(ito__transfer_t tr)
{
    struct packet *p = tr.arg;
    ito_cont_fn_t fn = p->to->fn;
    ito_cont_transfer_t t = arrived(tr, NULL);
    ito__critical_restore(0);   /* the switch's section ends here; the code runs outside any */
    fn(t);
    ito__ctx_returned();
}

ITO_API ito_cont_t ito_cont_make(const ito_cont_stack_t *s, ito_cont_fn_t fn)
{
    if (!s || !s->base || !fn || s->size < 4096)
        return NULL;
    uintptr_t top = ((uintptr_t)s->base + s->size) & ~(uintptr_t)15;
    struct ito_cont *k = (struct ito_cont *)((top - sizeof(struct ito_cont)) & ~(uintptr_t)15);
    k->fn = fn;
    k->stack_lo = s->base;
    k->stack_size = s->size;
    k->fake_stack = NULL;
    k->tsan_fiber = ito__tsan_create();
    ito__san_unpoison(s->base, (size_t)((char *)k - (char *)s->base));
    k->ctx.sp = ito__ctx_make(k, cont_entry, ito__arch_fpctl());
    return k;
}

ITO_API ito_cont_transfer_t ito_cont_switch(ito_cont_t to, void *value)
{
    if (!to || !to->ctx.sp)
        ito__panic("ito_cont_switch: %s continuation; each continuation can be resumed once, and "
                   "the one to resume next is the `from` of the transfer you received",
                   to ? "an already resumed" : "a NULL");
    /* A critical section: a time slice that ended in the middle of the
     * sanitizers' fiber switch would switch fibers inside it. The depth is
     * the resumed frame's own, restored below. */
    uint32_t depth = ito__critical_depth();
    ito__critical_enter();
    struct ito_cont self = { .stack_lo = NULL, .stack_size = 0, .tsan_fiber = ito__tsan_current() };
    struct packet p = { to, value };
    void *sp = to->ctx.sp;
    to->ctx.sp = NULL;   /* consumed */
    ito__san_start(&self.fake_stack, to->stack_lo, to->stack_size);
    ito__tsan_switch(to->tsan_fiber);
    ito__transfer_t tr = ito__ctx_jump(&self.ctx, sp, &p);
    ito_cont_transfer_t r = arrived(tr, self.fake_stack);
    ito__critical_restore(depth);
    return r;
}

ITO_API int ito_cont_stack_alloc(ito_cont_stack_t *s, size_t size)
{
    if (!s)
        return EINVAL;
    if (size == 0)
        size = ITO_STACK_DEFAULT;
    if (size > ITO_STACK_MAX)
        return EINVAL;
    struct ito__stack st;
    int e = ito__stack_map_standalone(size, &st, &s->mapping_, &s->mapping_size_);
    if (e)
        return e;
    s->base = st.lo;
    s->size = st.size;
    s->tool_id_ = st.vg_id;
    /* The address may have held a stack with frames that never returned. */
    ito__san_unpoison(st.lo, st.size);
    return 0;
}

ITO_API void ito_cont_stack_free(ito_cont_stack_t *s)
{
    if (!s || !s->mapping_)
        return;
    struct ito__stack st = { .lo = s->base, .size = s->size, .vg_id = s->tool_id_ };
    /* A continuation left suspended leaves poisoned frames behind. */
    ito__san_unpoison(st.lo, st.size);
    ito__stack_unmap_standalone(s->mapping_, s->mapping_size_, &st);
    s->mapping_ = NULL;
    s->base = NULL;
}
