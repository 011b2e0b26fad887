package render

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizationFile is the name kustomize reports errors of a build against.
const kustomizationFile = "kustomization.yaml"

// renderKustomize builds the kustomization in dir with krusty. The fetched tree under root is
// copied into an in-memory file system first, so no load (a base, a patch, a generator file) can
// reach outside it; remote bases and remote files are refused before the build, and plugins are
// limited to kustomize's builtins (no exec, no Helm inflation).
func renderKustomize(ctx context.Context, root, dir string, caps Capabilities, opts Options) ([]*unstructured.Unstructured, error) {
	if root == "" {
		root = dir
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &Error{Err: fmt.Errorf("kustomization %s is outside the fetched tree", dir)}
	}
	mem, kustomizations, err := loadTree(root)
	if err != nil {
		return nil, err
	}
	for _, k := range kustomizations {
		if err := checkLocalOnly(mem, k); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("render kustomize: %w", err)
	}
	kopts := krusty.MakeDefaultOptions()
	kopts.PluginConfig = types.DisabledPluginConfig()
	kopts.LoadRestrictions = types.LoadRestrictionsRootOnly
	resources, err := krusty.MakeKustomizer(kopts).Run(mem, path.Join("/", filepath.ToSlash(rel)))
	if err != nil {
		return nil, &Error{File: path.Join(filepath.ToSlash(rel), kustomizationFile), Err: fmt.Errorf("kustomize build: %w", err)}
	}
	b := newBuilder(caps, opts)
	name := path.Join(filepath.ToSlash(rel), kustomizationFile)
	for i, res := range resources.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, &Error{File: name, Doc: i + 1, Err: fmt.Errorf("encoding kustomize output: %w", err)}
		}
		if err := b.addDocument(name, i+1, 0, data); err != nil {
			return nil, err
		}
	}
	return b.objs, nil
}

// loadTree copies the regular files under root into an in-memory file system rooted at "/" and
// returns the paths of its kustomization files. Symbolic links are refused: the coordinator never
// writes them, so one here is out of place.
func loadTree(root string) (filesys.FileSystem, []string, error) {
	mem := filesys.MakeFsInMemory()
	var kustomizations []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		target := path.Join("/", filepath.ToSlash(rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", rel)
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return mem.MkdirAll(target)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if isKustomization(d.Name()) {
			kustomizations = append(kustomizations, target)
		}
		return mem.WriteFile(target, data)
	})
	if err != nil {
		return nil, nil, &Error{Err: fmt.Errorf("reading the fetched tree: %w", err)}
	}
	return mem, kustomizations, nil
}

func isKustomization(name string) bool {
	return name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization"
}

// pathKeys are the kustomization fields whose entries name files or directories to load.
var pathKeys = []string{"resources", "bases", "components", "crds", "configurations", "generators",
	"transformers", "validators", "patchesStrategicMerge"}

// checkLocalOnly fails when the kustomization at file names a remote base or file (a git URL, an
// http URL): kustomize would clone or download it, and a render only reads the fetched source.
func checkLocalOnly(mem filesys.FileSystem, file string) error {
	data, err := mem.ReadFile(file)
	if err != nil {
		return &Error{File: strings.TrimPrefix(file, "/"), Err: err}
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return &Error{File: strings.TrimPrefix(file, "/"), Err: fmt.Errorf("invalid kustomization: %w", err)}
	}
	var refs []string
	for _, key := range pathKeys {
		refs = append(refs, stringsOf(k[key])...)
	}
	for _, key := range []string{"patches", "patchesJson6902", "replacements"} {
		for _, item := range list(k[key]) {
			if m, ok := item.(map[string]any); ok {
				refs = append(refs, stringsOf(m["path"])...)
			}
		}
	}
	if m, ok := k["openapi"].(map[string]any); ok {
		refs = append(refs, stringsOf(m["path"])...)
	}
	for _, key := range []string{"configMapGenerator", "secretGenerator"} {
		for _, item := range list(k[key]) {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, f := range append(stringsOf(m["files"]), append(stringsOf(m["envs"]), stringsOf(m["env"])...)...) {
				// A files entry may be "key=path".
				if _, p, ok := cutEquals(f); ok {
					f = p
				}
				refs = append(refs, f)
			}
		}
	}
	if _, ok := k["helmCharts"]; ok {
		return &Error{File: strings.TrimPrefix(file, "/"), Err: fmt.Errorf("helmCharts are not supported: use contentType helm")}
	}
	for _, ref := range refs {
		if isRemoteRef(ref) {
			return &Error{File: strings.TrimPrefix(file, "/"), Err: fmt.Errorf("remote reference %q is not allowed: kustomize content loads only files of the fetched source", ref)}
		}
	}
	return nil
}

// isRemoteRef reports whether a kustomization entry would make kustomize clone or download.
func isRemoteRef(ref string) bool {
	if strings.Contains(ref, "\n") {
		// An inline patch, not a path.
		return false
	}
	ref = strings.TrimSpace(ref)
	for _, prefix := range []string{"git@", "gh:", "git::", "github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(ref, prefix) {
			return true
		}
	}
	return strings.Contains(ref, "://") || strings.Contains(ref, "?ref=") || strings.Contains(ref, "_git/") ||
		strings.Contains(ref, ".git//") || strings.HasSuffix(ref, ".git")
}

func cutEquals(s string) (string, string, bool) {
	i := strings.Index(s, "=")
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// stringsOf returns v as a list of strings: a string alone, or the strings of a list.
func stringsOf(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, item := range t {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
