// Package jcs renders JSON in the JSON Canonicalization Scheme (RFC 8785):
// object members sorted by their UTF-16 code units, no insignificant
// whitespace, strings escaped only where JSON requires it (no HTML
// escaping, U+2028/U+2029 left as they are) and numbers in their shortest
// ECMAScript form. Signatures and HMACs over JSON (AP2 carts, MPP
// challenge requests) need one byte form per value; this is it.
package jcs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Marshal encodes v with encoding/json and returns its canonical form.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jcs: encode: %w", err)
	}
	return Canonicalize(raw)
}

// MarshalStrings is Marshal of an object of strings, written directly
// instead of through encoding/json and back: an MPP challenge's opaque is
// one, put in canonical form for each challenge a 402 offers (issue 32).
// The bytes are Marshal's; a string that is not valid UTF-8, which
// encoding/json replaces, goes through Marshal.
func MarshalStrings(m map[string]string) ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return Marshal(m)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, k)
		b.WriteByte(':')
		writeString(&b, m[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Canonicalize returns the canonical form of one JSON text. Invalid JSON,
// invalid UTF-8 and numbers outside the IEEE 754 double range are refused
// (RFC 8785 §3.2.2.3 has no form for them).
func Canonicalize(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("jcs: invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("jcs: decode: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("jcs: trailing data after the JSON value")
	}
	var buf bytes.Buffer
	if err := write(&buf, tree); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func write(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		s, err := number(string(v))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := write(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("jcs: unexpected %T", v)
	}
	return nil
}

// number renders a JSON number as ECMAScript's Number.prototype.toString
// does for its double value; encoding/json's float64 encoder implements
// exactly that algorithm (shortest round-trip digits, exponent form below
// 1e-6 and from 1e21).
func number(lit string) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("jcs: number %q out of range", lit)
	}
	if f == 0 {
		return "0", nil // -0 too
	}
	out, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("jcs: number %q: %w", lit, err)
	}
	return string(out), nil
}

const hex = "0123456789abcdef"

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// compareUTF16 orders strings by UTF-16 code units (RFC 8785 §3.2.3); it
// differs from Go's byte order only between supplementary-plane characters
// and U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	// UTF-8's byte order is code point order, which is UTF-16's for
	// strings with nothing from U+E000 up (no byte 0xEE or above): most
	// keys, compared without converting them.
	if belowE000(a) && belowE000(b) {
		return strings.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// belowE000 reports whether s, valid UTF-8, has no code point from U+E000
// up: no byte 0xEE or above, which only their encodings start with.
func belowE000(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xee {
			return false
		}
	}
	return true
}
