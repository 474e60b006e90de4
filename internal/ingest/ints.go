package ingest

// intKernel is a way to take integer ids: the word-at-a-time loops, or a
// vector kernel (ints_amd64.s) of a width.
type intKernel int

const (
	kernelWords  intKernel = iota
	kernelAVX2             // 64-byte windows, an id at a time
	kernelAVX512           // and several ids a window at once
)

func (k intKernel) String() string {
	switch k {
	case kernelAVX2:
		return "AVX2"
	case kernelAVX512:
		return "AVX-512"
	}
	return "words"
}

// intsKernel is the widest kernel the processor runs; tests lower it to
// run the narrower ones and the word loops on the same machine.
var intsKernel = widestIntKernel()

// separators tell the vector kernel (intsVector) what follows an id: sep,
// then, where spaces is set, any JSON whitespace. Each is a byte repeated
// 32 times, as the kernel compares them with 32 bytes of the body at once.
type separators struct {
	sep, spaces [32]byte
}

func newSeparators(sep byte, spaces bool) *separators {
	s := new(separators)
	for k := range s.sep {
		s.sep[k] = sep
		if spaces {
			s.spaces[k] = 0xff
		}
	}
	return s
}

var (
	// jsonSeps: a comma, then any whitespace ("[1, 2]" as Python's json
	// writes, an id a line as indented JSON). Whitespace before the comma
	// is left to the word loop.
	jsonSeps = newSeparators(',', true)
	// lineSeps: "\n" alone; a line ended by "\r\n" is left to the word
	// loop.
	lineSeps = newSeparators('\n', false)
)

// vectorRun takes ids from b[i] on with the vector kernel and, for the
// ids it leaves (the first ones of a body, ids with whitespace before their
// separator, lines ended by "\r\n", the last ones), with words, the
// word-at-a-time loop, until neither takes one; at most room ids (room < 0:
// no limit). Without the kernel, words alone takes them all.
//
// words takes one id after the kernel took some, and twice as many (up to
// 256) after each call in which the kernel took none: a body the kernel
// leaves id after id (every line ended by "\r\n") costs a call of it per
// 256 ids, not one per id.
func vectorRun(dst []uint64, b []byte, i, room int, seps *separators, words func([]uint64, []byte, int, int) ([]uint64, int)) ([]uint64, int) {
	if intsKernel < kernelAVX2 {
		return words(dst, b, i, room)
	}
	step := 1
	for {
		k := len(dst)
		dst, i = intsVector(dst, b, i, room, seps)
		if len(dst) > k {
			step = 1
		} else {
			step = min(2*step, 256)
		}
		if room >= 0 {
			room -= len(dst) - k
			if room == 0 {
				return dst, i
			}
		}
		m := len(dst)
		n := step
		if room >= 0 {
			n = min(n, room)
		}
		dst, i = words(dst, b, i, n)
		if len(dst) == m {
			return dst, i
		}
		if room >= 0 {
			room -= len(dst) - m
			if room == 0 {
				return dst, i
			}
		}
	}
}
