//go:build js || wasip1

package syscall

// Exec fails with ENOSYS on WebAssembly, as StartProcess does: there is no process image to replace.
func Exec(argv0 string, argv []string, envv []string) error {
	return ENOSYS
}
