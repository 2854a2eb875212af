package convert

import (
	"errors"
	"fmt"
	"strconv"
)

// A tiny PDF object lexer and parser over an in-memory window of the file.
// pdfcpu has a full parser, but it does not report where in the file a value
// sits, and the stream index (pdfindex.go) needs exactly that: the byte span
// of each stream's /Length value, to hide stream bodies from pdfcpu.

// errShortWindow means the object runs past the end of the window; the caller
// reads a bigger one and tries again.
var errShortWindow = errors.New("pdf object runs past the read window")

const maxNesting = 64

type valKind uint8

const (
	valInt valKind = iota + 1
	valReal
	valName
	valString
	valRef
	valArray
	valDict
	valKeyword // true, false, null and anything else bare
)

type pdfVal struct {
	kind  valKind
	num   int64 // valInt; object number for valRef
	gen   int64 // valRef
	str   string
	arr   []pdfVal
	dict  []pdfEntry
	start int // span in the window
	end   int
}

type lexer struct {
	b   []byte
	pos int
	// atEOF is true when the window ends at the end of the file, so running
	// out of bytes is a real syntax error and not a reason to read more.
	atEOF bool
}

func (l *lexer) short() error {
	if l.atEOF {
		return errors.New("unexpected end of file")
	}
	return errShortWindow
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.b) {
		c := l.b[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '%':
			for l.pos < len(l.b) && l.b[l.pos] != '\n' && l.b[l.pos] != '\r' {
				l.pos++
			}
		default:
			return
		}
	}
}

// token returns the next token's text and start. Strings and hex strings are
// returned whole.
func (l *lexer) token() (string, int, error) {
	l.skipSpace()
	if l.pos >= len(l.b) {
		return "", l.pos, l.short()
	}
	start := l.pos
	c := l.b[l.pos]
	switch c {
	case '<':
		if l.pos+1 >= len(l.b) {
			return "", start, l.short()
		}
		if l.b[l.pos+1] == '<' {
			l.pos += 2
			return "<<", start, nil
		}
		for l.pos < len(l.b) && l.b[l.pos] != '>' {
			l.pos++
		}
		if l.pos >= len(l.b) {
			return "", start, l.short()
		}
		l.pos++
		return string(l.b[start:l.pos]), start, nil
	case '>':
		if l.pos+1 >= len(l.b) {
			return "", start, l.short()
		}
		if l.b[l.pos+1] != '>' {
			return "", start, fmt.Errorf("stray '>' at %d", start)
		}
		l.pos += 2
		return ">>", start, nil
	case '[', ']', '{', '}':
		l.pos++
		return string(c), start, nil
	case ')':
		return "", start, fmt.Errorf("stray ')' at %d", start)
	case '(':
		depth := 0
		for l.pos < len(l.b) {
			switch l.b[l.pos] {
			case '\\':
				l.pos++
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					l.pos++
					return string(l.b[start:l.pos]), start, nil
				}
			}
			l.pos++
		}
		return "", start, l.short()
	case '/':
		l.pos++
	}
	for l.pos < len(l.b) && !isSpace(l.b[l.pos]) && !isDelim(l.b[l.pos]) {
		l.pos++
	}
	if l.pos >= len(l.b) && !l.atEOF {
		// A bare token cut by the window edge may continue.
		return "", start, errShortWindow
	}
	return string(l.b[start:l.pos]), start, nil
}

func parseInt(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && !(i == 0 && (c == '+' || c == '-')) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// value parses one object. A number followed by "gen R" is a reference.
func (l *lexer) value(depth int) (pdfVal, error) {
	if depth > maxNesting {
		return pdfVal{}, errors.New("objects nested too deeply")
	}
	tok, start, err := l.token()
	if err != nil {
		return pdfVal{}, err
	}
	v := pdfVal{start: start}
	switch {
	case tok == "<<":
		v.kind = valDict
		for {
			save := l.pos
			key, _, err := l.token()
			if err != nil {
				return pdfVal{}, err
			}
			if key == ">>" {
				break
			}
			if key[0] != '/' {
				l.pos = save
				return pdfVal{}, fmt.Errorf("dictionary key %q is not a name", key)
			}
			val, err := l.value(depth + 1)
			if err != nil {
				return pdfVal{}, err
			}
			v.dict = append(v.dict, pdfEntry{key[1:], val})
		}
	case tok == "[":
		v.kind = valArray
		for {
			l.skipSpace()
			if l.pos >= len(l.b) {
				return pdfVal{}, l.short()
			}
			if l.b[l.pos] == ']' {
				l.pos++
				break
			}
			val, err := l.value(depth + 1)
			if err != nil {
				return pdfVal{}, err
			}
			v.arr = append(v.arr, val)
		}
	case tok == ">>" || tok == "]" || tok == "{" || tok == "}":
		return pdfVal{}, fmt.Errorf("unexpected %q at %d", tok, start)
	case tok[0] == '/':
		v.kind, v.str = valName, tok[1:]
	case tok[0] == '(' || tok[0] == '<':
		v.kind, v.str = valString, tok
	default:
		n, ok := parseInt(tok)
		if !ok {
			if _, err := strconv.ParseFloat(tok, 64); err == nil {
				v.kind = valReal
			} else {
				v.kind, v.str = valKeyword, tok
			}
			break
		}
		v.kind, v.num = valInt, n
		save := l.pos
		if gen, ok := l.refTail(); ok {
			v.kind, v.gen = valRef, gen
		} else {
			l.pos = save
		}
	}
	v.end = l.pos
	return v, nil
}

// refTail consumes "gen R" if it follows. A window that ends right after an
// integer cannot tell, so it errs towards "not a reference"; callers that
// care (stream dictionaries) always have the closing ">>" in the window.
func (l *lexer) refTail() (int64, bool) {
	tok, _, err := l.token()
	if err != nil {
		return 0, false
	}
	gen, ok := parseInt(tok)
	if !ok || gen < 0 {
		return 0, false
	}
	tok, _, err = l.token()
	if err != nil || tok != "R" {
		return 0, false
	}
	return gen, true
}

// pdfEntry is a dictionary's key and value. A dictionary is a slice of
// them, not a map: a PDF's dictionaries have a handful of keys and are
// read a few keys each, and a map per dictionary was a tenth of what an
// unauthenticated 402 allocated.
type pdfEntry struct {
	key string
	val pdfVal
}

// get is the value of key in dictionary v. A key given twice takes its
// last value, as a map built in order would.
func (v pdfVal) get(key string) (pdfVal, bool) {
	for i := len(v.dict) - 1; i >= 0; i-- {
		if v.dict[i].key == key {
			return v.dict[i].val, true
		}
	}
	return pdfVal{}, false
}

// field is get without the presence flag: a missing key is the zero value.
func (v pdfVal) field(key string) pdfVal {
	x, _ := v.get(key)
	return x
}

func (v pdfVal) name(key string) string {
	if x, ok := v.get(key); ok && x.kind == valName {
		return x.str
	}
	return ""
}

func (v pdfVal) int(key string) (int64, bool) {
	if x, ok := v.get(key); ok && x.kind == valInt {
		return x.num, true
	}
	return 0, false
}
