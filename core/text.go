package core

import (
	"unicode/utf8"
)

// CutUTF8 cuts s to at most n bytes without splitting a character: a cut
// rune would be invalid UTF-8, which PostgreSQL refuses in a text column.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
