package hooks

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

func object(kind, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func hook(kind, name, phase string, extra ...string) *unstructured.Unstructured {
	ann := map[string]string{v1alpha1.HookAnnotation: phase}
	for i := 0; i+1 < len(extra); i += 2 {
		ann[extra[i]] = extra[i+1]
	}
	return object(kind, name, ann)
}

func TestSplit(t *testing.T) {
	objs := []*unstructured.Unstructured{
		object("ConfigMap", "a", nil), hook("Job", "migrate", PreSync), object("Service", "b", map[string]string{"x": "y"}),
		hook("Pod", "smoke", PostSync),
	}
	applied, hookObjs := Split(objs)
	if len(applied) != 2 || applied[0].GetName() != "a" || applied[1].GetName() != "b" {
		t.Fatalf("applied = %v", names(applied))
	}
	if len(hookObjs) != 2 || hookObjs[0].GetName() != "migrate" || hookObjs[1].GetName() != "smoke" {
		t.Fatalf("hooks = %v", names(hookObjs))
	}
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		wantErr string
	}{
		{"plain object", object("ConfigMap", "a", nil), ""},
		{"every phase", hook("Job", "j", PostDelete), ""},
		{"all annotations", hook("Job", "j", PreSync, v1alpha1.HookOnFailureAnnotation, OnFailureContinue,
			render.HookDeletePolicyAnnotation, "HookSucceeded, BeforeHookCreation", render.HookWeightAnnotation, " -5 "), ""},
		{"unknown phase", hook("Job", "j", "preInstall"), `unknown hook phase "preInstall"`},
		{"empty phase", hook("Job", "j", ""), `unknown hook phase ""`},
		{"bad on-failure", hook("Job", "j", PreSync, v1alpha1.HookOnFailureAnnotation, "fail"), `"fail" is neither Fail nor Continue`},
		{"bad delete policy", hook("Job", "j", PreSync, render.HookDeletePolicyAnnotation, "Always"), `unknown delete policy "Always"`},
		{"bad weight", hook("Job", "j", PreSync, render.HookWeightAnnotation, "1.5"), `"1.5" is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate([]*unstructured.Unstructured{tt.obj})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "Job j") {
				t.Fatalf("error %v, want one naming Job j and containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestForPhase(t *testing.T) {
	objs := []*unstructured.Unstructured{
		hook("Job", "b-late", PreSync, render.HookWeightAnnotation, "5"),
		hook("Job", "a", PreSync),
		hook("ConfigMap", "z-early", PreSync, render.HookWeightAnnotation, "-1", render.HookDeletePolicyAnnotation, "HookSucceeded",
			v1alpha1.HookOnFailureAnnotation, OnFailureContinue),
		hook("Job", "post", PostSync),
		object("ConfigMap", "plain", nil),
	}
	hs, err := ForPhase(objs, PreSync, "sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hs {
		got = append(got, h.Name)
		if h.Object.GetName() != RunName(h.Name, "sha256:abc") {
			t.Errorf("%s runs as %s, want %s", h.Name, h.Object.GetName(), RunName(h.Name, "sha256:abc"))
		}
	}
	if strings.Join(got, ",") != "z-early,a,b-late" {
		t.Fatalf("order = %v, want weight order z-early,a,b-late", got)
	}
	if objs[1].GetName() != "a" {
		t.Fatal("ForPhase renamed the rendered object instead of a copy")
	}
	early := hs[0]
	if early.OnFailure != OnFailureContinue || !early.HasPolicy(HookSucceeded) || early.HasPolicy(BeforeHookCreation) || early.Weight != -1 {
		t.Fatalf("z-early parsed as %+v", early)
	}
	if !hs[1].HasPolicy(BeforeHookCreation) || hs[1].OnFailure != OnFailureFail {
		t.Fatalf("defaults: %+v, want BeforeHookCreation and Fail", hs[1])
	}
	if hs, _ := ForPhase(objs, SyncFailed, "x"); len(hs) != 0 {
		t.Fatalf("syncFailed hooks = %d, want 0", len(hs))
	}
}

func TestRunName(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	long := strings.Repeat("m", 70)
	tests := []struct {
		name, hook, runA, runB string
		same                   bool
	}{
		{"same run, same name", "migrate", "sha256:a", "sha256:a", true},
		{"another render", "migrate", "sha256:a", "sha256:b", false},
		{"a forced sync runs again", "migrate", RunID("sha256:a", nil), RunID("sha256:a", &at), false},
		{"long names stay DNS labels", long, "sha256:a", "sha256:b", false},
		{"a name cut at a dash", strings.Repeat("a", 54) + "-b", "sha256:a", "sha256:a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := RunName(tt.hook, tt.runA), RunName(tt.hook, tt.runB)
			if (a == b) != tt.same {
				t.Fatalf("RunName %q vs %q: same = %v, want %v", a, b, a == b, tt.same)
			}
			for _, n := range []string{a, b} {
				if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
					t.Fatalf("%q is not a DNS label: %v", n, errs)
				}
			}
		})
	}
}
