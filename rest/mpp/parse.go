package mpp

import (
	"errors"
	"fmt"
	"strings"
)

// ParseChallenges reads the Payment challenges out of WWW-Authenticate
// values; a value may list several challenges and other schemes, which are
// skipped. It is for clients and tests: the server never needs to read its
// own headers. Unknown parameters are ignored, as the draft asks of
// clients; a Payment challenge that cannot be parsed is an error.
func ParseChallenges(values []string) ([]Challenge, error) {
	var out []Challenge
	for _, v := range values {
		if len(v) > 4*MaxChallengeBytes {
			return nil, invalidChallenge("header value too long", nil)
		}
		chs, err := parseAuthChallenges(v)
		if err != nil {
			return nil, invalidChallenge("unparsable WWW-Authenticate", err)
		}
		for _, ch := range chs {
			if !strings.EqualFold(ch.scheme, Scheme) {
				continue
			}
			p := ch.params
			var opaque *string
			if o, ok := p["opaque"]; ok {
				opaque = &o
			}
			c, err := fromParams(p["id"], p["realm"], p["method"], p["intent"], p["request"],
				p["expires"], p["digest"], p["description"], opaque)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

type authChallenge struct {
	scheme string
	params map[string]string // lowercased names
}

// parseAuthChallenges parses a #challenge list (RFC 9110 §11.6.1). A
// comma is followed either by another auth-param (name "=") or by a new
// scheme; token68 credentials of other schemes are skipped whole.
func parseAuthChallenges(s string) ([]authChallenge, error) {
	p := &lexer{s: s}
	var out []authChallenge
	for {
		p.skipListSep()
		if p.done() {
			return out, nil
		}
		scheme := p.token()
		if scheme == "" {
			return nil, fmt.Errorf("expected an auth-scheme at %d", p.i)
		}
		ch := authChallenge{scheme: scheme, params: map[string]string{}}
		p.skipOWS()
		if p.token68() {
			out = append(out, ch)
			continue
		}
		for !p.done() && p.peek() != ',' {
			save := p.i
			name := p.token()
			p.skipOWS()
			if name == "" || p.peek() != '=' {
				if name != "" && len(ch.params) > 0 {
					p.i = save // a new challenge starts here
					break
				}
				return nil, fmt.Errorf("expected an auth-param at %d", save)
			}
			p.i++
			p.skipOWS()
			var val string
			if p.peek() == '"' {
				v, err := p.quoted()
				if err != nil {
					return nil, err
				}
				val = v
			} else if val = p.token(); val == "" {
				return nil, fmt.Errorf("expected a value for %q", name)
			}
			name = strings.ToLower(name)
			if _, dup := ch.params[name]; dup {
				return nil, fmt.Errorf("parameter %q given twice", name)
			}
			ch.params[name] = val
			p.skipOWS()
			if p.peek() == ',' {
				p.i++
				p.skipOWS()
				// Look ahead: "name =" continues this challenge.
				save := p.i
				n := p.token()
				p.skipOWS()
				cont := n != "" && p.peek() == '='
				p.i = save
				if !cont {
					break
				}
			}
		}
		out = append(out, ch)
	}
}

type lexer struct {
	s string
	i int
}

func (p *lexer) done() bool { return p.i >= len(p.s) }

func (p *lexer) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *lexer) skipOWS() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lexer) skipListSep() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *lexer) token() string {
	start := p.i
	for !p.done() && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// token68 consumes a token68 if one stands here alone (followed by the end
// or a comma), as in "Bearer abc==".
func (p *lexer) token68() bool {
	j := p.i
	for j < len(p.s) && (isTchar(p.s[j]) && p.s[j] != '!' || p.s[j] == '/') {
		j++
	}
	if j == p.i {
		return false
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	k := j
	for k < len(p.s) && (p.s[k] == ' ' || p.s[k] == '\t') {
		k++
	}
	if k < len(p.s) && p.s[k] != ',' {
		return false
	}
	p.i = k
	return true
}

var errUnterminated = errors.New("unterminated quoted-string")

func (p *lexer) quoted() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			p.i++
			if p.done() {
				return "", errUnterminated
			}
			b.WriteByte(p.s[p.i])
		case c < 0x20 && c != '\t', c == 0x7f:
			return "", fmt.Errorf("control character in quoted-string")
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	return "", errUnterminated
}
