package mpp

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// AcceptHeader is the request header in which a client ranks methods.
const AcceptHeader = "Accept-Payment"

// Offer names one method/intent pair the server can challenge with.
type Offer struct {
	Method string
	Intent string
}

type acceptRange struct {
	method, intent string // "*" for any
	q              int    // thousandths, 0..1000
}

// AcceptPayment is a parsed Accept-Payment header: a list of
// method/intent ranges ("tempo/charge", "stripe/*", "*/*") with weights.
type AcceptPayment struct {
	ranges []acceptRange
}

const maxAcceptRanges = 32

// ParseAcceptPayment parses the Accept-Payment values. Entries that are
// malformed (no slash, bad tokens, bad q) are ignored, as RFC 9110 lets a
// recipient ignore what it cannot parse; at most 32 entries are read.
func ParseAcceptPayment(values []string) AcceptPayment {
	var a AcceptPayment
	for _, v := range values {
		for entry := range strings.SplitSeq(v, ",") {
			if len(a.ranges) == maxAcceptRanges {
				return a
			}
			if r, ok := parseAcceptRange(entry); ok {
				a.ranges = append(a.ranges, r)
			}
		}
	}
	return a
}

func parseAcceptRange(entry string) (acceptRange, bool) {
	parts := strings.Split(entry, ";")
	mi := strings.ToLower(strings.TrimSpace(parts[0]))
	m, i, ok := strings.Cut(mi, "/")
	if !ok || !(m == "*" || isLowerToken(m)) || !(i == "*" || isLowerToken(i)) {
		return acceptRange{}, false
	}
	r := acceptRange{method: m, intent: i, q: 1000}
	for _, p := range parts[1:] {
		name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return acceptRange{}, false
		}
		if strings.EqualFold(strings.TrimSpace(name), "q") {
			q, ok := parseQ(strings.TrimSpace(val))
			if !ok {
				return acceptRange{}, false
			}
			r.q = q
		}
	}
	return r, true
}

// parseQ reads an RFC 9110 weight: "0" / "0.ddd" / "1" / "1.000".
func parseQ(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart != "0" && intPart != "1" {
		return 0, false
	}
	if hasDot && (frac == "" || len(frac) > 3) {
		return 0, false
	}
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	frac += strings.Repeat("0", 3-len(frac))
	n, _ := strconv.Atoi(frac)
	if intPart == "1" {
		if n != 0 {
			return 0, false
		}
		return 1000, true
	}
	return n, true
}

// weight is the q of the most specific range matching o (exact beats
// method/*, which beats */intent, which beats */*); -1 when none does.
func (a AcceptPayment) weight(o Offer) int {
	best, bestSpec := -1, -1
	for _, r := range a.ranges {
		spec := 0
		switch {
		case r.method == o.Method && r.intent == o.Intent:
			spec = 3
		case r.method == o.Method && r.intent == "*":
			spec = 2
		case r.method == "*" && r.intent == o.Intent:
			spec = 1
		case r.method == "*" && r.intent == "*":
			spec = 0
		default:
			continue
		}
		if spec > bestSpec {
			best, bestSpec = r.q, spec
		}
	}
	return best
}

// Order returns the offers the client accepts, best first: q=0 and
// offers no range matches are dropped, ties keep the server's order.
// Without a (parsable) header every offer is kept in the server's order.
func (a AcceptPayment) Order(offers []Offer) []Offer {
	if len(a.ranges) == 0 {
		return slices.Clone(offers)
	}
	type weighted struct {
		o Offer
		q int
	}
	var ws []weighted
	for _, o := range offers {
		if q := a.weight(o); q > 0 {
			ws = append(ws, weighted{o, q})
		}
	}
	slices.SortStableFunc(ws, func(x, y weighted) int { return cmp.Compare(y.q, x.q) })
	out := make([]Offer, len(ws))
	for i, w := range ws {
		out[i] = w.o
	}
	return out
}
