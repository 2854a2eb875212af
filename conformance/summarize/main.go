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

type counts struct {
	pass, fail, skip int
	pkgFail          bool
}

// Usage: summarize [LABEL=FILE ...]; with no arguments it reads stdin. A
// label tells apart two runs of the same packages (sqlite, postgres).
func main() {
	var inputs []input
	for _, a := range os.Args[1:] {
		label, path, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "usage: summarize [LABEL=FILE ...]")
			os.Exit(2)
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		defer f.Close()
		inputs = append(inputs, input{label, f})
	}
	if len(inputs) == 0 {
		inputs = []input{{"", os.Stdin}}
	}
	os.Exit(run(inputs, os.Stdout))
}

type input struct {
	label string
	r     io.Reader
}

func run(inputs []input, out io.Writer) int {
	suites := map[string]*counts{}
	var failedTests []string
	for _, in := range inputs {
		failedTests = scan(in, suites, failedTests)
	}
	return report(suites, failedTests, out)
}

func scan(in input, suites map[string]*counts, failedTests []string) []string {
	sc := bufio.NewScanner(in.r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Package == "" {
			continue
		}
		e.Package = strings.TrimPrefix(e.Package, "github.com/faxhub/faxhub/")
		if in.label != "" {
			e.Package = in.label + ": " + e.Package
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
	return failedTests
}

func report(suites map[string]*counts, failedTests []string, out io.Writer) int {
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
		fmt.Fprintf(out, "%-60s %7d %7d %7d\n", n, c.pass, f, c.skip)
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
