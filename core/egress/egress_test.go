package egress_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/egress"
)

// TestPolicy: which addresses each policy dials. Metadata services and
// unusable addresses are refused whatever the operator allows.
func TestPolicy(t *testing.T) {
	none, loop, private := egress.Policy{}, egress.Policy{AllowLoopback: true}, egress.Policy{AllowPrivate: true}
	for _, tc := range []struct {
		addr                string
		none, loop, private bool
	}{
		{"93.184.215.14", true, true, true},
		{"2606:4700::6810:85e5", true, true, true},
		{"127.0.0.1", false, true, true},
		{"127.9.9.9", false, true, true},
		{"::1", false, true, true},
		{"::ffff:127.0.0.1", false, true, true},
		{"10.0.0.5", false, false, true},
		{"172.16.3.4", false, false, true},
		{"192.168.1.1", false, false, true},
		{"100.64.0.1", false, false, true},
		{"169.254.10.10", false, false, true},
		{"fe80::1", false, false, true},
		{"fd12:3456::1", false, false, true},
		{"192.0.2.1", false, false, true},
		{"2001:db8::1", false, false, true},
		{"64:ff9b::a00:1", false, false, true},
		{"2002:7f00:1::", false, false, true},
		// Never, whatever is allowed.
		{"169.254.169.254", false, false, false},
		{"::ffff:169.254.169.254", false, false, false},
		{"169.254.170.2", false, false, false},
		{"fd00:ec2::254", false, false, false},
		{"100.100.100.200", false, false, false},
		{"192.0.0.192", false, false, false},
		{"0.0.0.0", false, false, false},
		{"0.1.2.3", false, false, false},
		{"::", false, false, false},
		{"255.255.255.255", false, false, false},
		{"240.1.1.1", false, false, false},
		{"224.0.0.1", false, false, false},
		{"ff02::1", false, false, false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			for _, c := range []struct {
				name string
				p    egress.Policy
				want bool
			}{{"none", none, tc.none}, {"loopback", loop, tc.loop}, {"private", private, tc.private}} {
				err := c.p.Check(a)
				if got := err == nil; got != c.want {
					t.Errorf("%s policy: allowed %v, want %v (%v)", c.name, got, c.want, err)
				}
				if err != nil && !errors.Is(err, egress.ErrForbiddenAddress) {
					t.Errorf("%s policy: %v does not wrap ErrForbiddenAddress", c.name, err)
				}
				if err != nil && strings.Contains(err.Error(), tc.addr) {
					t.Errorf("%s policy: the refusal names the address: %v", c.name, err)
				}
			}
		})
	}
}
