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

// For the AVX-512 path: the byte indexes 0 to 63; each 8-byte lane's
// number, 0 to 7, in its every byte; and -8 to -1 in each lane.
DATA wide<>+0x00(SB)/8, $0x0706050403020100
DATA wide<>+0x08(SB)/8, $0x0f0e0d0c0b0a0908
DATA wide<>+0x10(SB)/8, $0x1716151413121110
DATA wide<>+0x18(SB)/8, $0x1f1e1d1c1b1a1918
DATA wide<>+0x20(SB)/8, $0x2726252423222120
DATA wide<>+0x28(SB)/8, $0x2f2e2d2c2b2a2928
DATA wide<>+0x30(SB)/8, $0x3736353433323130
DATA wide<>+0x38(SB)/8, $0x3f3e3d3c3b3a3938
DATA wide<>+0x40(SB)/8, $0x0000000000000000
DATA wide<>+0x48(SB)/8, $0x0101010101010101
DATA wide<>+0x50(SB)/8, $0x0202020202020202
DATA wide<>+0x58(SB)/8, $0x0303030303030303
DATA wide<>+0x60(SB)/8, $0x0404040404040404
DATA wide<>+0x68(SB)/8, $0x0505050505050505
DATA wide<>+0x70(SB)/8, $0x0606060606060606
DATA wide<>+0x78(SB)/8, $0x0707070707070707
DATA wide<>+0x80(SB)/8, $0xfffefdfcfbfaf9f8
DATA wide<>+0x88(SB)/8, $10000
// For ids of up to 19 digits, four to a window: the ids' numbers (0 to
// 3) over the lanes, twice; -8 to -1 in the first four lanes (the last 8
// digits) and -16 to -9 in the next four (the 8 before), and -24 to -17
// (the first 3); 10^8, 10^16, int64's largest value and 2^63 (the
// largest magnitude of a negative one).
DATA wide<>+0x90(SB)/8, $0x0000000000000000
DATA wide<>+0x98(SB)/8, $0x0101010101010101
DATA wide<>+0xa0(SB)/8, $0x0202020202020202
DATA wide<>+0xa8(SB)/8, $0x0303030303030303
DATA wide<>+0xb0(SB)/8, $0x0000000000000000
DATA wide<>+0xb8(SB)/8, $0x0101010101010101
DATA wide<>+0xc0(SB)/8, $0x0202020202020202
DATA wide<>+0xc8(SB)/8, $0x0303030303030303
DATA wide<>+0xd0(SB)/8, $0xfffefdfcfbfaf9f8
DATA wide<>+0xd8(SB)/8, $0xfffefdfcfbfaf9f8
DATA wide<>+0xe0(SB)/8, $0xfffefdfcfbfaf9f8
DATA wide<>+0xe8(SB)/8, $0xfffefdfcfbfaf9f8
DATA wide<>+0xf0(SB)/8, $0xf7f6f5f4f3f2f1f0
DATA wide<>+0xf8(SB)/8, $0xf7f6f5f4f3f2f1f0
DATA wide<>+0x100(SB)/8, $0xf7f6f5f4f3f2f1f0
DATA wide<>+0x108(SB)/8, $0xf7f6f5f4f3f2f1f0
DATA wide<>+0x110(SB)/8, $0xefeeedecebeae9e8
DATA wide<>+0x118(SB)/8, $100000000
DATA wide<>+0x120(SB)/8, $10000000000000000
DATA wide<>+0x128(SB)/8, $0x7fffffffffffffff
DATA wide<>+0x130(SB)/8, $0x8000000000000000
GLOBL wide<>(SB), RODATA|NOPTR, $0x138

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

// CALLCONSTS loads the AVX-512 paths' constants the first time one runs
// (wide is then 2): a body neither takes leaves the 512-bit registers
// alone. It also widens the constants the window's masks compare with
// ('-', the separator, the whitespace table and 9) to 64 bytes, for
// zmasks, and loads the window into Z20 (as zmasks does). It uses R12.
#define CALLCONSTS \
	MOVB $2, wide+56(FP) \
	LEAQ intc<>(SB), R12 \
	VPBROADCASTQ 0x00(R12), Z21 \
	VPBROADCASTQ 0x40(R12), Z28 \
	VPBROADCASTQ 0x60(R12), Z29 \
	LEAQ wide<>(SB), R12 \
	VMOVDQU64 0x00(R12), Z23 \
	VMOVDQU64 0x40(R12), Z26 \
	VPBROADCASTQ 0x80(R12), Z27 \
	VPBROADCASTQ 0x88(R12), Z30 \
	VMOVDQU64 0x90(R12), Z16 \
	VMOVDQU64 0xd0(R12), Z19 \
	VINSERTI64X4 $1, Y6, Z6, Z6 \
	VINSERTI64X4 $1, Y8, Z8, Z8 \
	VINSERTI64X4 $1, Y9, Z9, Z9 \
	VINSERTI64X4 $1, Y11, Z11, Z11 \
	VMOVDQU8 (SI)(BX*1), Z20

// WEIGH8 turns each 8-byte lane of x, the values of up to 8 digits (most
// significant first, zeros before them), into its 64-bit value; t is
// scratch. Z28, Z29 and Z30 hold the weights CALLCONSTS loads.
#define WEIGH8(x, t) \
	VPMADDUBSW Z28, x, x \
	VPMADDWD Z29, x, x \
	VPSRLQ $32, x, t \
	VPMULUDQ Z30, x, x \
	VPADDQ t, x, x

// FIRSTSEPS sets R13 to the first separators of the window's first 62
// bytes (as many as the bits of the constant n), and R14 to the bytes up
// to the last of them. It uses AX and DX.
#define FIRSTSEPS(n) \
	MOVQ $0x3fffffffffffffff, DX \
	ANDQ R9, DX \
	MOVL n, AX \
	PDEPQ DX, AX, R13 \
	BSRQ R13, AX \
	MOVL $2, R14 \
	SHLXQ AX, R14, R14 \
	DECQ R14

// RUN(k) keeps in R12 the bits starting k more bits of R12; it uses AX.
#define RUN(k) \
	MOVQ R12, AX \
	SHRQ $k, AX \
	ANDQ AX, R12

// BADBYTES sets DX to the bytes that are neither a digit nor one of the
// separators of R13, and the separators first or right after another;
// and R12 to the starts of runs of 8 digits or more up to R14's last
// byte (RUN extends them). It uses AX.
#define BADBYTES \
	MOVQ R8, DX \
	ORQ  R11, DX \
	MOVQ R13, R12 \
	NOTQ R12 \
	ANDQ R12, DX \
	LEAQ 1(R13)(R13*1), R12 \
	ANDQ R13, R12 \
	ORQ  R12, DX \
	MOVQ R8, R12 \
	ORQ  R11, R12 \
	NOTQ R12 \
	ANDQ R14, R12 \
	RUN(1) \
	RUN(2) \
	RUN(4)

// SIGNS lets an id start with a '-' (K6: those bytes, each also one of
// DX's bad bytes): it takes those followed by a digit out of DX, and sets
// K7 to where the ids' digits start. It uses AX and R12.
#define SIGNS \
	LEAQ 1(R13)(R13*1), R12 \
	MOVQ R11, AX \
	ANDQ R12, AX \
	ADDQ AX, R12 \
	KMOVQ R12, K7 \
	KMOVQ AX, K6 \
	MOVQ R13, R12 \
	SHRQ $1, R12 \
	ANDNQ AX, R12, R12 \
	XORQ R12, DX

// SIGNLANES turns K6 (SIGNS) into the lanes whose ids, in order, start
// with a '-'. It uses R12 and DX.
#define SIGNLANES \
	KMOVQ K6, DX \
	LEAQ 1(R13)(R13*1), R12 \
	PEXTQ R12, DX, DX \
	KMOVQ DX, K6

// NEGATE negates the lanes of x in K6 (SIGNLANES); t is scratch.
#define NEGATE(x, t) \
	VPXORQ t, t, t \
	VPSUBQ x, t, K6, x

// LEADZEROS adds to DX the ids' first digits (K7, SIGNS) that are a
// '0' not followed by a separator of R13; Z20 holds the window
// (CALLCONSTS or zmasks loaded it). It uses AX, R12 and K1.
#define LEADZEROS \
	VPCMPEQB Z21, Z20, K1 \
	KMOVQ K1, R12 \
	KMOVQ K7, AX \
	ANDQ AX, R12 \
	MOVQ R13, AX \
	SHRQ $1, AX \
	NOTQ AX \
	ANDQ AX, R12 \
	ORQ  R12, DX

// func intsAVX2(buf *uint64, n, end int, b *byte, i, lim int, seps *separators, wide bool) (taken, next int)
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
//
// With wide (AVX-512 F, DQ, BW, VBMI and VBMI2), a window whose first
// id starts at its first byte first tries to take several ids at once:
// up to eight (as many as end in its first 62 bytes) when its first two
// are at most 8 bytes long, else up to four of up to 19 digits. The masks
// say which of them, from the first, are a '-' or none then digits without
// a leading zero, whitespace or an empty id, and short enough;
// VPCOMPRESSB lists where each ends and where its digits start, VPERMB
// gathers each one's digits into 8-byte lanes (three lanes an id of up to
// 19 digits), and the lanes are weighed into values together, those
// outside int64's range left out and those with a '-' negated. Whatever is
// left goes to the id loop.
TEXT ·intsAVX2(SB), NOSPLIT, $0-80
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
	CMPB wide+56(FP), $2
	JEQ  zmasks            // the constants are 64 bytes wide
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

masked:
	BTSQ $63, R10          // no whitespace run goes past the last byte
	TZCNTQ R10, R12        // the first id: after any whitespace
	CMPB wide+56(FP), $0
	JEQ  id
	TESTQ R12, R12
	JNZ  id                // whitespace first: the id loop
	TZCNTQ R9, AX
	CMPQ AX, $8
	JHI  wlong             // the first id longer than 8 digits
	MOVQ R9, DX
	BLSRQ DX, DX
	TZCNTQ DX, DX
	SUBQ AX, DX
	CMPQ DX, $9
	JHI  wlong             // or the second: a body of long ids, or mixed
	// The first eight separators in the window's first 62 bytes (R13),
	// the bytes up to the last of them (R14), and the bad bytes (DX),
	// with runs of nine digits or more.
	FIRSTSEPS($0xff)
	BADBYTES
	RUN(1)
	ORQ  R12, DX
	SIGNS
	CMPB wide+56(FP), $2
	JEQ  loaded
	CALLCONSTS

loaded:
	LEADZEROS
	// The ids before the first bad byte: their separators (R13), how
	// many (DX, within end), the last one's index (AX). When none is bad
	// (a branch, not a dependency: the next window's start waits on the
	// separators alone), all of them.
	ANDQ R14, DX
	JNZ  partial

whole:
	POPCNTQ R13, DX
	ADDQ CX, DX
	CMPQ DX, end+16(FP)
	JGT  nowide
	BSRQ R13, AX
	// Where each id ends (Z24) and its digits start (Z25), spread over
	// its lane; the lane's bytes are the 8 before its separator (Z24),
	// those from the first digit on kept (K3), their values gathered.
	KMOVQ R13, K1
	VPSUBB Z21, Z20, Z22
	VPCOMPRESSB.Z Z23, K1, Z24
	VPCOMPRESSB.Z Z23, K7, Z25
	VPERMB Z24, Z26, Z24
	VPERMB Z25, Z26, Z25
	VPADDB Z27, Z24, Z24
	VPCMPB $5, Z25, Z24, K3
	VPERMB.Z Z22, Z24, K3, Z22
	WEIGH8(Z22, Z24)
	KORTESTQ K6, K6
	JZ   unsigned          // no sign: a branch, as bodies mostly have none or all
	SIGNLANES
	NEGATE(Z22, Z24)

unsigned:
	POPCNTQ R13, DX
	MOVL $0xff, R12
	BZHIQ DX, R12, R12
	KMOVQ R12, K4
	VMOVDQU64 Z22, K4, (DI)(CX*8)
	ADDQ DX, CX
	LEAQ 1(BX)(AX*1), BX   // past the last separator
	JMP  window

wlong:
	// Ids of up to 19 digits, four at a time: the same checks, but
	// for runs of 20 digits, over the first four separators (R13).
	CMPQ AX, $20
	JHI  id                // the first id longer than a sign and 19 digits
	FIRSTSEPS($0xf)
	BADBYTES
	RUN(8)
	RUN(4)                 // the first digit of a run of 20 or more
	ORQ  R12, DX
	SIGNS
	CMPB wide+56(FP), $2
	JEQ  wlloaded
	CALLCONSTS

wlloaded:
	LEADZEROS
	ANDQ R14, DX
	JZ   wlwhole
	MOVQ DX, AX
	NEGQ AX
	ANDQ DX, AX
	DECQ AX                // the bits below the first bad one
	ANDQ AX, R13
	JZ   nowide

wlwhole:
	POPCNTQ R13, DX
	ADDQ CX, DX
	CMPQ DX, end+16(FP)
	JGT  nowide
	KMOVQ R13, K1
	// The last 8 digits of each id in lanes 0 to 3 of Z17, the 8 before
	// them in lanes 4 to 7, the first 3 in lanes 0 to 3 of Z18, weighed.
	VPSUBB Z21, Z20, Z22
	VPCOMPRESSB.Z Z23, K1, Z24
	VPCOMPRESSB.Z Z23, K7, Z25
	VPERMB Z24, Z16, Z24   // each id's separator over its lanes
	VPERMB Z25, Z16, Z25   // and its first digit
	VPADDB Z19, Z24, Z17
	VPCMPB $5, Z25, Z17, K3
	VPERMB.Z Z22, Z17, K3, Z17
	LEAQ wide<>(SB), DX
	VPBROADCASTQ 0x110(DX), Z18
	VPADDB Z18, Z24, Z18
	VPCMPB $5, Z25, Z18, K3
	VPERMB.Z Z22, Z18, K3, Z18
	WEIGH8(Z17, Z31)
	WEIGH8(Z18, Z31)
	// value = last 8 + 10^8 * the 8 before + 10^16 * the first 3: at
	// most 10^19-1, no wrap; above int64's largest (2^63 for a negative
	// id) it is refused, then the negative ones negated.
	VSHUFI64X2 $0xee, Z17, Z17, Z31
	VPBROADCASTQ 0x118(DX), Z24
	VPMULUDQ Z24, Z31, Z31
	VPADDQ Z31, Z17, Z17
	VPBROADCASTQ 0x120(DX), Z24
	VPMULLQ Z24, Z18, Z18
	VPADDQ Z18, Z17, Z17
	VPBROADCASTQ 0x128(DX), Z24
	KORTESTQ K6, K6
	JZ   wlunsigned
	MOVQ DX, AX
	SIGNLANES
	VPBROADCASTQ 0x130(AX), K6, Z24
	VPCMPUQ $6, Z24, Z17, K5
	NEGATE(Z17, Z24)
	JMP  wlsigned

wlunsigned:
	VPCMPUQ $6, Z24, Z17, K5

wlsigned:
	POPCNTQ R13, DX
	MOVL $0xff, R12
	BZHIQ DX, R12, R12
	KMOVQ R12, K4
	VMOVDQU64 Z17, K4, (DI)(CX*8)
	// Whether one is too big is a branch: the next window's start waits
	// on the separators alone.
	KTESTB K4, K5
	JNZ  wover
	ADDQ DX, CX
	BSRQ R13, AX
	LEAQ 1(BX)(AX*1), BX
	JMP  window

wover:
	// Only the ids before the first one too big are taken (what was
	// stored past them lies beyond n).
	KMOVQ K5, AX
	BTSQ DX, AX
	TZCNTQ AX, DX
	TESTQ DX, DX
	JZ   nowide
	ADDQ DX, CX
	// Past the separator of the last id taken: the DX-th of R13.
	MOVL $1, AX
	SHLXQ DX, AX, AX
	DECQ AX
	PDEPQ R13, AX, AX
	BSRQ AX, AX
	LEAQ 1(BX)(AX*1), BX
	JMP  window

partial:
	MOVQ DX, AX
	NEGQ AX
	ANDQ DX, AX
	DECQ AX                // the bits below the first bad one
	ANDQ AX, R13
	JNZ  whole

nowide:
	XORL R12, R12          // the first id starts the window

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

zmasks:
	// The same four masks from the 64-byte window in one register, once
	// an AVX-512 path has run (CALLCONSTS): a third of the instructions.
	VMOVDQU8 (SI)(BX*1), Z20
	VPSUBB Z21, Z20, Z2
	VPCMPUB $2, Z11, Z2, K1   // a digit: at most 9 above '0'
	VPCMPEQB Z6, Z20, K2      // '-'
	KORQ K1, K2, K1
	KMOVQ K1, R8
	NOTQ R8
	KMOVQ K2, R11
	VPCMPEQB Z8, Z20, K1
	KMOVQ K1, R9
	VPSHUFB Z20, Z9, Z2
	VPCMPEQB Z20, Z2, K1
	KMOVQ K1, R10
	MOVQ seps+48(FP), AX
	ANDQ 0x20(AX), R10        // whitespace, where the separators allow it
	NOTQ R10
	JMP  masked

done:
	VZEROUPPER
	MOVQ CX, taken+64(FP)
	MOVQ BX, next+72(FP)
	RET

// TSPACES sets R10 to the mask of the JSON whitespace in the window Z0
// (textsAVX512's constants: space, tab, line feed and carriage return
// in Z3 and Z5-Z7). It uses K2 and K3.
#define TSPACES \
	VPCMPEQB Z3, Z0, K2 \
	VPCMPEQB Z5, Z0, K3 \
	KORQ K2, K3, K2 \
	VPCMPEQB Z6, Z0, K3 \
	KORQ K2, K3, K2 \
	VPCMPEQB Z7, Z0, K3 \
	KORQ K2, K3, K2 \
	KMOVQ K2, R10

// func textsAVX512(buf *uint64, n, end int, b *byte, i, lim int) (taken, next int)
//
// The window is the 64 bytes from the string's opening quote: the
// closing one is the first quote after it, at most at byte 62, so that
// the comma after it is in the window too. The next string is the next
// quote in the window, with only whitespace between the comma and it.
// (A window that starts after the comma, with no string in the one
// before, skips whitespace first.) Where that is as far from this
// string's start as the last string was
// from the one before (R13; strings of one length, as UUIDs are), the
// next window's address does not wait for this one's masks: the
// comparison is a branch, predicted, not a dependency, and windows are
// loaded as fast as they are checked.
TEXT ·textsAVX512(SB), NOSPLIT, $0-64
	MOVQ buf+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ end+16(FP), R8
	MOVQ b+24(FP), SI
	MOVQ i+32(FP), BX
	MOVQ lim+40(FP), R9
	XORL R13, R13          // no stride yet
	MOVL $0x22, AX         // '"'
	VPBROADCASTB AX, Z1
	MOVL $0x5c, AX         // '\'
	VPBROADCASTB AX, Z2
	MOVL $0x20, AX         // ' ', and the first byte that is no control
	VPBROADCASTB AX, Z3
	MOVL $0x2c, AX         // ','
	VPBROADCASTB AX, Z4
	MOVL $0x09, AX         // tab
	VPBROADCASTB AX, Z5
	MOVL $0x0a, AX         // line feed
	VPBROADCASTB AX, Z6
	MOVL $0x0d, AX         // carriage return
	VPBROADCASTB AX, Z7

tstring:
	CMPQ CX, R8
	JGE  tdone
	CMPQ BX, R9
	JGT  tdone
	VMOVDQU8 (SI)(BX*1), Z0
	VPCMPEQB Z1, Z0, K1
	KMOVQ K1, AX
	BTRQ $0, AX
	JCC  tspace            // not a quote: whitespace after a comma, or the end
	TZCNTQ AX, DX          // the closing quote (64: none)
	CMPQ DX, $62
	JHI  tdone             // too long for the window
	// Bad bytes: '\', control characters, bytes from 0x80 up.
	VPCMPEQB Z2, Z0, K2
	VPCMPUB $1, Z3, Z0, K3 // below 0x20
	VPMOVB2M Z0, K4
	KORQ K2, K3, K2
	KORQ K2, K4, K2
	KMOVQ K2, R10
	MOVL $1, R11
	SHLXQ DX, R11, R11
	SUBQ $2, R11           // the content: bytes 1 to DX-1
	TESTQ R11, R10
	JNZ  tdone
	VPCMPEQB Z4, Z0, K2
	KMOVQ K2, R10
	LEAQ 1(DX), R11        // the byte after the closing quote
	BTQ  R11, R10
	JCC  tdone             // not a comma: the general path
	// The span: where the content starts, and its length.
	LEAQ 1(BX), R10
	SHLQ $32, R10
	LEAQ -1(DX), R11
	ORQ  R11, R10
	MOVQ R10, (DI)(CX*8)
	INCQ CX
	// The next string's opening quote.
	BLSRQ AX, R10
	TZCNTQ R10, R11        // the next quote (64: none)
	LEAQ 2(DX), R12        // right after the comma
	CMPQ R11, R12
	JNE  tspaced
	CMPQ R11, R13
	JNE  tstride
	ADDQ R13, BX
	JMP  tstring

tstride:
	MOVQ R11, R13
	ADDQ R11, BX
	JMP  tstring

tspaced:
	// Whitespace between the comma and the next quote, or no next
	// string in the window: then the general path goes on after the
	// comma.
	CMPQ R11, $63
	JHI  tafter
	TSPACES
	NOTQ R10               // not whitespace
	SHRXQ R12, R10, R10
	MOVQ R11, AX
	SUBQ R12, AX
	BZHIQ AX, R10, R10     // of the bytes from R12 up to the quote
	JNZ  tafter
	CMPQ R11, R13
	JNE  tstride
	ADDQ R13, BX
	JMP  tstring

tafter:
	LEAQ 2(BX)(DX*1), BX   // after the comma
	JMP  tstring

tspace:
	// A window after a comma that starts with no quote: skip JSON
	// whitespace to the next element, a string if the run goes on.
	// Whitespace to the window's end, and any element but a string, are
	// left to the general path.
	TSPACES
	NOTQ R10
	TZCNTQ R10, R10        // the whitespace before the element (64: all)
	JEQ  tdone             // none: the element is no string
	CMPQ R10, $63
	JHI  tdone
	ADDQ R10, BX
	BTQ  R10, AX
	JCS  tstring           // a string: the run goes on

tdone:
	VZEROUPPER
	MOVQ CX, taken+48(FP)
	MOVQ BX, next+56(FP)
	RET
