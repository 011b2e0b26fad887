// Package syncapi is convoy's HTTPS sync API: POST /sync?namespace=NS&name=NAME[&force=true] asks
// the release controller to sync a Release now. Its only effect is a merge patch of the Release
// annotation release.core.convoy.kumodo.io/sync-requested-at (force-sync-requested-at for
// force=true) to the request time; the release controller handles the request on its next
// reconcile. Repeated calls coalesce: the annotation holds the latest time and never moves back
// (a write is conditioned on the value read), and concurrent calls for one Release share one read
// and write.
//
// # Authentication and authorization
//
// Every endpoint of the Server authenticates the bearer token with a TokenReview and authorizes
// the request with a SubjectAccessReview, through k8s.io/apiserver's delegating authenticator and
// authorizer (answers are cached briefly). /sync needs verb create on the subresource releases/sync
// (releases/forcesync for force=true) of group core.convoy.kumodo.io in the Release's namespace.
//
// # Answers
//
// 202 with {"namespace", "name", "force", "requestedAt"} when the annotation is set; otherwise a
// JSON error {"code", "reason", "message"}: 400 (bad query), 401 (no or invalid token), 403 (not
// allowed), 404 (unknown Release or path), 405 (not POST), 429 (the per-user rate limit), 500.
//
// # More endpoints
//
// Handle mounts further endpoints behind the same authentication, rate limit and authorization;
// the caller gives the authorization attributes of each request.
package syncapi
