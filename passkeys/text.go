package passkeys

import "unicode/utf8"

// textProblem says what is wrong with s as a single-line name, or "":
// invalid UTF-8 and NUL (PostgreSQL refuses both in text), control
// characters, and bidirectional formatting characters that make a name
// display as something it is not. A local check until core/web has the
// shared one (oauth/input.go has the same rule).
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == 0:
			return "contains a NUL character"
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			return "contains a control character"
		case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return "contains a bidirectional formatting character"
		}
	}
	return ""
}
