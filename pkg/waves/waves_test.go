package waves

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// obj builds an object of kind and name with optional annotations given as key, value pairs.
func obj(apiVersion, kind, name string, annotations ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if len(annotations) > 0 {
		a := map[string]string{}
		for i := 0; i+1 < len(annotations); i += 2 {
			a[annotations[i]] = annotations[i+1]
		}
		u.SetAnnotations(a)
	}
	return u
}

func inWave(kind, name, wave string) *unstructured.Unstructured {
	return obj("v1", kind, name, v1alpha1.SyncWaveAnnotation, wave)
}

// summary renders waves as "wave[!]: Kind/name Kind/name", "!" marking NeedsHealth.
func summary(waves []Wave) []string {
	out := []string{}
	for _, w := range waves {
		names := []string{}
		for _, o := range w.Objects {
			names = append(names, o.GetKind()+"/"+o.GetName())
		}
		mark := ""
		if w.NeedsHealth {
			mark = "!"
		}
		out = append(out, fmt.Sprintf("%d%s: %s", w.Number, mark, strings.Join(names, " ")))
	}
	return out
}

func TestGroup(t *testing.T) {
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{{
		name: "no objects",
		objs: nil,
		want: []string{},
	}, {
		name: "unannotated objects form wave 0",
		objs: []*unstructured.Unstructured{obj("apps/v1", "Deployment", "web"), obj("v1", "ConfigMap", "cfg")},
		want: []string{"0: ConfigMap/cfg Deployment/web"},
	}, {
		name: "waves ascending, negative waves first",
		objs: []*unstructured.Unstructured{
			inWave("ConfigMap", "two", "2"),
			obj("v1", "ConfigMap", "zero"),
			inWave("ConfigMap", "minus-five", "-5"),
			inWave("ConfigMap", "one", " 1 "),
			inWave("ConfigMap", "minus-one", "-1"),
			inWave("ConfigMap", "two-b", "+2"),
		},
		want: []string{"-5: ConfigMap/minus-five", "-1: ConfigMap/minus-one", "0: ConfigMap/zero", "1: ConfigMap/one", "2: ConfigMap/two ConfigMap/two-b"},
	}, {
		name: "Namespaces and CRDs first, then Helm's kind order, unknown kinds last",
		objs: []*unstructured.Unstructured{
			obj("example.com/v1", "Widget", "w"),
			obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "vwc"),
			obj("apps/v1", "Deployment", "web"),
			obj("v1", "Service", "web"),
			obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb"),
			obj("rbac.authorization.k8s.io/v1", "ClusterRole", "cr"),
			obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"),
			obj("v1", "ConfigMap", "cfg"),
			obj("v1", "Secret", "sec"),
			obj("v1", "ServiceAccount", "sa"),
			obj("v1", "Namespace", "shop"),
			obj("batch/v1", "Job", "job"),
			obj("networking.k8s.io/v1", "NetworkPolicy", "np"),
		},
		want: []string{"0: Namespace/shop CustomResourceDefinition/widgets.example.com NetworkPolicy/np ServiceAccount/sa " +
			"Secret/sec ConfigMap/cfg ClusterRole/cr RoleBinding/rb Service/web Deployment/web Job/job " +
			"ValidatingWebhookConfiguration/vwc Widget/w"},
	}, {
		name: "ties keep input order, unknown kinds too",
		objs: []*unstructured.Unstructured{
			obj("example.com/v1", "Widget", "w1"),
			obj("v1", "ConfigMap", "c"),
			obj("example.com/v1", "Gadget", "g1"),
			obj("v1", "ConfigMap", "a"),
			obj("example.com/v1", "Widget", "w0"),
			obj("v1", "ConfigMap", "b"),
		},
		want: []string{"0: ConfigMap/c ConfigMap/a ConfigMap/b Widget/w1 Gadget/g1 Widget/w0"},
	}, {
		name: "kind order applies inside each wave",
		objs: []*unstructured.Unstructured{
			inWave("Deployment", "web", "1"),
			inWave("Namespace", "late", "1"),
			inWave("Deployment", "db", "-1"),
			inWave("Secret", "db", "-1"),
		},
		want: []string{"-1: Secret/db Deployment/db", "1: Namespace/late Deployment/web"},
	}, {
		name: "NeedsHealth when an object of the wave requires it",
		objs: []*unstructured.Unstructured{
			inWave("ConfigMap", "a", "0"),
			obj("v1", "ConfigMap", "b", v1alpha1.SyncWaveAnnotation, "1", v1alpha1.WaveHealthAnnotation, "required"),
			inWave("ConfigMap", "c", "1"),
			obj("v1", "ConfigMap", "d", v1alpha1.SyncWaveAnnotation, "2", v1alpha1.WaveHealthAnnotation, "Required"),
			obj("v1", "ConfigMap", "e", v1alpha1.SyncWaveAnnotation, "3", v1alpha1.WaveHealthAnnotation, "none"),
		},
		want: []string{"0: ConfigMap/a", "1!: ConfigMap/b ConfigMap/c", "2!: ConfigMap/d", "3: ConfigMap/e"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waves, err := Group(tt.objs)
			if err != nil {
				t.Fatalf("Group: %v", err)
			}
			if got := summary(waves); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("waves:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestGroupDoesNotReorderInput(t *testing.T) {
	in := []*unstructured.Unstructured{obj("apps/v1", "Deployment", "web"), obj("v1", "Namespace", "shop")}
	orig := append([]*unstructured.Unstructured(nil), in...)
	if _, err := Group(in); err != nil {
		t.Fatalf("Group: %v", err)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Error("Group reordered its input slice")
	}
}

func TestOfAndBadAnnotation(t *testing.T) {
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		want    int32
		wantErr string
	}{
		{"unannotated", obj("v1", "ConfigMap", "a"), 0, ""},
		{"other annotations only", obj("v1", "ConfigMap", "a", "x", "y"), 0, ""},
		{"positive", inWave("ConfigMap", "a", "3"), 3, ""},
		{"negative", inWave("ConfigMap", "a", "-2"), -2, ""},
		{"int32 max", inWave("ConfigMap", "a", "2147483647"), 2147483647, ""},
		{"int32 min", inWave("ConfigMap", "a", "-2147483648"), -2147483648, ""},
		{"not a number", inWave("ConfigMap", "a", "early"), 0, `ConfigMap a: annotation convoy.kumodo.io/sync-wave: value "early" is not an int32 integer`},
		{"empty", inWave("ConfigMap", "a", ""), 0, `value "" is not`},
		{"fraction", inWave("ConfigMap", "a", "1.5"), 0, `value "1.5" is not`},
		{"out of int32 range", inWave("ConfigMap", "a", "2147483648"), 0, `value "2147483648" is not`},
		{"names group and namespace", func() *unstructured.Unstructured {
			u := obj("apps/v1", "Deployment", "web", v1alpha1.SyncWaveAnnotation, "x")
			u.SetNamespace("shop")
			return u
		}(), 0, `Deployment.apps shop/web: annotation`},
		{"nil object", nil, 0, "nil object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Of(tt.obj)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("Of = %d, %v; want %d, nil", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Of error = %v, want one containing %q", err, tt.wantErr)
			}
			// Group reports the same error.
			if tt.obj != nil {
				if _, gerr := Group([]*unstructured.Unstructured{obj("v1", "ConfigMap", "ok"), tt.obj}); gerr == nil || gerr.Error() != err.Error() {
					t.Errorf("Group error = %v, want %v", gerr, err)
				}
			}
		})
	}
}

func TestInstallOrderHasNoDuplicates(t *testing.T) {
	if len(kindRanks) != len(installOrder) {
		t.Errorf("installOrder lists %d kinds but only %d are distinct", len(installOrder), len(kindRanks))
	}
}

func TestStage(t *testing.T) {
	tests := []struct {
		kind string
		want int
	}{
		{"Namespace", StageDefinitions},
		{"CustomResourceDefinition", StageDefinitions},
		{"NetworkPolicy", StageFoundation},
		{"ServiceAccount", StageFoundation},
		{"ConfigMap", StageFoundation},
		{"RoleBindingList", StageFoundation},
		{"Service", StageWorkloads},
		{"Deployment", StageWorkloads},
		{"ValidatingWebhookConfiguration", StageWorkloads},
		{"Widget", StageWorkloads},
	}
	for _, tt := range tests {
		if got := Stage(tt.kind); got != tt.want {
			t.Errorf("Stage(%s) = %d, want %d", tt.kind, got, tt.want)
		}
	}
}
