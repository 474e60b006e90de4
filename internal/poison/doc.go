// Package poison proves that nothing stored, cached or uploaded shares
// memory with a buffer that is reused. Code that hands a buffer back for
// reuse (a request body to its pool, a log batch to its free list, a
// segment read at replay) calls Release on it first. In a normal build
// Release does nothing and costs nothing. Built with the tag
// sketchd_poison (scripts/test sets it, so every suite runs under it) it
// overwrites the whole buffer, up to its capacity, with Byte at once: a
// sketch that kept a slice of a request body then reads 0xdb registers
// in the very next check instead of being rewritten, silently, by some
// later request (a DataSketches HLL upload once was).
package poison
