package web

import (
	"net"
	"net/netip"
	"strings"
)

// Hostname is the host of a host[:port], without IPv6 brackets.
func Hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// LoopbackHost reports whether a host[:port] (a listen address, a Host
// header, a peer address) names this machine: "localhost" or a loopback
// IP. An empty host, as in ":8080", names every interface, so it is not.
func LoopbackHost(hostport string) bool {
	h := Hostname(hostport)
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}
