package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faxhub/faxhub/rest/client"
)

// answer checks a generated client's response and prints it: the API's
// JSON as received with --json, else what human writes.
func (s *state) answer(res *http.Response, body []byte, err error, human func(w io.Writer)) error {
	if err != nil {
		return err
	}
	if err := client.Check(res, body); err != nil {
		return err
	}
	if s.json {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("the API answered something other than JSON: %w", err)
		}
		writeJSON(s.env.Stdout, v)
		return nil
	}
	human(s.env.Stdout)
	return nil
}

func writeJSON(w io.Writer, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	_, _ = w.Write(b.Bytes())
}

// table writes rows aligned in columns.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	_ = tw.Flush()
}

// more tells how to get the next page of a list.
func more(w io.Writer, hasMore bool, cursor *string) {
	if hasMore && cursor != nil {
		fmt.Fprintf(w, "more: --starting-after %s\n", *cursor)
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func when(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
