//go:build tools

// Package tools pins versitygw, the S3-compatible server the e2e tests use as a real render store.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
