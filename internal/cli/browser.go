package cli

import (
	"os/exec"
	"runtime"
	"time"
)

// openBrowser opens u in the user's browser, as command-line tools do.
// The URL is printed as well, so a machine without one still works.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Reap it; whether the browser started is not ours to wait for.
	go func() { _ = cmd.Wait() }()
	return nil
}

// now is the clock of this invocation.
func (s *state) now() time.Time { return s.env.Now() }
