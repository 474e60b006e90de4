//go:build !purego

#include "textflag.h"

// Each multiplier of hll_hash_bigint (Int64) split into its low and high
// 32 bits (VPMULUDQ multiplies the low 32 bits of each 64-bit lane), then
// the seed-and-length term 8, four times over (a 32-byte operand).
DATA consts<>+0x00(SB)/8, $0x114253d5 // c1 low
DATA consts<>+0x08(SB)/8, $0x87c37b91 // c1 high
DATA consts<>+0x10(SB)/8, $0x2745937f // c2 low
DATA consts<>+0x18(SB)/8, $0x4cf5ad43 // c2 high
DATA consts<>+0x20(SB)/8, $0xed558ccd // fmix64 first multiplier, low
DATA consts<>+0x28(SB)/8, $0xff51afd7 // high
DATA consts<>+0x30(SB)/8, $0x1a85ec53 // fmix64 second multiplier, low
DATA consts<>+0x38(SB)/8, $0xc4ceb9fe // high
DATA consts<>+0x40(SB)/8, $8
DATA consts<>+0x48(SB)/8, $8
DATA consts<>+0x50(SB)/8, $8
DATA consts<>+0x58(SB)/8, $8
// A VPSHUFB mask reversing the bytes of each 64-bit lane: big-endian to
// little-endian.
DATA consts<>+0x60(SB)/8, $0x0001020304050607
DATA consts<>+0x68(SB)/8, $0x08090a0b0c0d0e0f
DATA consts<>+0x70(SB)/8, $0x0001020304050607
DATA consts<>+0x78(SB)/8, $0x08090a0b0c0d0e0f
GLOBL consts<>(SB), RODATA|NOPTR, $0x80

// MUL64 sets x to x*C mod 2^64 in each lane, C given as its low (lo) and
// high (hi) 32 bits: xl*Cl + ((xh*Cl + xl*Ch) << 32). t0-t2 are scratch.
#define MUL64(x, lo, hi, t0, t1, t2) \
	VPMULUDQ lo, x, t0 \
	VPSRLQ   $32, x, t1 \
	VPMULUDQ lo, t1, t1 \
	VPMULUDQ hi, x, t2 \
	VPADDQ   t1, t2, t1 \
	VPSLLQ   $32, t1, t1 \
	VPADDQ   t0, t1, x

// XSHR33 sets x to x ^ (x >> 33); t is scratch.
#define XSHR33(x, t) \
	VPSRLQ $33, x, t \
	VPXOR  t, x, x

// FMIX64 is MurmurHash3's 64-bit finaliser in each lane.
#define FMIX64(x, t0, t1, t2) \
	XSHR33(x, t0) \
	MUL64(x, Y12, Y13, t0, t1, t2) \
	XSHR33(x, t0) \
	MUL64(x, Y14, Y15, t0, t1, t2) \
	XSHR33(x, t0)

// LOADCONSTS puts the multipliers in Y8-Y15, as HASH4 takes them.
#define LOADCONSTS \
	VPBROADCASTQ consts<>+0x00(SB), Y8 \
	VPBROADCASTQ consts<>+0x08(SB), Y9 \
	VPBROADCASTQ consts<>+0x10(SB), Y10 \
	VPBROADCASTQ consts<>+0x18(SB), Y11 \
	VPBROADCASTQ consts<>+0x20(SB), Y12 \
	VPBROADCASTQ consts<>+0x28(SB), Y13 \
	VPBROADCASTQ consts<>+0x30(SB), Y14 \
	VPBROADCASTQ consts<>+0x38(SB), Y15

// HASH4 replaces the four values in Y0 by their h1 of Int64 with seed 0:
// k1 = rotl(v*c1, 31) * c2, h1 = (k1 ^ 8) + 8, h2 = h1 + 8, then
// fmix64(h1) + fmix64(h2). It uses Y1-Y7 and the constants LOADCONSTS set.
#define HASH4 \
	MUL64(Y0, Y8, Y9, Y2, Y3, Y4) \
	VPSLLQ $31, Y0, Y2 \
	VPSRLQ $33, Y0, Y3 \
	VPOR   Y2, Y3, Y0 \
	MUL64(Y0, Y10, Y11, Y2, Y3, Y4) \
	VPXOR  consts<>+0x40(SB), Y0, Y0 \
	VPADDQ consts<>+0x40(SB), Y0, Y0 \
	VPADDQ consts<>+0x40(SB), Y0, Y1 \
	FMIX64(Y0, Y2, Y3, Y4) \
	FMIX64(Y1, Y5, Y6, Y7) \
	VPADDQ Y1, Y0, Y0

// func int64HashesAVX2(vs []uint64)
// Replaces each value of vs by its h1 of Int64 with seed 0, four lanes a
// step; len(vs) must be a multiple of 4.
TEXT ·int64HashesAVX2(SB), NOSPLIT, $0-24
	MOVQ vs_base+0(FP), SI
	MOVQ vs_len+8(FP), CX
	SHRQ $2, CX
	JZ   done
	LOADCONSTS

loop:
	VMOVDQU (SI), Y0
	HASH4
	VMOVDQU Y0, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     loop
	VZEROUPPER

done:
	RET

// func int64HashesBigEndianAVX2(dst []uint64, src []byte)
// Sets each dst[i] to the h1 of Int64 with seed 0 of the big-endian int64
// at src[8*i:], four lanes a step; len(dst) must be a multiple of 4 and
// len(src) at least 8*len(dst).
TEXT ·int64HashesBigEndianAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	SHRQ $2, CX
	JZ   bedone
	LOADCONSTS

beloop:
	VMOVDQU (SI), Y0
	VPSHUFB consts<>+0x60(SB), Y0, Y0
	HASH4
	VMOVDQU Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     beloop
	VZEROUPPER

bedone:
	RET

// The multipliers whole, for VPMULLQ (AVX-512DQ), and the VPSHUFB mask
// over 64 bytes.
DATA consts512<>+0x00(SB)/8, $0x87c37b91114253d5 // c1
DATA consts512<>+0x08(SB)/8, $0x4cf5ad432745937f // c2
DATA consts512<>+0x10(SB)/8, $0xff51afd7ed558ccd // fmix64's first
DATA consts512<>+0x18(SB)/8, $0xc4ceb9fe1a85ec53 // fmix64's second
DATA consts512<>+0x20(SB)/8, $8
DATA consts512<>+0x28(SB)/8, $0
DATA consts512<>+0x30(SB)/8, $0
DATA consts512<>+0x38(SB)/8, $0
DATA consts512<>+0x40(SB)/8, $0x0001020304050607
DATA consts512<>+0x48(SB)/8, $0x08090a0b0c0d0e0f
DATA consts512<>+0x50(SB)/8, $0x0001020304050607
DATA consts512<>+0x58(SB)/8, $0x08090a0b0c0d0e0f
DATA consts512<>+0x60(SB)/8, $0x0001020304050607
DATA consts512<>+0x68(SB)/8, $0x08090a0b0c0d0e0f
DATA consts512<>+0x70(SB)/8, $0x0001020304050607
DATA consts512<>+0x78(SB)/8, $0x08090a0b0c0d0e0f
GLOBL consts512<>(SB), RODATA|NOPTR, $0x80

// FMIX512 is MurmurHash3's 64-bit finaliser in each lane of x; t is
// scratch.
#define FMIX512(x, t) \
	VPSRLQ  $33, x, t \
	VPXORQ  t, x, x \
	VPMULLQ Z18, x, x \
	VPSRLQ  $33, x, t \
	VPXORQ  t, x, x \
	VPMULLQ Z19, x, x \
	VPSRLQ  $33, x, t \
	VPXORQ  t, x, x

// LOADCONSTS512 puts the multipliers in Z16-Z19 and the eights in Z20.
#define LOADCONSTS512 \
	VPBROADCASTQ consts512<>+0x00(SB), Z16 \
	VPBROADCASTQ consts512<>+0x08(SB), Z17 \
	VPBROADCASTQ consts512<>+0x10(SB), Z18 \
	VPBROADCASTQ consts512<>+0x18(SB), Z19 \
	VPBROADCASTQ consts512<>+0x20(SB), Z20

// HASH8 is HASH4 over the eight lanes of Z0, with one VPMULLQ a
// multiplication and VPROLQ for the rotation; it uses Z1-Z3.
#define HASH8 \
	VPMULLQ Z16, Z0, Z0 \
	VPROLQ  $31, Z0, Z0 \
	VPMULLQ Z17, Z0, Z0 \
	VPXORQ  Z20, Z0, Z0 \
	VPADDQ  Z20, Z0, Z0 \
	VPADDQ  Z20, Z0, Z1 \
	FMIX512(Z0, Z2) \
	FMIX512(Z1, Z3) \
	VPADDQ  Z1, Z0, Z0

// func int64HashesAVX512(vs []uint64)
// int64HashesAVX2 eight lanes a step; len(vs) must be a multiple of 8.
TEXT ·int64HashesAVX512(SB), NOSPLIT, $0-24
	MOVQ vs_base+0(FP), SI
	MOVQ vs_len+8(FP), CX
	SHRQ $3, CX
	JZ   done512
	LOADCONSTS512

loop512:
	VMOVDQU64 (SI), Z0
	HASH8
	VMOVDQU64 Z0, (SI)
	ADDQ      $64, SI
	DECQ      CX
	JNZ       loop512
	VZEROUPPER

done512:
	RET

// func int64HashesBigEndianAVX512(dst []uint64, src []byte)
// int64HashesBigEndianAVX2 eight lanes a step; len(dst) must be a
// multiple of 8.
TEXT ·int64HashesBigEndianAVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	SHRQ $3, CX
	JZ   bedone512
	LOADCONSTS512
	VMOVDQU64 consts512<>+0x40(SB), Z21

beloop512:
	VMOVDQU64 (SI), Z0
	VPSHUFB   Z21, Z0, Z0
	HASH8
	VMOVDQU64 Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       beloop512
	VZEROUPPER

bedone512:
	RET
