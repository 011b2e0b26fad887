package renderstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tmpPrefix starts the names of files being written; readers and listings skip them.
const tmpPrefix = ".tmp-"

// fileBlobs keeps blobs as files under a root directory. A write goes to a temporary file in the
// target directory, is fsynced, renamed over the target and the directory fsynced, so a crash leaves
// the old or the new content.
type fileBlobs struct{ root string }

// path maps a key to its file, refusing any key that would leave the root.
func (f *fileBlobs) path(key string) (string, error) {
	p := filepath.Join(f.root, filepath.FromSlash(key))
	rel, err := filepath.Rel(f.root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("render store key %q leaves the store directory %s", key, f.root)
	}
	return p, nil
}

func (f *fileBlobs) location() string { return "file://" + f.root }

func (f *fileBlobs) get(_ context.Context, key string) ([]byte, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return data, nil
}

func (f *fileBlobs) exists(_ context.Context, key string) (bool, error) {
	p, err := f.path(key)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file", p)
	}
	return true, nil
}

func (f *fileBlobs) put(_ context.Context, key string, data []byte, _ string) (err error) {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating directory for %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("creating a temporary file for %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if err = tmp.Chmod(0o640); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", key, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", key, err)
	}
	if err = os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("renaming into %s: %w", key, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

func (f *fileBlobs) remove(_ context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	return nil
}

func (f *fileBlobs) list(_ context.Context, prefix string) ([]string, error) {
	base, err := f.path(prefix)
	if err != nil {
		return nil, err
	}
	var keys []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == base {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", prefix, err)
	}
	return keys, nil
}

// cleanup removes what DeleteRelease leaves of a Release prefix: its directories and any temporary
// file of an interrupted write, then the namespace directory when it is empty.
func (f *fileBlobs) cleanup(prefix string) {
	p, err := f.path(prefix)
	if err != nil {
		return
	}
	_ = os.RemoveAll(p)
	_ = os.Remove(filepath.Dir(p))
}
