//go:build !purego

#include "textflag.h"

// func quietAVX512(regs []uint8, hs []uint64, shift, top uint8) int
//
// Eight hashes a step: each register gathered from the eight bytes that
// hold it (an aligned quadword: len(regs) is a power of two of at least
// 16), the value a hash would set worked out beside it, and the two
// compared. Stops at the first step where a hash would raise a register.
TEXT ·quietAVX512(SB), NOSPLIT, $0-64
	MOVQ    regs_base+0(FP), DI
	MOVQ    regs_len+8(FP), AX
	MOVQ    hs_base+24(FP), SI
	MOVQ    hs_len+32(FP), CX
	ANDQ    $-8, CX                // whole steps only
	DECQ    AX
	ANDQ    $-8, AX                // the register's quadword: h & (len-1) &^ 7
	VPBROADCASTQ AX, Z16
	MOVQ    $7, AX
	VPBROADCASTQ AX, Z17           // the register's byte in its quadword
	MOVQ    $0xff, AX
	VPBROADCASTQ AX, Z18
	MOVQ    $64, AX
	VPBROADCASTQ AX, Z19
	MOVBQZX top+49(FP), AX
	VPBROADCASTQ AX, Z20           // the largest value a register holds
	MOVBQZX shift+48(FP), AX
	ANDQ    $63, AX
	VMOVQ   AX, X21                // log2m: the bits above the index
	VPXORQ  Z22, Z22, Z22
	XORQ    R8, R8

loop:
	CMPQ    R8, CX
	JAE     done
	VMOVDQU64 (SI)(R8*8), Z0
	VPANDQ  Z16, Z0, Z1            // offset of the register's quadword
	VPANDQ  Z17, Z0, Z2
	VPSLLQ  $3, Z2, Z2             // bit offset of the register in it
	KXNORB  K1, K1, K1
	VPGATHERQQ (DI)(Z1*1), K1, Z3
	VPSRLVQ Z2, Z3, Z3
	VPANDQ  Z18, Z3, Z3            // the register
	VPSRLQ  X21, Z0, Z4            // w = h >> log2m
	VPSUBQ  Z4, Z22, Z5
	VPANDQ  Z4, Z5, Z5             // w's lowest set bit
	VPLZCNTQ Z5, Z5
	VPSUBQ  Z5, Z19, Z5            // trailing zeros + 1, or 0 where w = 0
	VPMINUQ Z20, Z5, Z5
	VPCMPUQ $6, Z3, Z5, K2         // the value above the register
	KORTESTB K2, K2
	JNZ     done
	ADDQ    $8, R8
	JMP     loop

done:
	MOVQ    R8, ret+56(FP)
	VZEROUPPER
	RET
