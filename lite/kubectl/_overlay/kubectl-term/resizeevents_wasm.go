//go:build js || wasip1

package term

// monitorResizeEvents sends nothing on WebAssembly: there is no terminal whose size could change.
func monitorResizeEvents(uintptr, chan<- TerminalSize, chan struct{}) {}
