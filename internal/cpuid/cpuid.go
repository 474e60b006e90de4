// Package cpuid says which vector and bit instructions the processor runs
// and the operating system supports, for the assembly kernels of murmur
// (the hash of integer ids), ingest (the parsing of integer ids) and hll
// (the register loop). It asks the processor itself (CPUID, and XGETBV
// for the registers the operating system saves), so it depends on the
// standard library only. Each answer is computed when asked: callers keep
// it in a variable of their own, which their tests can turn off to run the
// portable code on the same machine.
//
// Where there is no such kernel (another architecture, or -tags purego,
// which leaves every assembly file out), every answer is false.
package cpuid
