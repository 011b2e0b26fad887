package desired

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// plantedSecret is a value of a valuesFrom Secret that must never show in an error.
const plantedSecret = "s3cr3t-PLANTED-4711"

// leakyCharts print their values into errors and objects.
var leakyCharts = map[string]map[string]string{
	"leaky": {
		"Chart.yaml":  "apiVersion: v2\nname: leaky\nversion: 0.1.0\n",
		"values.yaml": "db: {password: none}\nbreak: false\n",
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ .Values.db.password | quote }}\n" +
			"{{- if .Values.break }}\n{{ fail (printf \"cannot connect with password %s\" .Values.db.password) }}\n{{- end }}\n",
	},
}

// tenantEnv is testEnv with the leaky chart and a Secret holding plantedSecret in namespace shop.
func tenantEnv(t *testing.T) (*Renderer, string) {
	t.Helper()
	base, _, _ := testEnv(t)
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
			Data: map[string][]byte{"values.yaml": []byte("db:\n  password: " + plantedSecret + "\n  port: 5432\n")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cert"},
			Data: map[string][]byte{"values.yaml": []byte("db:\n  password: |\n    line-one-" + plantedSecret + "\n    line-two\n")}},
	} {
		if err := secrets.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	r := &Renderer{Coordinator: base.Coordinator, Clients: base.Clients, Clusters: base.Clusters,
		ConfigMaps: base.ConfigMaps, Secrets: corev1listers.NewSecretLister(secrets)}
	return r, chartRepo(t, leakyCharts)
}

// TestRenderRedactsSecretValues: a template error that prints a value of a valuesFrom Secret
// shows [redacted] instead, keeping its reason; the rendered Secret object still gets the value.
func TestRenderRedactsSecretValues(t *testing.T) {
	r, repoURL := tenantEnv(t)
	layer := func(name string, breakIt bool) func(*v1alpha1.Release) {
		return func(rel *v1alpha1.Release) {
			rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: name}}
			if breakIt {
				rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"break": true}`)}
			}
		}
	}
	res, err := r.Render(context.Background(), helmRelease(repoURL, "leaky", layer("db", false)))
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if got := res.Objects[0].Object["stringData"].(map[string]any)["password"]; got != plantedSecret {
		t.Errorf("rendered password %q, want the Secret's value", got)
	}
	for _, name := range []string{"db", "cert"} {
		_, err = r.Render(context.Background(), helmRelease(repoURL, "leaky", layer(name, true)))
		var derr *Error
		if !errors.As(err, &derr) || derr.Reason != v1alpha1.ReasonRenderFailed {
			t.Fatalf("%s: error %#v, want RenderFailed", name, err)
		}
		if strings.Contains(err.Error(), plantedSecret) || strings.Contains(err.Error(), "line-two") {
			t.Errorf("%s: the error shows the secret: %s", name, err)
		}
		if !strings.Contains(err.Error(), "cannot connect with password "+redacted) || !strings.Contains(err.Error(), "leaky/templates/secret.yaml") {
			t.Errorf("%s: error %q, want the template's message with %s and its file", name, err, redacted)
		}
	}
	// An error without a secret value keeps its chain.
	_, err = r.Render(context.Background(), helmRelease(repoURL, "leaky", func(rel *v1alpha1.Release) {
		rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "db"}, {Kind: "Secret", Name: "gone"}}
	}))
	if err == nil || !strings.Contains(err.Error(), "Secret shop/gone key values.yaml not found") {
		t.Errorf("missing layer: %v", err)
	}
}

func TestRedactStrings(t *testing.T) {
	secrets := []string{"hunter2-long", "hunter2", "-----BEGIN KEY-----\nabcdefgh\n-----END KEY-----"}
	got := redactStrings("a hunter2-long b hunter2 c abcdefgh d", secrets)
	if want := "a [redacted] b [redacted] c [redacted] d"; got != want {
		t.Errorf("redactStrings = %q, want %q", got, want)
	}
	if out := collectStrings(nil, map[string]any{"a": "abc", "b": []any{"abcd", 12345, map[string]any{"c": "efgh"}}}); len(out) != 2 {
		t.Errorf("collectStrings = %q, want the two strings of 4 characters or more", out)
	}
}

// TestClusterImpersonation: spec.serviceAccountName makes the target client impersonate that
// service account of the targetNamespace; a name that is not a DNS subdomain is refused.
func TestClusterImpersonation(t *testing.T) {
	r, repoURL, _ := testEnv(t)
	tests := []struct {
		sa, wantUser, wantErr string
	}{
		{sa: ""},
		{sa: "deployer", wantUser: "system:serviceaccount:shop-apps:deployer"},
		{sa: "kube-system:admin", wantErr: `spec.serviceAccountName "kube-system:admin"`},
	}
	for _, tt := range tests {
		t.Run(tt.sa, func(t *testing.T) {
			rel := helmRelease(repoURL, "web", func(rel *v1alpha1.Release) { rel.Spec.ServiceAccountName = tt.sa })
			_, client, err := r.Cluster(rel)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Cluster = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := client.Config.Impersonate.UserName; got != tt.wantUser {
				t.Errorf("impersonated user %q, want %q", got, tt.wantUser)
			}
			res, err := r.Render(context.Background(), rel)
			if err != nil {
				t.Fatal(err)
			}
			if res.Client != client {
				t.Error("Render returned another client than Cluster")
			}
		})
	}
}
