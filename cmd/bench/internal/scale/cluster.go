// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/turnstile-k8s/turnstile/cmd/bench/internal/measure"
	"github.com/turnstile-k8s/turnstile/internal/process"
	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// scaleCluster is one side's control plane for the scale benchmark: etcd
// and kube-apiserver (measure.Start), kube-controller-manager and
// kube-scheduler as a kubeadm cluster runs them (their own identities, the
// controllers with service account credentials), and kwok, which plays
// the kubelets of the fake nodes.
type scaleCluster struct {
	*measure.Server
	dir        string
	components []*process.Process // stopped in reverse order
}

// kcmControllers are the controllers a Deployment's life needs, plus the
// node lifecycle controller and pod garbage collection that every cluster
// runs against its nodes and pods.
const kcmControllers = "deployment,replicaset,serviceaccount,garbagecollector,nodelifecycle,podgc"

// kwokNodeLabel marks the nodes kwok manages; the probe's node has no such
// label, so only the probe writes to its pods.
const kwokNodeLabel = "type=kwok"

func startScaleCluster(dir string, pki *framework.PKI, binary string, args []string, o Options) (*scaleCluster, error) {
	s, err := measure.Start(dir, pki, binary, args, "")
	if err != nil {
		return nil, err
	}
	c := &scaleCluster{Server: s, dir: dir}
	// start runs binary name as user (in groups, with a kubeconfig of its
	// own) with the flags args gives for that kubeconfig and a free port.
	start := func(name, user string, groups []string, args func(kubeconfig string, port int) []string) error {
		path, err := framework.Binary(name)
		if err != nil {
			return err
		}
		kubeconfig := filepath.Join(dir, name+".kubeconfig")
		if err := s.APIServer.WriteKubeconfig(kubeconfig, user, groups...); err != nil {
			return err
		}
		port, err := framework.FreePort()
		if err != nil {
			return err
		}
		p, err := process.Start(name, filepath.Join(dir, name+".log"), append([]string{path}, args(kubeconfig, port)...))
		if err != nil {
			return err
		}
		c.components = append(c.components, p)
		return nil
	}
	// The controllers' defaults (20 and 30 queries a second for
	// kube-controller-manager, 50 and 100 for kube-scheduler) are sized for
	// a cluster's day; the steps create pods by the thousand.
	qps := []string{"--kube-api-qps=" + strconv.Itoa(o.ClientQPS), "--kube-api-burst=" + strconv.Itoa(2*o.ClientQPS)}
	serving := func(kubeconfig string, port int) []string {
		return []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--leader-elect=false"}
	}
	stages, err := framework.Binary("kwok-stages.yaml")
	if err == nil {
		err = start("kube-controller-manager", "system:kube-controller-manager", nil, func(kubeconfig string, port int) []string {
			return append(append(serving(kubeconfig, port), qps...),
				"--use-service-account-credentials=true", "--root-ca-file="+filepath.Join(pki.Dir, "ca.crt"), "--controllers="+kcmControllers,
				// kwok renews every fake node's lease from one process on
				// the cores the apiserver uses: 500 renewals a second at
				// 5,000 nodes. While a step creates pods by the thousand
				// it falls minutes behind, and node lifecycle would mark
				// nodes NotReady and their pods unready for good (kwok
				// makes a pod ready once), which no real kubelet's delay
				// would cause: a 5 min grace stalled the 30,000-pod step.
				// No lag shorter than a whole step counts here.
				"--node-monitor-grace-period="+o.StepTimeout.String(), "--node-startup-grace-period="+o.StepTimeout.String())
		})
	}
	if err == nil {
		err = start("kube-scheduler", "system:kube-scheduler", nil, func(kubeconfig string, port int) []string {
			return append(serving(kubeconfig, port), qps...)
		})
	}
	if err == nil {
		// kwok plays every kubelet with one identity; NodeRestriction
		// would hold a real kubelet to its own node.
		err = start("kwok", "kwok", []string{"system:masters"}, func(kubeconfig string, port int) []string {
			return []string{"--kubeconfig=" + kubeconfig, "--config=" + stages,
				"--manage-nodes-with-label-selector=" + kwokNodeLabel,
				// Nodes on loopback; pod IPs come from a range of loopback
				// too: nothing is sent to them, and nothing would leave the
				// machine if it were.
				"--node-ip=127.0.0.1", "--cidr=" + o.PodCIDR,
				"--server-address=127.0.0.1:" + strconv.Itoa(port),
				"--node-lease-duration-seconds=" + strconv.Itoa(o.LeaseSeconds),
			}
		})
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	// A component that exits early (a bad flag, a port taken) fails the
	// run here instead of as a step that never becomes available.
	time.Sleep(2 * time.Second)
	if err := c.exited(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// exited reports the first component that is no longer running, with the
// end of its log.
func (c *scaleCluster) exited() error {
	for _, p := range c.components {
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited: %v\n%s", p.Name, p.Err(), p.Tail(20))
		default:
		}
	}
	select {
	case <-c.APIServer.Done():
		return fmt.Errorf("kube-apiserver exited: %v\n%s", c.APIServer.Err(), c.APIServer.Tail(20))
	default:
	}
	return nil
}

func (c *scaleCluster) stop() {
	for i := len(c.components) - 1; i >= 0; i-- {
		_ = c.components[i].Stop(syscall.SIGTERM, 30*time.Second)
	}
	c.Server.Stop()
}

// alive fails as soon as a component of the cluster exits, so that a wait
// does not run into its timeout for a process that is gone.
func (c *scaleCluster) alive(ctx context.Context) error {
	if err := c.exited(); err != nil {
		return err
	}
	return ctx.Err()
}

// evidence keeps what a step that was not reached leaves behind, before
// the cluster and its directory go: where the workload pods stand, which
// the returned summary says, and the end of every component's log, copied
// to dest. A step that only says "not available in 30 min" would tell a
// user nothing about whose limit it met.
func (c *scaleCluster) evidence(ctx context.Context, dest string) string {
	var notes []string
	if states, err := workloadPodStates(ctx, c.Client); err != nil {
		notes = append(notes, "pods not counted: "+err.Error())
	} else {
		notes = append(notes, states.String())
	}
	if err := keepLogTails(c.dir, dest, logTailBytes); err != nil {
		notes = append(notes, "logs not kept: "+err.Error())
	} else {
		notes = append(notes, "the components' logs are in "+dest)
	}
	return strings.Join(notes, "; ")
}

// logTailBytes bounds each log kept by evidence: kwok's log at 30,000 pods
// runs to gigabytes, and the end is what shows a stall.
const logTailBytes = 16 << 20

// keepLogTails copies the last limit bytes of every .log file under dir
// into dest, named by their path under dir.
func keepLogTails(dir, dest string, limit int64) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".log" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		return copyTail(path, filepath.Join(dest, strings.ReplaceAll(rel, string(filepath.Separator), "_")), limit)
	})
}

func copyTail(from, to string, limit int64) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if info.Size() > limit {
		if _, err := in.Seek(info.Size()-limit, io.SeekStart); err != nil {
			return err
		}
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
