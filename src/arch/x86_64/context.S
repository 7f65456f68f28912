/* SPDX-License-Identifier: MIT */
/*
 * Context switch for x86-64 SysV.
 *
 * A context is a stack holding a saved frame; its handle is the stack pointer
 * (struct ito__ctx { void *sp; }). Switching saves what the calling
 * convention says a call preserves — rbx, rbp, r12-r15, the stack pointer,
 * MXCSR and the x87 control word — on the current stack, stores the stack
 * pointer in *from, loads the target's, and restores its frame. Everything
 * else is caller-saved, so the compiler has already spilled it. No system
 * call, no signal mask: a switch is about 20 instructions.
 *
 * Saved frame (addresses grow upward; sp points at offset 0):
 *
 *     +0   MXCSR (4 bytes), x87 control word (2 bytes), 2 bytes unused
 *     +8   r15
 *     +16  r14
 *     +24  r13
 *     +32  r12
 *     +40  rbx
 *     +48  rbp
 *     +56  return address
 *
 * Loading MXCSR and the x87 control word is slow (ldmxcsr and fldcw serialize
 * part of the pipeline: tens of cycles together) and they almost never differ
 * between contexts, so they are reloaded only when the target's saved values
 * differ from the current ones.
 */

        .text

/*
 * ito__transfer_t ito__ctx_jump(struct ito__ctx *from, void *to_sp, void *arg);
 *                               rdi                    rsi          rdx
 *
 * Save the current context into *from and resume the context whose saved
 * stack pointer is to_sp. The resumed side sees this call return (or its
 * entry function called) with { from, arg } in rax:rdx.
 *
 * The store of the stack pointer into from->sp is the last access to the old
 * stack: once it is visible, another vproc may resume `from`. On x86-TSO a
 * plain store is a release (it is not reordered with the earlier pushes); it
 * pairs with the acquire load of ctx.sp by whoever resumes `from` (sched.c).
 */
        .globl  ito__ctx_jump
        .hidden ito__ctx_jump
        .type   ito__ctx_jump, @function
        .p2align 4
ito__ctx_jump:
        .cfi_startproc
        pushq   %rbp                    /* callee-saved registers onto the old stack */
        .cfi_adjust_cfa_offset 8
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* room for the FP control words */
        .cfi_adjust_cfa_offset 8
        stmxcsr (%rsp)                  /* save MXCSR */
        fnstcw  4(%rsp)                 /* save the x87 control word */
        movl    (%rsp), %r8d            /* keep both in registers: the old stack */
        movzwl  4(%rsp), %r9d           /*   must not be read after it is published */
        movq    %rsp, (%rdi)            /* from->sp = sp: publish the saved context */
        movq    %rsi, %rsp              /* switch to the target stack */
        .cfi_def_cfa_offset 64          /* (unwinders: same frame shape from here on) */
        cmpl    (%rsp), %r8d            /* target MXCSR differs? */
        jne     2f
        cmpw    4(%rsp), %r9w           /* target x87 control word differs? */
        jne     2f
1:      addq    $8, %rsp                /* drop the FP control slot */
        .cfi_adjust_cfa_offset -8
        popq    %r15                    /* restore the target's callee-saved registers */
        .cfi_adjust_cfa_offset -8
        popq    %r14
        .cfi_adjust_cfa_offset -8
        popq    %r13
        .cfi_adjust_cfa_offset -8
        popq    %r12
        .cfi_adjust_cfa_offset -8
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        movq    %rdi, %rax              /* return value: { from, arg } */
        ret                             /* rdx still holds arg */
2:      ldmxcsr (%rsp)                  /* slow path: load the target's FP control */
        fldcw   4(%rsp)
        jmp     1b
        .cfi_endproc
        .size   ito__ctx_jump, .-ito__ctx_jump

/*
 * void *ito__ctx_make(void *stack_top, void (*fn)(ito__transfer_t), uint64_t fpctl);
 *                     rdi              rsi                          rdx
 *
 * Build a saved frame at the top of a stack so that the first ito__ctx_jump
 * to the returned stack pointer calls fn({ from, arg }) on that stack. fpctl
 * holds MXCSR (low 32 bits) and the x87 control word (bits 32..47) the new
 * context starts with. Layout below the 16-byte-aligned top T:
 *
 *     T-8   0                      end of the call chain (trampoline's "return address")
 *     T-16  ito__ctx_trampoline    popped by the first jump's ret
 *     T-24  rbp = 0
 *     T-32  rbx = fn
 *     T-40..T-64  r12..r15 = 0
 *     T-72  fpctl                  <- returned stack pointer
 */
        .globl  ito__ctx_make
        .hidden ito__ctx_make
        .type   ito__ctx_make, @function
        .p2align 4
ito__ctx_make:
        .cfi_startproc
        movq    %rdi, %rax
        andq    $-16, %rax              /* align the top */
        movq    $0, -8(%rax)            /* end of call chain */
        leaq    ito__ctx_trampoline(%rip), %rcx
        movq    %rcx, -16(%rax)         /* where the first jump returns to */
        movq    $0, -24(%rax)           /* rbp */
        movq    %rsi, -32(%rax)         /* rbx = fn */
        movq    $0, -40(%rax)           /* r12 */
        movq    $0, -48(%rax)           /* r13 */
        movq    $0, -56(%rax)           /* r14 */
        movq    $0, -64(%rax)           /* r15 */
        movq    %rdx, -72(%rax)         /* MXCSR and x87 control word */
        subq    $72, %rax               /* the saved stack pointer */
        ret
        .cfi_endproc
        .size   ito__ctx_make, .-ito__ctx_make

/*
 * First code run by a new context. Entered by ito__ctx_jump's ret with
 * rax = from, rdx = arg, rbx = fn, rsp = T-8 (so rsp % 16 == 8, as at any
 * function entry). Calls fn({ from, arg }); fn must never return.
 */
        .type   ito__ctx_trampoline, @function
        .p2align 4
ito__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip              /* outermost frame for debuggers */
        pushq   %rbp                    /* rbp = 0: end of the frame chain; realigns rsp */
        movq    %rax, %rdi              /* transfer.from */
        movq    %rdx, %rsi              /* transfer.arg */
        call    *%rbx                   /* fn(transfer) */
        movq    ito__ctx_on_return(%rip), %rax  /* fn returned: the runtime's report */
        testq   %rax, %rax              /* none set: just stop */
        jz      1f
        call    *%rax                   /* reports and aborts; never returns */
1:      ud2
        .cfi_endproc
        .size   ito__ctx_trampoline, .-ito__ctx_trampoline

/*
 * void ito__arch_sigreturn(void): the restorer of a signal handler installed
 * with the raw rt_sigaction system call (the C library's sigaction refuses
 * the signal numbers it keeps for itself). The unwinder recognizes a signal
 * frame by exactly these bytes at the return address (libgcc's x86-64
 * fallback), so a handler may unwind through it; the nop before it keeps
 * "return address - 1" outside any function's unwind table, as the C
 * library's own restorer does.
 */
        .text
        .p2align 4
        nop
        .globl  ito__arch_sigreturn
        .hidden ito__arch_sigreturn
        .type   ito__arch_sigreturn, @function
ito__arch_sigreturn:
        movq    $15, %rax               /* rt_sigreturn */
        syscall
        .size   ito__arch_sigreturn, .-ito__arch_sigreturn

/*
 * void (*ito__ctx_on_return)(void): what a context whose entry function
 * returned calls. The runtime sets it at initialization (the arch layer
 * calls nothing above it by name); NULL until then.
 */
        .data
        .globl  ito__ctx_on_return
        .hidden ito__ctx_on_return
        .type   ito__ctx_on_return, @object
        .p2align 3
ito__ctx_on_return:
        .quad   0
        .size   ito__ctx_on_return, 8

        .section .note.GNU-stack,"",@progbits
