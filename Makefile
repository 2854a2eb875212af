# faxhub — see README.md. `make run` and `make test` need only Go.
GO        ?= go
PG_URL    ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
OUT       := conformance/out

.PHONY: run build test check deps bench vet fmt-check clean

run:
	$(GO) run ./cmd/faxhub serve --dev

build:
	$(GO) build -o bin/faxhub ./cmd/faxhub

# Every Go test on the embedded SQLite default. PostgreSQL and LibreOffice
# tests skip here (they say so); `make check` requires them.
test:
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Installs what `make check` needs: PostgreSQL and LibreOffice from Debian
# (when root), and starts PostgreSQL if it is stopped.
deps:
	./conformance/deps.sh

# The full gate: vet, gofmt, every test with the race detector, the store
# suite on PostgreSQL, LibreOffice conversions. Fails (never skips) when a
# part is missing.
check: deps vet fmt-check
	@mkdir -p $(OUT)
	FAXHUB_TEST_POSTGRES_URL='$(PG_URL)' FAXHUB_REQUIRE_POSTGRES=1 FAXHUB_REQUIRE_SOFFICE=1 \
		$(GO) test -race -count=1 -json ./... > $(OUT)/go-test.json; status=$$?; \
		$(GO) run ./conformance/summarize < $(OUT)/go-test.json || status=1; exit $$status

# Throughput and memory as ratios against baselines measured in the same run.
bench:
	$(GO) run ./conformance/bench

clean:
	rm -rf bin $(OUT)
