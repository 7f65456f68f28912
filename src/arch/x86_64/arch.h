/* SPDX-License-Identifier: MIT */
/* x86-64 specifics used by the core: the CPU pause hint, the cycle counter,
 * reading ito's thread-local variables, and the saved-frame layout of a
 * context (see context.S). A port provides the same names in
 * src/arch/<arch>/arch.h and context.S; the core has no #ifdef on the arch. */
#ifndef ITO_ARCH_H
#define ITO_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* Spin-wait hint. */
static inline void ito__cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

/* Time-stamp counter (constant rate on current x86-64). */
static inline uint64_t ito__cycles(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ito's thread-local variable: the activation (kernel thread) running the
 * caller, NULL on a foreign kernel thread. It is read with a volatile asm
 * statement on purpose: an ito thread may resume on another kernel thread
 * after any call that may switch, and the compiler would otherwise be free to
 * keep the thread pointer (%fs base) or the variable's address in a register
 * across such a call (initial-exec TLS, no __tls_get_addr). */
struct ito__activation;
extern __thread struct ito__activation *ito__tls_act __attribute__((tls_model("initial-exec")));

static inline struct ito__activation *ito__arch_activation(void)
{
    struct ito__activation *a;
    __asm__ __volatile__("movq ito__tls_act@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0"
                         : "=r"(a)
                         :
                         : "memory");
    return a;
}

/* The current thread and the critical-section word (runtime/critical.h) are
 * thread-local too, for the same reason accessed only by single %fs-relative
 * instructions: a thread may be preempted between any two of its own
 * instructions and resume on another kernel thread, so an address computed
 * from one kernel thread's %fs base must never be used after it. */
struct ito__thread;
extern __thread struct ito__thread *ito__tls_cur __attribute__((tls_model("initial-exec")));
extern __thread uint32_t ito__tls_critical __attribute__((tls_model("initial-exec")));

static inline struct ito__thread *ito__arch_current(void)
{
    struct ito__thread *t;
    __asm__ __volatile__("movq ito__tls_cur@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0"
                         : "=r"(t)
                         :
                         : "memory");
    return t;
}

static inline void ito__arch_set_current(struct ito__thread *t)
{
    uint64_t off;
    __asm__ __volatile__("movq ito__tls_cur@gottpoff(%%rip), %0\n\t"
                         "movq %1, %%fs:(%0)"
                         : "=&r"(off)
                         : "r"(t)
                         : "memory");
}

/* Add 1 to the critical-section word; returns whether its top bit (the
 * attention bit, runtime/critical.h) is set, from the flags of the same
 * instruction: no second load. One instruction on the word, so a signal
 * handler on the same kernel thread sees it either before or after. */
static inline bool ito__arch_critical_inc(void)
{
    uint64_t off;
    bool top;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "addl $1, %%fs:(%0)"
                         : "=&r"(off), "=@ccs"(top)
                         :
                         : "memory");
    return top;
}

/* Add 1 to the critical-section word and return its value before (for the
 * entry of a section that must be the outermost: runtime/critical.h). One
 * instruction on the word, as above. */
static inline uint32_t ito__arch_critical_xinc(void)
{
    uint64_t off;
    uint32_t v = 1;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "xaddl %1, %%fs:(%0)"
                         : "=&r"(off), "+r"(v)
                         :
                         : "memory", "cc");
    return v;
}

/* Subtract 1 from the critical-section word and return its new value. */
static inline uint32_t ito__arch_critical_dec(void)
{
    uint64_t off;
    uint32_t v;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "subl $1, %%fs:(%0)\n\t"
                         "movl %%fs:(%0), %1"
                         : "=&r"(off), "=r"(v)
                         :
                         : "memory", "cc");
    return v;
}

static inline uint32_t ito__arch_critical_get(void)
{
    uint64_t off;
    uint32_t v;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "movl %%fs:(%0), %1"
                         : "=&r"(off), "=r"(v)
                         :
                         : "memory");
    return v;
}

static inline void ito__arch_critical_set(uint32_t v)
{
    uint64_t off;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "movl %1, %%fs:(%0)"
                         : "=&r"(off)
                         : "r"(v)
                         : "memory");
}

/* Set bits in the critical-section word (a signal handler marking a
 * preemption pending; one instruction). */
static inline void ito__arch_critical_or(uint32_t bits)
{
    uint64_t off;
    __asm__ __volatile__("movq ito__tls_critical@gottpoff(%%rip), %0\n\t"
                         "orl %1, %%fs:(%0)"
                         : "=&r"(off)
                         : "ir"(bits)
                         : "memory", "cc");
}

/* Is `ret` an address a call instruction returns to, in one of the forms a
 * program calls a shared library's function with: `call rel32` (e8, to its
 * PLT entry) or `call *disp32(%rip)` (ff 15, without a PLT)? The 6 bytes
 * before it must be readable. */
static inline bool ito__arch_after_call(uintptr_t ret)
{
    const unsigned char *p = (const unsigned char *)ret;
    return p[-5] == 0xe8 || (p[-6] == 0xff && p[-5] == 0x15);
}

/* The instruction pointer and stack pointer of an interrupted context. */
#define ITO_ARCH_UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define ITO_ARCH_UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RSP])
/* Its general-purpose registers: gregs[0..15] are r8..r15, rdi, rsi, rbp,
 * rbx, rdx, rax, rcx, rsp (sys/ucontext.h). */
#define ITO__ARCH_UC_NGPR 16
#define ITO_ARCH_UC_GPR(uc, i) ((uintptr_t)(uc)->uc_mcontext.gregs[i])

/* An interrupted context about to issue a system call — one the kernel has
 * set up to restart after the handler (SA_RESTART: the instruction pointer
 * back on the `syscall` instruction, 0f 05), or one not yet issued — is made
 * to see that call fail with EINTR instead, as if a handler without
 * SA_RESTART had interrupted it. False if it is not at a system call. */
static inline bool ito__arch_uc_syscall_eintr(ucontext_t *uc)
{
    const unsigned char *pc = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
    if (pc[0] != 0x0f || pc[1] != 0x05)
        return false;
    uc->uc_mcontext.gregs[REG_RIP] += 2;
    uc->uc_mcontext.gregs[REG_RAX] = -4;   /* -EINTR */
    return true;
}

/* Did the signal interrupt a system call that was waiting in the kernel?
 * The kernel then either set the call up to restart (the instruction pointer
 * back on `syscall`, 0f 05) or made it fail with EINTR (just past it, -4 in
 * rax). A call that completed shows neither. */
static inline bool ito__arch_uc_in_syscall_wait(const ucontext_t *uc)
{
    const unsigned char *pc = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
    if (pc[0] == 0x0f && pc[1] == 0x05)
        return true;
    return pc[-2] == 0x0f && pc[-1] == 0x05 && uc->uc_mcontext.gregs[REG_RAX] == -4;
}

/* The thread pointer (the %fs base): glibc keeps its own address at %fs:0.
 * The static TLS blocks lie below it, the C library's thread descriptor
 * above (TLS variant II). */
static inline uintptr_t ito__arch_thread_pointer(void)
{
    uintptr_t tp;
    __asm__ __volatile__("movq %%fs:0, %0" : "=r"(tp) : : "memory");
    return tp;
}

/* Setting the thread pointer, for libito-pthread.so, where every ito thread
 * has its own (src/posix/tcb.c): `wrfsbase` where the kernel lets user code
 * use it (FSGSBASE: Linux >= 5.9 on a CPU that has it, AT_HWCAP2 bit 1), a
 * few cycles; otherwise the arch_prctl system call (tp.c). */
extern bool ito__arch_fsgsbase;
void ito__arch_tp_init(void);
void ito__arch_set_thread_pointer_syscall(uintptr_t tp);

/* The restorer for a handler installed with the raw rt_sigaction system
 * call (context.S): unwinders recognize its frame as a signal frame. */
void ito__arch_sigreturn(void);

static inline void ito__arch_set_thread_pointer(uintptr_t tp)
{
    if (__builtin_expect(ito__arch_fsgsbase, 1))
        __asm__ __volatile__("wrfsbase %0" : : "r"(tp) : "memory");
    else
        ito__arch_set_thread_pointer_syscall(tp);
}

/* Where ito's thread-local variables lie relative to the thread pointer:
 * the same in every thread's TLS block (initial-exec), so that a switch can
 * fill in the block of the thread it is about to run. */
static inline intptr_t ito__arch_tls_offset_act(void)
{
    intptr_t off;
    __asm__("movq ito__tls_act@gottpoff(%%rip), %0" : "=r"(off));
    return off;
}

static inline intptr_t ito__arch_tls_offset_cur(void)
{
    intptr_t off;
    __asm__("movq ito__tls_cur@gottpoff(%%rip), %0" : "=r"(off));
    return off;
}

static inline intptr_t ito__arch_tls_offset_critical(void)
{
    intptr_t off;
    __asm__("movq ito__tls_critical@gottpoff(%%rip), %0" : "=r"(off));
    return off;
}

/* The FP control state that travels with a context: MXCSR (low 32 bits) and
 * the x87 control word (bits 32..47), as stored in a saved frame. */
static inline uint64_t ito__arch_fpctl(void)
{
    uint32_t mxcsr;
    uint16_t cw;
    __asm__ __volatile__("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(cw));
    return (uint64_t)mxcsr | ((uint64_t)cw << 32);
}

/* The current stack pointer. */
static inline void *ito__arch_sp(void)
{
    void *sp;
    __asm__ __volatile__("movq %%rsp, %0" : "=r"(sp));
    return sp;
}

/* Bytes below the stack pointer that a leaf function may use without moving
 * it (the SysV red zone). */
#define ITO__ARCH_RED_ZONE 128

/* Size of the frame ito__ctx_make builds below the top of a stack. */
#define ITO__ARCH_INITIAL_FRAME 72
/* Stacks grow down. */
#define ITO__ARCH_STACK_GROWS_DOWN 1

/* The registers of a suspended context, as a ucontext that an unwinder can
 * start from (base/backtrace.h): the frame context.S saved at sp (r15 at
 * +8 ... rbp at +48, the return address at +56), and the stack pointer as
 * it is after that return. Other registers are not saved: a call does not
 * preserve them, so no unwinding rule needs them. */
static inline void ito__arch_ctx_ucontext(const void *sp, ucontext_t *uc)
{
    const uint64_t *f = (const uint64_t *)sp;
    *uc = (ucontext_t){ 0 };
    greg_t *g = uc->uc_mcontext.gregs;
    g[REG_R15] = (greg_t)f[1];
    g[REG_R14] = (greg_t)f[2];
    g[REG_R13] = (greg_t)f[3];
    g[REG_R12] = (greg_t)f[4];
    g[REG_RBX] = (greg_t)f[5];
    g[REG_RBP] = (greg_t)f[6];
    g[REG_RIP] = (greg_t)f[7];
    g[REG_RSP] = (greg_t)(uintptr_t)(f + 8);
}

#endif
