// Command layerbench-csi-hostpath is a small CSI driver for scripts/k8s-local: volumes are directories
// under a data directory of the node it runs on, snapshots are tar archives of them, and a volume can be
// created from a snapshot (the PVC's dataSource: VolumeSnapshot). One process serves the CSI identity,
// controller and node services on one socket, and registers itself with the kubelet through the kubelet's
// plugin-registration socket (the job node-driver-registrar does in the Kubernetes CSI hostpath driver,
// whose module the Go module proxy here does not serve). The external-provisioner and
// external-snapshotter sidecars talk to it on the same socket.
//
// Capacity is recorded, not enforced (as in the Kubernetes CSI hostpath driver without quotas).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var version = "dev"

type config struct {
	driverName     string
	nodeID         string
	endpoint       string // where this process listens (path inside its container)
	kubeletSocket  string // the same socket as the kubelet sees it (path on the node)
	registrationAt string // the kubelet's plugins_registry socket to create, or "" for none
	dataDir        string // volumes/ and snapshots/ live here
	topologyKey    string
}

func main() {
	var c config
	flag.StringVar(&c.driverName, "drivername", "hostpath.csi.layerbench.local", "CSI driver name")
	flag.StringVar(&c.nodeID, "nodeid", "", "node name (required)")
	flag.StringVar(&c.endpoint, "endpoint", "/csi/csi.sock", "unix socket to serve CSI on")
	flag.StringVar(&c.kubeletSocket, "kubelet-endpoint", "", "the CSI socket's path as the kubelet sees it")
	flag.StringVar(&c.registrationAt, "registration-socket", "", "kubelet plugin-registration socket to serve")
	flag.StringVar(&c.dataDir, "datadir", "/csi-data-dir", "directory holding volumes and snapshots")
	flag.StringVar(&c.topologyKey, "topology-key", "topology.hostpath.csi.layerbench.local/node", "topology label key")
	flag.Parse()
	if c.nodeID == "" {
		log.Fatal("--nodeid is required")
	}
	for _, d := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(c.dataDir, d), 0o750); err != nil {
			log.Fatalf("create %s: %v", d, err)
		}
	}
	if c.registrationAt != "" {
		if c.kubeletSocket == "" {
			log.Fatal("--registration-socket needs --kubelet-endpoint")
		}
		go serveRegistration(c)
	}
	serveCSI(c)
}

func listenUnix(path string) net.Listener {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		log.Fatalf("create %s: %v", filepath.Dir(path), err)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		log.Fatalf("listen on %s: %v", path, err)
	}
	return l
}

func logCalls(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (interface{}, error) {
	resp, err := h(ctx, req)
	if err != nil {
		log.Printf("%s: error: %v", info.FullMethod, err)
	} else if !strings.HasSuffix(info.FullMethod, "/Probe") {
		log.Printf("%s: ok", info.FullMethod)
	}
	return resp, err
}

func serveCSI(c config) {
	d := &driver{cfg: c}
	s := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(s, d)
	csi.RegisterControllerServer(s, d)
	csi.RegisterNodeServer(s, d)
	log.Printf("%s %s on node %s: CSI on %s, data in %s", c.driverName, version, c.nodeID, c.endpoint, c.dataDir)
	log.Fatal(s.Serve(listenUnix(c.endpoint)))
}

// registrar answers the kubelet's plugin watcher: which driver this is and where its CSI socket is.
type registrar struct{ cfg config }

func (r registrar) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	return &registration.PluginInfo{Type: registration.CSIPlugin, Name: r.cfg.driverName,
		Endpoint: r.cfg.kubeletSocket, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r registrar) NotifyRegistrationStatus(_ context.Context, s *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		log.Printf("the kubelet refused the registration: %s", s.Error)
	} else {
		log.Printf("registered with the kubelet")
	}
	return &registration.RegistrationStatusResponse{}, nil
}

func serveRegistration(c config) {
	s := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	registration.RegisterRegistrationServer(s, registrar{cfg: c})
	log.Printf("kubelet registration on %s", c.registrationAt)
	err := s.Serve(listenUnix(c.registrationAt))
	log.Fatal(fmt.Errorf("registration server: %w", err))
}
