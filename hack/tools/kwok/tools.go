//go:build tools

// Package tools pins kwok, which fakes nodes so Pods run and Jobs finish in e2e tests.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
