// Package renderstore keeps what convoy rendered for each Release: the render blobs, content
// addressed by their render reference, and the history log of applied renders. concepts.md
// "Render storage" and "Pin and history" describe how the release controller uses it.
//
// # Layout
//
// Every key lives under the Release prefix "<namespace>/<name>/":
//
//	<namespace>/<name>/renders/<hex>.json.gz   a render: gzip-compressed JSON {renderRef, revision, objects}
//	<namespace>/<name>/history.jsonl           the history log: one JSON Entry per line, oldest first
//
// Keys are built only from validated names (a DNS-1123 label for the namespace, a DNS-1123
// subdomain for the name, 64 lowercase hex digits for the reference); a key that would leave its
// prefix is an error, never a file or object outside the store.
//
// # Backends
//
// Open selects the backend from a URL (the controller's --render-store flag):
//
//	file:///var/lib/convoy/renders                     a directory (one replica); writes are atomic (temp file, fsync, rename)
//	s3://bucket/prefix?endpoint=host:port&region=R     any S3-compatible server (several replicas)
//
// The S3 backend takes its credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or
// MINIO_ACCESS_KEY and MINIO_SECRET_KEY, or the instance's IAM role); tls=false in the query
// talks plain HTTP to the endpoint.
//
// # History
//
// The history log only grows by AppendHistory, one entry per newly applied render; entries carry a
// Number that increases by one per entry and never changes, so "kubectl convoy rollback REL N" names
// the same render after older entries are collected. Only garbage collection (PlanGC, then
// ReplaceHistory) removes entries.
package renderstore
