#include "textflag.h"

// func dotInt8AVX2(a, b *int8, n int) int32
// n is a multiple of 16. Each step sign-extends 16 codes of each vector
// to int16 and multiplies and adds neighbouring pairs into int32 lanes.
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   loop16
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y4, Y5, Y4
	VPADDD    Y4, Y3, Y3
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       loop32

loop16:
	CMPQ CX, $16
	JL   reduce
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y1
	VPADDD    Y1, Y0, Y0

reduce:
	VPADDD       Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET

// func prefetch(p unsafe.Pointer, n int)
// Asks the cache for the n bytes at p (n > 0), a line of 64 at a time,
// without waiting for them.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), CX // the last byte
	ANDQ $-64, SI

line:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, CX
	JLE        line
	RET

// func atLeastAVX2(xs *float32, n int, floor float32) int
// n is a multiple of 8. Returns the index of the first of the n floats at
// xs that is at least floor (NaN is not), or n: eight compared at a time.
TEXT ·atLeastAVX2(SB), NOSPLIT, $0-32
	MOVQ         xs+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS floor+16(FP), Y0
	XORQ         AX, AX

loop8:
	CMPQ      AX, CX
	JGE       none
	VCMPPS    $0x12, (SI)(AX*4), Y0, Y1 // floor <= x, quiet on NaN
	VMOVMSKPS Y1, DX
	TESTL     DX, DX
	JNZ       found
	ADDQ      $8, AX
	JMP       loop8

found:
	BSFL DX, DX
	ADDQ DX, AX
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

none:
	VZEROUPPER
	MOVQ CX, ret+24(FP)
	RET
