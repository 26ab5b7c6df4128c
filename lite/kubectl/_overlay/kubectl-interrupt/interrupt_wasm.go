//go:build js || wasip1

// Package interrupt, for WebAssembly: no operating-system signal reaches a program in a browser tab, so a Handler
// runs its notifications once when its critical section returns (or when Signal is called), and never on a signal.
package interrupt

import (
	"os"
	"sync"
)

// Handler runs its notify functions exactly once, after the function given to Run returns.
type Handler struct {
	notify []func()
	final  func(os.Signal)
	once   sync.Once
}

// Chain makes a handler that runs notify and then the parent handler's own notifications.
func Chain(handler *Handler, notify ...func()) *Handler {
	if handler == nil {
		return New(nil, notify...)
	}
	return New(handler.Signal, append(notify, handler.Close)...)
}

// New makes a handler; final (os.Exit(1) when nil) runs after the notifications on Signal.
func New(final func(os.Signal), notify ...func()) *Handler {
	return &Handler{notify: notify, final: final}
}

// Close runs the notifications if they have not run yet.
func (h *Handler) Close() {
	h.once.Do(h.runNotify)
}

// Signal runs the notifications if they have not run yet, then final.
func (h *Handler) Signal(s os.Signal) {
	h.once.Do(func() {
		h.runNotify()
		if h.final == nil {
			os.Exit(1)
		}
		h.final(s)
	})
}

// Run calls fn, then the notifications.
func (h *Handler) Run(fn func() error) error {
	defer h.Close()
	return fn()
}

func (h *Handler) runNotify() {
	for _, fn := range h.notify {
		fn()
	}
}
