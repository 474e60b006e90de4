package sketch

// MaxNameLen is the longest sketch name, in bytes.
const MaxNameLen = 200

// ValidateName reports whether s is a sketch name:
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$. Names are ASCII, so they cannot
// escape a path, carry control characters or differ only by normalisation.
func ValidateName(s string) error {
	switch {
	case s == "":
		return Errorf(Invalid, "sketch name is empty")
	case len(s) > MaxNameLen:
		return Errorf(Invalid, "sketch name is %d bytes long; at most %d are allowed", len(s), MaxNameLen)
	case !alnum(s[0]):
		return Errorf(Invalid, "sketch name %s must start with a letter or digit", quoteName(s))
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return Errorf(Invalid, "sketch name %s has %s at byte %d; names use only letters, digits and . _ : -", quoteName(s), quoteByte(c), i)
		}
	}
	return nil
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quoteName quotes a (possibly hostile) name for a detail message, cut to
// a readable length.
func quoteName(s string) string {
	const max = 64
	if len(s) > max {
		return quote(s[:max]) + "…"
	}
	return quote(s)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return quote(string(c))
	}
	return "byte 0x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}
