package main

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A snapshot round trip keeps contents, modes, owners and symlinks, and leaves the source untouched.
func TestSnapshotRoundTripKeepsWhatADataDirectoryNeeds(t *testing.T) {
	src := filepath.Join(t.TempDir(), "vol")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "ibdata1"), []byte("pages"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "sub", "t.ibd"), []byte("rows"), 0o600))
	must(t, os.Symlink("sub/t.ibd", filepath.Join(src, "link")))
	must(t, os.Lchown(filepath.Join(src, "ibdata1"), 999, 998))
	archive := filepath.Join(t.TempDir(), "snap.tar")
	if _, err := tarDirTo(src, archive); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	must(t, err)
	defer f.Close()
	dst := filepath.Join(t.TempDir(), "restored")
	must(t, untarInto(f, dst))
	for name, want := range map[string]string{"ibdata1": "pages", "sub/t.ibd": "rows", "link": "rows"} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q (%v), want %q", name, got, err, want)
		}
	}
	st, err := os.Stat(filepath.Join(dst, "sub", "t.ibd"))
	must(t, err)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if uid, gid := owner(t, filepath.Join(dst, "ibdata1")); uid != 999 || gid != 998 {
		t.Errorf("owner %d:%d, want 999:998", uid, gid)
	}
}

// An archive entry that points outside the volume is refused, not written.
func TestUntarRefusesEntriesLeavingTheVolume(t *testing.T) {
	for _, name := range []string{"../escape", "/abs", "a/../../escape"} {
		archive := filepath.Join(t.TempDir(), "bad.tar")
		f, err := os.Create(archive)
		must(t, err)
		tw := tar.NewWriter(f)
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, err = tw.Write([]byte("x"))
		must(t, err)
		must(t, tw.Close())
		must(t, f.Close())
		r, err := os.Open(archive)
		must(t, err)
		err = untarInto(r, filepath.Join(t.TempDir(), "vol"))
		r.Close()
		if err == nil || !strings.Contains(err.Error(), "leaves the volume") {
			t.Errorf("%s: got %v, want a refusal", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
