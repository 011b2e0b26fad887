package render

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
)

// renderHelm loads the chart unpacked in dir, renders it with values over the chart defaults and
// returns the normalised objects of its crds/ and templates, hooks mapped to convoy's phases.
func renderHelm(ctx context.Context, dir string, values map[string]any, caps Capabilities, opts Options) ([]*unstructured.Unstructured, error) {
	// The chart is loaded afresh for every render: ProcessDependencies drops disabled subcharts
	// from the loaded chart in place.
	chrt, err := loader.LoadDir(dir)
	if err != nil {
		return nil, &Error{File: "Chart.yaml", Err: fmt.Errorf("loading chart: %w", err)}
	}
	files, err := helmTemplates(ctx, chrt, values, caps, opts)
	if err != nil {
		return nil, err
	}
	objs, err := renderManifests(ctx, files, caps, opts)
	if err != nil {
		return nil, err
	}
	return mapHelmHooks(objs)
}

// helmTemplates renders the chart's templates and returns them, with its CRD files, by path
// ("chart/templates/x.yaml", "chart/crds/y.yaml"). NOTES.txt and partials are left out.
func helmTemplates(ctx context.Context, chrt *chart.Chart, values map[string]any, caps Capabilities, opts Options) (map[string]string, error) {
	if err := checkDependencies(chrt); err != nil {
		return nil, &Error{File: path.Join(chrt.Name(), "Chart.yaml"), Err: err}
	}
	hcaps, err := helmCapabilities(caps)
	if err != nil {
		return nil, err
	}
	if kv := chrt.Metadata.KubeVersion; kv != "" {
		if !chartutil.IsCompatibleRange(kv, hcaps.KubeVersion.String()) {
			return nil, &Error{File: path.Join(chrt.Name(), "Chart.yaml"), Err: fmt.Errorf(
				"chart requires kubeVersion %s, which the target cluster (%s) does not satisfy", kv, hcaps.KubeVersion.String())}
		}
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
		return nil, &Error{File: path.Join(chrt.Name(), "Chart.yaml"), Err: fmt.Errorf("processing dependencies: %w", err)}
	}
	relOpts := chartutil.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	// Helm's own schema validation is skipped: its loader reads files and URLs a chart names
	// (helm_schema.go); validateValues applies the same rules without loading anything.
	renderValues, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, values, relOpts, hcaps, true)
	if err != nil {
		return nil, &Error{File: path.Join(chrt.Name(), "values.yaml"), Err: fmt.Errorf("values: %w", err)}
	}
	vals, _ := renderValues["Values"].(chartutil.Values)
	if err := validateValues(chrt, vals); err != nil {
		return nil, &Error{File: path.Join(chrt.Name(), "values.schema.json"), Err: fmt.Errorf("values: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("render helm chart: %w", err)
	}
	// An Engine without a client provider answers `lookup` with an empty result: a render never
	// reads the target cluster, so the same inputs always give the same objects.
	rendered, err := engine.Engine{}.Render(chrt, renderValues)
	if err != nil {
		return nil, templateError(err)
	}
	files := make(map[string]string, len(rendered))
	for name, content := range rendered {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || strings.TrimSpace(content) == "" {
			continue
		}
		files[name] = content
	}
	for _, crd := range chrt.CRDObjects() {
		files[crd.Filename] = string(crd.File.Data)
	}
	return files, nil
}

// checkDependencies fails when a dependency listed in Chart.yaml is not packaged in charts/: this
// build never downloads dependencies.
func checkDependencies(chrt *chart.Chart) error {
	have := map[string]bool{}
	for _, dep := range chrt.Dependencies() {
		have[dep.Name()] = true
	}
	var missing []string
	for _, dep := range chrt.Metadata.Dependencies {
		if !have[dep.Name] {
			missing = append(missing, dep.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("dependencies %s are listed in Chart.yaml but not packaged in charts/", strings.Join(missing, ", "))
	}
	for _, dep := range chrt.Dependencies() {
		if err := checkDependencies(dep); err != nil {
			return fmt.Errorf("subchart %s: %w", dep.Name(), err)
		}
	}
	return nil
}

// helmCapabilities turns the target's discovery into Helm's .Capabilities; with no kube version
// known, Helm's defaults apply.
func helmCapabilities(caps Capabilities) (*chartutil.Capabilities, error) {
	hcaps := chartutil.DefaultCapabilities.Copy()
	if caps.KubeVersion != "" {
		v, err := version.ParseGeneric(caps.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("target cluster version %q: %w", caps.KubeVersion, err)
		}
		hcaps.KubeVersion = chartutil.KubeVersion{
			Version: caps.KubeVersion,
			Major:   strconv.FormatUint(uint64(v.Major()), 10),
			Minor:   strconv.FormatUint(uint64(v.Minor()), 10),
		}
	}
	if len(caps.APIVersions) > 0 {
		hcaps.APIVersions = chartutil.VersionSet(caps.APIVersions)
	}
	return hcaps, nil
}

// templateLocation matches the "chart/templates/x.yaml:12:3" location in Helm's error messages.
var templateLocation = regexp.MustCompile(`\(?([^\s():]+\.(?:yaml|yml|tpl|txt|json)):(\d+)(?::\d+)?\)?`)

// templateError turns a Helm engine error into an *Error with the template file and line.
func templateError(err error) error {
	e := &Error{Err: err}
	// Helm's messages start with "template:" already; others (a parse error of a values
	// function) are marked as template errors here.
	if !strings.HasPrefix(err.Error(), "template:") {
		e.Err = fmt.Errorf("template: %w", err)
	}
	if m := templateLocation.FindStringSubmatch(err.Error()); m != nil {
		e.File = m[1]
		e.Line, _ = strconv.Atoi(m[2])
	}
	return e
}
