package coordinator

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func TestCheckSourceURL(t *testing.T) {
	tests := []struct {
		url     string
		refused bool
	}{
		{url: "http://169.254.169.254/latest/meta-data/", refused: true},
		{url: "https://169.254.1.2:8443/charts", refused: true},
		{url: "http://[fe80::1]:80/", refused: true},
		{url: "http://[fe80::1%25eth0]/", refused: true},
		{url: "http://[::ffff:169.254.169.254]/", refused: true},
		{url: "http://[fd00:ec2::254]/", refused: true},
		{url: "http://100.100.100.200/", refused: true},
		{url: "oci://169.254.169.254/charts", refused: true},
		{url: "oci://169.254.169.254:5000/charts", refused: true},
		{url: "http://127.0.0.1:8080/"},
		{url: "https://10.0.0.1/"},
		{url: "https://charts.example.com/"},
		{url: "oci://registry.example.com/charts"},
		{url: "http://[::1]:5000/"},
		{url: "http://169.255.0.1/"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := checkSourceURL(tt.url, false)
			if tt.refused != (err != nil) {
				t.Fatalf("checkSourceURL = %v, want refused %v", err, tt.refused)
			}
			if err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--allow-link-local-sources")) {
				t.Errorf("error %q: want ErrRefused naming the flag", err)
			}
			if err := checkSourceURL(tt.url, true); err != nil {
				t.Errorf("with AllowLinkLocal: %v", err)
			}
		})
	}
}

func TestDialControl(t *testing.T) {
	tests := []struct {
		address string
		refused bool
	}{
		{address: "169.254.169.254:80", refused: true},
		{address: "[fe80::1]:443", refused: true},
		{address: "[fe80::1%lo]:443", refused: true},
		{address: "[::ffff:a9fe:a9fe]:80", refused: true},
		{address: "127.0.0.1:80"},
		{address: "[::1]:80"},
		{address: "192.168.1.1:443"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			err := dialControl("tcp", tt.address, nil)
			if tt.refused != (err != nil) {
				t.Fatalf("dialControl = %v, want refused %v", err, tt.refused)
			}
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("error %v does not wrap ErrRefused", err)
			}
		})
	}
	if d := newDialer(true, nil); d.Control != nil {
		t.Error("with AllowLinkLocal the dialer still checks addresses")
	}
}

// TestEnsureRefusesLinkLocalURL: helm, OCI and git sources on a link-local or metadata address
// are refused before any connection, as content (ErrRefused), unless AllowLinkLocal.
func TestEnsureRefusesLinkLocalURL(t *testing.T) {
	c := newTestCoordinator(t, Options{FetchTimeout: 2 * time.Second})
	for _, rel := range []*v1alpha1.Release{
		helmRelease("http://169.254.169.254/charts", "web", "1.0.0"),
		helmRelease("oci://169.254.169.254/charts", "web", "1.0.0"),
		gitRelease("http://[fe80::1]/app.git", v1alpha1.GitRef{Branch: "main"}, "", v1alpha1.ContentTypeManifests),
	} {
		start := time.Now()
		_, err := c.Ensure(context.Background(), rel)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "link-local or cloud metadata address") {
			t.Errorf("Ensure(%+v) = %v, want a link-local refusal", rel.Spec.Source, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the refusal took %s: it should not connect", took)
		}
	}
}

// TestEnsureRefusesLinkLocalAtConnect: a host name that resolves to a link-local address, and a
// redirect to one, are refused when the connection is made; a name resolving to loopback works.
func TestEnsureRefusesLinkLocalAtConnect(t *testing.T) {
	repo := newHelmRepo(t)
	repo.add(t, "web", "1.0.0", packageChart(t, "web", "1.0.0", nil), "")
	_, port, err := net.SplitHostPort(strings.TrimPrefix(repo.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/index.yaml", http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	dns := fakeDNS(t, map[string]net.IP{
		"repo.convoy.test.":     net.IPv4(127, 0, 0, 1),
		"metadata.convoy.test.": net.IPv4(169, 254, 169, 254),
	})

	c := newTestCoordinator(t, Options{FetchTimeout: 5 * time.Second})
	c.clients.resolver = dns
	if _, err := c.Ensure(context.Background(), helmRelease("http://repo.convoy.test:"+port, "web", "1.0.0")); err != nil {
		t.Fatalf("a name resolving to loopback: %v", err)
	}
	for _, u := range []string{"http://metadata.convoy.test:" + port, redirect.URL} {
		_, err := c.Ensure(context.Background(), helmRelease(u, "web", "1.0.0"))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "169.254.169.254:80") && !strings.Contains(err.Error(), "169.254.169.254:"+port) {
			t.Errorf("Ensure from %s = %v, want a refusal of the link-local address at connect time", u, err)
		}
	}
}

// fakeDNS answers A queries for names with the given addresses (and nothing else) over UDP on
// loopback, and returns a Go resolver that asks it.
func fakeDNS(t *testing.T, names map[string]net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsReply(buf[:n], names); reply != nil {
				_, _ = pc.WriteTo(reply, addr)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// dnsReply builds the answer to a one-question DNS query: one A record when the name is known and
// the type is A, else no record.
func dnsReply(q []byte, names map[string]net.IP) []byte {
	if len(q) < 12 {
		return nil
	}
	// The question: labels, then type and class.
	i, name := 12, ""
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		name += string(q[i+1:i+1+l]) + "."
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1:])
	ip := names[strings.ToLower(name)].To4()
	out := append([]byte{}, q[:2]...)   // id
	out = append(out, 0x81, 0x80, 0, 1) // response, recursion; one question
	if ip != nil && qtype == 1 {
		out = append(out, 0, 1, 0, 0, 0, 0) // one answer
	} else {
		out = append(out, 0, 0, 0, 0, 0, 0)
	}
	out = append(out, question...)
	if ip != nil && qtype == 1 {
		out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4) // name pointer, A, IN, TTL 60, 4 bytes
		out = append(out, ip...)
	}
	return out
}
