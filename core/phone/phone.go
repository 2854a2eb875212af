// Package phone validates fax destinations with libphonenumber's metadata
// (github.com/nyaruka/phonenumbers).
package phone

import (
	"fmt"
	"regexp"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/nyaruka/phonenumbers"

	"github.com/faxhub/faxhub/core"
)

// e164 is strict E.164: a plus, a country code that does not start with 0,
// and at most 15 digits in all. Anything looser invites ambiguity (national
// prefixes, trunk zeros, vanity letters) in a field that costs money when
// it is wrong.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Checker implements core.DestinationChecker. Classifying a number runs
// libphonenumber's patterns (regular expressions) for its country, tens of
// microseconds a number, and a fax service sends to the same numbers again
// and again (the pharmacy, the court, the clinic), so a Checker made by New
// keeps its verdicts in a bounded LRU. A verdict is a pure function of the
// number and the compiled-in metadata, so it never goes stale; errors are
// built afresh on every call from the verdict, so no caller shares one.
// The zero value works, without a cache.
type Checker struct {
	verdicts *lru.Cache[string, verdict]
}

var _ core.DestinationChecker = (*Checker)(nil)

// CacheSize is how many verdicts New keeps: numbers are at most 16 bytes,
// so a full cache is well under a megabyte.
const CacheSize = 8192

// New returns a Checker with a cache of CacheSize verdicts.
func New() *Checker {
	c, err := lru.New[string, verdict](CacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Checker{verdicts: c}
}

// verdict is what libphonenumber says of a strict E.164 string.
type verdict struct {
	outcome    outcome
	normalized string
	region     string
	typ        phonenumbers.PhoneNumberType
	// parseErr is the parser's complaint, for unparsable.
	parseErr string
}

type outcome uint8

const (
	accepted outcome = iota
	unparsable
	unassigned    // no valid number range
	nonGeographic // +800 and the like
	premium       // the caller pays extra
	cannotReceive // pager, voicemail
	unknownType   // valid, but of no known type
)

// Check implements core.DestinationChecker. It returns the number in E.164
// and its ISO 3166 region code (e.g. "US", "GB").
//
// Number types, as libphonenumber classifies the number range:
//   - premium_rate_destination: PREMIUM_RATE, SHARED_COST and
//     PERSONAL_NUMBER. The caller pays a surcharge on all three (UK 070
//     "personal numbers" cost as much as premium lines and are a classic
//     fraud target), and our per-page prices do not cover it.
//   - unsupported_destination: PAGER and VOICEMAIL (no fax machine can
//     answer), and non-geographic "countries" (+800, +808, +870, +881, +882,
//     +883, +979: international freephone and shared cost, satellite and
//     network numbers) whose rates are unpredictable.
//   - accepted: FIXED_LINE, MOBILE, FIXED_LINE_OR_MOBILE (the whole of the
//     NANP is this type), TOLL_FREE (many businesses receive faxes on one),
//     VOIP and UAN (company numbers).
//   - invalid_destination: anything the metadata does not recognise as a
//     valid, assigned range, including type UNKNOWN.
func (c *Checker) Check(number string) (string, string, error) {
	d, err := c.Describe(number)
	return d.E164, d.Country, err
}

// Describe implements core.DestinationChecker: Check's verdict with the
// number type of an accepted number.
func (c *Checker) Describe(number string) (core.Destination, error) {
	if !e164.MatchString(number) {
		// Not cached: the key space of malformed input is unbounded, and
		// refusing it costs one regular expression.
		return core.Destination{}, notE164(number)
	}
	var v verdict
	if c.verdicts == nil {
		v = classify(number)
	} else if cached, ok := c.verdicts.Get(number); ok {
		v = cached
	} else {
		v = classify(number)
		c.verdicts.Add(number, v)
	}
	return v.result(number)
}

// classify asks libphonenumber about a strict E.164 number. The region is
// worked out once: IsValidNumber and GetRegionCodeForNumber would each
// search the country code's regions again (25 of them share +1).
func classify(number string) verdict {
	num, err := phonenumbers.Parse(number, "")
	if err != nil {
		return verdict{outcome: unparsable, parseErr: err.Error()}
	}
	region := phonenumbers.GetRegionCodeForNumber(num)
	if !phonenumbers.IsValidNumberForRegion(num, region) {
		return verdict{outcome: unassigned}
	}
	v := verdict{normalized: phonenumbers.Format(num, phonenumbers.E164), region: region, typ: phonenumbers.GetNumberType(num)}
	switch {
	case region == "" || region == "001":
		v.outcome = nonGeographic
	case v.typ == phonenumbers.PREMIUM_RATE, v.typ == phonenumbers.SHARED_COST, v.typ == phonenumbers.PERSONAL_NUMBER:
		v.outcome = premium
	case v.typ == phonenumbers.PAGER, v.typ == phonenumbers.VOICEMAIL:
		v.outcome = cannotReceive
	case v.typ == phonenumbers.UNKNOWN:
		v.outcome = unknownType
	}
	return v
}

// result turns a verdict into Describe's answer, with a new error each
// time.
func (v verdict) result(number string) (core.Destination, error) {
	switch v.outcome {
	case accepted:
		return core.Destination{E164: v.normalized, Country: v.region, Type: typeName(v.typ)}, nil
	case unparsable:
		return core.Destination{}, invalid(number, "it cannot be parsed as a phone number (%s)", v.parseErr)
	case unassigned:
		return core.Destination{}, invalid(number, "no country has assigned this number range; check the country code and the number of digits")
	case nonGeographic:
		return core.Destination{}, core.Errorf(core.KindUnprocessable, core.CodeUnsupportedDestination,
			"%s is a non-geographic number (international freephone, satellite or network service); we do not send faxes to these", number).
			With("number", v.normalized)
	case premium:
		return core.Destination{}, core.Errorf(core.KindUnprocessable, core.CodePremiumDestination,
			"%s is a %s number in %s; faxes to numbers that charge the caller extra are not allowed", number, typeName(v.typ), v.region).
			With("number", v.normalized).With("numberType", typeName(v.typ)).With("country", v.region)
	case cannotReceive:
		return core.Destination{}, core.Errorf(core.KindUnprocessable, core.CodeUnsupportedDestination,
			"%s is a %s number in %s, which cannot receive a fax", number, typeName(v.typ), v.region).
			With("number", v.normalized).With("numberType", typeName(v.typ)).With("country", v.region)
	default: // unknownType
		return core.Destination{}, invalid(number, "it is not in any known number range for %s", v.region)
	}
}

func notE164(number string) *core.Error {
	e := core.Errorf(core.KindUnprocessable, core.CodeInvalidDestination,
		"destination %q is not in E.164 format: write a + and the country code, then the number, digits only (for example +12125550123)", number)
	// If stripping punctuation gives strict E.164, say so: it is what the
	// client almost certainly meant, but we do not guess on their behalf.
	if s := strings.Map(keepDigitsAndPlus, number); s != number && e164.MatchString(s) {
		e = e.With("hint", "did you mean "+s+"?")
	} else {
		e = e.With("hint", "E.164 numbers start with + and a country code, and have no spaces, dashes or brackets")
	}
	return e
}

func keepDigitsAndPlus(r rune) rune {
	if r == '+' || (r >= '0' && r <= '9') {
		return r
	}
	if r == ' ' || r == '-' || r == '.' || r == '(' || r == ')' || r == '/' || r == '\u00a0' {
		return -1
	}
	// Letters and anything else stay, so the result is not E.164 and no
	// hint is offered.
	return r
}

func invalid(number, format string, args ...any) *core.Error {
	return core.Errorf(core.KindUnprocessable, core.CodeInvalidDestination,
		"%s is not a valid phone number: %s", number, fmt.Sprintf(format, args...)).
		With("hint", "check the number with the recipient; it must be a complete international number such as +12125550123")
}

func typeName(t phonenumbers.PhoneNumberType) string {
	switch t {
	case phonenumbers.PREMIUM_RATE:
		return "premium-rate"
	case phonenumbers.SHARED_COST:
		return "shared-cost"
	case phonenumbers.PERSONAL_NUMBER:
		return "personal-number"
	case phonenumbers.PAGER:
		return "pager"
	case phonenumbers.VOICEMAIL:
		return "voicemail"
	case phonenumbers.FIXED_LINE:
		return "fixed_line"
	case phonenumbers.MOBILE:
		return "mobile"
	case phonenumbers.FIXED_LINE_OR_MOBILE:
		return "fixed_line_or_mobile"
	case phonenumbers.TOLL_FREE:
		return "toll_free"
	case phonenumbers.VOIP:
		return "voip"
	case phonenumbers.UAN:
		return "uan"
	}
	return "other"
}
