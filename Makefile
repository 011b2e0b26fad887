# convoy's Makefile only dispatches to the scripts in hack/.
SHELL := /usr/bin/env bash

# Real third-party charts for the "real charts" suite and the benchmark, when they sit beside the checkout.
CONVOY_REAL_CHARTS ?= $(if $(wildcard ../shared/testdata/charts),$(abspath ../shared/testdata/charts),)
export CONVOY_REAL_CHARTS

.PHONY: all build test test-unit test-e2e test-bins demo generate verify install-plugin

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

demo: build test-bins ## Start a local management and target cluster, install convoy, apply a sample Release.
	hack/demo.sh

generate: ## Regenerate deepcopy, clientset, listers, informers, apply configurations and CRDs.
	hack/update-codegen.sh

verify: ## Fail when generated files are stale; gofmt, go vet, go mod tidy -diff.
	hack/verify.sh
