//go:build js || wasip1

package util

import "errors"

// Umask fails on WebAssembly: neither a browser tab nor WASI has a process file-mode mask.
func Umask(int) (int, error) {
	return 0, errors.New("no umask on WebAssembly")
}
