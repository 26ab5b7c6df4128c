//go:build js || wasip1

// Package term, for WebAssembly: a program in a browser tab or a WASI host has no terminal device, so no file is a
// terminal and every terminal operation answers with errNoTerminal. Built in place of the module's Unix file.
package term

import (
	"errors"
	"io"
	"os"
)

var errNoTerminal = errors.New("no terminal on WebAssembly")

type terminalState struct{}

func stdStreams() (stdIn io.ReadCloser, stdOut, stdErr io.Writer) {
	return os.Stdin, os.Stdout, os.Stderr
}

func getFdInfo(in interface{}) (uintptr, bool) {
	if file, ok := in.(*os.File); ok {
		return file.Fd(), false
	}
	return 0, false
}

func getWinsize(uintptr) (*Winsize, error)         { return &Winsize{}, errNoTerminal }
func setWinsize(uintptr, *Winsize) error           { return errNoTerminal }
func isTerminal(uintptr) bool                      { return false }
func restoreTerminal(uintptr, *State) error        { return errNoTerminal }
func saveState(uintptr) (*State, error)            { return nil, errNoTerminal }
func disableEcho(uintptr, *State) error            { return errNoTerminal }
func setRawTerminal(uintptr) (*State, error)       { return nil, errNoTerminal }
func setRawTerminalOutput(uintptr) (*State, error) { return nil, nil }
func makeRaw(uintptr) (*State, error)              { return nil, errNoTerminal }
