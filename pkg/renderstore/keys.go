package renderstore

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names of the keys under a Release prefix.
const (
	rendersDir  = "renders/"
	historyFile = "history.jsonl"
	blobSuffix  = ".json.gz"
	refPrefix   = "sha256:"
)

var hexRE = regexp.MustCompile(`^[a-f0-9]{64}$`)

// releasePrefix returns "<namespace>/<name>/" after validating both names, so no key built on it
// can leave the Release's prefix.
func releasePrefix(rel types.NamespacedName) (string, error) {
	if errs := validation.IsDNS1123Label(rel.Namespace); len(errs) > 0 {
		return "", fmt.Errorf("render store key: invalid namespace %q: %s", rel.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(rel.Name); len(errs) > 0 {
		return "", fmt.Errorf("render store key: invalid release name %q: %s", rel.Name, strings.Join(errs, "; "))
	}
	prefix := rel.Namespace + "/" + rel.Name + "/"
	if err := checkContained(prefix, prefix); err != nil {
		return "", err
	}
	return prefix, nil
}

// refHex returns the hex digits of a "sha256:<64 hex>" render reference.
func refHex(ref string) (string, error) {
	hex, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || !hexRE.MatchString(hex) {
		return "", fmt.Errorf("render store key: invalid render reference %q (want sha256:<64 lowercase hex digits>)", ref)
	}
	return hex, nil
}

// renderKey returns "<namespace>/<name>/renders/<hex>.json.gz".
func renderKey(rel types.NamespacedName, ref string) (string, error) {
	prefix, err := releasePrefix(rel)
	if err != nil {
		return "", err
	}
	hex, err := refHex(ref)
	if err != nil {
		return "", err
	}
	key := prefix + rendersDir + hex + blobSuffix
	return key, checkContained(prefix, key)
}

// historyKey returns "<namespace>/<name>/history.jsonl".
func historyKey(rel types.NamespacedName) (string, error) {
	prefix, err := releasePrefix(rel)
	if err != nil {
		return "", err
	}
	key := prefix + historyFile
	return key, checkContained(prefix, key)
}

// refFromKey turns "<hex>.json.gz" back into a render reference.
func refFromKey(name string) (string, bool) {
	hex, ok := strings.CutSuffix(name, blobSuffix)
	if !ok || !hexRE.MatchString(hex) {
		return "", false
	}
	return refPrefix + hex, true
}

// checkContained fails when key, once cleaned, is not under prefix: the last guard against a key
// escaping its Release prefix (or the store root).
func checkContained(prefix, key string) error {
	clean := path.Clean(key)
	if strings.HasSuffix(key, "/") {
		clean += "/"
	}
	if clean != key || path.IsAbs(key) || strings.HasPrefix(clean, "../") || clean == ".." ||
		!strings.HasPrefix(clean, prefix) || strings.Contains(key, "\\") {
		return fmt.Errorf("render store key %q leaves its prefix %q", key, prefix)
	}
	return nil
}

// sortedUnique sorts refs and drops duplicates.
func sortedUnique(refs []string) []string {
	sort.Strings(refs)
	out := refs[:0]
	for i, r := range refs {
		if i == 0 || r != refs[i-1] {
			out = append(out, r)
		}
	}
	return out
}
