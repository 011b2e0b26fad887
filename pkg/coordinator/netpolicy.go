package coordinator

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Source URLs are tenant input, while the controller runs inside a cluster next to addresses only
// it should reach: the cloud's instance metadata service (169.254.169.254 and friends) hands out the
// node's credentials. Unless Options.AllowLinkLocal is set, the coordinator refuses link-local and
// metadata addresses twice: a URL whose host is such an address is refused before any request, and
// every connection is checked again at connect time, after DNS resolution, so a name that resolves
// to such an address (or a redirect to one) is refused too. Loopback and private addresses are
// allowed: in-cluster registries and the e2e servers live there.

// blockedPrefixes are the link-local ranges and the metadata addresses outside them.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),     // IPv4 link-local: AWS, GCP, Azure, OpenStack metadata
	netip.MustParsePrefix("fe80::/10"),          // IPv6 link-local unicast
	netip.MustParsePrefix("ff02::/16"),          // IPv6 link-local multicast
	netip.MustParsePrefix("224.0.0.0/24"),       // IPv4 link-local multicast
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
}

// blockedAddr reports whether ip is a link-local or metadata address (IPv4-mapped IPv6 included).
func blockedAddr(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("") // Prefix.Contains is false for any address with a zone
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// refusedAddrError is the refusal of a link-local or metadata address; it wraps ErrRefused, so the
// fetch fails without retries until the source changes.
func refusedAddrError(what string) error {
	return fmt.Errorf("%w: %s is a link-local or cloud metadata address; sources there are refused "+
		"unless the controller runs with --allow-link-local-sources", ErrRefused, what)
}

// checkSourceURL refuses a source URL whose host is a link-local or metadata IP address, unless
// allow. Host names are checked when they are dialled (dialControl).
func checkSourceURL(raw string, allow bool) error {
	if allow {
		return nil
	}
	host := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host = u.Host
	} else {
		// oci://host/path and host/path forms.
		host = strings.TrimPrefix(raw, "oci://")
		host, _, _ = strings.Cut(host, "/")
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i] // an IPv6 zone, as in fe80::1%eth0
	}
	if ip, err := netip.ParseAddr(host); err == nil && blockedAddr(ip) {
		return refusedAddrError("source host " + host)
	}
	return nil
}

// dialControl is the net.Dialer Control function of source connections: it runs after DNS
// resolution, on the address actually connected to.
func dialControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: cannot parse the dialled address %q", ErrRefused, address)
	}
	if blockedAddr(ip) {
		return refusedAddrError("address " + address)
	}
	return nil
}

// newDialer is the dialer of source connections: http.DefaultTransport's timeouts, and unless
// allowLinkLocal the connect-time check. resolver nil is the default resolver.
func newDialer(allowLinkLocal bool, resolver *net.Resolver) *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: resolver}
	if !allowLinkLocal {
		d.Control = dialControl
	}
	return d
}
