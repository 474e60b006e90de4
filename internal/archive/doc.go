// Package archive reads and writes sketchd's backup archive: the one
// format that GET /v1/backup streams, "sketchd backup" saves, "sketchd
// restore" loads and "sketchd copy" pipes from one backend to another.
// docs/backup.md describes it byte by byte; this comment is its summary.
//
//	header   32 bytes: magic "\x89SKDARC\n", version (uint16, 1), flags
//	         (uint16, 0), taken at (int64 Unix ns), source (byte), 7 zero
//	         bytes, CRC-32C of the 28 bytes before it
//	record   type (byte: 1 sketch, 2 series, 3 bucket, 4 key), body
//	         length (uint32, at most MaxRecordBody), body, CRC-32C of the
//	         type, length and body
//	trailer  type 0xFF, length (uint32, 32), the number of sketch,
//	         series, bucket and key records (uint64 each), SHA-256 of
//	         every byte of the stream before it; then the end of the stream
//
// Integers are big-endian. Record bodies are sequences of fields: a
// string or byte string is a uint32 length and its bytes, a time an int64
// of Unix nanoseconds (a bucket's start: Unix seconds), a flag set one
// byte; a body has no bytes after its last field.
//
// The format is streamed: Writer writes each record as it is given one
// and Reader reads one record at a time, so neither holds more than one
// record (at most MaxRecordBody bytes, allocated as they arrive, never
// from a length read off the wire). Every error of Reader is an *Error
// naming the record (numbered from 1 after the header; 0 is the header)
// and the byte offset where it starts, and wraps ErrCorrupt or
// ErrTruncated. A Reader returns io.EOF only after the trailer's counts
// and digest matched and the stream ended right after it, so a consumer
// that writes records as they come commits only on io.EOF.
//
// What the records mean (a sketch's kind and bytes, a series'
// definition) is the backends' and the sketch registry's to check: this
// package checks framing and integrity, and that each body has exactly
// its fields.
package archive
