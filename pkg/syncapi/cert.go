package syncapi

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"

	certutil "k8s.io/client-go/util/cert"
)

// ServingCert loads the serving certificate from certFile and keyFile, or, when both are empty,
// generates a self-signed one for host (and localhost, 127.0.0.1). It also returns a pool that
// trusts the certificate's CA, for in-process clients of a self-signed server (nil for files).
func ServingCert(certFile, keyFile, host string) (tls.Certificate, *x509.CertPool, error) {
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("loading the sync API certificate: %w", err)
		}
		return cert, nil, nil
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, nil, fmt.Errorf("the sync API certificate needs both a certificate and a key file")
	}
	if host == "" {
		host = "localhost"
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating a self-signed sync API certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("parsing the self-signed sync API certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return tls.Certificate{}, nil, fmt.Errorf("no certificate in the self-signed sync API bundle")
	}
	return cert, pool, nil
}
