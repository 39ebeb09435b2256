package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/service"
)

// The parts of Kubernetes objects the manifest test reads.
type k8sObject struct {
	Kind string
	Spec struct {
		Template struct {
			Spec podSpec
		}
		Ports []struct {
			Name       string
			Port       int
			TargetPort any `yaml:"targetPort"`
		}
		SessionAffinity string `yaml:"sessionAffinity"`
	}
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
		RunAsUser    int  `yaml:"runAsUser"`
		RunAsGroup   int  `yaml:"runAsGroup"`
	} `yaml:"securityContext"`
	Containers []k8sContainer
	Volumes    []struct {
		Name      string
		ConfigMap *struct{ Name string } `yaml:"configMap"`
		Secret    *struct {
			SecretName string `yaml:"secretName"`
		}
		EmptyDir *struct{} `yaml:"emptyDir"`
	}
}

type k8sProbe struct {
	HTTPGet struct {
		Path   string
		Port   any
		Scheme string
	} `yaml:"httpGet"`
}

type k8sContainer struct {
	Name  string
	Args  []string
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	LivenessProbe   *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe  *k8sProbe `yaml:"readinessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct{ Drop []string }
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
	Env []struct {
		Name  string
		Value string
	}
	Resources struct {
		Limits struct{ Memory string }
	}
}

// bytesOf reads a size in Go's GOMEMLIMIT spelling (B, KiB, MiB, GiB) or
// Kubernetes' binary suffixes (Ki, Mi, Gi); ok is false for anything
// else.
func bytesOf(q string) (int64, bool) {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}, {"B", 0}} {
		if n, ok := strings.CutSuffix(q, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << u.shift, err == nil && v > 0
		}
	}
	return 0, false
}

// readManifest parses every document of a manifest file, strictly (an
// unknown field of the parts read is fine: KnownFields is not set, the
// manifest has many more).
func readManifest(t *testing.T, file string) []k8sObject {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var objs []k8sObject
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestDeployManifest: deploy/kubernetes/mcpsign-sidecar.yaml (docs/DEPLOY.md)
// matches the binary and the image: serve's flags parse, the probes ask
// the paths internal/service serves on the port --listen names, the Pod
// runs as the Dockerfile's user with a read-only root, everything mcpsign
// reads is mounted read-only, the upstream is on the Pod's loopback, and
// the drain ends before the kubelet's SIGKILL.
func TestDeployManifest(t *testing.T) {
	const file = "../../deploy/kubernetes/mcpsign-sidecar.yaml"
	objs := readManifest(t, file)
	var pod *podSpec
	var svc *k8sObject
	for i := range objs {
		switch objs[i].Kind {
		case "Deployment":
			pod = &objs[i].Spec.Template.Spec
		case "Service":
			svc = &objs[i]
		}
	}
	if pod == nil || svc == nil {
		t.Fatalf("%s: want a Deployment and a Service", file)
	}
	var front *k8sContainer
	for i := range pod.Containers {
		if pod.Containers[i].Name == "mcpsign" {
			front = &pod.Containers[i]
		}
	}
	if front == nil {
		t.Fatalf("%s: no container named mcpsign", file)
	}

	// The flags, as --name=value before --, the upstream after.
	if len(front.Args) == 0 || front.Args[0] != "serve" {
		t.Fatalf("mcpsign's args %q do not start with serve", front.Args)
	}
	flags := map[string]string{}
	var upstream []string
	for i, a := range front.Args[1:] {
		if a == "--" {
			upstream = front.Args[i+2:]
			break
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Fatalf("arg %q: write flags as --name=value before --", a)
		}
		flags[name] = value
	}
	if len(upstream) != 1 {
		t.Fatalf("upstream %q: want one URL after --", upstream)
	}
	if u, err := url.Parse(upstream[0]); err != nil || !netguard.IsLoopbackHost(u.Hostname()) {
		t.Errorf("upstream %s: the server must listen on the Pod's loopback only, so that the front is the one way in", upstream[0])
	}

	// The port: --listen's, the container's, the probes' and the Service's.
	_, port, err := net.SplitHostPort(flags["listen"])
	if err != nil {
		t.Fatalf("--listen=%s: %v", flags["listen"], err)
	}
	if len(front.Ports) != 1 || strconv.Itoa(front.Ports[0].ContainerPort) != port {
		t.Errorf("containerPort %v, want --listen's port %s", front.Ports, port)
	}
	portName := front.Ports[0].Name
	scheme := "HTTP"
	if flags["tls-cert"] != "" {
		scheme = "HTTPS"
	} else if flags["allow-plaintext"] != "true" {
		t.Errorf("--listen=%s without --tls-cert: serve refuses plain HTTP off loopback", flags["listen"])
	}
	for _, p := range []struct {
		name  string
		probe *k8sProbe
		path  string
	}{{"liveness", front.LivenessProbe, service.HealthPath}, {"readiness", front.ReadinessProbe, service.ReadyPath}} {
		if p.probe == nil {
			t.Errorf("no %s probe", p.name)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || (g.Port != portName && g.Port != port) || g.Scheme != scheme {
			t.Errorf("%s probe %+v, want %s on port %s (%s) over %s", p.name, g, p.path, portName, port, scheme)
		}
	}
	if len(svc.Spec.Ports) != 1 || (svc.Spec.Ports[0].TargetPort != portName && svc.Spec.Ports[0].TargetPort != port) {
		t.Errorf("Service ports %+v, want the target %s", svc.Spec.Ports, portName)
	}
	if svc.Spec.SessionAffinity != "ClientIP" {
		t.Error("the Service does not keep a client on one replica (sessionAffinity: ClientIP): its session would reach another front")
	}

	// The user: the Dockerfile's, not root; the root file system read-only.
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindSubmatch(dockerfile)
	if m == nil {
		t.Fatal("Dockerfile: no USER uid:gid line")
	}
	sc := pod.SecurityContext
	if !sc.RunAsNonRoot || strconv.Itoa(sc.RunAsUser) != string(m[1]) || strconv.Itoa(sc.RunAsGroup) != string(m[2]) {
		t.Errorf("Pod securityContext %+v, want runAsNonRoot and the Dockerfile's USER %s:%s", sc, m[1], m[2])
	}
	for _, c := range pod.Containers {
		cs := c.SecurityContext
		if !cs.ReadOnlyRootFilesystem || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s: securityContext %+v, want a read-only root, no privilege escalation, every capability dropped", c.Name, cs)
		}
	}

	// Every file mcpsign reads is on a read-only mount of a ConfigMap or a
	// Secret.
	kinds := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			kinds[v.Name] = "configMap"
		case v.Secret != nil:
			kinds[v.Name] = "secret"
		case v.EmptyDir != nil:
			kinds[v.Name] = "emptyDir"
		}
	}
	for _, name := range []string{"lock", "policy", "tls-cert", "tls-key", "bundle", "trusted-root", "tokens-file"} {
		file, ok := flags[name]
		if !ok {
			continue
		}
		mounted := false
		for _, vm := range front.VolumeMounts {
			if strings.HasPrefix(file, vm.MountPath+"/") {
				mounted = true
				if !vm.ReadOnly || (kinds[vm.Name] != "configMap" && kinds[vm.Name] != "secret") {
					t.Errorf("--%s=%s is on mount %s (%s, readOnly %v): want a read-only ConfigMap or Secret", name, file, vm.Name, kinds[vm.Name], vm.ReadOnly)
				}
			}
		}
		if !mounted || path.Clean(file) != file {
			t.Errorf("--%s=%s is on no volume mount", name, file)
		}
	}
	if flags["lock"] == "" && flags["policy"] == "" {
		t.Error("neither --lock nor --policy: the front enforces nothing")
	}

	// The drain ends before SIGKILL.
	drain, err := time.ParseDuration(flags["drain-timeout"])
	if err != nil {
		drain = service.DefaultDrainTimeout
	}
	if grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; grace <= drain {
		t.Errorf("terminationGracePeriodSeconds %s is not longer than the drain (%s)", grace, drain)
	}

	// The collector's soft limit is under the container's limit: at serve's
	// GOGC (400) the heap may grow to five times the live heap between
	// collections (docs/DEPLOY.md, "CPU and memory").
	limit, ok := bytesOf(front.Resources.Limits.Memory)
	if !ok {
		t.Errorf("resources.limits.memory %q: give the container a memory limit (Ki, Mi or Gi)", front.Resources.Limits.Memory)
	}
	soft := ""
	for _, e := range front.Env {
		if e.Name == "GOMEMLIMIT" {
			soft = e.Value
		}
	}
	if v, ok := bytesOf(soft); !ok || v >= limit {
		t.Errorf("GOMEMLIMIT %q: set it below the container's memory limit (%s)", soft, front.Resources.Limits.Memory)
	}

	// The flags are serve's: they parse.
	root := newRootCmd(newApp(), "serve")
	serve, _, err := root.Find([]string{"serve"})
	if err != nil || serve == root {
		t.Fatalf("no serve command: %v", err)
	}
	if err := serve.ParseFlags(front.Args[1:]); err != nil {
		t.Errorf("serve %q: %v", front.Args[1:], err)
	}
	if got := serve.Flags().Args(); len(got) != 1 || got[0] != upstream[0] {
		t.Errorf("serve's positional args %q, want the upstream %s", got, upstream[0])
	}
}
