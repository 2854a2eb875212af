// Package phone validates fax destinations with libphonenumber's metadata
// (github.com/nyaruka/phonenumbers).
package phone

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/nyaruka/phonenumbers"
)

// e164 is strict E.164: a plus, a country code that does not start with 0,
// and at most 15 digits in all. Anything looser invites ambiguity (national
// prefixes, trunk zeros, vanity letters) in a field that costs money when
// it is wrong.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Checker implements core.DestinationChecker. It has no state; the zero
// value works.
type Checker struct{}

var _ core.DestinationChecker = (*Checker)(nil)

// New returns a Checker.
func New() *Checker { return &Checker{} }

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
func (*Checker) Check(number string) (string, string, error) {
	if !e164.MatchString(number) {
		return "", "", notE164(number)
	}
	num, err := phonenumbers.Parse(number, "")
	if err != nil {
		return "", "", invalid(number, "it cannot be parsed as a phone number (%v)", err)
	}
	if !phonenumbers.IsValidNumber(num) {
		return "", "", invalid(number, "no country has assigned this number range; check the country code and the number of digits")
	}
	region := phonenumbers.GetRegionCodeForNumber(num)
	normalized := phonenumbers.Format(num, phonenumbers.E164)
	switch typ := phonenumbers.GetNumberType(num); {
	case region == "" || region == "001":
		return "", "", core.Errorf(core.KindUnprocessable, core.CodeUnsupportedDestination,
			"%s is a non-geographic number (international freephone, satellite or network service); we do not send faxes to these", number).
			With("number", normalized)
	case typ == phonenumbers.PREMIUM_RATE, typ == phonenumbers.SHARED_COST, typ == phonenumbers.PERSONAL_NUMBER:
		return "", "", core.Errorf(core.KindUnprocessable, core.CodePremiumDestination,
			"%s is a %s number in %s; faxes to numbers that charge the caller extra are not allowed", number, typeName(typ), region).
			With("number", normalized).With("numberType", typeName(typ)).With("country", region)
	case typ == phonenumbers.PAGER, typ == phonenumbers.VOICEMAIL:
		return "", "", core.Errorf(core.KindUnprocessable, core.CodeUnsupportedDestination,
			"%s is a %s number in %s, which cannot receive a fax", number, typeName(typ), region).
			With("number", normalized).With("numberType", typeName(typ)).With("country", region)
	case typ == phonenumbers.UNKNOWN:
		return "", "", invalid(number, "it is not in any known number range for %s", region)
	}
	return normalized, region, nil
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
	}
	return "other"
}
