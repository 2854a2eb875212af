package phone

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/nyaruka/phonenumbers"
)

// example is libphonenumber's own example number of a type in a region, so
// the fixtures follow the metadata when it is updated.
func example(t *testing.T, region string, typ phonenumbers.PhoneNumberType) string {
	t.Helper()
	n := phonenumbers.GetExampleNumberForType(region, typ)
	if n == nil {
		t.Fatalf("no example %v number for %s", typ, region)
	}
	return phonenumbers.Format(n, phonenumbers.E164)
}

type checkCase struct {
	name    string
	number  string
	country string // for accepted numbers
	code    string // for refused ones
}

// checkCases are numbers of every verdict, with what Check must say.
func checkCases(t *testing.T) []checkCase {
	return []checkCase{
		{"US fixed line", example(t, "US", phonenumbers.FIXED_LINE), "US", ""},
		{"GB fixed line", example(t, "GB", phonenumbers.FIXED_LINE), "GB", ""},
		{"DE fixed line", example(t, "DE", phonenumbers.FIXED_LINE), "DE", ""},
		{"FR fixed line", example(t, "FR", phonenumbers.FIXED_LINE), "FR", ""},
		{"London 020", "+442079460000", "GB", ""},
		{"Berlin", "+4930123456", "DE", ""},
		{"Paris", "+33123456789", "FR", ""},
		{"Canada shares +1", "+14165550123", "CA", ""},
		{"GB mobile", example(t, "GB", phonenumbers.MOBILE), "GB", ""},
		{"US toll-free", example(t, "US", phonenumbers.TOLL_FREE), "US", ""},
		{"GB toll-free", example(t, "GB", phonenumbers.TOLL_FREE), "GB", ""},
		{"GB VoIP", example(t, "GB", phonenumbers.VOIP), "GB", ""},
		{"GB UAN", example(t, "GB", phonenumbers.UAN), "GB", ""},
		{"FR UAN", example(t, "FR", phonenumbers.UAN), "FR", ""},

		{"US 900", example(t, "US", phonenumbers.PREMIUM_RATE), "", core.CodePremiumDestination},
		{"US 900, another", "+19005550123", "", core.CodePremiumDestination},
		{"GB 09", example(t, "GB", phonenumbers.PREMIUM_RATE), "", core.CodePremiumDestination},
		{"GB 0909", "+449098790000", "", core.CodePremiumDestination},
		{"DE 0900", example(t, "DE", phonenumbers.PREMIUM_RATE), "", core.CodePremiumDestination},
		{"FR 089", example(t, "FR", phonenumbers.PREMIUM_RATE), "", core.CodePremiumDestination},
		{"DE shared cost", example(t, "DE", phonenumbers.SHARED_COST), "", core.CodePremiumDestination},
		{"FR shared cost", example(t, "FR", phonenumbers.SHARED_COST), "", core.CodePremiumDestination},
		{"GB personal number 070", example(t, "GB", phonenumbers.PERSONAL_NUMBER), "", core.CodePremiumDestination},
		{"GB pager", example(t, "GB", phonenumbers.PAGER), "", core.CodeUnsupportedDestination},
		{"DE voicemail", example(t, "DE", phonenumbers.VOICEMAIL), "", core.CodeUnsupportedDestination},
		{"international freephone +800", phonenumbers.Format(phonenumbers.GetExampleNumberForNonGeoEntity(800), phonenumbers.E164), "", core.CodeUnsupportedDestination},
		{"satellite +881", phonenumbers.Format(phonenumbers.GetExampleNumberForNonGeoEntity(881), phonenumbers.E164), "", core.CodeUnsupportedDestination},

		{"fictional 555 area code", "+15555550123", "", core.CodeInvalidDestination},
		{"US too short", "+1212555012", "", core.CodeInvalidDestination},
		{"US too long", "+121255501234", "", core.CodeInvalidDestination},
		{"unassigned country code", "+2101234567", "", core.CodeInvalidDestination},
		{"Greenland with a digit too many", "+2991234567", "", core.CodeInvalidDestination},
		{"GB drama range", "+447700900123", "", core.CodeInvalidDestination},
		{"DE too short", "+49301", "", core.CodeInvalidDestination},

		{"empty", "", "", core.CodeInvalidDestination},
		{"no plus", "12125550123", "", core.CodeInvalidDestination},
		{"international prefix 00", "0012125550123", "", core.CodeInvalidDestination},
		{"spaces", "+1 212 555 0123", "", core.CodeInvalidDestination},
		{"dashes and brackets", "+1 (212) 555-0123", "", core.CodeInvalidDestination},
		{"national format", "(212) 555-0123", "", core.CodeInvalidDestination},
		{"country code 0", "+0212555012", "", core.CodeInvalidDestination},
		{"letters", "+1800FLOWERS", "", core.CodeInvalidDestination},
		{"16 digits", "+1234567890123456", "", core.CodeInvalidDestination},
		{"extension", "+12125550123;ext=1", "", core.CodeInvalidDestination},
		{"trailing newline", "+12125550123\n", "", core.CodeInvalidDestination},
		{"fullwidth digits", "+１２１２５５５０１２３", "", core.CodeInvalidDestination},
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := New()
	for _, tt := range checkCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e164, country, err := c.Check(tt.number)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Check(%q): %v", tt.number, err)
				}
				if e164 != tt.number || country != tt.country {
					t.Errorf("Check(%q) = %q, %q; want %q, %q", tt.number, e164, country, tt.number, tt.country)
				}
				return
			}
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != tt.code || ce.Kind != core.KindUnprocessable {
				t.Fatalf("Check(%q) = %q, %q, %v; want code %s", tt.number, e164, country, err, tt.code)
			}
			if e164 != "" || country != "" {
				t.Errorf("a refused number returned %q, %q", e164, country)
			}
			if tt.code == core.CodeInvalidDestination && ce.Fields["hint"] == nil {
				t.Errorf("no hint: %v", ce)
			}
		})
	}
}

func TestNonE164Hint(t *testing.T) {
	t.Parallel()
	_, _, err := New().Check("+1 (212) 555-0123")
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Fields["hint"] != "did you mean +12125550123?" {
		t.Fatalf("got %v (fields %v)", err, ce.Fields)
	}
	if !strings.Contains(ce.Message, "E.164") {
		t.Errorf("message does not name the format: %s", ce.Message)
	}
	// Letters are never silently dropped into a suggestion.
	_, _, err = New().Check("+1 800 FLOWERS")
	errors.As(err, &ce)
	if h, _ := ce.Fields["hint"].(string); strings.Contains(h, "did you mean") {
		t.Errorf("suggested a number for letters: %s", h)
	}
}

// The 555-0100…0199 block is reserved for fiction in every NANP area code,
// yet libphonenumber treats it as valid inside real area codes (unlike the
// 555 area code itself). The simulated provider uses these as test numbers,
// so they must pass.
func TestFictionalNANPNumbersPass(t *testing.T) {
	t.Parallel()
	c := New()
	for _, area := range []string{"212", "202", "312", "415", "617", "718"} {
		for line := 100; line <= 199; line++ {
			n := fmt.Sprintf("+1%s555%04d", area, line)
			if e164, country, err := c.Check(n); err != nil || e164 != n || country != "US" {
				t.Errorf("Check(%s) = %q, %q, %v", n, e164, country, err)
			}
		}
	}
	for _, n := range simulatorNumbers {
		if _, _, err := c.Check(n); err != nil {
			t.Errorf("simulator number %s: %v", n, err)
		}
	}
}

// simulatorNumbers are the numbers reported to the simulated-provider work
// as passing this checker.
var simulatorNumbers = []string{
	"+12125550100", "+12125550101", "+12125550102", "+12125550103",
	"+12125550104", "+12125550105", "+12125550106", "+12125550107",
}

// A cached verdict answers exactly as a fresh classification does, on the
// first call and on every later one, and each call gets an error of its
// own (a caller adding fields to one must not change the next caller's).
func TestCachedVerdictsAnswerAsUncached(t *testing.T) {
	t.Parallel()
	cached, fresh := New(), &Checker{}
	for _, tt := range checkCases(t) {
		for round := range 3 {
			e1, r1, err1 := cached.Check(tt.number)
			e2, r2, err2 := fresh.Check(tt.number)
			if e1 != e2 || r1 != r2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("%s, round %d: cached %q %q %v; uncached %q %q %v", tt.name, round, e1, r1, err1, e2, r2, err2)
			}
			var c1, c2 *core.Error
			if errors.As(err1, &c1) != errors.As(err2, &c2) {
				t.Fatalf("%s: error types differ: %T, %T", tt.name, err1, err2)
			}
			if c1 == nil {
				continue
			}
			if c1.Code != c2.Code || c1.Kind != c2.Kind || fmt.Sprint(c1.Fields) != fmt.Sprint(c2.Fields) {
				t.Fatalf("%s: cached %+v, uncached %+v", tt.name, c1, c2)
			}
			c1.Fields["mutated"] = true
			c1.Message = "mutated"
		}
	}
}

// The cache holds at most CacheSize verdicts, and none for malformed input,
// whose variety has no bound.
func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := New()
	for i := range CacheSize + 500 {
		// Valid or not, every strict E.164 number gets a verdict.
		c.Check(fmt.Sprintf("+1212%07d", i))
	}
	if n := c.verdicts.Len(); n != CacheSize {
		t.Errorf("%d verdicts cached after %d numbers, want %d", n, CacheSize+500, CacheSize)
	}
	c = New()
	for i := range 1000 {
		c.Check(fmt.Sprintf("+1 212 %07d", i))
	}
	if n := c.verdicts.Len(); n != 0 {
		t.Errorf("%d verdicts cached for malformed numbers", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    *Checker
	}{{"uncached", &Checker{}}, {"cached", New()}} {
		for _, n := range []string{"+12125550100", "+14165550123", "+442079460000"} {
			b.Run(bc.name+"/"+n, func(b *testing.B) {
				for b.Loop() {
					if _, _, err := bc.c.Check(n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestDescribeNamesTheNumberType: the type an accepted number is of, as
// the console's send page shows it while the number is typed.
func TestDescribeNamesTheNumberType(t *testing.T) {
	t.Parallel()
	c := New()
	for _, tt := range []struct {
		number, country, typ string
	}{
		{example(t, "GB", phonenumbers.FIXED_LINE), "GB", "fixed_line"},
		{example(t, "GB", phonenumbers.MOBILE), "GB", "mobile"},
		{"+12125550100", "US", "fixed_line_or_mobile"},
		{example(t, "US", phonenumbers.TOLL_FREE), "US", "toll_free"},
		{example(t, "GB", phonenumbers.VOIP), "GB", "voip"},
		{example(t, "GB", phonenumbers.UAN), "GB", "uan"},
	} {
		d, err := c.Describe(tt.number)
		if err != nil || d != (core.Destination{E164: tt.number, Country: tt.country, Type: tt.typ}) {
			t.Errorf("Describe(%s) = %+v, %v; want %s %s", tt.number, d, err, tt.country, tt.typ)
		}
	}
	d, err := c.Describe("+19005550123")
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodePremiumDestination || ce.Fields["numberType"] != "premium-rate" || d != (core.Destination{}) {
		t.Errorf("premium: %+v %v", d, err)
	}
}
