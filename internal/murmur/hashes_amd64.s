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

// For spanHashesAVX512: h1's and h2's block constants, 16 (a block), 64,
// 128, the low 32 bits, 15, 1 and 2 (block numbers).
DATA spanc<>+0x00(SB)/8, $0x52dce729
DATA spanc<>+0x08(SB)/8, $0x38495ab5
DATA spanc<>+0x10(SB)/8, $16
DATA spanc<>+0x18(SB)/8, $64
DATA spanc<>+0x20(SB)/8, $128
DATA spanc<>+0x28(SB)/8, $0xffffffff
DATA spanc<>+0x30(SB)/8, $15
DATA spanc<>+0x38(SB)/8, $1
DATA spanc<>+0x40(SB)/8, $2
GLOBL spanc<>(SB), RODATA|NOPTR, $0x48

// KMIX sets k to rotl(k*ca, r)*cb in each lane: a key word's mix
// (k1: c1, 31, c2; k2: c2, 33, c1).
#define KMIX(k, ca, cb, r) \
	VPMULLQ ca, k, k \
	VPROLQ  $r, k, k \
	VPMULLQ cb, k, k

// HSTEP sets out to (rotl(h^k, r) + add)*5 + c in each lane: a block's
// step of h1 (r 27, add h2) or h2 (r 31, add the new h1); t is scratch.
#define HSTEP(k, h, add, r, c, out, t) \
	VPXORQ  k, h, out \
	VPROLQ  $r, out, out \
	VPADDQ  add, out, out \
	VPSLLQ  $2, out, t \
	VPADDQ  t, out, out \
	VPADDQ  c, out, out

// SPANBLOCK mixes the block at Z7 (16 bytes from each lane's start) into
// h1 (Z5) and h2 (Z6) in the lanes of K1, as Bytes's block loop does;
// it uses K2 and Z8-Z12.
#define SPANBLOCK \
	KMOVB K1, K2 \
	VPXORQ Z8, Z8, Z8 \
	VPGATHERQQ (SI)(Z7*1), K2, Z8 \
	KMOVB K1, K2 \
	VPXORQ Z9, Z9, Z9 \
	VPGATHERQQ 8(SI)(Z7*1), K2, Z9 \
	KMIX(Z8, Z16, Z17, 31) \
	HSTEP(Z8, Z5, Z6, 27, Z21, Z10, Z11) \
	KMIX(Z9, Z17, Z16, 33) \
	HSTEP(Z9, Z6, Z10, 31, Z22, Z11, Z12) \
	VMOVDQA64 Z10, K1, Z5 \
	VMOVDQA64 Z11, K1, Z6 \
	VPADDQ  Z23, Z7, Z7

// func spanHashesAVX512(vs []uint64, b *byte)
// Bytes's h1, eight keys a step: each lane of vs is a key's place in b
// (its start << 32 | its length, at most 63, and at least 8 bytes into
// b), replaced by the hash. The lanes' blocks are gathered, each block
// mixed into the lanes that have it; the tail is read as Bytes reads it,
// from the quadword that ends at the key's last byte (and the one at the
// tail's start where it is longer than 8), shifted; a shift of 64 or
// more leaves 0, which mixes in nothing. len(vs) must be a multiple of 8.
TEXT ·spanHashesAVX512(SB), NOSPLIT, $0-32
	MOVQ vs_base+0(FP), DI
	MOVQ vs_len+8(FP), CX
	MOVQ b+24(FP), SI
	SHRQ $3, CX
	JZ   spandone
	LOADCONSTS512
	VPBROADCASTQ spanc<>+0x00(SB), Z21
	VPBROADCASTQ spanc<>+0x08(SB), Z22
	VPBROADCASTQ spanc<>+0x10(SB), Z23
	VPBROADCASTQ spanc<>+0x18(SB), Z24
	VPBROADCASTQ spanc<>+0x20(SB), Z25
	VPBROADCASTQ spanc<>+0x28(SB), Z26
	VPBROADCASTQ spanc<>+0x30(SB), Z27
	VPBROADCASTQ spanc<>+0x38(SB), Z28
	VPBROADCASTQ spanc<>+0x40(SB), Z29

spanloop:
	VMOVDQU64 (DI), Z0
	VPSRLQ  $32, Z0, Z1    // start
	VPANDQ  Z26, Z0, Z2    // length
	VPSRLQ  $4, Z2, Z3     // blocks
	VPANDQ  Z27, Z2, Z4    // tail bytes
	VPXORQ  Z5, Z5, Z5     // h1
	VPXORQ  Z6, Z6, Z6     // h2
	VMOVDQA64 Z1, Z7
	VPTESTMQ Z3, Z3, K1    // a first block
	KORTESTB K1, K1
	JZ   spantail
	SPANBLOCK
	VPCMPUQ $6, Z28, Z3, K1 // a second
	KORTESTB K1, K1
	JZ   spantail
	SPANBLOCK
	VPCMPUQ $6, Z29, Z3, K1 // a third
	KORTESTB K1, K1
	JZ   spantail
	SPANBLOCK

spantail:
	// E: the quadword that ends at the key's last byte.
	VPADDQ  Z2, Z1, Z8
	KXNORB  K2, K2, K2
	VPXORQ  Z9, Z9, Z9
	VPGATHERQQ -8(SI)(Z8*1), K2, Z9
	// k1: E >> (64 - 8r), or with more than 8 tail bytes the quadword
	// at the tail's start; k2: E >> (128 - 8r).
	VPSLLQ  $3, Z4, Z10
	VPSUBQ  Z10, Z24, Z11
	VPSRLVQ Z11, Z9, Z8
	VPCMPUQ $6, Z24, Z10, K1 // more than 8 tail bytes
	VPADDQ  Z2, Z1, Z12
	VPSUBQ  Z4, Z12, Z12   // the tail's start
	KMOVB K1, K2
	VPGATHERQQ (SI)(Z12*1), K2, Z8
	VPSUBQ  Z10, Z25, Z11
	VPSRLVQ Z11, Z9, Z9
	// h2 ^= rotl(k2*c2, 33)*c1; h1 ^= rotl(k1*c1, 31)*c2.
	KMIX(Z9, Z17, Z16, 33)
	VPXORQ  Z9, Z6, Z6
	KMIX(Z8, Z16, Z17, 31)
	VPXORQ  Z8, Z5, Z5
	// finish: the length into both, h1 += h2, h2 += h1, fmix64 each,
	// h1 += h2.
	VPXORQ  Z2, Z5, Z5
	VPXORQ  Z2, Z6, Z6
	VPADDQ  Z6, Z5, Z5
	VPADDQ  Z5, Z6, Z6
	FMIX512(Z5, Z10)
	FMIX512(Z6, Z11)
	VPADDQ  Z6, Z5, Z5
	VMOVDQU64 Z5, (DI)
	ADDQ $64, DI
	DECQ CX
	JNZ  spanloop
	VZEROUPPER

spandone:
	RET
