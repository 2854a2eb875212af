# faxhub — see README.md. `make run` and `make test` need only Go.
GO        ?= go
PG_URL    ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
OUT       := conformance/out

.PHONY: run build image test check deps bench vet lint tidy-check fmt-check clean

# run builds bin/faxhub first (not `go run`) so that the commands the
# first start prints (bin/faxhub admin demo, …) name a binary that exists.
run: build
	./bin/faxhub serve --dev --sim-timescale 0.1

build:
	$(GO) build -o bin/faxhub ./cmd/faxhub

# The container image (Containerfile, docs/operations.md#containers): a
# static binary built here, copied into Debian with LibreOffice, poppler and
# tesseract. Without a container registry, build the Debian base from
# Debian's archive first: conformance/container/debian-base.sh, then
# make image DEBIAN_IMAGE=localhost/faxhub-debian:bookworm.
IMAGE        ?= localhost/faxhub:latest
DEBIAN_IMAGE ?= docker.io/library/debian:bookworm-slim
image:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags="-s -w" -o bin/container/faxhub ./cmd/faxhub
	podman build --format docker --build-arg DEBIAN_IMAGE=$(DEBIAN_IMAGE) -t $(IMAGE) -f Containerfile .

# Every Go test on the embedded SQLite default. What needs PostgreSQL,
# LibreOffice or poppler-utils skips here (the log says so); `make check`
# requires them.
test:
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...
	$(GO) vet -tags bench ./...

# staticcheck is pinned as a tool in go.mod (go tool staticcheck).
lint:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags bench ./...

# go.mod and go.sum say exactly what the code imports.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Installs what `make check` needs: PostgreSQL, LibreOffice, Node.js and
# Chromium from Debian (when root), the pinned npm packages of the
# conformance suites (npm ci into conformance/node_modules), and starts
# PostgreSQL if it is stopped.
deps:
	./conformance/deps.sh

# The full gate: vet, gofmt, every test with the race detector and every
# part required (FAXHUB_REQUIRE_ALL=1: PostgreSQL, LibreOffice), the store
# suite on PostgreSQL, the service and REST suites a second time on
# PostgreSQL, the memory and throughput measurements without the race
# detector (it distorts both), the crash test (kill -9 of a real `faxhub
# serve` mid-burst, on SQLite and on PostgreSQL at the same time), the
# fuzzers, the container image and the compose stack with podman
# (conformance/container.sh: a fax through the image on SQLite, and one
# through nginx to each of three replicas on PostgreSQL), then the
# third-party-client and browser suites against a real `faxhub serve`
# (conformance/run-suites.sh; known failures in conformance/baseline.yml),
# on SQLite, on PostgreSQL and across three replicas. The crash suites and
# the container checks run beside the fuzzers: both mostly wait out
# deadlines of minutes (recovery, podman), and a fuzz target runs for
# FUZZTIME whatever else the machine does (the container's output is
# printed when all are done). Ends with a table and "N passed, N failed".
SUITES := oauth browser mcp-app mcp mcp-inspector mcp-conformance agents a2a a2a-cli hostagent mpp webhooks
# The protocol suites run a second time against a serve on PostgreSQL
# (results named <suite>-postgres).
PG_SUITES := oauth mcp-app mcp agents a2a a2a-cli hostagent mpp webhooks
# The protocol suites run a third time against three serves on one
# PostgreSQL schema behind a round-robin front (conformance/replicas), so
# consecutive steps of a journey land on different replicas (results named
# <suite>-replicas). cmd/faxhub's TestReplicas (the PostgreSQL pass) names
# the replica of every step.
REPLICA_SUITES := oauth browser mcp agents a2a hostagent mpp webhooks
# Every Go fuzz target runs FUZZTIME in make check (conformance/fuzz.sh);
# those that drive HTTP handlers on a database run again on PostgreSQL.
FUZZTIME ?= 10s
FUZZ_HANDLERS := rest|oauth|protocols|internal/app|passkeys
# FAXHUB_STRIPE_MOCK=1: the Stripe Checkout tests start stripe-mock (a go.mod
# tool) and fail, never skip, when it cannot run.
# The feature packages whose tests run on testenv: their suites run a second
# time on PostgreSQL (found, not listed, so a new feature is never left out).
CORE_PG_PACKAGES = $(shell grep -rl --include='*_test.go' 'testenv\.' core | xargs -n1 dirname | sort -u | sed 's|^|./|;s|$$|/|')
CHECK_ENV := FAXHUB_TEST_POSTGRES_URL='$(PG_URL)' FAXHUB_REQUIRE_ALL=1 FAXHUB_STRIPE_MOCK=1
check: deps tidy-check vet lint fmt-check
	@mkdir -p $(OUT)
	@status=0; \
	$(CHECK_ENV) $(GO) test -race -count=1 -timeout 20m -json ./... > $(OUT)/test-sqlite.json || status=1; \
	$(CHECK_ENV) FAXHUB_TESTENV_POSTGRES='$(PG_URL)' $(GO) test -race -count=1 -timeout 20m -json $(CORE_PG_PACKAGES) ./rest/ ./cmd/... ./oauth/ ./passkeys/ ./internal/app/ ./protocols/... > $(OUT)/test-postgres.json || status=1; \
	$(CHECK_ENV) $(GO) test -count=1 -timeout 10m -json -run 'Memory|Throughput$$' ./core/convert/ ./core/queue/ ./internal/app/ > $(OUT)/test-memory.json || status=1; \
	$(CHECK_ENV) FAXHUB_CRASH_TEST=1 $(GO) test -count=1 -timeout 15m -json -run 'CrashRecovery' ./cmd/faxhub/ > $(OUT)/test-crash-sqlite.json & crash=$$!; \
	$(CHECK_ENV) FAXHUB_CRASH_TEST=1 FAXHUB_TESTENV_POSTGRES='$(PG_URL)' $(GO) test -count=1 -timeout 15m -json -run 'CrashRecovery' ./cmd/faxhub/ > $(OUT)/test-crash-postgres.json & crashpg=$$!; \
	GO='$(GO)' ./conformance/container.sh > $(OUT)/container.out 2>&1 & container=$$!; \
	$(CHECK_ENV) GO='$(GO)' FUZZTIME=$(FUZZTIME) ./conformance/fuzz.sh $(OUT)/fuzz.tap || status=1; \
	$(CHECK_ENV) GO='$(GO)' FUZZTIME=$(FUZZTIME) FAXHUB_TESTENV_POSTGRES='$(PG_URL)' ./conformance/fuzz.sh $(OUT)/fuzz-postgres.tap '$(FUZZ_HANDLERS)' || status=1; \
	wait $$crash || status=1; wait $$crashpg || status=1; \
	wait $$container || status=1; cat $(OUT)/container.out; \
	GO='$(GO)' ./conformance/run-suites.sh $(SUITES) || status=1; \
	FAXHUB_SUITES_POSTGRES='$(PG_URL)' GO='$(GO)' ./conformance/run-suites.sh $(PG_SUITES) || status=1; \
	FAXHUB_SUITES_POSTGRES='$(PG_URL)' FAXHUB_SUITES_REPLICAS=3 GO='$(GO)' ./conformance/run-suites.sh $(REPLICA_SUITES) || status=1; \
	$(GO) run ./conformance/summarize -baseline conformance/baseline.yml all=$(OUT)/test-sqlite.json postgres=$(OUT)/test-postgres.json no-race=$(OUT)/test-memory.json crash-sqlite=$(OUT)/test-crash-sqlite.json crash-postgres=$(OUT)/test-crash-postgres.json fuzz=$(OUT)/fuzz.tap fuzz-postgres=$(OUT)/fuzz-postgres.tap $(foreach s,$(SUITES),$(s)=$(OUT)/$(s).tap) $(foreach s,$(PG_SUITES),$(s)-postgres=$(OUT)/$(s)-postgres.tap) $(foreach s,$(REPLICA_SUITES),$(s)-replicas=$(OUT)/$(s)-replicas.tap) container=$(OUT)/container.tap || status=1; \
	exit $$status

# Throughput, memory and start-up figures against baselines measured in the
# same run (conformance/bench); prints a table and writes $(OUT)/bench.json.
# Slowness never fails it, errors do. The delivery figure is also taken on
# PostgreSQL at FAXHUB_TEST_POSTGRES_URL (default PG_URL; set it empty to skip),
# and so are sends with one and three replicas. It ends with a 10-minute soak
# (FAXHUB_SOAK=1m shortens it): about 17 minutes in all, 30 allowed.
bench:
	@mkdir -p $(OUT)
	FAXHUB_TEST_POSTGRES_URL="$${FAXHUB_TEST_POSTGRES_URL-$(PG_URL)}" $(GO) test -tags bench -run TestBench -count=1 -timeout 30m -v ./conformance/bench/

clean:
	rm -rf bin $(OUT)
