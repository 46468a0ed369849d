// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

// Controller reloads the admission configuration file when it or a file it
// references changes on disk. It reads the files' contents every Interval,
// so it sees every way a file is replaced: written in place, renamed over,
// or swapped through symlinks as the kubelet does for ConfigMap volumes.
type Controller struct {
	// Chain is the chain to change.
	Chain *Chain
	// File is --admission-control-config-file.
	File string
	// Plugins is the registry the chain was built from, Registered its
	// names, and Enabled the plugins the chain runs.
	Plugins    *admission.Plugins
	Registered []string
	Enabled    []string
	// Initializer initializes a new instance as the apiserver initialized
	// the first.
	Initializer admission.PluginInitializer
	// APIServerID labels the metrics, as upstream's reload metrics are.
	APIServerID string
	// Interval is how often the files are read; zero means every second.
	Interval time.Duration

	mu       sync.Mutex
	seen     []byte            // digest of the sources last looked at
	inForce  map[string][]byte // each enabled plugin's configuration in force
	sources  map[string]string // where each came from: "path ...", "inline"
	hash     string            // digest of the configuration in force
	lastTime time.Time
	lastErr  error
	// validated, when set, runs between a reload's validation and its
	// application: a test writes the files there.
	validated func()
}

// Status is the state of reloading, for /admissionz.
type Status struct {
	File string
	// Hash is the sha256 of the configuration in force.
	Hash string
	// Configs is each enabled plugin's configuration in force, and Sources
	// where it came from: "path <file>" or "inline".
	Configs map[string][]byte
	Sources map[string]string
	// LastReload is when the last reload was tried, zero for none, and
	// LastError why it was refused, nil when it succeeded.
	LastReload time.Time
	LastError  error
}

// Start reads the configuration in force and returns; Run then watches it.
func (c *Controller) Start() error {
	RegisterMetrics()
	snapshot := configfile.Read(c.File, nil)
	configs, err := snapshot.PluginConfigs(c.Enabled)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = snapshot.Digest()
	c.inForce, c.sources = configs, snapshot.EntrySources()
	c.hash = configHash(configs)
	recordConfigInfo(c.APIServerID, c.hash)
	warnWritable(snapshot)
	return nil
}

// warnWritable warns about every configuration file someone other than
// its owner may change: a reload applies what they write.
func warnWritable(snapshot *configfile.Snapshot) {
	for _, w := range snapshot.WritableByOthers() {
		klog.Warningf("%s: whoever can write the admission configuration decides admission, and the apiserver applies a change within a second; make it writable by its owner only", w)
	}
}

// Run watches the files until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	interval := c.Interval
	if interval == 0 {
		interval = time.Second
	}
	klog.InfoS("Watching the admission configuration for changes", "file", c.File, "interval", interval)
	wait.UntilWithContext(ctx, func(context.Context) { c.Check() }, interval)
}

// Check reloads when the files changed since it last looked. It returns
// whether it tried, and the reload's error.
func (c *Controller) Check() (tried bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snapshot := configfile.Read(c.File, nil)
	seen := snapshot.Digest()
	if bytes.Equal(seen, c.seen) {
		return false, nil
	}
	c.seen = seen
	began := time.Now()
	err = c.reload(snapshot)
	c.lastTime, c.lastErr = time.Now(), err
	if err != nil {
		recordFailure(c.APIServerID)
		klog.ErrorS(err, "Admission configuration not reloaded; the last good configuration stays in force", "file", c.File)
		return true, err
	}
	recordSuccess(c.APIServerID, c.hash)
	klog.InfoS("Admission configuration reloaded", "file", c.File, "hash", c.hash, "duration", time.Since(began))
	warnWritable(snapshot)
	return true, nil
}

// reload applies the snapshot, all of it or nothing of it: the bytes it
// validates are the bytes it applies.
func (c *Controller) reload(snapshot *configfile.Snapshot) error {
	plugins := configfile.Plugins{Registered: c.Registered, Enabled: c.Enabled}
	if problems := snapshot.Problems(plugins); len(problems) > 0 {
		return errors.Join(problems...)
	}
	if c.validated != nil {
		c.validated()
	}
	configs, err := snapshot.PluginConfigs(c.Enabled)
	if err != nil {
		return err
	}
	kinds := map[string]Plugin{}
	for _, p := range c.Chain.Plugins() {
		kinds[p.Name] = p
	}
	instances := map[string]admission.Interface{}
	for _, name := range c.Enabled {
		if bytes.Equal(configs[name], c.inForce[name]) {
			continue
		}
		if !Reloadable.Has(name) {
			return fmt.Errorf("%s %s: plugin %s: its configuration changed, and it cannot be reloaded: restart the apiserver to apply it", configfile.Flag, c.File, name)
		}
		instance, err := c.newInstance(name, configs[name], kinds[name])
		if err != nil {
			return fmt.Errorf("%s %s: plugin %s: %w", configfile.Flag, c.File, name, err)
		}
		instances[name] = instance
	}
	c.Chain.swap(instances)
	c.inForce, c.sources = configs, snapshot.EntrySources()
	c.hash = configHash(configs)
	return nil
}

// newInstance builds and initializes a plugin as the apiserver built the
// first instance, and checks that it is the same kind of plugin.
func (c *Controller) newInstance(name string, config []byte, want Plugin) (admission.Interface, error) {
	var r io.Reader
	if config != nil {
		r = bytes.NewReader(config)
	}
	instance, err := c.Plugins.InitPlugin(name, r, c.Initializer)
	if err != nil {
		return nil, err
	}
	if instance == nil {
		return nil, errors.New("the plugin declined to run with this configuration")
	}
	_, mutates := instance.(admission.MutationInterface)
	_, validates := instance.(admission.ValidationInterface)
	if mutates != want.Mutating || validates != want.Validating {
		return nil, fmt.Errorf("the new instance mutates=%v validates=%v, the chain's mutates=%v validates=%v", mutates, validates, want.Mutating, want.Validating)
	}
	return instance, nil
}

// Status says what is in force and how the last reload went.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{File: c.File, Hash: c.hash, Configs: c.inForce, Sources: c.sources, LastReload: c.lastTime, LastError: c.lastErr}
}

// configHash is the sha256 of the plugins' configurations.
func configHash(configs map[string][]byte) string {
	return fmt.Sprintf("sha256:%x", configfile.Digest(configs))
}
