package main

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal reports whether f is a terminal: TCGETS succeeds only on a tty. Checking the
// file mode alone would also count /dev/null, which CI uses as stdin. (A raw ioctl keeps
// golang.org/x/term out of the module's direct requirements for one call.)
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
