// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package compare

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/pprof/profile"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/attribution"
	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// profiledLoad runs the scenario for d while the apiserver profiles itself
// for the same d, and attributes the profile.
func profiledLoad(ctx context.Context, s *measure.Server, sc scenario, concurrency int, d time.Duration, file string) (attribution.ProfileReport, error) {
	wait := s.ProfileInBackground(ctx, d)
	f, err := load(ctx, s, sc, concurrency, d, 0, "profiled")
	p, profileErr := wait()
	if err != nil {
		return attribution.ProfileReport{}, err
	}
	if profileErr != nil {
		return attribution.ProfileReport{}, profileErr
	}
	if file != "" {
		if err := measure.WriteProfile(p, file); err != nil {
			return attribution.ProfileReport{}, err
		}
	}
	r, err := attribution.Attribute(p, f.Requests, d)
	r.File = file
	return r, err
}

// cpuProfiles profiles two runs of -profile-duration on each side, in ABBA
// order as the pairs run, and merges each side's two: a CPU profile of one
// run after the other moved by 20% with the order alone. measure takes
// them on the pairs' servers after the pairs.
func cpuProfiles(ctx context.Context, o Options, s scenario, t, u *measure.Server) ([2]attribution.Profiles, error) {
	var runs [2][]attribution.Profiles
	for n, i := range []int{0, 1, 1, 0} {
		p, err := profiledRun(ctx, []*measure.Server{t, u}[i], s, o.Concurrency, o.Profile, false, fmt.Sprintf("cpu-profiled-%d", n))
		if err != nil {
			return [2]attribution.Profiles{}, fmt.Errorf("%s's CPU profile: %w", [2]string{"Turnstile", "upstream"}[i], err)
		}
		runs[i] = append(runs[i], p)
	}
	var out [2]attribution.Profiles
	for i := range runs {
		var err error
		if out[i], err = attribution.PerThousand(runs[i]...); err != nil {
			return out, err
		}
	}
	return out, nil
}

// attributeAgainstUpstream starts the configuration's two servers afresh,
// allocation sampling at attribution.ProfiledMemRate, warms them up, profiles the
// allocations of a run of each for -profile-duration, and compares them
// and the CPU profiles measure took.
func attributeAgainstUpstream(o Options, root string, pki *framework.PKI, c configuration, s scenario, cpu [2]attribution.Profiles) (*attribution.Report, error) {
	ctx := context.Background()
	of := c.Name + "/" + s.name
	t, u, err := startSides(ctx, filepath.Join(root, c.Name+"-"+s.name+"-attributed"), pki, c, fmt.Sprintf("memprofilerate=%d", attribution.ProfiledMemRate))
	if err != nil {
		return nil, err
	}
	defer t.Stop()
	defer u.Stop()
	if _, err := warmUp(ctx, o, s, t, u); err != nil {
		return nil, err
	}
	var allocs [2]attribution.Profiles
	for i, srv := range []*measure.Server{t, u} {
		run, err := profiledRun(ctx, srv, s, o.Concurrency, o.Profile, true, "allocs-profiled")
		if err == nil {
			allocs[i], err = attribution.PerThousand(run)
		}
		if err != nil {
			return nil, fmt.Errorf("%s's allocation profile: %w", [2]string{"Turnstile", "upstream"}[i], err)
		}
	}
	r, err := attribution.AttributeSides(of, o.Out, o.Profile, cpu, allocs)
	return &r, err
}

// profiledRun runs the scenario for d and profiles it: with allocs, the
// apiserver's allocation profile (cumulative since it started) is read
// before and after, and the difference kept; else the apiserver takes a
// CPU profile over the same d. name names the run's namespace, new on
// the server.
func profiledRun(ctx context.Context, s *measure.Server, sc scenario, concurrency int, d time.Duration, allocs bool, name string) (attribution.Profiles, error) {
	var p *profile.Profile
	var f figure
	var err error
	if allocs {
		var before, after *profile.Profile
		if before, err = s.Pprof(ctx, "allocs"); err != nil {
			return attribution.Profiles{}, err
		}
		if f, err = load(ctx, s, sc, concurrency, d, 0, name); err != nil {
			return attribution.Profiles{}, err
		}
		if after, err = s.Pprof(ctx, "allocs"); err != nil {
			return attribution.Profiles{}, err
		}
		before.Scale(-1)
		if p, err = profile.Merge([]*profile.Profile{after, before}); err != nil {
			return attribution.Profiles{}, fmt.Errorf("the allocation profiles before and after the run: %w", err)
		}
	} else {
		wait := s.ProfileInBackground(ctx, d)
		f, err = load(ctx, s, sc, concurrency, d, 0, name)
		var cpuErr error
		p, cpuErr = wait()
		if err == nil {
			err = cpuErr
		}
		if err != nil {
			return attribution.Profiles{}, err
		}
	}
	return attribution.Profiles{Profile: p, Requests: f.Requests}, nil
}
