# convoy's Makefile only dispatches to the scripts in hack/.
SHELL := /usr/bin/env bash

# The Go toolchain every target builds and checks with: go.mod's language version is 1.26, and this
# release of the toolchain carries the standard library's security fixes (govulncheck in make verify
# fails on a vulnerable standard library). The go command fetches it from the Go module proxy once.
# Set here rather than taken from the environment, where GOTOOLCHAIN=local would quietly build with
# whatever Go the machine has; `make GOTOOLCHAIN=...` still overrides it.
export GOTOOLCHAIN := go1.27.3

# Real third-party charts for the "real charts" suite and the benchmark, when they sit beside the checkout.
CONVOY_REAL_CHARTS ?= $(if $(wildcard ../shared/testdata/charts),$(abspath ../shared/testdata/charts),)
export CONVOY_REAL_CHARTS

.PHONY: all build test test-unit test-e2e test-bins demo bench generate verify install-plugin manifests-check fuzz govulncheck

all: build

build: ## Build convoy's binaries into bin/.
	hack/build.sh

install-plugin: ## Build kubectl-convoy and install it on PATH (PLUGIN_DIR, else GOBIN, else GOPATH/bin).
	hack/install-plugin.sh

test-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kubectl and versitygw into bin/.
	hack/build-test-bins.sh

test: build test-bins ## Run all tests: unit tests, then e2e tests on real API servers.
	hack/test.sh

test-unit: ## Run the unit tests only.
	hack/test.sh unit

test-e2e: build test-bins ## Run the e2e tests only.
	hack/test.sh e2e

manifests-check: build ## Validate manifests/: kustomize build, server-side dry run and RBAC checks on an e2e API server.
	hack/build-test-bins.sh etcd kube-apiserver
	go test -count=1 ./e2e/manifests/

demo: build test-bins ## Start a local management and target cluster, install convoy, apply a sample Release.
	hack/demo.sh

bench: build test-bins ## Benchmark convoy against a plain SSA loop and helm (hack/bench; BENCH_FLAGS="-releases=100 -scenarios=a,b").
	hack/build-test-bins.sh helm
	go build -o bin/convoy-bench ./hack/bench
	bin/convoy-bench $(BENCH_FLAGS)

generate: ## Regenerate deepcopy, clientset, listers, informers, apply configurations and CRDs.
	hack/update-codegen.sh

verify: ## Fail when generated files are stale; gofmt, go vet, go mod tidy -diff, govulncheck.
	hack/verify.sh

fuzz: ## Run every fuzz target for FUZZTIME each (default 30s), e.g. FUZZTIME=10s make fuzz.
	hack/fuzz.sh

govulncheck: ## Check for known vulnerabilities with govulncheck and an offline database from the Go module proxy.
	hack/govulncheck.sh
