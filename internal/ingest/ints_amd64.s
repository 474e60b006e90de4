//go:build !purego

#include "textflag.h"

// '0' in every byte; 9 in every byte; the weights 10, 1 (bytes), then
// 100, 1 and 10000, 1 (16-bit words), each over 32 bytes; then 32 zero
// bytes and 32 0xff bytes: 32 bytes loaded at offset k of those keep the
// last k bytes of a vector; then '-' in every byte; then, for VPSHUFB,
// JSON's whitespace by its low four bits (space at 0, tab at 9, line feed
// at 10, carriage return at 13) and, where there is none, 0, which no
// byte with those low bits equals.
DATA intc<>+0x00(SB)/8, $0x3030303030303030
DATA intc<>+0x08(SB)/8, $0x3030303030303030
DATA intc<>+0x10(SB)/8, $0x3030303030303030
DATA intc<>+0x18(SB)/8, $0x3030303030303030
DATA intc<>+0x20(SB)/8, $0x0909090909090909
DATA intc<>+0x28(SB)/8, $0x0909090909090909
DATA intc<>+0x30(SB)/8, $0x0909090909090909
DATA intc<>+0x38(SB)/8, $0x0909090909090909
DATA intc<>+0x40(SB)/8, $0x010a010a010a010a
DATA intc<>+0x48(SB)/8, $0x010a010a010a010a
DATA intc<>+0x50(SB)/8, $0x010a010a010a010a
DATA intc<>+0x58(SB)/8, $0x010a010a010a010a
DATA intc<>+0x60(SB)/8, $0x0001006400010064
DATA intc<>+0x68(SB)/8, $0x0001006400010064
DATA intc<>+0x70(SB)/8, $0x0001006400010064
DATA intc<>+0x78(SB)/8, $0x0001006400010064
DATA intc<>+0x80(SB)/8, $0x0001271000012710
DATA intc<>+0x88(SB)/8, $0x0001271000012710
DATA intc<>+0x90(SB)/8, $0x0001271000012710
DATA intc<>+0x98(SB)/8, $0x0001271000012710
DATA intc<>+0xa0(SB)/8, $0
DATA intc<>+0xa8(SB)/8, $0
DATA intc<>+0xb0(SB)/8, $0
DATA intc<>+0xb8(SB)/8, $0
DATA intc<>+0xc0(SB)/8, $0xffffffffffffffff
DATA intc<>+0xc8(SB)/8, $0xffffffffffffffff
DATA intc<>+0xd0(SB)/8, $0xffffffffffffffff
DATA intc<>+0xd8(SB)/8, $0xffffffffffffffff
DATA intc<>+0xe0(SB)/8, $0x2d2d2d2d2d2d2d2d
DATA intc<>+0xe8(SB)/8, $0x2d2d2d2d2d2d2d2d
DATA intc<>+0xf0(SB)/8, $0x2d2d2d2d2d2d2d2d
DATA intc<>+0xf8(SB)/8, $0x2d2d2d2d2d2d2d2d
DATA intc<>+0x100(SB)/8, $0x0000000000000020
DATA intc<>+0x108(SB)/8, $0x00000d00000a0900
DATA intc<>+0x110(SB)/8, $0x0000000000000020
DATA intc<>+0x118(SB)/8, $0x00000d00000a0900
GLOBL intc<>(SB), RODATA|NOPTR, $0x120

// MASKS sets dst to the 64-bit mask of the bytes of the window (lo, hi)
// equal to those of v; t is scratch.
#define MASKS(v, lo, hi, dst, t) \
	VPCMPEQB v, lo, Y2 \
	VPMOVMSKB Y2, dst \
	VPCMPEQB v, hi, Y2 \
	VPMOVMSKB Y2, t \
	SHLQ $32, t \
	ORQ  t, dst

// SPACES sets dst to the mask of the JSON whitespace bytes of v, where
// Y7 allows them: the byte Y9 holds at v's low four bits is v itself (a
// byte from 0x80 up looks up 0).
#define SPACES(v, dst) \
	VPSHUFB v, Y9, Y2 \
	VPCMPEQB v, Y2, Y2 \
	VPAND Y7, Y2, Y2 \
	VPMOVMSKB Y2, dst

// func intsAVX2(buf *uint64, n, end int, b *byte, i, lim int, seps *separators) (taken, next int)
//
// The 64 bytes at b[i] (the window) give four masks: the bytes that are
// neither a digit nor '-' (R8), the separators (R9), the bytes that are
// not whitespace to skip after a separator (R10) and the '-' (R11). From
// each id's start in the window (R12), the masks alone say whether it is
// -?[0-9]{1,19} up to the next separator, and where the id after it
// starts. The loop carries only the separators left (R9, one bit fewer an
// id) and the count: no load, and no id's length waits for the one before.
// The value of an id of up to 8 digits comes from the word that ends at
// its separator, weighed as eight (number.go) does; of a longer one, from
// the 32 bytes that end there, masked to the digits and weighed by
// VPMADDUBSW, VPMADDWD, VPACKUSDW and VPMADDWD into 8-digit groups: the
// last 16 digits in the upper lane, up to 3 more in the lower. An id whose
// separator is past the window's 62nd byte moves the window to its start.
TEXT ·intsAVX2(SB), NOSPLIT, $0-72
	MOVQ buf+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ b+24(FP), SI
	MOVQ i+32(FP), BX
	MOVQ seps+48(FP), AX
	VMOVDQU 0x00(AX), Y8
	VMOVDQU 0x20(AX), Y7
	LEAQ intc<>(SB), AX
	VMOVDQU 0x00(AX), Y10
	VMOVDQU 0x20(AX), Y11
	VMOVDQU 0x40(AX), Y12
	VMOVDQU 0x60(AX), Y13
	VMOVDQU 0x80(AX), Y14
	VMOVDQU 0xe0(AX), Y6
	VMOVDQU 0x100(AX), Y9

window:
	CMPQ CX, end+16(FP)
	JGE  done
	CMPQ BX, lim+40(FP)
	JGT  done
	VMOVDQU (SI)(BX*1), Y0
	VMOVDQU 32(SI)(BX*1), Y1
	// The digits or '-', low half then high half.
	VPSUBB Y10, Y0, Y3
	VPMINUB Y11, Y3, Y4
	VPCMPEQB Y4, Y3, Y3
	VPCMPEQB Y6, Y0, Y4
	VPOR Y4, Y3, Y3
	VPMOVMSKB Y3, R8
	VPSUBB Y10, Y1, Y3
	VPMINUB Y11, Y3, Y4
	VPCMPEQB Y4, Y3, Y3
	VPCMPEQB Y6, Y1, Y4
	VPOR Y4, Y3, Y3
	VPMOVMSKB Y3, AX
	SHLQ $32, AX
	ORQ  AX, R8
	NOTQ R8
	MASKS(Y8, Y0, Y1, R9, AX)
	MASKS(Y6, Y0, Y1, R11, AX)
	SPACES(Y0, R10)
	SPACES(Y1, AX)
	SHLQ $32, AX
	ORQ  AX, R10
	NOTQ R10
	BTSQ $63, R10          // no whitespace run goes past the last byte
	TZCNTQ R10, R12        // the first id: after any whitespace

id:
	TZCNTQ R9, R13         // the next separator
	CMPQ R13, $61
	JHI  move              // past the window (or the next id would be)
	SHRXQ R12, R8, AX
	TZCNTQ AX, AX          // the id's bytes: its digits and '-'
	LEAQ (R12)(AX*1), DX
	CMPQ DX, R13
	JNE  stop              // they do not reach the separator
	SHRXQ R12, R11, DX
	MOVL DX, R14
	ANDL $1, R14           // 1 for a negative id
	SHRQ $1, DX
	DECQ AX
	BZHIQ AX, DX, DX
	JNZ  stop              // a '-' after the first byte
	SUBQ R14, AX           // the digits, less one
	CMPQ AX, $18
	JHI  stop              // no digit, or more than 19
	TESTQ AX, AX
	JEQ  value
	LEAQ (BX)(R12*1), DX
	ADDQ R14, DX
	CMPB (SI)(DX*1), $0x30
	JEQ  stop              // a leading zero

value:
	LEAQ (BX)(R13*1), DX   // the separator in b: 32 bytes in at least
	CMPQ AX, $7
	JHI  long
	// Up to 8 digits: the word before the separator, in a general
	// register, the bytes before the digits shifted out, then weighed as
	// eight (number.go) does.
	MOVQ -8(SI)(DX*1), DX
	NEGQ AX
	ADDQ $7, AX
	SHLQ $3, AX
	SHRXQ AX, DX, DX
	SHLXQ AX, DX, DX
	MOVQ $0x0f0f0f0f0f0f0f0f, AX
	ANDQ AX, DX
	IMUL3Q $2561, DX, DX   // 10<<8 + 1
	SHRQ $8, DX
	MOVQ $0x00ff00ff00ff00ff, AX
	ANDQ AX, DX
	IMUL3Q $6553601, DX, DX // 100<<16 + 1
	SHRQ $16, DX
	MOVQ $0x0000ffff0000ffff, AX
	ANDQ AX, DX
	MOVQ $0x0000271000000001, AX // 10000<<32 + 1
	IMULQ DX, AX
	SHRQ $32, AX
	JMP  sign

long:
	VMOVDQU -32(SI)(DX*1), Y5
	VPSUBB Y10, Y5, Y5
	LEAQ intc<>+0xa1(SB), DX
	VPAND (DX)(AX*1), Y5, Y5
	VPMADDUBSW Y12, Y5, Y5
	VPMADDWD Y13, Y5, Y5
	VPACKUSDW Y5, Y5, Y5
	VPMADDWD Y14, Y5, Y5
	VEXTRACTI128 $1, Y5, X3
	VMOVQ X3, AX           // the last 16 digits: 8 in the low half, 8 in the high
	MOVL AX, DX
	SHRQ $32, AX
	IMUL3Q $100000000, DX, DX
	ADDQ DX, AX
	VPEXTRD $1, X5, DX     // the digits before the last 16 (at most 999)
	IMUL3Q $100000000, DX, DX
	IMUL3Q $100000000, DX, DX
	ADDQ DX, AX            // at most 10^19-1: no wrap
	MOVQ $0x7fffffffffffffff, DX
	ADDQ R14, DX
	CMPQ AX, DX
	JHI  stop              // outside int64

sign:
	MOVQ R14, DX
	NEGQ DX
	XORQ DX, AX
	ADDQ R14, AX           // negated for a '-'
	MOVQ AX, (DI)(CX*8)
	INCQ CX
	BLSRQ R9, R9           // the separator taken
	INCQ R13
	SHRXQ R13, R10, DX
	TZCNTQ DX, DX          // whitespace after the separator
	ADDQ DX, R13
	MOVQ R13, R12          // the next id, in the window (at most 63)
	CMPQ CX, end+16(FP)
	JLT  id

stop:
	ADDQ R12, BX
	JMP  done

move:
	TESTQ R12, R12
	JEQ  done              // an id as long as the window
	ADDQ R12, BX
	JMP  window

done:
	VZEROUPPER
	MOVQ CX, taken+56(FP)
	MOVQ BX, next+64(FP)
	RET
