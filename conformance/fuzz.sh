#!/usr/bin/env bash
# Runs every Go native fuzz target (func FuzzXxx in a _test.go file) for a
# bounded time and writes one TAP line per target for conformance/summarize.
#
#   conformance/fuzz.sh OUT.tap [DIR-REGEX] # FUZZTIME per target (default 15s);
#                                           # only packages whose dir matches
#
# Targets that exercise HTTP handlers on internal/testenv run on the store
# FAXHUB_TESTENV_POSTGRES names, so `make check` runs this twice: on SQLite
# and on PostgreSQL. A target fails when go test -fuzz finds a crasher (its
# input is written under the package's testdata/fuzz/, as Go does); 0 × 500
# is the bar, which the targets assert themselves.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: fuzz.sh OUT.tap [DIR-REGEX]}
only=${2:-.}
fuzztime=${FUZZTIME:-15s}
GO=${GO:-go}
mkdir -p "$(dirname "$out")"
: > "$out"
n=0

fuzz_one() { # dir name log
  $GO test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" "$1" > "$3" 2>&1
}

# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime ends, having found nothing and written no
# failing input (go.dev/issue/75804, fixed in Go 1.27). Such a run is tried
# up to twice more (rest's FuzzMachineFax, whose executions stall for
# seconds early in a run under coverage, an open lead in
# docs/conformance.md, met it twice in a row once); a written failing
# input, a 5xx or any other failure is never retried.
coordinator_race() { # log
  grep -q '^    context deadline exceeded$' "$1" && ! grep -q 'Failing input written to' "$1"
}

# retried: after a failed run whose log is $3, tries again while the last
# failure was that bare deadline, at most twice.
retried() { # dir name log
  local try
  for try in 1 2; do
    coordinator_race "$3" || return 1
    fuzz_one "$@" && return 0
  done
  return 1
}

while IFS= read -r file; do
  dir=./$(dirname "$file")
  [[ $dir =~ $only ]] || continue
  for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*$/\1/p' "$file"); do
    n=$((n + 1))
    log=$(mktemp)
    if fuzz_one "$dir" "$name" "$log"; then
      echo "ok $n - ${dir#./} $name" >> "$out"
    elif retried "$dir" "$name" "$log"; then
      { echo "ok $n - ${dir#./} $name"; echo "# $name retried: bare deadline at -fuzztime's end (go.dev/issue/75804)"; } >> "$out"
    else
      echo "not ok $n - ${dir#./} $name" >> "$out"
      sed 's/^/# /' "$log" | tail -n 40 >> "$out"
    fi
    rm -f "$log"
  done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort)
echo "1..$n" >> "$out"
echo "fuzz: $n targets, $fuzztime each" >&2
