package coordinator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// chartCacheDir is where the chart archive with the given SHA-256 is unpacked.
func (c *Coordinator) chartCacheDir(digest string) string {
	return filepath.Join(c.opts.CacheDir, "charts", "sha256-"+digest)
}

// cachedChart returns the chart directory unpacked for digest, if there is one.
func (c *Coordinator) cachedChart(digest string) (string, bool) {
	if digest == "" {
		return "", false
	}
	dir, err := chartRoot(c.chartCacheDir(digest))
	return dir, err == nil
}

// unpackChart unpacks a chart archive (gzipped tar) with SHA-256 digest into the cache and returns
// the chart's directory. Links, absolute paths and ".." are refused, and so is an archive whose
// files add up to more than MaxUnpackedBytes.
func (c *Coordinator) unpackChart(data []byte, digest string) (string, error) {
	final := c.chartCacheDir(digest)
	if dir, ok := c.cachedChart(digest); ok {
		return dir, nil
	}
	return publish(final, func(tmp string) error { return untar(data, tmp, c.opts.MaxUnpackedBytes) }, chartRoot)
}

// publish fills a temporary directory next to final, then renames it into place, so a reader never
// sees a half-written tree. A concurrent publisher of the same content wins harmlessly.
func publish(final string, fill func(dir string) error, root func(string) (string, error)) (string, error) {
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return "", fmt.Errorf("creating cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".tmp-")
	if err != nil {
		return "", fmt.Errorf("creating cache dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := fill(tmp); err != nil {
		return "", err
	}
	if _, err := root(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr != nil {
			return "", fmt.Errorf("publishing to the cache: %w", err)
		}
	}
	return root(final)
}

// chartRoot returns the single top-level directory of an unpacked chart, which holds Chart.yaml.
func chartRoot(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading unpacked chart: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 1 {
		return "", fmt.Errorf("%w: a chart archive must hold exactly one top-level directory, found %d", ErrRefused, len(dirs))
	}
	root := filepath.Join(dir, dirs[0])
	if _, err := os.Stat(filepath.Join(root, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("%w: the chart archive has no %s/Chart.yaml", ErrRefused, dirs[0])
	}
	return root, nil
}

// untar unpacks a gzipped tar stream into dir, refusing links, device files, absolute paths and
// ".." components, and stopping once the files add up to more than max bytes.
func untar(data []byte, dir string, max int64) error {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: the chart is not a gzipped archive: %v", ErrRefused, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: reading chart archive: %v", ErrRefused, err)
		}
		name, err := safeRelPath(hdr.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return fmt.Errorf("unpacking %s: %w", name, err)
			}
		case tar.TypeReg:
			if total+hdr.Size > max {
				return fmt.Errorf("%w: the unpacked chart is over the limit of %d bytes", ErrRefused, max)
			}
			if err := writeFile(target, io.LimitReader(tr, hdr.Size)); err != nil {
				return fmt.Errorf("unpacking %s: %w", name, err)
			}
			total += hdr.Size
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%w: the chart archive holds a link %s -> %s", ErrRefused, name, hdr.Linkname)
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
		default:
			return fmt.Errorf("%w: the chart archive holds %s, which is not a file or a directory", ErrRefused, name)
		}
	}
}

// safeRelPath cleans an archive or tree path and refuses one that is absolute or climbs with "..".
func safeRelPath(name string) (string, error) {
	name = strings.ReplaceAll(name, "\\", "/")
	if path.IsAbs(name) || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: path %q is absolute", ErrRefused, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: path %q leaves the tree", ErrRefused, name)
		}
	}
	return path.Clean(name), nil
}

func writeFile(target string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
