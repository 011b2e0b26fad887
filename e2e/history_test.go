package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	"github.com/kumodo/convoy/pkg/render"
)

// TestHistoryAPI: `kubectl convoy history --history-url` reads the render history through the
// controller's GET /history next to the sync API: 401 without a valid token, 403 for a token
// without get on releases/history in the Release's namespace, and the history with the
// convoy-history role (the token from --token or from the user's own kubeconfig). A malformed
// request is 400 and a POST 405.
func TestHistoryAPI(t *testing.T) {
	if env.RenderStoreURL == "" {
		// The run has no render store: the controller is restarted with the file store, which
		// only a sequential test may do.
		useRenderStore(t, env.FileStoreURL)
	} else {
		t.Parallel()
	}
	installSyncRoles(t)
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "hist-src", map[string]string{"all.yaml": framework.ConfigMapDoc("settings", map[string]string{"version": "v1"}, nil)})
	env.CreateConfigMapRelease(t, ns, "hist", "bare", "hist-src")
	ref := framework.LastSuccessfulRef(env.WaitApplied(t, ns, "hist", convoyv1alpha1.ReasonApplied, applyTimeout, nil))

	admin := writeKubeconfig(t, "admin", env.Mgmt.Kubeconfig)
	history := func(kubeconfig string, args ...string) (string, error) {
		return runPlugin(t, append([]string{"--kubeconfig", kubeconfig, "-n", ns, "--history-url", env.Controller.SyncAPIURL,
			"--insecure-skip-tls-verify", "history", "hist"}, args...)...)
	}
	for _, tt := range []struct {
		name, token, want string
	}{
		{name: "invalid token", token: "not-a-token", want: "401"},
		{name: "token without RBAC", token: framework.NobodyToken, want: "403"},
		{name: "token before the role is bound", token: framework.SyncUserToken, want: "403"},
	} {
		if out, err := history(admin, "--token", tt.token); err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s: kubectl convoy history = %v, want %s:\n%s", tt.name, err, tt.want, out)
		}
	}

	// GET /history is authorized by itself: convoy-sync does not grant it.
	bind(t, ns, "hist-sync", "convoy-sync", framework.SyncUser)
	if code, _ := callAPI(t, http.MethodGet, "/history", url.Values{"namespace": {ns}, "name": {"hist"}}, framework.SyncUserToken); code != http.StatusForbidden {
		t.Errorf("GET /history with convoy-sync only: %d, want 403", code)
	}
	bind(t, ns, "hist-history", "convoy-history", framework.SyncUser)
	var out string
	// Authorization answers are cached for seconds: wait for the binding to show.
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		var err error
		out, err = history(admin, "--token", framework.SyncUserToken)
		if err != nil {
			return false, fmt.Sprintf("kubectl convoy history: %v\n%s", err, out)
		}
		return true, ""
	})
	// The plugin has no store (--store and $CONVOY_RENDER_STORE are empty): the endpoint answered.
	for _, want := range []string{"NUMBER", render.ShortRef(ref), "current"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl convoy history lacks %q:\n%s", want, out)
		}
	}

	// The user's own kubeconfig: its token reads the Release (a Role of the test) and the history.
	grantReleaseRead(t, ns, framework.SyncUser)
	user := writeKubeconfig(t, "sync-user", userKubeconfig(t, framework.SyncUserToken))
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		out, err := history(user)
		if err != nil || !strings.Contains(out, render.ShortRef(ref)) {
			return false, fmt.Sprintf("kubectl convoy history as %s: %v\n%s", framework.SyncUser, err, out)
		}
		return true, ""
	})

	// The role is bound in ns only; malformed requests and other methods are refused.
	for _, tt := range []struct {
		name   string
		method string
		query  url.Values
		token  string
		want   int
	}{
		{name: "no token", method: http.MethodGet, query: url.Values{"namespace": {ns}, "name": {"hist"}}, want: http.StatusUnauthorized},
		{name: "other namespace", method: http.MethodGet, query: url.Values{"namespace": {"default"}, "name": {"hist"}}, token: framework.SyncUserToken, want: http.StatusForbidden},
		{name: "no namespace", method: http.MethodGet, query: url.Values{"name": {"hist"}}, token: framework.SyncUserToken, want: http.StatusBadRequest},
		{name: "no name", method: http.MethodGet, query: url.Values{"namespace": {ns}}, token: framework.SyncUserToken, want: http.StatusBadRequest},
		{name: "POST", method: http.MethodPost, query: url.Values{"namespace": {ns}, "name": {"hist"}}, token: framework.SyncUserToken, want: http.StatusMethodNotAllowed},
		{name: "unknown Release", method: http.MethodGet, query: url.Values{"namespace": {ns}, "name": {"nope"}}, token: framework.SyncUserToken, want: http.StatusNotFound},
	} {
		if code, _ := callAPI(t, tt.method, "/history", tt.query, tt.token); code != tt.want {
			t.Errorf("%s: %s /history?%s = %d, want %d", tt.name, tt.method, tt.query.Encode(), code, tt.want)
		}
	}
}

// runPlugin runs bin/kubectl-convoy and returns its combined output.
func runPlugin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := framework.BinPath("kubectl-convoy")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CONVOY_RENDER_STORE=", "CONVOY_HISTORY_URL=")
	out, err := cmd.CombinedOutput()
	t.Logf("kubectl convoy %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// writeKubeconfig writes a kubeconfig into the test's temporary directory.
func writeKubeconfig(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// userKubeconfig is a kubeconfig of the management cluster authenticating with token.
func userKubeconfig(t *testing.T, token string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["mgmt"] = &clientcmdapi.Cluster{Server: env.Mgmt.Config.Host, CertificateAuthorityData: env.Mgmt.Config.CAData}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["mgmt"] = &clientcmdapi.Context{Cluster: "mgmt", AuthInfo: "user"}
	cfg.CurrentContext = "mgmt"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// grantReleaseRead lets user get Releases in ns, as `kubectl convoy history` reads the Release.
func grantReleaseRead(t *testing.T, ns, user string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{convoyv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"releases"}, Verbs: []string{"get"}}},
	}
	if _, err := env.Mgmt.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Role release-reader: %v", err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "release-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := env.Mgmt.Kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding release-reader: %v", err)
	}
}
