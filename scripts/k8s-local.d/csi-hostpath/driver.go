package main

// The CSI identity, controller and node services: directories as volumes, tar archives as snapshots.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	cfg config
	mu  sync.Mutex // one volume/snapshot operation at a time: they are rare and small
}

// the facts kept beside a volume directory or a snapshot archive
type volumeMeta struct {
	Name       string `json:"name"`
	Capacity   int64  `json:"capacity"`
	FromSnap   string `json:"from_snapshot,omitempty"`
	SourceVol  string `json:"source_volume,omitempty"`
	CreatedSec int64  `json:"created_unix,omitempty"`
	Size       int64  `json:"size,omitempty"`
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$`)

func (d *driver) volDir(id string) string { return filepath.Join(d.cfg.dataDir, "volumes", id) }
func (d *driver) snapFile(id string) string {
	return filepath.Join(d.cfg.dataDir, "snapshots", id+".tar")
}

func readMeta(path string) (volumeMeta, error) {
	var m volumeMeta
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	return m, err
}

func writeMeta(path string, m volumeMeta) error {
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path+".tmp", b, 0o640); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// ---------------------------------------------------------------------------------------------- identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.cfg.driverName, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE,
		csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS}
	resp := &csi.GetPluginCapabilitiesResponse{}
	for _, c := range caps {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{Type: &csi.PluginCapability_Service_{
			Service: &csi.PluginCapability_Service{Type: c}}})
	}
	return resp, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// -------------------------------------------------------------------------------------------- controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	caps := []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range caps {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return resp, nil
}

func (d *driver) topology() []*csi.Topology {
	return []*csi.Topology{{Segments: map[string]string{d.cfg.topologyKey: d.cfg.nodeID}}}
}

func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	for _, c := range caps {
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "only filesystem (mount) volumes are supported, not block")
		}
	}
	return nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if !safeName.MatchString(req.GetName()) {
		return nil, status.Errorf(codes.InvalidArgument, "volume name %q: letters, digits, . _ - only", req.GetName())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id, dir := req.GetName(), d.volDir(req.GetName())
	want := volumeMeta{Name: id, Capacity: req.GetCapacityRange().GetRequiredBytes()}
	if snap := req.GetVolumeContentSource().GetSnapshot(); snap != nil {
		want.FromSnap = snap.GetSnapshotId()
	} else if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "only snapshots can be a volume's content source (no clones)")
	}
	if have, err := readMeta(dir + ".json"); err == nil { // idempotent: same name, same request
		if have.Capacity != want.Capacity || have.FromSnap != want.FromSnap {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with other parameters", id)
		}
		return d.volumeResponse(id, have), nil
	}
	if err := d.makeVolume(dir, want.FromSnap); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := writeMeta(dir+".json", want); err != nil {
		return nil, status.Errorf(codes.Internal, "record volume %s: %v", id, err)
	}
	return d.volumeResponse(id, want), nil
}

func (d *driver) makeVolume(dir, fromSnap string) error {
	_ = os.RemoveAll(dir) // a half-made one from an earlier failed try
	if fromSnap == "" {
		if err := os.Mkdir(dir, 0o777); err != nil {
			return status.Errorf(codes.Internal, "create %s: %v", dir, err)
		}
		return os.Chmod(dir, 0o777) // whatever the umask: any pod user may write, as with emptyDir
	}
	if !safeName.MatchString(fromSnap) {
		return status.Errorf(codes.NotFound, "snapshot %q does not exist", fromSnap)
	}
	f, err := os.Open(d.snapFile(fromSnap))
	if errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.NotFound, "snapshot %s does not exist", fromSnap)
	} else if err != nil {
		return status.Errorf(codes.Internal, "open snapshot %s: %v", fromSnap, err)
	}
	defer f.Close()
	if err := untarInto(f, dir); err != nil {
		return status.Errorf(codes.Internal, "restore snapshot %s: %v", fromSnap, err)
	}
	return nil
}

func (d *driver) volumeResponse(id string, m volumeMeta) *csi.CreateVolumeResponse {
	v := &csi.Volume{VolumeId: id, CapacityBytes: m.Capacity, AccessibleTopology: d.topology()}
	if m.FromSnap != "" {
		v.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: m.FromSnap}}}
	}
	return &csi.CreateVolumeResponse{Volume: v}
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if !safeName.MatchString(id) {
		return &csi.DeleteVolumeResponse{}, nil // never created by us: nothing to delete
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.RemoveAll(d.volDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", id, err)
	}
	_ = os.Remove(d.volDir(id) + ".json")
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if _, err := os.Stat(d.volDir(req.GetVolumeId())); err != nil || !safeName.MatchString(req.GetVolumeId()) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	id, src := req.GetName(), req.GetSourceVolumeId()
	if !safeName.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "snapshot name %q: letters, digits, . _ - only", id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if have, err := readMeta(d.snapFile(id) + ".json"); err == nil {
		if have.SourceVol != src {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists for volume %s", id, have.SourceVol)
		}
		return snapshotResponse(id, have), nil
	}
	if _, err := os.Stat(d.volDir(src)); err != nil || !safeName.MatchString(src) {
		return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", src)
	}
	size, err := tarDirTo(d.volDir(src), d.snapFile(id))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %s of %s: %v", id, src, err)
	}
	m := volumeMeta{Name: id, SourceVol: src, CreatedSec: timestamppb.Now().GetSeconds(), Size: size}
	if err := writeMeta(d.snapFile(id)+".json", m); err != nil {
		return nil, status.Errorf(codes.Internal, "record snapshot %s: %v", id, err)
	}
	return snapshotResponse(id, m), nil
}

func snapshotResponse(id string, m volumeMeta) *csi.CreateSnapshotResponse {
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: id, SourceVolumeId: m.SourceVol,
		SizeBytes: m.Size, CreationTime: &timestamppb.Timestamp{Seconds: m.CreatedSec}, ReadyToUse: true}}
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if safeName.MatchString(id) {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, p := range []string{d.snapFile(id), d.snapFile(id) + ".json"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, status.Errorf(codes.Internal, "delete snapshot %s: %v", id, err)
			}
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// -------------------------------------------------------------------------------------------------- node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.cfg.nodeID, AccessibleTopology: d.topology()[0]}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func isMountPoint(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescapeMount(f[4]) == path {
			return true
		}
	}
	return false
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if !safeName.MatchString(id) || target == "" || !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "volume id and an absolute target path are required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	src := d.volDir(id)
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", id, d.cfg.nodeID)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "create %s: %v", target, err)
	}
	if isMountPoint(target) {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind mount %s on %s: %v", src, target, err)
	}
	if req.GetReadonly() {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "make %s read-only: %v", target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" || !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "an absolute target path is required")
	}
	for isMountPoint(target) {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
