// Command summarize reads `go test -json` events (and the TAP output of
// Node's test runner, for the conformance suites in conformance/node and
// conformance/browser) and prints a table of suites with passed, failed,
// skipped and baselined test counts, ending with the line "N passed, N
// failed" that CI reads. It exits 1 when any test or package failed, when a
// baselined test passed (the baseline must shrink), when a baseline entry
// names a test that no longer ran, or when no test ran at all.
//
// A known failure listed in the baseline (-baseline conformance/baseline.yml)
// is counted as baselined, not failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type counts struct {
	pass, fail, skip, baselined int
	pkgFail                     bool
}

// Usage: summarize [-baseline FILE] [LABEL=FILE ...]; with no files it reads
// stdin. A label tells apart two runs of the same packages (sqlite,
// postgres). A FILE ending in .tap is Node test runner TAP: its label is
// the suite name and each top-level test counts.
func main() {
	baselinePath := flag.String("baseline", "", "YAML list of known failures (suite, test, reason)")
	flag.Parse()
	var base baseline
	if *baselinePath != "" {
		var err error
		if base, err = readBaseline(*baselinePath); err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
	}
	var inputs []input
	for _, a := range flag.Args() {
		label, path, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "usage: summarize [-baseline FILE] [LABEL=FILE ...]")
			os.Exit(2)
		}
		f, err := os.Open(path)
		if err != nil && strings.HasSuffix(path, ".tap") && os.IsNotExist(err) {
			// The suite never wrote its results: counted as a failed suite.
			fmt.Fprintln(os.Stderr, "summarize:", err)
			inputs = append(inputs, input{label, strings.NewReader(""), true})
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		defer f.Close()
		inputs = append(inputs, input{label, f, strings.HasSuffix(path, ".tap")})
	}
	if len(inputs) == 0 {
		inputs = []input{{"", os.Stdin, false}}
	}
	os.Exit(run(inputs, base, os.Stdout))
}

type input struct {
	label string
	r     io.Reader
	tap   bool
}

// result is one finished top-level test.
type result struct {
	suite, test, action string // action: pass, fail, skip
}

func run(inputs []input, base baseline, out io.Writer) int {
	suites := map[string]*counts{}
	var results []result
	for _, in := range inputs {
		if in.tap {
			results = scanTAP(in, suites, results)
		} else {
			results = scan(in, suites, results)
		}
	}
	var failedTests, problems []string
	seen := map[string]bool{}
	for _, r := range results {
		c := suites[r.suite]
		key := r.suite + "\x00" + r.test
		seen[key] = true
		_, known := base[key]
		switch {
		case r.action == "pass" && known:
			c.fail++
			problems = append(problems, fmt.Sprintf("%s: %q passes but is in the baseline: remove its entry", r.suite, r.test))
		case r.action == "pass":
			c.pass++
		case r.action == "fail" && known:
			c.baselined++
		case r.action == "fail":
			c.fail++
			failedTests = append(failedTests, r.suite+": "+r.test)
		case r.action == "skip":
			c.skip++
		}
	}
	for _, key := range base.keys() {
		suite, name, _ := strings.Cut(key, "\x00")
		if c := suites[suite]; c != nil && !seen[key] {
			// Only suites that ran are checked, so one suite can run alone.
			c.fail++
			problems = append(problems, fmt.Sprintf("%s: baseline entry %q matches no test that ran: remove or rename it", suite, name))
		}
	}
	return report(suites, append(failedTests, problems...), out)
}

func scan(in input, suites map[string]*counts, results []result) []result {
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
		case "pass", "fail", "skip":
			results = append(results, result{e.Package, e.Test, e.Action})
		}
	}
	return results
}

// tapLine is a top-level TAP test line as Node's test runner writes it
// (subtests are indented and roll up into their parent).
var tapLine = regexp.MustCompile(`^(not ok|ok) \d+(?: - (.*?))?(?: # (SKIP|TODO)\b.*)?$`)

// scanTAP reads Node's `--test-reporter=tap` output. A file without its
// final plan line ("1..N") means the runner died: the suite fails.
func scanTAP(in input, suites map[string]*counts, results []result) []result {
	c := suites[in.label]
	if c == nil {
		c = &counts{}
		suites[in.label] = c
	}
	plan := false
	sc := bufio.NewScanner(in.r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "1..") {
			plan = true
			continue
		}
		m := tapLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := strings.NewReplacer(`\#`, "#", `\\`, `\`).Replace(m[2])
		action := "pass"
		switch {
		case m[3] == "SKIP" || m[3] == "TODO":
			action = "skip"
		case m[1] == "not ok":
			action = "fail"
		}
		results = append(results, result{in.label, name, action})
	}
	if !plan {
		c.pkgFail = true
	}
	return results
}

// baseline maps suite + "\x00" + test to the reason it is known to fail.
type baseline map[string]string

func (b baseline) keys() []string {
	k := make([]string, 0, len(b))
	for key := range b {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// readBaseline reads conformance/baseline.yml: a YAML list of mappings with
// the string keys suite, test and reason, one per line (a subset of YAML
// that needs no parser library):
//
//   - suite: browser
//     test: "a user-verification-required approval …"
//     reason: "…"
func readBaseline(path string) (baseline, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b := baseline{}
	var cur map[string]string
	flush := func(line int) error {
		if cur == nil {
			return nil
		}
		if cur["suite"] == "" || cur["test"] == "" || cur["reason"] == "" {
			return fmt.Errorf("%s: entry ending at line %d needs suite, test and reason", filepath.Base(path), line)
		}
		key := cur["suite"] + "\x00" + cur["test"]
		if _, dup := b[key]; dup {
			return fmt.Errorf("%s: %s: %q is listed twice", filepath.Base(path), cur["suite"], cur["test"])
		}
		b[key] = cur["reason"]
		return nil
	}
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "[]" {
			continue
		}
		if rest, ok := strings.CutPrefix(t, "- "); ok {
			if err := flush(i); err != nil {
				return nil, err
			}
			cur = map[string]string{}
			t = rest
		} else if cur == nil || !strings.HasPrefix(line, " ") {
			return nil, fmt.Errorf("%s:%d: expected \"- suite: …\"", filepath.Base(path), i+1)
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: expected key: value", filepath.Base(path), i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			if v, err = strconv.Unquote(v); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", filepath.Base(path), i+1, err)
			}
		}
		switch k {
		case "suite", "test", "reason":
			cur[k] = v
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (suite, test, reason)", filepath.Base(path), i+1, k)
		}
	}
	if err := flush(len(lines)); err != nil {
		return nil, err
	}
	return b, nil
}

func report(suites map[string]*counts, failedTests []string, out io.Writer) int {
	names := make([]string, 0, len(suites))
	for n, c := range suites {
		if c.pass+c.fail+c.skip+c.baselined > 0 || c.pkgFail {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var tp, tf, ts, tb int
	fmt.Fprintf(out, "\n%-60s %7s %7s %7s %9s\n", "suite", "passed", "failed", "skipped", "baselined")
	for _, n := range names {
		c := suites[n]
		f := c.fail
		if c.pkgFail && f == 0 {
			f = 1 // build failure or a panic outside a test
			failedTests = append(failedTests, n+" (package)")
		}
		fmt.Fprintf(out, "%-60s %7d %7d %7d %9d\n", n, c.pass, f, c.skip, c.baselined)
		tp, tf, ts, tb = tp+c.pass, tf+f, ts+c.skip, tb+c.baselined
	}
	for _, f := range failedTests {
		fmt.Fprintln(out, "FAILED:", f)
	}
	fmt.Fprintf(out, "%d skipped, %d baselined (known failures, conformance/baseline.yml)\n", ts, tb)
	fmt.Fprintf(out, "%d passed, %d failed\n", tp, tf)
	if tf > 0 || tp == 0 {
		return 1
	}
	return 0
}
