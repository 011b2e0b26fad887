package deployer

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// parallelism is how many requests of one dry run or one deploy batch are in flight at once. The
// cluster client's rate limiter still bounds the request rate; this hides the round-trip latency.
const parallelism = 8

// forEach runs fn for every index in [0, n) with at most parallelism calls at once, and returns
// the error of the lowest index that failed, so the result does not depend on scheduling.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(ctx, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Judged is what a dry run found per object: the live object and the dry-run result. Deploy takes
// it to skip reading and dry-running again the objects the dry run of the same reconcile judged:
// a missing object is created, one whose dry run equals the live object is left alone, any other
// is applied. An object that changes on the cluster between the two is corrected by the next
// reconcile, as a drift would be. A nil *Judged judges nothing.
type Judged struct {
	mu sync.Mutex
	m  map[string]judgment
}

// judgment is the dry run's view of one object; live is nil when it did not exist.
type judgment struct {
	live, dry *unstructured.Unstructured
}

// judgedKey identifies a resolved object across a dry run and a deploy.
func judgedKey(obj *unstructured.Unstructured) string {
	return obj.GetAPIVersion() + " " + obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func (j *Judged) put(obj *unstructured.Unstructured, jd judgment) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m == nil {
		j.m = map[string]judgment{}
	}
	j.m[judgedKey(obj)] = jd
}

func (j *Judged) get(obj *unstructured.Unstructured) (judgment, bool) {
	if j == nil {
		return judgment{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	jd, ok := j.m[judgedKey(obj)]
	return jd, ok
}

// Len is the number of objects judged.
func (j *Judged) Len() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.m)
}
