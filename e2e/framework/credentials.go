package framework

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminToken authenticates the harness, the control-plane components and the controller as
// a member of system:masters on every API server.
const adminToken = "admin-token"

// writeServiceAccountKeys writes an RSA key pair the API server signs service account tokens
// with (and the kube-controller-manager too, on the live cluster).
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service account public key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := os.WriteFile(pubPath, pubPEM, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", pubPath, err)
	}
	return nil
}

// caFromServingCert returns the CA of the API server's self-signed serving certificate: the
// second PEM block of certs/apiserver.crt (the first is the leaf, which lacks the CA bit).
func caFromServingCert(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	first, rest := pem.Decode(data)
	if first == nil {
		return nil, fmt.Errorf("no PEM block in %s", path)
	}
	second, _ := pem.Decode(rest)
	if second == nil {
		return nil, fmt.Errorf("no CA (second PEM block) in %s", path)
	}
	var out bytes.Buffer
	if err := pem.Encode(&out, second); err != nil {
		return nil, fmt.Errorf("encode CA: %w", err)
	}
	return out.Bytes(), nil
}

// adminKubeconfig renders a kubeconfig for url with the admin token and the CA inline, so it
// can be copied into a Secret as is.
func adminKubeconfig(name, url string, caData []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: caData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig of %s: %w", name, err)
	}
	return out, nil
}
