// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// rulesCache keeps, across requests and until an RBAC object changes,
// each identity's listed use grants (identityRules), and with them the
// authorizer's answers about the policies they grant. Listing an
// identity's rules is one scan of every binding, as each RBAC answer is;
// with the cache those scans happen once per identity, namespace and
// policy instead of up to four times per pod creation. The RBAC informers
// that the authorizer reads bump the generation on every event, which
// empties the cache.
//
// So a grant or a revocation counts once the event handler has run, a
// moment after the authorizer's own listers have it: the same informers,
// one hand-off later. Rules and answers also depend on the authorizer
// chain, which an authorization configuration reload can change without
// an RBAC event: a timer bumps the generation every maxAge too, which
// bounds how long such a change can go unseen. A timer, rather than each
// request checking the age of the entries it reads, since a clock read
// per admission phase is about 6% of the plugin's CPU on a virtual
// machine.
type rulesCache struct {
	generation atomic.Uint64
	answers    atomic.Int64 // answers kept since the cache last started over
	mu         sync.Mutex
	gen        uint64                    // the generation the entries were listed in
	entries    map[string]*identityRules // by identityKey
}

const (
	// maxCachedIdentities and maxCachedAnswers bound the cache; a full
	// cache starts over.
	maxCachedIdentities = 4096
	maxCachedAnswers    = 16384
	// maxAge is the longest that listed rules, and the answers kept with
	// them, are used without an RBAC event.
	maxAge = 10 * time.Second
)

// newRulesCache returns an empty cache that starts over every maxAge.
func newRulesCache() *rulesCache {
	c := &rulesCache{entries: map[string]*identityRules{}}
	c.expireEvery(maxAge)
	return c
}

// expireEvery bumps the generation every d, for as long as the process
// runs (one timer per registration of the plugin), as an RBAC event
// would: entries listed before the bump are not used after it.
func (c *rulesCache) expireEvery(d time.Duration) {
	time.AfterFunc(d, func() {
		c.generation.Add(1)
		c.expireEvery(d)
	})
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
func (c *rulesCache) get(key identityKey) *identityRules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.currentLocked() {
		return nil
	}
	return c.entries[string(key)] // a lookup: no copy of the key
}

// put stores rules listed in generation gen, unless an RBAC event has
// happened since: those rules may predate it.
func (c *rulesCache) put(key identityKey, gen uint64, rules *identityRules) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.currentLocked(); gen == c.gen { // else listed before an RBAC event
		if len(c.entries) >= maxCachedIdentities {
			c.entries = map[string]*identityRules{}
		}
		c.entries[string(key)] = rules
	}
}

// keep stores the authorizer's answer about the use of policy in
// policyGroups[group] with the rules that grant it. No generation check is
// needed: once an RBAC event has happened no request gets these rules from
// the cache again (get starts over first), so an answer given before the
// event is never read after it.
func (c *rulesCache) keep(rules *identityRules, group int, policy string, allowed bool) {
	if c.answers.Add(1) > maxCachedAnswers {
		c.generation.Add(1) // a full cache starts over
		return
	}
	rules.mu.Lock()
	defer rules.mu.Unlock()
	if rules.answers[group] == nil {
		rules.answers[group] = map[string]bool{}
	}
	rules.answers[group][policy] = allowed
}

// currentLocked empties the cache if an RBAC event has happened since it
// was filled, and reports whether it still holds entries of the current
// generation. c.mu must be held.
func (c *rulesCache) currentLocked() bool {
	if gen := c.generation.Load(); gen != c.gen {
		c.gen, c.entries = gen, map[string]*identityRules{}
		c.answers.Store(0)
		return false
	}
	return true
}

// identityKey is what RBAC's rules for an identity in a namespace depend
// on: for the pod's service account its namespace and name, for a user the
// name and the groups (RBAC binds nothing else), each field prefixed with
// its length, so that no two identities share a key whatever bytes their
// names hold. A request builds a key in a buffer on its stack and the
// cache looks it up without copying it, so a cache hit allocates nothing;
// the user.Info the authorizer needs is not built for it either.
// The same service account making the request as a user has a key of each
// kind, and the cache keeps its rules twice.
type identityKey []byte

// serviceAccountKey appends the key of the service account name in
// namespace to buf.
func serviceAccountKey(buf []byte, namespace, name string) identityKey {
	return appendField(appendField(append(buf, 's'), namespace), name)
}

// userKey appends u's key in namespace to buf.
func userKey(buf []byte, u user.Info, namespace string) identityKey {
	buf = appendField(appendField(append(buf, 'u'), namespace), u.GetName())
	for _, g := range u.GetGroups() {
		buf = appendField(buf, g)
	}
	return buf
}

func appendField(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}
