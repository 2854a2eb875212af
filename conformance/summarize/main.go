// Command summarize reads `go test -json` events on stdin and prints a table
// of suites (packages) with passed, failed and skipped test counts, ending
// with the line "N passed, N failed" that CI reads. It exits 1 when any test
// or package failed, or when no test ran at all.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type counts struct{ pass, fail, skip int; pkgFail bool }

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	suites := map[string]*counts{}
	var failedTests []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Package == "" {
			continue
		}
		c := suites[e.Package]
		if c == nil {
			c = &counts{}
			suites[e.Package] = c
		}
		if e.Test == "" {
			if e.Action == "fail" {
				c.pkgFail = true
			}
			continue
		}
		if strings.Contains(e.Test, "/") {
			continue // count top-level tests; subtests roll up into them
		}
		switch e.Action {
		case "pass":
			c.pass++
		case "fail":
			c.fail++
			failedTests = append(failedTests, e.Package+"."+e.Test)
		case "skip":
			c.skip++
		}
	}
	names := make([]string, 0, len(suites))
	for n, c := range suites {
		if c.pass+c.fail+c.skip > 0 || c.pkgFail {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var tp, tf, ts int
	fmt.Fprintf(out, "\n%-60s %7s %7s %7s\n", "suite", "passed", "failed", "skipped")
	for _, n := range names {
		c := suites[n]
		f := c.fail
		if c.pkgFail && f == 0 {
			f = 1 // build failure or a panic outside a test
			failedTests = append(failedTests, n+" (package)")
		}
		fmt.Fprintf(out, "%-60s %7d %7d %7d\n", strings.TrimPrefix(n, "github.com/faxhub/faxhub/"), c.pass, f, c.skip)
		tp, tf, ts = tp+c.pass, tf+f, ts+c.skip
	}
	for _, f := range failedTests {
		fmt.Fprintln(out, "FAILED:", f)
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", tp, tf, ts)
	if tf > 0 || tp == 0 {
		return 1
	}
	return 0
}
