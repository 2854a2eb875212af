// Package egress is the address policy of faxhub's outbound connections
// to URLs someone else chose (client metadata documents, webhook endpoints,
// A2A push receivers): which addresses may be dialed, so that such a URL
// cannot turn faxhub into a proxy into its own network (SSRF). It is pure
// address logic, usable by core's features to check a URL when it is
// given; core/safehttp applies it again to each address actually dialed.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// Policy says which addresses may be dialed. The zero Policy allows public
// unicast addresses only.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1 (developer mode, where
	// endpoints are local test receivers).
	AllowLoopback bool
	// AllowPrivate allows every non-public address but the cloud metadata
	// services and the unusable ranges: private (RFC 1918, unique local),
	// loopback, link-local, CGNAT and documentation ranges, for operators
	// whose receivers are on an internal network.
	AllowPrivate bool
}

// ErrForbiddenAddress is wrapped by the error of a dial the policy
// refused.
var ErrForbiddenAddress = errors.New("address not allowed")

// metadata are the cloud instance metadata services (AWS, GCP and Azure
// on 169.254.169.254, AWS ECS task metadata, AWS over IPv6, Alibaba,
// Oracle). They hand out credentials to whoever asks from inside, so no
// policy reaches them, whatever the operator allows.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
}

// nonPublic are ranges that are not global unicast destinations beyond
// what netip classifies: CGNAT, IETF protocol assignments, documentation,
// benchmarking, NAT64, Teredo and 6to4 (which embed an IPv4 address that
// may be a private one), IPv6 documentation, unique local addresses.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("fc00::/7"),
}

// unusable are never a destination: "this network" (0/8, which Linux
// dials as the local host), reserved and broadcast (240/4), multicast.
var unusable = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("::/128"), netip.MustParsePrefix("ff00::/8"),
}

// Public reports whether a is a global unicast address outside the
// private, loopback, link-local, CGNAT, unique-local, documentation and
// reserved ranges.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() {
		return false
	}
	for _, p := range append(nonPublic, unusable...) {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Metadata reports whether a is a cloud metadata service's address.
func Metadata(a netip.Addr) bool {
	a = a.Unmap()
	for _, m := range metadata {
		if a == m {
			return true
		}
	}
	return false
}

// Check returns nil if p allows dialing a, else an error wrapping
// ErrForbiddenAddress that says which kind of address it is (not which
// address: a name's resolution inside the operator's network is not the
// caller's to learn).
func (p Policy) Check(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case Metadata(a):
		return fmt.Errorf("%w: a cloud metadata service", ErrForbiddenAddress)
	case Public(a):
		return nil
	case !a.IsValid() || unusableAddr(a):
		return fmt.Errorf("%w: not a unicast address", ErrForbiddenAddress)
	case a.IsLoopback():
		if p.AllowLoopback || p.AllowPrivate {
			return nil
		}
		return fmt.Errorf("%w: a loopback address", ErrForbiddenAddress)
	case p.AllowPrivate:
		return nil
	case a.IsLinkLocalUnicast():
		return fmt.Errorf("%w: a link-local address", ErrForbiddenAddress)
	}
	return fmt.Errorf("%w: a private or reserved address", ErrForbiddenAddress)
}

func unusableAddr(a netip.Addr) bool {
	for _, p := range unusable {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
