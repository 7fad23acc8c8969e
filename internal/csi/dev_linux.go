package csi

import (
	"os"
	"syscall"
)

func devOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev) //nolint:unconvert // int32 on some platforms
	}
	return 0
}
