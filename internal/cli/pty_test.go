package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openTTY returns both ends of a new pseudo-terminal: the terminal end is stdin as an operator
// types into it, the other end types.
func openTTY(t *testing.T) (tty, keys *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal end: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// What reads stdin refuses a terminal at once, instead of waiting for input (and echoing a typed
// password on the screen).
func TestStdinReadersRefuseATerminal(t *testing.T) {
	tty, keys := openTTY(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "--host-root", "none", "-u", "bob", "--password-stdin", "r.example/a:1"}, "--password-stdin reads the password from stdin: pipe it in"},
		{[]string{"probe", "--host-root", "none", "--pull-secret", "-", "r.example/a:1"}, "--pull-secret - reads the Secret from stdin: pipe it in"},
		{[]string{"explain"}, "explain reads FILE or stdin"},
	} {
		// a command that reads the terminal gets an empty line after a while, not a hung test
		typed := time.AfterFunc(3*time.Second, func() { keys.Write([]byte("\n")) })
		var out, errOut bytes.Buffer
		err := Run(context.Background(), Streams{In: tty, Out: &out, ErrOut: &errOut}, tc.args)
		typed.Stop()
		r := result{code: Code(err, &errOut), out: out.String(), errOut: errOut.String()}
		oneLineUsage(t, r, tc.args, tc.want)
		if strings.Contains(r.errOut, "empty password") {
			t.Errorf("%q read the terminal", tc.args)
		}
	}
}
