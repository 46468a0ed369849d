package podsecuritypolicy

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// rulesCache keeps each identity's listed use grants (identityRules)
// across requests, until an RBAC object changes. Listing an identity's
// rules is one scan of every binding, as an RBAC denial is; with the cache
// that scan happens once per identity and namespace instead of once per
// pod. The RBAC informers that the authorizer reads bump the generation
// on every event, which empties the cache.
//
// The rules only ever rule a policy out: a grant is still confirmed by the
// authorizer on every request, so a revoked grant counts exactly when the
// authorizer sees the revocation. A new grant counts once the event
// handler has run, a moment after the authorizer's listers have it. Rules
// also depend on the authorizer chain, which an authorization
// configuration reload can change without an RBAC event: maxAge bounds how
// long such a change can go unseen (a policy wrongly ruled out, never one
// wrongly allowed).
type rulesCache struct {
	generation atomic.Uint64
	mu         sync.Mutex
	gen        uint64 // the generation the entries were listed in
	entries    map[string]cachedRules
	now        func() time.Time
}

type cachedRules struct {
	rules  *identityRules
	listed time.Time
}

const (
	// maxCachedIdentities bounds the cache; a full cache starts over.
	maxCachedIdentities = 4096
	// maxAge is how long listed rules are used without an RBAC event.
	maxAge = 10 * time.Second
)

func newRulesCache() *rulesCache {
	return &rulesCache{entries: map[string]cachedRules{}, now: time.Now}
}

// watch bumps the generation on every event of the RBAC informers of f.
func (c *rulesCache) watch(f informers.SharedInformerFactory) error {
	rbac := f.Rbac().V1()
	for _, informer := range []cache.SharedIndexInformer{
		rbac.Roles().Informer(), rbac.RoleBindings().Informer(),
		rbac.ClusterRoles().Informer(), rbac.ClusterRoleBindings().Informer(),
	} {
		if _, err := informer.AddEventHandler(c.handler()); err != nil {
			return err
		}
	}
	return nil
}

func (c *rulesCache) handler() cache.ResourceEventHandlerFuncs {
	bump := func(any) { c.generation.Add(1) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc: bump,
		UpdateFunc: func(old, obj any) {
			// The informers' periodic resync delivers every object again
			// unchanged; only a change counts.
			o, oldOK := old.(metav1.Object)
			n, newOK := obj.(metav1.Object)
			if !oldOK || !newOK || o.GetResourceVersion() != n.GetResourceVersion() {
				bump(obj)
			}
		},
		DeleteFunc: bump,
	}
}

// current is the generation to pass to put for rules listed from now on.
func (c *rulesCache) current() uint64 { return c.generation.Load() }

// get returns the rules listed for key in the current generation, if any.
func (c *rulesCache) get(key string) *identityRules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen := c.generation.Load(); gen != c.gen {
		c.gen, c.entries = gen, map[string]cachedRules{}
		return nil
	}
	e, ok := c.entries[key]
	if !ok || c.now().Sub(e.listed) > maxAge {
		return nil
	}
	return e.rules
}

// put stores rules listed in generation gen, unless an RBAC event has
// happened since: those rules may predate it.
func (c *rulesCache) put(key string, gen uint64, rules *identityRules) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.generation.Load() {
		return
	}
	if gen != c.gen || len(c.entries) >= maxCachedIdentities {
		c.gen, c.entries = gen, map[string]cachedRules{}
	}
	c.entries[key] = cachedRules{rules: rules, listed: c.now()}
}

// rulesKey is what RBAC's rules for u in namespace depend on: the name
// and the groups (RBAC binds nothing else).
func rulesKey(u user.Info, namespace string) string {
	return namespace + "\x00" + u.GetName() + "\x00" + strings.Join(u.GetGroups(), "\x00")
}
