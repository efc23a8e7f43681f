package main

import (
	"os"
	"syscall"
	"testing"
)

func owner(t *testing.T, path string) (int, int) {
	t.Helper()
	st, err := os.Lstat(path)
	must(t, err)
	s := st.Sys().(*syscall.Stat_t)
	return int(s.Uid), int(s.Gid)
}
