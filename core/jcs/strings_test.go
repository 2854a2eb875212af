package jcs

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestMarshalStrings: MarshalStrings writes the bytes Marshal writes for
// the same object of strings, whatever its keys and values.
func TestMarshalStrings(t *testing.T) {
	maps := []map[string]string{
		nil,
		{},
		{"request_id": "r-1"},
		{"request_id": "r-1", "generation": "2"},
		{"<a&b>": "<fax>", "\u2028": "\u2029", "ctl": "\x01\x1f\n\t\b\f\r\"\\/", "é": "café ☕"},
		{"\ufb33": "1", "\U0001F600": "2", "a": "3", "\ue000": "4", "\uffff": "5", "": ""},
		{"bad": "\xff", "ok": "x"},
		{"\xfe": "key not utf-8"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'Z', '0', '"', '\\', '\n', 0x1, '<', 'é', '\u2028', '\ud7ff', '\ue000', '\ufb33', '\uffff', '\U00010000', '\U0001F600'}
	for range 200 {
		m := map[string]string{}
		for range r.IntN(5) {
			m[randomString(r, alphabet)] = randomString(r, alphabet)
		}
		maps = append(maps, m)
	}
	for _, m := range maps {
		want, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalStrings(m)
		if err != nil || string(got) != string(want) {
			t.Fatalf("MarshalStrings(%q) = %s (%v), Marshal %s", m, got, err, want)
		}
	}
}

// TestCompareUTF16: the byte-order shortcut orders as UTF-16 code units do.
func TestCompareUTF16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune{'a', 'b', 0x7f, 0x80, 'é', '\u0800', '\ud7ff', '\ue000', '\ufb33', '\uffff', '\U00010000', '\U0001F600', '\U0010FFFF'}
	for range 5000 {
		a, b := randomString(r, alphabet), randomString(r, alphabet)
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := compareUTF16(a, b); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

func randomString(r *rand.Rand, alphabet []rune) string {
	var b strings.Builder
	for range r.IntN(4) {
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}
