package phone

import (
	"errors"
	"testing"

	"github.com/faxhub/faxhub/core"
)

// FuzzCheck: any string either is a valid E.164 destination, returned in
// E.164 with a region, or is refused with a client error (422) that names
// the reason; never a panic, never an internal error.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"+12125550123", "+442079460000", "+8005551234", "12125550123", "+1 212 555 0123", "+", "", "+999999999999999", "+447000000000", "+1212555012３"} {
		f.Add(s)
	}
	c := New()
	f.Fuzz(func(t *testing.T, number string) {
		norm, region, err := c.Check(number)
		if err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Kind != core.KindUnprocessable || ce.Code == "" {
				t.Fatalf("%q: not a client error: %#v", number, err)
			}
			return
		}
		if !e164.MatchString(norm) || region == "" {
			t.Fatalf("%q accepted as %q in %q", number, norm, region)
		}
		// What the service stores checks again as itself.
		if again, _, err := c.Check(norm); err != nil || again != norm {
			t.Fatalf("%q → %q → %q, %v", number, norm, again, err)
		}
	})
}
