package main

// Snapshots as tar archives that keep what a database's data directory needs: modes, owners, times.

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tarDirTo archives dir into dest (written to dest.tmp, then renamed) and returns the archive's size.
func tarDirTo(dir, dest string) (int64, error) {
	f, err := os.Create(dest + ".tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(dest + ".tmp")
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return addEntry(tw, dir, path)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(dest + ".tmp")
	if err != nil {
		return 0, err
	}
	return st.Size(), os.Rename(dest+".tmp", dest)
}

func addEntry(tw *tar.Writer, root, path string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(path); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link) // fills Uid/Gid from the stat
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(root, path)
	hdr.Name, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), "", ""
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}

// untarInto creates dir with the archive's content (its "." entry gives dir's own mode and owner).
func untarInto(r io.Reader, dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		name := filepath.Clean(hdr.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the volume", hdr.Name)
		}
		if err := extractEntry(tr, hdr, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
}

func extractEntry(tr *tar.Reader, hdr *tar.Header, path string) error {
	mode := fs.FileMode(hdr.Mode).Perm() | fs.FileMode(hdr.Mode)&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(path, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		return os.Symlink(hdr.Linkname, path) // a link keeps the owner of who made it
	default:
		return nil // devices, fifos: not in a volume's data
	}
	if err := os.Lchown(path, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	if err := os.Chmod(path, mode); err != nil {
		return err
	}
	return os.Chtimes(path, hdr.ModTime, hdr.ModTime)
}
