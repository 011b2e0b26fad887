package syncapi

import (
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
)

// Cache lifetimes of the delegating authenticator and authorizer: short, so a revoked token or
// binding stops working within seconds.
const (
	tokenCacheTTL  = 10 * time.Second
	allowCacheTTL  = 10 * time.Second
	denyCacheTTL   = 5 * time.Second
	reviewTimeout  = 10 * time.Second
	reviewBackoff0 = 500 * time.Millisecond
)

// NewDelegatingAuth returns k8s.io/apiserver's delegating authenticator (TokenReview of bearer
// tokens, no anonymous requests) and authorizer (SubjectAccessReview), talking to the management
// cluster through kube.
func NewDelegatingAuth(kube kubernetes.Interface) (authenticator.Request, authorizer.Authorizer, error) {
	backoff := webhook.DefaultRetryBackoffWithInitialDelay(reviewBackoff0)
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      &backoff,
		CacheTTL:                 tokenCacheTTL,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("building the delegating authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("building the delegating authorizer: %w", err)
	}
	return authn, authz, nil
}
